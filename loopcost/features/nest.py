"""The nest block of a computation vector (layouts 5 to 7): what the generated loop nest does around it.

Three things decide a schedule's speed that the level and access blocks leave for the network to infer, and
that it does not learn from a few thousand programs (issue 22: fused or tiled computations whose guards sit in a hot
loop, inner parallel loops entered millions of times, skewed stencils whose inner loop no longer carries a
dependence all measured 5-20x from the prediction):

- **the nest around it** (``nest_fields``, from the feature tree and each computation's betas): at how many of
  its levels the loop runs more iterations than the computation has (the loop is shared with a computation of a
  larger range, or a level of constant value sits in a loop of another's, so the statement is guarded:
  ``hidden_levels``, since its vector holds its real levels only), how many iterations idle, how far inside the
  innermost guard is, how often its parallel loop is entered, how many computations share its innermost loop;
- **the data its loops touch** (``footprint_fields``, from its vector once tagged): the bytes its accesses
  touch in one run of its innermost 1, 2, ... loops, each access counted over the loops whose iterators it
  reads (a tile loop's trip is its number of tiles, a loop tiled its tile's size), to set against the caches;
- **the dependences its loops carry** (``dependence_fields``, per computation schedule, cached with its
  vector): each self-dependence of the computation as a box of distances over its original iterators
  (``distance_boxes``, once per program), mapped through each level's row of the schedule matrix, says which
  levels may carry it: whether the innermost loop does (gcc will not vectorize it), how many inner loops carry
  none, whether the outermost does.

The dependence fields are exact where the distances are uniform and the loops are plain; a box and a tile loop's
floor widen the intervals, so "carries" reads "may carry".

Layout 7 adds **the loops the generated code keeps** (``level_trips``, per computation schedule, cached with its
vector): how many iterations each level runs per entry. The fields above read a tiled loop's trip as its tile's
size and any other's as its extent; after an interchange that moves a tile loop inside its point loop, the tile
loop runs once (isl drops it from the code, with its parallel, vector or unroll tag) and the point loop its whole
range. The kept fields (``KEPT_FIELDS``, and footprints over the kept loops) are read from the real trips.
"""

from __future__ import annotations

import functools
import math

import islpy as isl
import numpy as np

from ..ir.packing import ELEMENT_BYTES
from ..ir.program import Program
from ..transforms.legality import program_dependences
from . import layout as L

_LF, _NF = L.LEVEL_INDEX, L.NEST_INDEX
#: the fields ``nest_fields`` fills: the first of the block (the dependence fields follow, then the footprints), and
#: those of the kept loops after the real trips
TREE_FIELDS = L.NEST_FIELDS[:L.NEST_INDEX["self_dependences"]]
KEPT_FIELDS = L.NEST_FIELDS[L.NEST_INDEX["dropped_levels"]:L.NEST_INDEX["log2_kept_bytes_inner1"]]
#: where a vector's real trips (``level_trips``) and its footprints start
TRIPS_AT = L.NEST_AT + L.NEST_INDEX["log2_trip_level0"]
BYTES_AT = L.NEST_AT + L.NEST_INDEX["log2_bytes_inner1"]
KEPT_BYTES_AT = L.NEST_AT + L.NEST_INDEX["log2_kept_bytes_inner1"]
_COEF = len(L.LEVEL_FIELDS)
_MATRIX = len(L.ACCESS_FIELDS)
#: the element types with a field of their own (``COMP_FIELDS``)
_DTYPES = tuple(t for t in ELEMENT_BYTES if t in L.COMP_INDEX)
#: a computation's self-dependences: (lowest, highest) distance per original iterator, one row per dependence
Boxes = tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]


def _trips(extent: np.ndarray, tiled: np.ndarray, tile_size: np.ndarray) -> np.ndarray:
    """log2 of each loop's trip count per entry: a tiled loop runs its tile's size, any other its extent."""
    return np.where(tiled > 0, tile_size, extent)


def _bound(v: isl.Val) -> float:
    if v.is_infty():
        return math.inf
    if v.is_neginfty():
        return -math.inf
    return float(v.to_python()) if v.is_int() else float(v.get_num_si()) / float(v.get_den_si())


