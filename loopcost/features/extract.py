"""Featurize a scheduled program: computation vectors, loop vectors and the loop tree.

The program part (accesses, operations) is computed once per program object.
A schedule adds its level blocks and tree: each loop level is read once
(from its text where the domain is a box, see ``quasi``, else with isl) and
each computation's vector once per distinct schedule of that computation, so
the candidates of a search, which share most levels and computations, cost
little more than their loop tags and tree. Both read the same
``ProgramState`` that code generation reads.
"""

from __future__ import annotations

import functools
import math
import operator
import weakref
from dataclasses import dataclass
from fractions import Fraction

import islpy as isl
import numpy as np

from ..ir import quasi
from ..ir.expr import BinOp, Call, Const, IterValue, reads, walk
from ..ir.functions import CASTS
from ..ir.polyhedral import domain_str, points
from ..ir.program import Program
from ..ir.state import LoopTag, ProgramState
from ..ir.trips import box_of, level_trips
from . import layout as L
from . import nest
from .domain import DomainShape, domain_shape, level_flags
from .layout import FeatureLimitError
from .nest import Boxes, dependence_fields, distance_boxes, footprint_fields, nest_fields
from .packs import with_packs

_OP_FIELD = {"+": "n_add", "-": "n_sub", "*": "n_mul", "/": "n_div", "%": "n_div"}

_LF, _AF, _CF, _DF = L.LEVEL_INDEX, L.ACCESS_INDEX, L.COMP_INDEX, L.DOMAIN_INDEX
_BETAS = operator.attrgetter("betas")


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
                f[_CF[_OP_FIELD.get(n.op, "n_add")]] += 1  # shifts and bit operations: as cheap as an add
            elif isinstance(n, Call) and n.fn not in CASTS:
                f[_CF["n_minmax" if n.fn in ("min", "max") else "n_math"]] += 1
            elif isinstance(n, Const | IterValue):  # a value no memory access brings
                f[_CF["n_consts"]] += 1
        f[_CF["n_reads"]] = len(accesses) - 1
        f[_CF["reduction"]] = c.reduction is not None
        f[_CF["reduction_add"]] = c.reduction == "+"
        f[_CF["reduction_mul"]] = c.reduction == "*"
        dtype = p.buffer(c.target.buffer).dtype
        f[_CF[L.FEATURE_DTYPE.get(dtype, dtype)]] = 1
        f[_CF["n_iters"]] = len(iters)
        f[_CF["log2_points"]] = _log2(points(domain_str(c, loops)))
        out[c.name] = (acc, f, len(iters), address)
    return out


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


@dataclass(frozen=True, eq=False)
class _Comp:
    """One computation of one program object, as its levels are read: its domain (isl text and, for a box,
    each iterator's inclusive bounds), its iterators' positions and its program part."""

    program: str
    name: str
    domain: str
    index: dict[str, int]
    box: tuple[tuple[int, int], ...] | None
    acc: np.ndarray
    fields: np.ndarray
    address: np.ndarray
    boxes: Boxes                # its self-dependences' distance boxes (``nest.distance_boxes``)
    shape: DomainShape          # how its domain differs from a box (``features.domain``)


#: per live program object (by id, so that a program is not hashed per schedule): its computations
_PROGRAMS: dict[int, tuple[weakref.ref, dict[str, _Comp]]] = {}


def _comps_of(p: Program) -> dict[str, _Comp]:
    """The ``_Comp`` of each computation of ``p``, computed once per program object."""
    hit = _PROGRAMS.get(id(p))
    if hit is not None and hit[0]() is p:
        return hit[1]
    part = program_part(p)
    boxes = distance_boxes(p)
    out = {}
    for c, loops in p.walk_computations():
        acc, fields, _, address = part[c.name]
        domain = domain_str(c, loops)
        out[c.name] = _Comp(p.name, c.name, domain, {lp.name: k for k, lp in enumerate(loops)},
                            box_of(c, loops), acc, fields, address, boxes.get(c.name, ()),
                            domain_shape(c, loops, domain))
    key = id(p)
    _PROGRAMS[key] = (weakref.ref(p, lambda _: _PROGRAMS.pop(key, None)), out)
    return out


@functools.lru_cache(maxsize=65536)
def _level_without_isl(comp: _Comp, expr: str) -> tuple[float, tuple[float, ...]] | None:
    """``_level`` read from the text alone (see ``quasi``), or None where only isl can tell."""
    return None if comp.box is None else _level_of_text(comp, quasi.unwrap(expr))


@functools.lru_cache(maxsize=65536)
def _level_of_text(comp: _Comp, expr: str) -> tuple[float, tuple[float, ...]] | None:
    """``_level_without_isl`` of a text without redundant parentheses (shared by more schedules)."""
    read = quasi.read(expr, comp.index, comp.box)
    return None if read is None or read[0] is None else read


def _read_level(comp: _Comp, expr: str) -> tuple[float, tuple[float, ...]]:
    return _level_without_isl(comp, expr) or _level(comp.domain, expr, len(comp.index))


