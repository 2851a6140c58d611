"""Batching feature trees of any shapes: nodes are processed depth by depth.

A batch concatenates the computation and loop vectors of many trees and adds
one root node per tree. For each depth (deepest first) it lists the nodes at
that depth with the indices of their computations and of their child nodes,
padded, so the network runs two LSTM calls per depth for the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    comps: torch.Tensor        # (Nc, comp features)
    loops: torch.Tensor        # (Nn, loop features); roots have zeros
    levels: list[Level]        # deepest first
    roots: torch.Tensor        # (B,) node id of each tree's root


def _pad(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max((len(r) for r in rows), default=0) or 1
    idx = np.zeros((len(rows), width), np.int64)
    for k, r in enumerate(rows):
        idx[k, :len(r)] = r
    return torch.from_numpy(idx), torch.tensor([len(r) for r in rows], dtype=torch.int64)


def collate(trees: list[FeatureTree]) -> Batch:
    """One batch of trees: their vectors concatenated and their nodes listed depth by depth."""
    loop_size = trees[0].loops.shape[1] if trees else 0
    node_depth: list[int] = []
    node_comps: list[list[int]] = []
    node_children: list[list[int]] = []
    node_loop_rows: list[np.ndarray] = []
    roots = []
    zero = np.zeros(loop_size, np.float32)

    def add(t: FeatureTree, comp_base: int, loop_index: int, here: tuple, children: tuple, depth: int) -> int:
        nid = len(node_depth)
        node_depth.append(depth)
        node_comps.append([comp_base + c for c in here])
        node_children.append([])
        node_loop_rows.append(t.loops[loop_index] if loop_index >= 0 else zero)
        node_children[nid] = [add(t, comp_base, *ch, depth + 1) for ch in children]
        return nid

    comp_base = 0
    for t in trees:
        here_top = tuple(c for node in t.shape if node[0] == -1 for c in node[1])
        children_top = tuple(node for node in t.shape if node[0] != -1)
        roots.append(add(t, comp_base, -1, here_top, children_top, 0))
        comp_base += len(t.comps)
    depths = np.asarray(node_depth)
    levels = []
    for d in range(int(depths.max()) if len(depths) else 0, -1, -1):
        ids = np.nonzero(depths == d)[0]
        ci, cl = _pad([node_comps[i] for i in ids])
        hi, hl = _pad([node_children[i] for i in ids])
        levels.append(Level(torch.from_numpy(ids), ci, cl, hi, hl))
    return Batch(torch.from_numpy(np.concatenate([t.comps for t in trees])),
                 torch.from_numpy(np.stack(node_loop_rows)), levels, torch.tensor(roots, dtype=torch.int64))