@functools.lru_cache(maxsize=256)
def distance_boxes(p: Program) -> dict[str, Boxes]:
    """Per computation, the distinct distance boxes of its self-dependences (source and sink the same
    computation), under the original order: one per convex piece of each dependence's distances."""
    out: dict[str, list] = {}
    for dep in program_dependences(p):
        maps: list[isl.Map] = []
        dep.relation.foreach_map(maps.append)
        for m in maps:
            name = m.get_tuple_name(isl.dim_type.in_)
            if name != m.get_tuple_name(isl.dim_type.out):
                continue
            pieces: list[isl.BasicSet] = []
            m.deltas().coalesce().foreach_basic_set(pieces.append)
            for piece in pieces:  # a box per piece: the box of their union would say every level carries
                d = isl.Set.from_basic_set(piece)
                n = d.dim(isl.dim_type.set)
                box = (tuple(_bound(d.dim_min_val(k)) for k in range(n)),
                       tuple(_bound(d.dim_max_val(k)) for k in range(n)))
                if box not in out.setdefault(name, []):
                    out[name].append(box)
    return {k: tuple(v) for k, v in out.items()}


def _interval(row: tuple[float, ...], lo: tuple[float, ...], hi: tuple[float, ...]) -> tuple[float, float]:
    """The range of ``row . d`` over the box ``lo <= d <= hi``, widened to whole numbers (a tile loop's floor)."""
    a = b = 0.0
    for r, x, y in zip(row, lo, hi, strict=False):
        if r:
            a += r * (x if r > 0 else y)
            b += r * (y if r > 0 else x)
    return math.floor(a), math.ceil(b)


def dependence_fields(rows: list[tuple[float, ...]], boxes: Boxes) -> dict[str, float]:
    """The dependence fields of a computation whose real levels have the schedule rows ``rows`` (outermost
    first, over its original iterators) and whose self-dependences have the distance ``boxes``."""
    if not rows:
        return {}
    carries = [False] * len(rows)
    for lo, hi in boxes:
        outer_zero = True  # every outer level may leave this dependence's instances in one iteration
        for d, row in enumerate(rows):
            a, b = _interval(row, lo, hi)
            if outer_zero and (a, b) != (0, 0):
                carries[d] = True
            outer_zero = outer_zero and a <= 0 <= b
            if not outer_zero:
                break
    free = next((k for k, c in enumerate(reversed(carries)) if c), len(rows))
    return {"self_dependences": len(boxes), "inner_carries": carries[-1], "outer_carries": carries[0],
            "free_inner_levels": free}


#: a computation's schedule as the nest sees it: its betas and the name of its loop at each level (None: a level
#: of constant value)
Placement = tuple[tuple[int, ...], tuple[str | None, ...]]


@functools.lru_cache(maxsize=4096)
def hidden_levels(placements: tuple[Placement | None, ...]) -> tuple[tuple[tuple[int, tuple[tuple[int, int], ...]],
                                                                     ...], ...]:
    """Per computation, the levels where it has no loop of its own but sits in another's: isl scans it inside
    that loop at its constant value, under a guard (``if (c3 == 0)``: a reduction's initialization left in the
    tile loops of its reduction level), which its own levels do not show. One computation sits in another's
    loop at level ``k`` where their betas agree up to ``k`` and, at every level outside it, they name the same
    loop or one of them has none there. Each such level as (how many of the computation's real levels lie
    inside it, the (computation, real level number) of each loop it sits in); none for a placement of None."""
    out = []
    for a in placements:
        hidden = []
        for k, name in enumerate(a[1] if a else ()):
            if name is not None:
                continue
            hosts = tuple((b, sum(1 for x in p[1][:k] if x is not None)) for b, p in enumerate(placements)
                          if p and p[1][k] is not None and p[0][:k + 1] == a[0][:k + 1]
                          and all(x == y or x is None or y is None
                                  for x, y in zip(a[1][:k], p[1][:k], strict=True)))
            if hosts:
                hidden.append((sum(1 for x in a[1][k + 1:] if x is not None), hosts))
        out.append(tuple(hidden))
    return tuple(out)


