"""Packing, seen by isl: the box of a buffer's elements that the statements inside a loop read during one
run of the loop, as functions of the loops around it.

A run of loop ``L`` is fixed by the time dimensions before ``L``'s (``t0 .. t{2q}`` for ``L`` at level
``q``). The box's low and high ends in each dimension of the buffer are piecewise affine functions of
those, named ``c0, c1, ...`` as isl names the iterators of the loops it generates, and its extents are
constants: the most any run reads. The copy lays the box's dimensions out in the order the loops inside
read them (``copy_layout``): the one moved by the innermost loop last, so that the readers step through the
copy by one element (two, where a register block broadcasts them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from math import prod

import islpy as isl

from ..errors import ScheduleError
from .expr import BinOp, Const, Expr, Read
from .polyhedral import access_map, domain_str
from .program import Computation, Program
from .state import CompSchedule, ProgramState

#: bytes a pack may hold: it lives on the stack of the thread that runs the loop
PACK_BYTES = 512 << 10
#: bytes of an element, by dtype (every dtype of ``dtypes.DTYPES``)
ELEMENT_BYTES = {"float64": 8, "float32": 4, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint64": 8, "uint32": 4,
                 "uint16": 2, "uint8": 1}


@dataclass(frozen=True)
class Box:
    """What a run of a loop reads of a buffer: per dimension, the lowest and highest index (isl functions
    of the iterators ``c0 ..`` of the loops around it, defined on ``context``) and the most elements; the
    computations inside the loop that read it (``readers``: only these may read the copy; another one that
    code generation prints in the same place, without the loop, reads the buffer)."""

    low: tuple[isl.PwAff, ...]
    high: tuple[isl.PwAff, ...]
    extents: tuple[int, ...]
    context: isl.Set
    readers: frozenset[str]
    #: the copy's dimensions (the buffer's), outermost first, and the step between neighbors in its last
    #: (``copy_layout``)
    order: tuple[int, ...] = ()
    gap: int = 1

    @property
    def elements(self) -> int:
        return prod(self.extents)

    @property
    def copy_extents(self) -> tuple[int, ...]:
        """The copy's extents, in the copy's order of dimensions."""
        return tuple(self.extents[d] for d in self.order)

    @property
    def copy_shape(self) -> tuple[int, ...]:
        """The extents of the copy's array: ``copy_extents`` with room for the gaps of its last dimension."""
        extents = self.copy_extents
        return extents[:-1] + (extents[-1] * self.gap,) if extents else extents

    @property
    def pitch(self) -> tuple[int, ...]:
        """Per dimension of the buffer, the elements between neighbors along it in the copy."""
        shape = self.copy_shape
        at = {d: prod(shape[k + 1:]) if k < len(shape) - 1 else self.gap for k, d in enumerate(self.order)}
        return tuple(at[d] for d in range(len(self.order)))


def read_box(state: ProgramState, loop: str, buffer: str, only: frozenset[str] | None = None) -> Box:
    """The box of ``buffer`` that the computations inside ``loop`` (those named in ``only``) read during one
    of its runs; raises ScheduleError when nothing there reads it or the box is not bounded."""
    readers = reading(state, loop, buffer, only)
    if not readers:
        raise ScheduleError(f"nothing inside loop {loop!r} reads {buffer!r}")
    return Box(*_bounds(state.program, loop, buffer, tuple(readers)), frozenset(cs.comp for cs in readers),
               *copy_layout(state, loop, buffer, readers))


@functools.lru_cache(maxsize=4096)
def _bounds(p: Program, loop: str, buffer: str, readers: tuple[CompSchedule, ...]
            ) -> tuple[tuple[isl.PwAff, ...], tuple[isl.PwAff, ...], tuple[int, ...], isl.Set]:
    """A read box's lower and upper bounds, extents and context: a function of the readers' schedules alone
    (cached: the candidates of a search that differ in their loop tags share it; islpy objects are values)."""
    loops_of = {c.name: loops for c, loops in p.walk_computations()}
    region, n = None, 2 * readers[0].level_of(loop) + 1
    for cs, before in _before(p, loop, readers):
        c = p.computation(cs.comp)
        for r in c.reads():
            if r.buffer == buffer:
                m = before.reverse().apply_range(access_map(c, loops_of[c.name], r))
                region = m if region is None else region.union(m)
    box = _as_params(region, n).range().coalesce()
    context = box.params()
    low, high, extents = [], [], []
    for d in range(box.dim(isl.dim_type.set)):
        lo, hi = box.dim_min(d).gist(context), box.dim_max(d).gist(context)
        try:
            most = hi.sub(lo).max_val()
        except isl.Error:  # an extent isl cannot bound as an affine function (a skewed box, in a fuzz run)
            most = None
        if most is None or not most.is_int():
            raise ScheduleError(f"the elements of {buffer!r} read inside loop {loop!r} have no bounded box")
        low.append(lo)
        high.append(hi)
        extents.append(most.to_python() + 1)
    return tuple(low), tuple(high), tuple(extents), context


