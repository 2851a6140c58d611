"""Batching feature trees of any shapes: nodes are processed depth by depth.

A batch concatenates the loop vectors of many trees and adds one root node
per tree. It keeps each distinct computation vector once (the candidates of
one program share most of theirs), so that the network embeds each once. For
each depth (deepest first) it lists the nodes at that depth with the indices
of their computations and of their child nodes, padded, so the network runs
two LSTM calls per depth for the whole batch.
It also lays each tree's computations out in slots, with the number of loops
every two of them share, for networks that attend over computations.

Trees of one shape index alike (``featurize`` numbers loops and computations in
traversal order), so the index arrays of a shape are built once (``_Template``)
and a group of trees of that shape gets them with offsets, without Python loops
over its trees.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from ..features.extract import FeatureTree


@dataclass
class Level:
    nodes: torch.Tensor        # (n,) node ids at this depth
    comp_idx: torch.Tensor     # (n, max_comps) indices into comps, 0 where padded
    comp_len: torch.Tensor     # (n,)
    child_idx: torch.Tensor    # (n, max_children) node ids, 0 where padded
    child_len: torch.Tensor    # (n,)


@dataclass
class Batch:
    comps: torch.Tensor        # (Nc, comp features) the distinct computation vectors
    loops: torch.Tensor        # (Nn, loop features); roots have zeros
    levels: list[Level]        # deepest first
    roots: torch.Tensor        # (B,) node id of each tree's root
    comp_slots: torch.Tensor   # (B, max_comps) each tree's computations (indices into comps, 0 where padded)
    comp_mask: torch.Tensor    # (B, max_comps) True where a slot holds a computation
    shared: torch.Tensor       # (B, max_comps, max_comps) loops two computations share (their fusion depth)

    def to(self, device: torch.device | str) -> Batch:
        """This batch with every tensor on ``device`` (itself where they are there already)."""
        if self.comps.device == torch.device(device):
            return self
        levels = [Level(*(getattr(lv, f.name).to(device) for f in fields(Level))) for lv in self.levels]
        return replace(self, levels=levels, **{f.name: getattr(self, f.name).to(device) for f in fields(self)
                                               if f.name != "levels"})


@dataclass(frozen=True)
class _Template:
    """Index arrays of one tree shape, local to the tree: node 0 is the root, node k > 0 is loop k - 1."""

    n_nodes: int
    n_comps: int
    #: per depth, deepest first: (nodes, comp_idx, comp_len, child_idx, child_len), padded with 0
    levels: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]
    shared: np.ndarray         # (n_comps, n_comps)


def _pad(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max((len(r) for r in rows), default=0) or 1
    idx = np.zeros((len(rows), width), np.int64)
    for k, r in enumerate(rows):
        idx[k, :len(r)] = r
    return idx, np.array([len(r) for r in rows], np.int64)


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@functools.lru_cache(maxsize=4096)
def _template(shape: tuple, n_comps: int) -> _Template:
    depth: list[int] = [0]
    comps: list[list[int]] = [[c for node in shape if node[0] == -1 for c in node[1]]]
    children: list[list[int]] = [[]]
    paths: dict[int, tuple[int, ...]] = {c: () for c in comps[0]}

    def add(node: tuple, d: int, path: tuple[int, ...]) -> int:
        loop, here, kids = node
        nid = len(depth)
        if loop != nid - 1:
            raise ValueError(f"loop {loop} is not numbered in traversal order (node {nid})")
        depth.append(d)
        comps.append(list(here))
        children.append([])
        paths.update({c: path + (nid,) for c in here})
        children[nid] = [add(k, d + 1, path + (nid,)) for k in kids]
        return nid

    children[0] = [add(node, 1, ()) for node in shape if node[0] != -1]
    depths = np.asarray(depth)
    levels = []
    for d in range(int(depths.max()), -1, -1):
        ids = np.nonzero(depths == d)[0]
        levels.append((ids, *_pad([comps[i] for i in ids]), *_pad([children[i] for i in ids])))
    shared = np.array([[_common_prefix(paths[i], paths[j]) for j in range(n_comps)] for i in range(n_comps)],
                      np.int64).reshape(n_comps, n_comps)
    return _Template(len(depth), n_comps, tuple(levels), shared)


def _stack(parts: list[np.ndarray]) -> torch.Tensor:
    """Concatenate 2D index arrays of different widths, padding with 0."""
    out = np.zeros((sum(len(p) for p in parts), max(p.shape[1] for p in parts)), np.int64)
    row = 0
    for p in parts:
        out[row:row + len(p), :p.shape[1]] = p
        row += len(p)
    return torch.from_numpy(out)


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``x`` (by their bytes, in order of first appearance) and, per row of ``x``,
    the index of its distinct row."""
    seen: dict[bytes, int] = {}
    index = np.fromiter((seen.setdefault(row.tobytes(), len(seen)) for row in x), np.int64, len(x))
    return x[np.unique(index, return_index=True)[1]], index


