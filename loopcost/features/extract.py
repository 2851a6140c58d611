"""Featurize a scheduled program: computation vectors, loop vectors and the loop tree.

The program part (accesses, operations) is computed once per program and
cached; a schedule adds only its level blocks and tree, so featurizing many
schedules of one program is cheap. Both read the same ``ProgramState`` that
code generation reads.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import islpy as isl
import numpy as np

from ..errors import LoopcostError
from ..ir.expr import BinOp, Call, Const, reads, walk
from ..ir.polyhedral import domain_str
from ..ir.program import Program
from ..ir.state import CompSchedule, ProgramState
from . import layout as L

_LF = {f: k for k, f in enumerate(L.LEVEL_FIELDS)}
_AF = {f: k for k, f in enumerate(L.ACCESS_FIELDS)}
_CF = {f: k for k, f in enumerate(L.COMP_FIELDS)}


class FeatureLimitError(LoopcostError):
    """A program exceeds a limit of the feature layout."""


@dataclass(frozen=True)
class FeatureTree:
    """``comps[c]`` and ``loops[l]`` are vectors; ``shape`` is the loop tree.

    ``shape`` is a tuple of top-level nodes; a node is ``(loop_index, comp_indices, child_nodes)``.
    Trees with equal ``key`` can be batched together.
    """

    comps: np.ndarray
    loops: np.ndarray
    shape: tuple

    @property
    def key(self) -> tuple:
        def strip(node):
            return (len(node[1]), tuple(strip(c) for c in node[2]))

        return tuple(strip(n) for n in self.shape)


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else 0.0


def _val(v: isl.Val) -> float:
    return float(Fraction(v.to_str()))


# ---- the program part ----------------------------------------------------------

@functools.lru_cache(maxsize=256)
def program_part(p: Program) -> dict[str, tuple[np.ndarray, np.ndarray, int, np.ndarray]]:
    """Per computation: (access blocks, comp fields, number of original iterators, address map): row ``a``
    of the address map says how far access ``a`` moves, in elements, per unit step of each iterator."""
    out = {}
    for c, loops in p.walk_computations():
        iters = [lp.name for lp in loops]
        if len(iters) > L.MAX_ITERS:
            raise FeatureLimitError(f"{p.name}: computation {c.name} has {len(iters)} loops; the features "
                                    f"allow {L.MAX_ITERS} (loopcost.features.layout.MAX_ITERS)")
        accesses = [c.target, *reads(c.rhs)]
        if len(accesses) > L.MAX_ACCESSES:
            raise FeatureLimitError(f"{p.name}: computation {c.name} has {len(accesses)} accesses; the "
                                    f"features allow {L.MAX_ACCESSES}")
        acc = np.zeros((L.MAX_ACCESSES, L.ACCESS_SIZE), np.float32)
        address = np.zeros((len(accesses), len(iters)))
        for a, r in enumerate(accesses):
            b = p.buffer(r.buffer)
            pitch = np.cumprod((b.shape[1:] + (1,))[::-1])[::-1] if b.shape else np.ones(0)
            address[a] = [sum(w * ix.coeff(it) for w, ix in zip(pitch, r.index, strict=True)) for it in iters]
            if len(r.index) > L.MAX_RANK:
                raise FeatureLimitError(f"{p.name}: buffer {b.name} has rank {len(r.index)}; the features "
                                        f"allow {L.MAX_RANK}")
            row = acc[a]
            row[_AF["present"]] = 1
            row[_AF["is_write"]] = a == 0
            row[_AF["same_buffer_as_write"]] = r.buffer == c.target.buffer
            row[_AF["rank"]] = len(r.index)
            row[_AF[f"buffer_is_{b.role}"]] = 1
            row[_AF["log2_buffer_size"]] = _log2(b.size)
            base = len(L.ACCESS_FIELDS)
            for d, ix in enumerate(r.index):
                for k, it in enumerate(iters):
                    row[base + d * (L.MAX_ITERS + 1) + k] = ix.coeff(it)
                row[base + d * (L.MAX_ITERS + 1) + L.MAX_ITERS] = ix.const
        f = np.zeros(len(L.COMP_FIELDS), np.float32)
        for n in walk(c.rhs):
            if isinstance(n, BinOp):
                f[_CF[{"+": "n_add", "-": "n_sub", "*": "n_mul", "/": "n_div"}[n.op]]] += 1
            elif isinstance(n, Call):
                f[_CF["n_minmax" if n.fn in ("min", "max") else "n_math"]] += 1
            elif isinstance(n, Const):
                f[_CF["n_consts"]] += 1
        f[_CF["n_reads"]] = len(accesses) - 1
        f[_CF["reduction"]] = c.reduction is not None
        f[_CF["reduction_add"]] = c.reduction == "+"
        f[_CF["reduction_mul"]] = c.reduction == "*"
        f[_CF[p.buffer(c.target.buffer).dtype]] = 1
        f[_CF["n_iters"]] = len(iters)
        f[_CF["log2_points"]] = _log2(_points(domain_str(c, loops)))
        out[c.name] = (acc, f, len(iters), address)
    return out


def _points(domain: str) -> float:
    """Number of points of a domain: exact when small, else its bounding box."""
    dom = isl.Set(domain)
    box = 1.0
    for d in range(dom.dim(isl.dim_type.set)):
        box *= _val(dom.dim_max_val(d)) - _val(dom.dim_min_val(d)) + 1
    return float(dom.count_val().to_python()) if box <= 2e5 else box


# ---- the schedule part ---------------------------------------------------------

@functools.lru_cache(maxsize=8192)
def _levels(domain: str, loop_map: str, n_iters: int) -> tuple[tuple[float, tuple[float, ...]], ...]:
    """Per loop level: (extent over the whole domain, coefficients of the original iterators)."""
    m = isl.Map(loop_map)
    image = isl.Set(domain).apply(m)
    pma = m.as_pw_multi_aff()
    out = []
    for d in range(m.dim(isl.dim_type.out)):
        lo, hi = image.dim_min_val(d), image.dim_max_val(d)
        extent = _val(hi) - _val(lo) + 1 if lo.is_int() and hi.is_int() else 0.0
        coef = [0.0] * n_iters
        if pma.n_piece() == 1:
            # isl may split a level with nested floors into pieces with the same coefficients: read the first
            aff = pma.get_pw_aff(d).get_pieces()[0][1]
            coef = [_val(aff.get_coefficient_val(isl.dim_type.in_, k)) for k in range(n_iters)]
            for q in range(aff.dim(isl.dim_type.div)):
                c = _val(aff.get_coefficient_val(isl.dim_type.div, q))
                div = aff.get_div(q)
                coef = [x + c * _val(div.get_coefficient_val(isl.dim_type.in_, k)) for k, x in enumerate(coef)]
        out.append((extent, tuple(coef)))
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def _level(domain: str, expr: str, n_iters: int) -> tuple[float, tuple[float, ...]]:
    """(extent over the domain, coefficients of the original iterators) of one loop level, given as an isl
    expression of the iterators; shared levels of different schedules are computed once."""
    head = domain[:domain.index("]") + 1]  # "{ S[i, j]"
    return _levels(domain, f"{head} -> [{expr}] }}", n_iters)[0]


def _level_block(state: ProgramState, name: str, extent: float, coef: tuple[float, ...]) -> np.ndarray:
    row = np.zeros(L.LEVEL_SIZE, np.float32)
    row[_LF["present"]] = 1
    row[_LF["log2_extent"]] = _log2(extent)
    for t in state.tags:
        if t.loop != name:
            continue
        if t.kind == "parallel":
            row[_LF["parallel"]] = 1
        elif t.kind == "vector":
            row[_LF["vector"]], row[_LF["log2_vector_width"]] = 1, _log2(t.factor)
        elif t.kind == "unroll":
            row[_LF["unroll"]], row[_LF["log2_unroll_factor"]] = 1, _log2(t.factor)
        elif t.kind == "tile":
            row[_LF["tile_loop"]], row[_LF["log2_tile_size"]] = 1, _log2(t.factor)
        elif t.kind == "tiled":
            row[_LF["tiled"]], row[_LF["log2_tiled_size"]] = 1, _log2(t.factor)
        elif t.kind == "interchanged":
            row[_LF["interchanged"]] = 1
        elif t.kind == "skewed":
            row[_LF["skewed"]], row[_LF["skew_factor"]] = 1, t.factor
        elif t.kind == "reversed":
            row[_LF["reversed"]] = 1
    row[len(L.LEVEL_FIELDS):len(L.LEVEL_FIELDS) + len(coef)] = coef
    return row


def _comp_levels(state: ProgramState, cs: CompSchedule,
                 n_iters: int) -> tuple[list[tuple[str, np.ndarray]], np.ndarray | None]:
    """The level blocks of a computation's real loops, and the innermost loop's step as a direction in
    its original iterators (None when the schedule does not determine one)."""
    loops = state.program.enclosing_loops(cs.comp)
    domain = domain_str(state.program.computation(cs.comp), loops)
    if cs.levels:
        levels = tuple(_level(domain, e, n_iters) if name is not None else (0.0, ())
                       for name, e in zip(cs.loops, cs.levels, strict=True))
    else:
        levels = _levels(domain, cs.loop_map, n_iters)
    real = [(name, ext, coef) for name, (ext, coef) in zip(cs.loops, levels, strict=True) if name is not None]
    out = [(name, _level_block(state, name, ext, coef)) for name, ext, coef in real]
    if len(out) > L.MAX_DEPTH:
        raise FeatureLimitError(f"{state.program.name}: computation {cs.comp} has {len(out)} loop levels after "
                                f"scheduling; the features allow {L.MAX_DEPTH}")
    return out, _inner_step([coef for _, _, coef in real], n_iters)


def _inner_step(coefs: list[tuple[float, ...]], n_iters: int) -> np.ndarray | None:
    """Solve for the direction ``d`` in iterator space along which the innermost loop steps: every outer
    point loop stays put, the innermost advances by one. Tile loops (fractional coefficients) are constant
    within a tile and left out; so are loops of constant value."""
    rows = [c for c in coefs if any(c) and all(float(x).is_integer() for x in c)]
    if n_iters == 0 or len(rows) != n_iters or rows[-1] != coefs[-1]:
        return None
    m = np.array(rows, float)
    if abs(np.linalg.det(m)) < 0.5:
        return None
    rhs = np.zeros(n_iters)
    rhs[-1] = 1.0
    return np.linalg.solve(m, rhs)


_STRIDE = len(L.ACCESS_FIELDS) - 4  # where the inner_stride fields start in an access block
assert L.ACCESS_FIELDS[_STRIDE] == "inner_stride_known"


def _with_strides(acc: np.ndarray, address: np.ndarray, step: np.ndarray | None) -> np.ndarray:
    """The access blocks with the inner-stride fields filled in for this schedule."""
    if step is None:
        return acc
    acc = acc.copy()
    stride = np.abs(address @ step)
    n = len(stride)
    acc[:n, _STRIDE] = 1
    acc[:n, _STRIDE + 1] = stride < 1e-9
    acc[:n, _STRIDE + 2] = np.abs(stride - 1) < 1e-9
    acc[:n, _STRIDE + 3] = np.log2(1 + stride)
    return acc


def featurize(state: ProgramState) -> FeatureTree:
    """The feature tree of a scheduled program."""
    part = program_part(state.program)
    order = sorted(state.comps, key=lambda cs: cs.betas)
    comp_vecs, loop_vecs = [], []
    paths = []
    for cs in order:
        acc, fields, n_iters, address = part[cs.comp]
        levels, step = _comp_levels(state, cs, n_iters)
        acc = _with_strides(acc, address, step)
        vec = np.zeros(L.COMP_SIZE, np.float32)
        for d, (_, block) in enumerate(levels):
            vec[d * L.LEVEL_SIZE:(d + 1) * L.LEVEL_SIZE] = block
        vec[L.MAX_DEPTH * L.LEVEL_SIZE:L.MAX_DEPTH * L.LEVEL_SIZE + acc.size] = acc.ravel()
        fields = fields.copy()
        fields[_CF["n_levels"]] = len(levels)
        vec[-len(L.COMP_FIELDS):] = fields
        comp_vecs.append(vec)
        real = [k for k, n in enumerate(cs.loops) if n is not None]
        paths.append(([(cs.betas[k], cs.loops[k]) for k in real], [b for _, b in levels]))

    def build(members: list[int], depth: int) -> tuple[tuple[int, ...], tuple]:
        here, children, groups = [], [], {}
        for c in members:
            keys, _ = paths[c]
            if len(keys) == depth:
                here.append(c)
            else:
                groups.setdefault(keys[depth], []).append(c)
        for _key, group in groups.items():
            loop_vecs.append(paths[group[0]][1][depth])
            idx = len(loop_vecs) - 1
            sub_here, sub_children = build(group, depth + 1)
            children.append((idx, sub_here, sub_children))
        return tuple(here), tuple(children)

    top_here, top = build(list(range(len(order))), 0)
    shape = tuple((-1, (c,), ()) for c in top_here) + top  # computations outside any loop
    # number computations in traversal order, so that trees of one key index alike
    new_index: dict[int, int] = {}

    def renumber(node):
        loop, here, children = node
        here = tuple(new_index.setdefault(c, len(new_index)) for c in here)
        return (loop, here, tuple(renumber(ch) for ch in children))

    shape = tuple(renumber(n) for n in shape)
    comps = np.stack([comp_vecs[old] for old, _ in sorted(new_index.items(), key=lambda kv: kv[1])])
    loops = np.stack(loop_vecs) if loop_vecs else np.zeros((0, L.LOOP_SIZE), np.float32)
    return FeatureTree(comps, loops, shape)