#: the step between a copy's elements that a register block broadcasts (``copy_layout``)
BROADCAST_GAP = 2


def copy_layout(state: ProgramState, loop: str, buffer: str,
                readers: list[CompSchedule]) -> tuple[tuple[int, ...], int]:
    """The dimensions of ``buffer``'s copy at ``loop``, outermost first, and the step between neighbors in
    the last. The dimensions are ordered by the deepest loop inside
    ``loop`` that moves each of them in a read of ``readers`` (a register block's copies, which sit inside
    its innermost running loop, deepest of all; a dimension no loop there moves, first), ties in the
    buffer's order. The readers then step through the copy by one element where the buffer's rows made
    them jump: gemm's 8x16 block reads ``1.5 * A[i][k]`` for eight rows ``i`` a ``k``; its copy laid out
    ``[k][i]`` holds them side by side (Xeon, tiles (128,256,256): 84 -> 99 GFLOP/s, the broadcasts no
    longer load 64 bytes across a cache line each). The step is ``BROADCAST_GAP`` where only a block's
    copies that do not move the last index of what it writes move the last dimension, in a block whose other
    copies do (each element a broadcast against vectors: gemm's ``A[i][k]``): gcc 12 loads adjacent
    broadcast values as one vector and permutes it once per copy, on the port that the second FMA unit
    shares on Xeon; a gap of one element makes it broadcast half of them from memory (the 8x16 block, Xeon,
    the same C but for the gap, medians of 5 interleaved runs: 92.3 GFLOP/s with none, 97.4 with one, 83.9
    with 3 and 67.5 with 7, the copy outgrowing the L1 cache)."""
    p = state.program
    rank = len(p.buffer(buffer).shape)
    depth = [-1] * rank
    for cs in readers:
        q0 = cs.level_of(loop)
        n = len(cs.loops)
        moves_with = state.moves_with(cs)
        order = {q: (n + q if state.tag_of(name, "jam") is not None else q)
                 for q, name in enumerate(cs.loops) if q >= q0 and name is not None}
        for r in p.computation(cs.comp).reads():
            if r.buffer != buffer:
                continue
            for d, a in enumerate(r.index):
                used = {v for v, _ in a.terms}
                depth[d] = max([depth[d], *(k for q, k in order.items() if moves_with[q] & used)])
    out = tuple(sorted(range(rank), key=lambda d: (depth[d], d)))
    return out, BROADCAST_GAP if out and _broadcast(state, loop, buffer, readers, out[-1]) else 1


def written_last(state: ProgramState, cs: CompSchedule) -> set[str]:
    """The original iterators that the last index of what ``cs``'s computation writes moves with."""
    target = state.program.computation(cs.comp).target
    return {v for v, _ in target.index[-1].terms} if target.index else set()


def vector_copies(state: ProgramState, cs: CompSchedule) -> bool:
    """Whether ``cs``'s register block jams a loop that moves the last index of what it writes: its copies
    side by side are then its vectors (gemm's i-j-k 8x16 block), not the iterations of its loop (the i-k-j
    block's, vectorized along ``j``)."""
    last, moves_with = written_last(state, cs), state.moves_with(cs)
    return any(name is not None and state.tag_of(name, "jam") is not None and moves_with[q] & last
               for q, name in enumerate(cs.loops))


def _broadcast(state: ProgramState, loop: str, buffer: str, readers: list[CompSchedule], d: int) -> bool:
    """Whether dimension ``d`` of every read of ``buffer`` moves with some reader's jammed copies and with
    no loop that runs at or inside ``loop``, and every reader's copies that move it leave the last index of
    what it writes while others move it (a block's broadcast operand)."""
    p = state.program
    found = False
    for cs in readers:
        c = p.computation(cs.comp)
        moves_with = state.moves_with(cs)
        inside = [q for q, name in enumerate(cs.loops) if name is not None and q >= cs.level_of(loop)]
        jammed = [q for q in inside if state.tag_of(cs.loops[q], "jam") is not None]
        running = [q for q in inside if q not in jammed]
        last = written_last(state, cs)
        for r in (r for r in c.reads() if r.buffer == buffer):
            used = {v for v, _ in r.index[d].terms}
            if not used or any(moves_with[q] & used for q in running):
                return False
            movers = [q for q in jammed if moves_with[q] & used]
            if not movers or not vector_copies(state, cs) or any(moves_with[q] & last for q in movers):
                return False
            found = True
    return found


def _inside(state: ProgramState, loop: str, only: frozenset[str] | None,
            keep: Callable[[CompSchedule], bool] = lambda cs: True) -> list[CompSchedule]:
    """The computations inside ``loop`` (those named in ``only``, and that ``keep`` keeps). A name may stand
    for loops at different levels (gemm's S0 keeps its ``i`` when S1's is tiled): those at the level of the
    first are kept."""
    comps = [cs for cs in state.comps_with(loop) if (only is None or cs.comp in only) and keep(cs)]
    return [cs for cs in comps if cs.level_of(loop) == comps[0].level_of(loop)] if comps else []