#: the fields of a computation vector that ``nest_fields`` reads: per level its extent, parallel and tiled tags,
#: tile size and vector tag, then each level's real trip, then the number of levels
_PER_LEVEL = ("log2_extent", "parallel", "tiled", "log2_tiled_size", "vector")
_READ = np.array([d * L.LEVEL_SIZE + _LF[f] for d in range(L.MAX_DEPTH) for f in _PER_LEVEL]
                 + [TRIPS_AT + d for d in range(L.MAX_DEPTH)] + [L.FIELDS_AT + L.COMP_INDEX["n_levels"]])


def nest_fields(comps: np.ndarray, shape: tuple, placements: tuple[Placement | None, ...]) -> np.ndarray:
    """(computations, ``TREE_FIELDS`` then ``KEPT_FIELDS``): the nest fields of each computation of a feature tree
    that the tree or its loop tags tell, ``comps`` its vectors (with their loop tags), ``shape`` its loop tree,
    ``placements`` each row's schedule (None for a pack's copy), for the loops it sits in without levels of its
    own (``hidden_levels``)."""
    read = np.ascontiguousarray(comps[:, _READ])
    return _nest_fields(read.tobytes(), len(comps), shape, placements)


@functools.lru_cache(maxsize=16384)
def _nest_fields(read: bytes, n: int, shape: tuple, placements: tuple[Placement | None, ...]) -> np.ndarray:
    """``nest_fields`` of the fields ``_READ`` of ``n`` computations (a search's candidates share them)."""
    fields = np.frombuffer(read, np.float32).reshape(n, len(_READ))
    levels = fields[:, :L.MAX_DEPTH * len(_PER_LEVEL)].reshape(n, L.MAX_DEPTH, len(_PER_LEVEL))
    extent = levels[:, :, 0].tolist()
    trip = _trips(levels[:, :, 0], levels[:, :, 2], levels[:, :, 3]).tolist()
    parallel = (levels[:, :, 1] > 0).tolist()
    vector = (levels[:, :, 4] > 0).tolist()
    real = fields[:, L.MAX_DEPTH * len(_PER_LEVEL):-1].tolist()
    depth = fields[:, -1].astype(int).tolist()
    loop_extent = [row[:] for row in extent]
    sharers = [[1] * L.MAX_DEPTH for _ in range(n)]

    def walk(node: tuple, d: int) -> list[int]:
        loop, here, kids = node
        members = list(here) + [m for k in kids for m in walk(k, d + 1)]
        if loop != -1 and d < L.MAX_DEPTH:
            widest = max(extent[m][d] for m in members)
            for m in members:
                loop_extent[m][d] = widest
                sharers[m][d] = len(members)
        return members

    for node in shape:
        walk(node, 0)
    out = np.zeros((n, len(TREE_FIELDS) + len(KEPT_FIELDS)), np.float32)
    kept_at = {f: len(TREE_FIELDS) + j for j, f in enumerate(KEPT_FIELDS)}
    for m, (k, hidden) in enumerate(zip(depth, hidden_levels(placements), strict=True)):
        # guards on its own levels (a loop wider than its range) and on levels it has none of (``hidden_levels``:
        # the host loop's trip idles)
        gap = [loop_extent[m][d] - extent[m][d] for d in range(k)]
        gap += [max(trip[b][j] for b, j in hosts) for _, hosts in hidden]
        guarded = [d for d in range(k) if gap[d] > 1e-6]
        depths = ([k - guarded[-1]] if guarded else []) + [inside + 1 for inside, _ in hidden]
        row = out[m]
        row[_NF["guarded_levels"]] = len(guarded) + len(hidden)
        row[_NF["log2_idle_iterations"]] = sum(gap)
        row[_NF["guard_depth"]] = min(depths, default=0)
        row[_NF["fused_levels"]] = sum(1 for d in range(k) if sharers[m][d] > 1) + len(hidden)
        if k == 0:
            continue
        par = next((d for d in range(k) if parallel[m][d]), None)
        if par is not None:
            row[_NF["parallel"]] = 1
            row[_NF["log2_parallel_entries"]] = sum(trip[m][:par])
        row[_NF["inner_sharers"]] = sharers[m][k - 1]
        row[_NF["log2_inner_trip"]] = trip[m][k - 1]
        kept = [d for d in range(k) if real[m][d] > 1e-6]
        row[kept_at["dropped_levels"]] = k - len(kept)
        par = next((d for d in kept if parallel[m][d]), None)
        if par is not None:
            row[kept_at["kept_parallel"]] = 1
            row[kept_at["log2_kept_parallel_entries"]] = sum(real[m][:par])
        row[kept_at["kept_vector"]] = any(vector[m][d] for d in kept)
        row[kept_at["log2_kept_inner_trip"]] = real[m][kept[-1]] if kept else 0.0
    out.flags.writeable = False
    return out


