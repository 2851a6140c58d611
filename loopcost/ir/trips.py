"""How many iterations each loop level runs each time it is entered, and the loops that run one.

A schedule can leave a loop with one iteration per entry: a tile loop moved inside its own point loop
(``T2(i,j,32,32) I(i_t,i)``), the outer loop of an unroll-and-jam moved inside the loop it strips
(``J(j,2) I(i,j)``), a tile loop over a range no larger than its tile. isl prints no loop for such a level,
and drops its parallel, vector or unroll tag with it. The features read these trips (layout 7: the loops the
code keeps, ``features.nest``) and the space of schedules proposes no such tag (``transforms.space``).
"""

from __future__ import annotations

import functools
import math

from . import quasi
from .program import Computation, Loop
from .state import CompSchedule, ProgramState

#: a computation's iteration domain as a box: each iterator's inclusive bounds, outermost first
Box = tuple[tuple[int, int], ...]
#: the extent given to a level whose extent is not known: it bounds nothing
_UNKNOWN_EXTENT = float(2 ** 62)


def box_of(c: Computation, loops: tuple[Loop, ...]) -> Box | None:
    """Each loop's inclusive bounds when ``c``'s domain is a non-empty box (constant bounds, no guards)."""
    if c.guards or any(lp.lower.terms or lp.upper.terms or lp.lower.const >= lp.upper.const for lp in loops):
        return None
    return tuple((lp.lower.const, lp.upper.const - 1) for lp in loops)


def level_trips(levels: tuple[tuple[float, tuple[float, ...]], ...],
                box: Box | None) -> tuple[float, ...]:
    """log2 of the iterations each loop level runs per entry, from each real level's (extent over the domain,
    row of coefficients over the original iterators), outermost first, and each iterator's inclusive bounds
    (``box``; None where the domain is not a box). A level's value is ``floor(a . x / D)``, ``a`` its row scaled
    to whole numbers (the smallest 1): an outer level of the same ``a`` (up to sign) and no larger ``D`` fixes it
    (a tile loop inside its point loop runs once), a larger ``D`` bounds it by the ratio (a point loop inside its
    tile loop runs the tile); outer point loops of one iterator each fix that iterator, leaving the range of the
    rest. Exact for tilings, interchanges and splits of a box; an upper bound elsewhere (a skewed loop's trip at
    its widest entry), the extent where the row is not known."""
    out: list[float] = []
    outer: list[tuple[tuple[int, ...], float]] = []  # (a, D) of the levels outside
    fixed: set[int] = set()
    for extent, coef in levels:
        trip = math.log2(extent) if extent > 0 else 0.0
        nz = [k for k, x in enumerate(coef) if abs(x) > 1e-9]
        least = min((abs(coef[k]) for k in nz), default=1.0)
        scaled = [x / least for x in coef]
        if nz and all(abs(x - round(x)) < 1e-6 for x in scaled):
            a, size = tuple(round(x) for x in scaled), 1 / least
            minus = tuple(-x for x in a)
            for b, outer_size in outer:
                if b in (a, minus):
                    ratio = outer_size / size
                    trip = 0.0 if ratio < 1 + 1e-9 else min(trip, math.log2(math.ceil(ratio - 1e-9)))
            if box is not None and fixed.intersection(nz):
                span = sum(abs(a[k]) * (box[k][1] - box[k][0]) for k in nz if k not in fixed)
                trip = min(trip, math.log2(math.ceil(span / size - 1e-9) + 1))
            outer.append((a, size))
            if len(nz) == 1 and abs(size - 1) < 1e-9:
                fixed.add(nz[0])
        out.append(max(trip, 0.0))
    return tuple(out)


@functools.lru_cache(maxsize=16384)
def _single_trip_levels(cs: CompSchedule, index: tuple[str, ...], box: Box | None) -> frozenset[str]:
    """The loops of ``cs`` (its original iterators ``index``) that the rule of ``level_trips`` says run one
    iteration per entry, its levels read from their text; none where a level is outside ``quasi``'s grammar
    or its coefficients are not exact. A level's extent is read only over a box (elsewhere only an outer level
    of the same row can fix it)."""
    at = {name: k for k, name in enumerate(index)}
    levels = []
    names = []
    for name, text in zip(cs.loops, cs.levels, strict=True):
        if name is None:
            continue
        read = quasi.read(quasi.unwrap(text), at, box)
        if read is None:
            return frozenset()
        extent, coef = read
        levels.append((_UNKNOWN_EXTENT if extent is None else extent, coef))
        names.append(name)
    return frozenset(n for n, trip in zip(names, level_trips(tuple(levels), box), strict=True) if trip == 0.0)


def single_trip_loops(state: ProgramState) -> frozenset[str]:
    """The loops that run one iteration each time they are entered, in every computation they enclose (so the
    generated code has no loop there): a tag on one changes nothing."""
    doms = {c.name: (tuple(lp.name for lp in loops), box_of(c, loops))
            for c, loops in state.program.walk_computations()}
    once: dict[str, bool] = {}
    for cs in state.comps:
        if not cs.levels:
            continue
        single = _single_trip_levels(cs, *doms[cs.comp])
        for name in cs.real_loops:
            once[name] = once.get(name, True) and name in single
    return frozenset(n for n, v in once.items() if v)