@dataclass(frozen=True)
class _Scheduled:
    """A computation's vector under one schedule, before loop tags, and its real loop levels."""

    vec: np.ndarray             # (COMP_SIZE,), read-only: shared by every tree that has this schedule
    real: tuple[int, ...]       # indices of the real levels among the schedule's levels
    names: tuple[str, ...]      # their loop names
    step: np.ndarray | None     # the direction the innermost loop steps in (``_inner_step``)


@functools.lru_cache(maxsize=16384)
def _scheduled(comp: _Comp, loops: tuple[str | None, ...], levels: tuple[str, ...], loop_map: str) -> _Scheduled:
    """``comp`` under the schedule that names its loops ``loops`` and gives its ``levels`` (else the
    whole ``loop_map``)."""
    if levels:
        read = tuple(_read_level(comp, e) if name is not None else (0.0, ())
                     for name, e in zip(loops, levels, strict=True))
    else:
        read = _levels(comp.domain, loop_map, len(comp.index))
    real = tuple(k for k, name in enumerate(loops) if name is not None)
    if len(real) > L.MAX_DEPTH:
        raise FeatureLimitError(f"{comp.program}: computation {comp.name} has {len(real)} loop levels after "
                                f"scheduling; the features allow {L.MAX_DEPTH}")
    levels = tuple(read[k] for k in real)
    return _Scheduled(_vector(comp, levels), real, tuple(loops[k] for k in real),
                      _inner_step([coef for _, coef in levels], len(comp.index)))


@functools.lru_cache(maxsize=16384)
def _vector(comp: _Comp, levels: tuple[tuple[float, tuple[float, ...]], ...]) -> np.ndarray:
    """The vector of ``comp`` whose real loop levels have these (extent, coefficients), without loop tags:
    its level blocks, its access blocks with their inner strides, its fields, the dependences its levels
    carry (the rest of its nest block needs the whole tree: ``featurize`` fills it), its domain block."""
    vec = np.zeros(L.COMP_SIZE, np.float32)
    vec[L.DOMAIN_AT + _DF["log2_fill"]] = comp.shape.log2_fill
    for d, (extent, coef) in enumerate(levels):
        at = d * L.LEVEL_SIZE
        vec[at + _LF["present"]] = 1
        vec[at + _LF["log2_extent"]] = _log2(extent)
        vec[at + len(L.LEVEL_FIELDS):at + len(L.LEVEL_FIELDS) + len(coef)] = coef
        if comp.shape.varying:  # a box's domain block is all zeros
            varying, bounding = level_flags(comp.shape, coef)
            vec[L.DOMAIN_AT + _DF[f"varying_level{d}"]] = varying
            vec[L.DOMAIN_AT + _DF[f"bounding_level{d}"]] = bounding
    acc = _with_strides(comp.acc, comp.address, _inner_step([coef for _, coef in levels], len(comp.index)))
    vec[L.ACCESSES_AT:L.ACCESSES_AT + acc.size] = acc.ravel()
    vec[L.FIELDS_AT:L.NEST_AT] = comp.fields
    vec[L.FIELDS_AT + _CF["n_levels"]] = len(levels)
    for name, value in dependence_fields([coef for _, coef in levels], comp.boxes).items():
        vec[L.NEST_AT + L.NEST_INDEX[name]] = value
    vec[nest.TRIPS_AT:nest.TRIPS_AT + len(levels)] = level_trips(levels, comp.box)
    vec.flags.writeable = False
    return vec


#: per tag kind: the level field it sets to 1, and the field that takes its factor (the skew factor as it is,
#: the others' log2)
_TAG_FIELDS: dict[str, tuple[str, str | None]] = {
    "parallel": ("parallel", None), "vector": ("vector", "log2_vector_width"),
    "unroll": ("unroll", "log2_unroll_factor"), "tile": ("tile_loop", "log2_tile_size"),
    "tiled": ("tiled", "log2_tiled_size"), "interchanged": ("interchanged", None),
    "skewed": ("skewed", "skew_factor"), "reversed": ("reversed", None),
    # the layout has no field of its own for a jammed loop: it is an unrolled one (fully, by its factor)
    "jam": ("unroll", "log2_unroll_factor"),
}


def _tag_fields(tags: tuple[LoopTag, ...]) -> dict[str, list[tuple[int, float]]]:
    """Per tagged loop name: the (level field, value) pairs its tags set, in tag order."""
    out: dict[str, list[tuple[int, float]]] = {}
    for t in tags:
        if t.kind not in _TAG_FIELDS:  # a pack has no level field: its copy and reads show it (``packs``)
            continue
        flag, field = _TAG_FIELDS[t.kind]
        entries = out.setdefault(t.loop, [])
        entries.append((_LF[flag], 1.0))
        if field is not None:
            entries.append((_LF[field], float(t.factor) if field == "skew_factor" else _log2(t.factor)))
    return out