def reading(state: ProgramState, loop: str, buffer: str, only: frozenset[str] | None = None) -> list[CompSchedule]:
    """The computations inside ``loop`` (those named in ``only``) that read ``buffer``."""
    p = state.program
    return _inside(state, loop, only, lambda cs: any(r.buffer == buffer for r in p.computation(cs.comp).reads()))


def printed_inside(state: ProgramState, loop: str) -> tuple[int, list[CompSchedule]]:
    """The level of ``loop`` and every computation that code generation prints inside its node: those that
    share its betas down to its level, its own and any that has no loop there (isl runs one at the loop's
    first value: atax's ``tmp`` statements inside the tile loop of a tiled sibling nest)."""
    first = state.comps_with(loop)[0]
    q = first.level_of(loop)
    return q, [cs for cs in state.comps if cs.betas[:q + 1] == first.betas[:q + 1]]


def _before(p: Program, loop: str, comps: tuple[CompSchedule, ...]) -> list[tuple[CompSchedule, isl.Map]]:
    """Per computation of ``comps`` (inside ``loop``, at one level): the map from its instances to the time
    dimensions before the loop's."""
    loops_of = {c.name: loops for c, loops in p.walk_computations()}
    out = []
    for cs in comps:
        n = 2 * cs.level_of(loop) + 1
        c = p.computation(cs.comp)
        time = cs.time_map().intersect_domain(isl.Set(domain_str(c, loops_of[c.name])))
        out.append((cs, time.project_out(isl.dim_type.out, n, time.dim(isl.dim_type.out) - n)))
    return out


def _as_params(m: isl.Map, n: int) -> isl.Map:
    """``m`` with its ``n`` input dimensions (time dimensions) moved to parameters named ``c0 ..``."""
    fixed = m.move_dims(isl.dim_type.param, 0, isl.dim_type.in_, 0, n)
    for k in range(n):
        fixed = fixed.set_dim_name(isl.dim_type.param, k, f"c{k}")
    return fixed


def runs(state: ProgramState, betas: tuple[int, ...]) -> isl.Set:
    """The runs of the loops around a node of the generated code (the loop at level ``len(betas) - 1`` of the
    computations whose betas start with ``betas``): values of the time dimensions before its, as parameters
    ``c0 ..``, at which a computation inside the loops around runs. A loop fused with a longer one, inside
    the node or beside it, makes them longer than the runs of the node's own computations."""
    q = len(betas) - 1
    n = 2 * q + 1
    loops_of = {c.name: loops for c, loops in state.program.walk_computations()}
    here = isl.Set(f"[c{n - 1}] -> {{ : c{n - 1} = {betas[q]} }}")
    out = None
    for cs in state.comps:
        if cs.betas[:q] != betas[:q]:
            continue
        c = state.program.computation(cs.comp)
        time = cs.time_map().intersect_domain(isl.Set(domain_str(c, loops_of[c.name])))
        time = time.project_out(isl.dim_type.out, n, time.dim(isl.dim_type.out) - n)
        s = _as_params(time.reverse(), n).range().params()
        s = s.drop_constraints_involving_dims(isl.dim_type.param, n - 1, 1).intersect(here)
        out = s if out is None else out.union(s)
    return out.coalesce()


def pack_bytes(state: ProgramState, box: Box, buffer: str) -> int:
    """Bytes of the local array that holds ``box`` of ``buffer``."""
    return prod(box.copy_shape) * ELEMENT_BYTES[state.program.buffer(buffer).dtype]


def scaled_read(e: Expr) -> tuple[Read, Const] | None:
    """``(B[...], c)`` where ``e`` is ``c * B[...]`` or ``B[...] * c``; None otherwise."""
    if isinstance(e, BinOp) and e.op == "*":
        for x, y in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(x, Read) and isinstance(y, Const):
                return x, y
    return None


def _factors(e: Expr, buffer: str) -> list[Const | None]:
    """Of each read of ``buffer`` in ``e``: the constant it is multiplied by right above it (None: none)."""
    if (scaled := scaled_read(e)) is not None and scaled[0].buffer == buffer:
        return [scaled[1]]
    if isinstance(e, Read):
        return [None] if e.buffer == buffer else []
    return [f for c in e.children() for f in _factors(c, buffer)]


def pack_scale(comps: list[Computation], buffer: str) -> Const | None:
    """The constant that every read of ``buffer`` in ``comps`` is multiplied by right above it, if they share
    one: a pack of ``buffer`` for them may hold the products (``c * B[i][k]``, computed once per element
    where the loops inside recompute it every time: gemm's ``alpha * A[i][k]`` in its register block
    cost 28% of its time on AMD EPYC), bit for bit what each read computed. None otherwise, and where a
    computation writes ``buffer`` or reads it as its own reduction target."""
    found = [f for c in comps for f in _factors(c.rhs, buffer)]
    if any(c.target.buffer == buffer for c in comps) or not found or found[0] is None \
            or any(f != found[0] for f in found):
        return None
    return found[0]