def _touched(depends: np.ndarray, trip: np.ndarray, element: int) -> np.ndarray:
    """(MAX_DEPTH,): log2 of the bytes the accesses (rows of ``depends``, over the loops) touch in one run of the
    innermost 1, 2, ... of those loops (log2 trips ``trip``); past their number, all of them."""
    out = np.zeros(L.MAX_DEPTH, np.float32)
    n = len(trip)
    if not depends.shape[0]:
        return out
    inner = np.cumsum((depends * trip)[:, ::-1], axis=1)                                   # innermost k levels
    touched = np.log2(np.exp2(np.concatenate([np.zeros((len(inner), 1)), inner], axis=1)).sum(0) * element)
    out[:n] = touched[1:]
    out[n:] = touched[-1]
    return out


@functools.lru_cache(maxsize=16384)
def footprint(vec: bytes, real: bytes) -> np.ndarray:
    """(2 MAX_DEPTH,): the footprint fields of a computation vector from its first ``NEST_AT`` fields (``vec``,
    its bytes: a cache key) and its real trips (``real``, ``level_trips``): over its levels with the trips the
    nest fields read, then over the levels the code keeps with their real trips."""
    v = np.frombuffer(vec, np.float32)
    n = int(v[L.FIELDS_AT + L.COMP_INDEX["n_levels"]])
    out = np.zeros(2 * L.MAX_DEPTH, np.float32)
    if n == 0:
        return out
    levels = v[:L.ACCESSES_AT].reshape(L.MAX_DEPTH, L.LEVEL_SIZE)[:n]
    trip = _trips(levels[:, _LF["log2_extent"]], levels[:, _LF["tiled"]], levels[:, _LF["log2_tiled_size"]])
    real_trip = np.frombuffer(real, np.float32)[:n]
    support = levels[:, _COEF:_COEF + L.MAX_ITERS] != 0                                   # (levels, iters)
    acc = v[L.ACCESSES_AT:L.FIELDS_AT].reshape(L.MAX_ACCESSES, L.ACCESS_SIZE)
    acc = acc[acc[:, L.ACCESS_INDEX["present"]] > 0]
    reads = (acc[:, _MATRIX:].reshape(len(acc), L.MAX_RANK, L.MAX_ITERS + 1)[:, :, :L.MAX_ITERS] != 0).any(1)
    depends = (reads.astype(np.int32) @ support.T.astype(np.int32)) > 0                  # (accesses, levels)
    element = next((ELEMENT_BYTES[t] for t in _DTYPES if v[L.FIELDS_AT + L.COMP_INDEX[t]]), 4)
    kept = real_trip > 1e-6
    out[:L.MAX_DEPTH] = _touched(depends, trip, element)
    out[L.MAX_DEPTH:] = _touched(depends[:, kept], real_trip[kept], element)
    out.flags.writeable = False
    return out


def footprint_fields(comps: np.ndarray) -> np.ndarray:
    """(computations, 2 MAX_DEPTH): log2 of the bytes each computation's accesses touch in one run of its
    innermost 1, 2, ... loops, from its vectors (with their loop tags): over its levels (``log2_bytes_inner``),
    then over the levels the code keeps (``log2_kept_bytes_inner``)."""
    return np.stack([footprint(c[:L.NEST_AT].tobytes(), c[TRIPS_AT:TRIPS_AT + L.MAX_DEPTH].tobytes())
                     for c in comps])


def clear_caches() -> None:
    """Forget the nest fields read of schedules (the programs' distance boxes stay)."""
    footprint.cache_clear()
    _nest_fields.cache_clear()
    hidden_levels.cache_clear()