def _tagged(s: _Scheduled, tags: dict[str, list[tuple[int, float]]]) -> np.ndarray:
    """The computation's vector with its loops' tags set."""
    if not any(name in tags for name in s.names):
        return s.vec
    vec = s.vec.copy()
    for d, name in enumerate(s.names):
        for field, value in tags.get(name, ()):
            vec[d * L.LEVEL_SIZE + field] = value
    return vec


def _inner_step(coefs: list[tuple[float, ...]], n_iters: int) -> np.ndarray | None:
    """Solve for the direction ``d`` in iterator space along which the innermost loop steps: every outer
    point loop stays put, the innermost advances by one. Tile loops (fractional coefficients) are constant
    within a tile and left out; so are loops of constant value."""
    rows = tuple(c for c in coefs if any(c) and all(float(x).is_integer() for x in c))
    if n_iters == 0 or len(rows) != n_iters or rows[-1] != coefs[-1]:
        return None
    return _unit_step(rows)


@functools.lru_cache(maxsize=4096)
def _unit_step(rows: tuple[tuple[float, ...], ...]) -> np.ndarray | None:
    """``d`` with ``rows @ d`` zero but for a last 1 (read-only), or None when the rows are singular."""
    m = np.array(rows, float)
    if abs(np.linalg.det(m)) < 0.5:
        return None
    rhs = np.zeros(len(rows))
    rhs[-1] = 1.0
    step = np.linalg.solve(m, rhs)
    step.flags.writeable = False
    return step


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


@functools.lru_cache(maxsize=4096)
def _tree(paths: tuple[tuple[tuple[int, str], ...], ...]) -> tuple[tuple[int, ...], tuple,
                                                                   tuple[np.ndarray, np.ndarray]]:
    """The loop tree of computations whose real levels are ``paths`` ((beta, loop name) per level,
    outermost first): the computations in traversal order (numbered so that trees of one key index
    alike), the tree's shape, and where each loop's vector is (its first computation's position in
    that order, its depth)."""
    order: list[int] = []
    loops: list[tuple[int, int]] = []

    def build(members: list[int], depth: int) -> tuple[tuple[int, ...], tuple]:
        groups: dict[tuple[int, str], list[int]] = {}
        here = []
        for c in members:
            if len(paths[c]) == depth:
                here.append(len(order))
                order.append(c)
            else:
                groups.setdefault(paths[c][depth], []).append(c)
        children = []
        for group in groups.values():
            loops.append((group[0], depth))
            idx = len(loops) - 1
            children.append((idx, *build(group, depth + 1)))
        return tuple(here), tuple(children)

    top_here, top = build(list(range(len(paths))), 0)
    shape = tuple((-1, (c,), ()) for c in top_here) + top  # computations outside any loop
    at = {c: k for k, c in enumerate(order)}
    return tuple(order), shape, (np.array([at[c] for c, _ in loops], np.intp), np.array([d for _, d in loops], np.intp))


def featurize(state: ProgramState) -> FeatureTree:
    """The feature tree of a scheduled program."""
    comps = _comps_of(state.program)
    tags = _tag_fields(state.tags)
    vecs, paths, steps = [], [], []
    ordered = sorted(state.comps, key=_BETAS)
    for cs in ordered:
        s = _scheduled(comps[cs.comp], cs.loops, cs.levels, "" if cs.levels else cs.loop_map)
        vecs.append(_tagged(s, tags) if tags else s.vec)
        paths.append(tuple((cs.betas[k], cs.loops[k]) for k in s.real))
        steps.append(s.step)
    if any(t.kind == "pack" for t in state.tags):
        vecs, paths = with_packs(state, ordered, vecs, paths, steps)
    order, shape, loops = _tree(tuple(paths))
    stacked = np.stack([vecs[c] for c in order])
    placements = tuple((ordered[c].betas, ordered[c].loops) if c < len(ordered) else None for c in order)
    tree_fields = nest_fields(stacked, shape, placements)
    n_tree = len(nest.TREE_FIELDS)
    stacked[:, L.NEST_AT:L.NEST_AT + n_tree] = tree_fields[:, :n_tree]
    kept_at = L.NEST_AT + L.NEST_INDEX[nest.KEPT_FIELDS[0]]
    stacked[:, kept_at:kept_at + len(nest.KEPT_FIELDS)] = tree_fields[:, n_tree:]
    footprints = footprint_fields(stacked)
    stacked[:, nest.BYTES_AT:nest.BYTES_AT + L.MAX_DEPTH] = footprints[:, :L.MAX_DEPTH]
    stacked[:, nest.KEPT_BYTES_AT:nest.KEPT_BYTES_AT + L.MAX_DEPTH] = footprints[:, L.MAX_DEPTH:]
    levels = stacked[:, :L.MAX_DEPTH * L.LEVEL_SIZE].reshape(len(order), L.MAX_DEPTH, L.LEVEL_SIZE)
    return FeatureTree(stacked, levels[loops], shape)


def clear_caches() -> None:
    """Forget what was read of schedules (the programs' own parts stay): for timing new schedules."""
    for cache in (_levels, _level, _level_without_isl, _level_of_text, _scheduled, _vector, _unit_step,
                  _tree):
        cache.cache_clear()
    nest.clear_caches()
