"""Loop orders chosen by memory cost: analytical seeds for a search whose model misses them.

A cost model that never saw a kernel's family can miss the loop order that makes its innermost loop
walk memory with stride 1 (conv2d, AMD EPYC: execution-based search found 6.85x by moving ``x`` innermost
under ``c`` and ``ky``, three interchanges from the model's schedules, which reached 2.9x in 64
measurements). The classic answer (Kennedy and McKinley's loop cost, "memory order") needs no model: the
innermost loop should be the one whose accesses cost the fewest cache lines per iteration. ``seeds`` sinks
that loop innermost in each computation (the other loops keep their order: adjacent interchanges) and
parallelizes each nest's outermost loop where that is legal; an adaptive search measures them first, and
its refinement (register blocks, neighbors) builds on them where they measure fastest.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..ir.affine import Affine
from ..ir.packing import ELEMENT_BYTES
from ..ir.quasi import unwrap
from ..ir.state import ProgramState
from ..transforms.base import Transformation
from ..transforms.fusion import Fuse
from ..transforms.reorder import Interchange
from ..transforms.schedule import Schedule
from ..transforms.tags import Parallelize
from .blocks import trips

#: bytes of a cache line: a stride-1 access touches a new line every ``LINE / element`` iterations
LINE = 64


def access_cost(index: tuple[Affine, ...], it: str, trip: int, element: int) -> float:
    """Cache lines an access touches per iteration of the loop over original iterator ``it`` (``trip``
    iterations): ``1 / trip`` where the access does not move with it, ``element / LINE`` where only its
    last index moves, by one element, and 1 (a new line every iteration) otherwise."""
    moving = [k for k, a in enumerate(index) if a.coeff(it)]
    if not moving:
        return 1.0 / max(trip, 1)
    if moving == [len(index) - 1] and abs(index[-1].coeff(it)) == 1:
        return element / LINE
    return 1.0


def most_trips(state: ProgramState, comp: str, loop: str) -> int | None:
    """The most times ``comp``'s loop ``loop`` runs each time it is entered: ``trips`` where its bounds are
    constant; where they move with the loops around it (a triangular ``j`` from ``i`` to ``m``), the most
    that ``upper - lower`` reaches over the ranges of those loops (interval bounds, outermost first); None
    where its level is not one original loop."""
    if (known := trips(state, loop)) is not None:
        return known
    cs = state.comp(comp)
    original = unwrap(cs.levels[cs.level_of(loop)])
    ranges: dict[str, tuple[int, int]] = {}
    for lp in state.program.enclosing_loops(comp):
        if any(v not in ranges for v in (*lp.lower.variables, *lp.upper.variables)):
            return None
        if lp.name == original:
            return max(0, -_least(lp.lower - lp.upper, ranges))
        ranges[lp.name] = (_least(lp.lower, ranges), -_least(-lp.upper, ranges) - 1)
    return None


def _least(a: Affine, ranges: dict[str, tuple[int, int]]) -> int:
    """The least value of ``a`` with each iterator anywhere in its inclusive range."""
    return a.const + sum(c * ranges[v][0 if c > 0 else 1] for v, c in a.terms)


def innermost_by_cost(state: ProgramState, comp: str) -> str | None:
    """The loop of computation ``comp`` whose accesses cost the fewest cache lines per iteration (ties: the
    innermost of them), among its loops that move with one original iterator over a known most trip count
    (``most_trips``: a triangular loop's too); None where there is no such loop."""
    cs = state.comp(comp)
    c = state.program.computation(comp)
    accesses = list({(a.buffer, a.index): a for a in [c.target, *c.reads()]}.values())
    best: tuple[float, int, str] | None = None
    for q, (name, its) in enumerate(zip(cs.loops, state.moves_with(cs), strict=True)):
        if name is None or len(its) != 1 or (trip := most_trips(state, comp, name)) is None:
            continue
        it = next(iter(its))
        cost = sum(access_cost(a.index, it, trip, ELEMENT_BYTES[state.program.buffer(a.buffer).dtype])
                   for a in accesses)
        if best is None or (cost, -q) <= (best[0], -best[1]):
            best = (cost, q, name)
    return best[2] if best else None


def _sink(state: ProgramState, comp: str, q: int) -> list[Transformation]:
    """Adjacent interchanges that move ``comp``'s loop at level ``q`` innermost, the others keeping their order."""
    cs = state.comp(comp)
    names = [n for n in cs.loops if n is not None]
    return [Interchange(cs.loops[q], after) for after in names[q + 1:]]


def _sunk(root: ProgramState, schedule: Schedule, comp: str) -> Schedule:
    """``schedule`` with ``comp``'s cheapest loop (``innermost_by_cost``) sunk innermost where legal; where
    another computation shares that loop (an initialization of the same array, run before the loop nest),
    it is first distributed from it at that loop's level (gemm: ``F(S0,S1,1) I(j_1,k)``)."""
    state = schedule.apply(root)
    cs = state.comp(comp)
    if (loop := innermost_by_cost(state, comp)) is None:
        return schedule
    q = cs.level_of(loop)
    if not (sink := _sink(state, comp, q)):
        return schedule
    if (longer := _try(root, schedule, sink)) != schedule:
        return longer
    for other in (c.comp for c in state.comps if c.comp != comp and loop in c.loops):
        apart = schedule + Fuse(other, comp, q)
        try:
            moved = apart.apply(root)
        except ScheduleError:
            continue
        if (longer := _try(root, apart, _sink(moved, comp, q))) != apart:
            return longer
    return schedule


def _try(root: ProgramState, schedule: Schedule, steps: list[Transformation]) -> Schedule:
    """``schedule`` with ``steps`` added where the whole is legal, else ``schedule``."""
    longer = schedule + Schedule(tuple(steps))
    try:
        longer.apply(root)
    except ScheduleError:
        return schedule
    return longer


def seeds(root: ProgramState) -> list[Schedule]:
    """Memory-order schedules of ``root``: each computation's cheapest loop sunk innermost where legal (the
    deepest computations first), then that with each computation's outermost loop that may run in
    parallel made parallel (a time loop stays sequential and the loop inside it becomes parallel, one
    parallel loop a computation); those that differ from the unscheduled program, each once."""
    order = Schedule()
    for cs in sorted(root.comps, key=lambda c: -sum(n is not None for n in c.loops)):
        order = _sunk(root, order, cs.comp)
    parallel = order
    for cs in root.comps:
        state = parallel.apply(root)
        loops = [n for n in state.comp(cs.comp).loops if n is not None]
        if any(state.tag_of(n, "parallel") is not None for n in loops):
            continue
        for loop in loops:
            if (longer := _try(root, parallel, [Parallelize(loop)])) != parallel:
                parallel = longer
                break
    return [s for s in dict.fromkeys((order, parallel)) if s.steps]