def collate(trees: list[FeatureTree]) -> Batch:
    """One batch of trees: their vectors concatenated and their nodes listed depth by depth."""
    templates = [_template(t.shape, len(t.comps)) for t in trees]
    node_off = np.cumsum([0] + [tp.n_nodes for tp in templates])
    comp_off = np.cumsum([0] + [tp.n_comps for tp in templates])
    groups: dict[int, list[int]] = {}
    for b, tp in enumerate(templates):
        groups.setdefault(id(tp), []).append(b)
    n_depths = max(len(tp.levels) for tp in templates)
    per_depth: list[list[list[np.ndarray]]] = [[[] for _ in range(5)] for _ in range(n_depths)]
    width = max(tp.n_comps for tp in templates)
    shared = np.zeros((len(trees), width, width), np.int64)
    for members in groups.values():
        tp = templates[members[0]]
        rows = np.asarray(members)
        nodes, comps = node_off[rows], comp_off[rows]
        for k, (ids, ci, cl, hi, hl) in enumerate(tp.levels):
            at = per_depth[n_depths - len(tp.levels) + k]  # levels are deepest first: align the roots
            at[0].append((ids[None, :] + nodes[:, None]).ravel())
            at[1].append((ci[None] + comps[:, None, None]).reshape(-1, ci.shape[1]))
            at[2].append(np.tile(cl, len(rows)))
            at[3].append((hi[None] + nodes[:, None, None]).reshape(-1, hi.shape[1]))
            at[4].append(np.tile(hl, len(rows)))
        shared[rows, :tp.n_comps, :tp.n_comps] = tp.shared
    comps, index = _distinct_rows(np.concatenate([t.comps for t in trees]))
    levels = [Level(torch.from_numpy(np.concatenate(a[0])), _stack([index[c] for c in a[1]]),
                    torch.from_numpy(np.concatenate(a[2])), _stack(a[3]), torch.from_numpy(np.concatenate(a[4])))
              for a in per_depth]
    slots = np.arange(width)[None, :] + comp_off[:-1, None]
    mask = np.arange(width)[None, :] < np.array([tp.n_comps for tp in templates])[:, None]
    loop_size = trees[0].loops.shape[1]
    loops = np.zeros((int(node_off[-1]), loop_size), np.float32)
    loop_rows = np.ones(int(node_off[-1]), bool)
    loop_rows[node_off[:-1]] = False  # roots keep zeros
    loops[loop_rows] = np.concatenate([t.loops for t in trees])
    return Batch(torch.from_numpy(comps), torch.from_numpy(loops), levels,
                 torch.from_numpy(node_off[:-1].astype(np.int64)), torch.from_numpy(index[np.where(mask, slots, 0)]),
                 torch.from_numpy(mask), torch.from_numpy(shared))
