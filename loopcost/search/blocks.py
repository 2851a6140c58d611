"""Register blocks worth measuring on top of a schedule: unroll-and-jams ranked by the reuse they create.

The shipped cost model never saw ``J`` (its features read a jam as an unroll): over gemm's best
adaptive schedule it ranked the 196 legal one- and two-jam blocks no better than chance (the best
measured, ``J(i_1,8) J(k,4)`` at 2.1x the schedule without it, was its 85th), and no single jam helps
there: only pairs do. A block's worth is read from the program instead, as in Carr and Kennedy's
unroll-and-jam balance: in the innermost loop that still runs (the jammed copies sit inside it), an
access that does not move with that loop is loaded once before it, into a register per distinct copy,
and one that moves costs a memory access per distinct copy per iteration. A block is worth more the
more statement copies it runs per memory access, while what it keeps in registers fits.

A block that streams a buffer across its rows (gemm's i-j-k block reads ``B[k][j..j+15]``, a new row each
``k``) reads it better from a packed copy (``K``, ``packs``): the copy's rows are the tile's, adjacent. So
does one that multiplies what it streams by a constant (gemm's ``alpha * A[i][k]``, a multiply and a
broadcast a row and ``k`` beside the block's FMAs): the copy holds the products (``ir.packing.pack_scale``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir.packing import pack_scale, read_box, vector_copies
from ..ir.polyhedral import domain_str, points
from ..ir.quasi import unwrap
from ..ir.state import ProgramState
from ..transforms.jam import UnrollJam
from ..transforms.packing import Pack
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions, moves
from ..transforms.tags import Parallelize

#: values a block may keep in registers before its worth is scaled down (x86-64 with AVX-512 and AArch64
#: have 32 vector registers)
REGISTERS = 32
#: the kinds of a schedule's steps that shape the loop nest a block is cut from, its jams included (a block of
#: a schedule with jams adds jams of other loops: 2mm's second product once its first has a block); the
#: rest are the schedule's tail, replayed on top of each block
NEST_KINDS = ("fuse", "interchange", "skew", "reverse", "tile", "jam")


@dataclass(frozen=True)
class Block:
    """A candidate: the schedule (nest, jams, then the tail that still applies), the state it reaches, the
    nest's text, its jams, its ``balance`` (``worth``) and how deep its jammed loops are (the sum of their levels)."""

    schedule: Schedule
    state: ProgramState
    nest: str
    #: the jams as (loop, factor), in any order, and the original iterators the jammed loops move with
    jams: frozenset[tuple[str, int]]
    moves_with: frozenset[str]
    worth: float
    depth: int = 0


def trips(state: ProgramState, loop: str) -> int | None:
    """The most times ``loop`` runs each time it is entered, where its level is one original iterator with
    constant bounds (a tiled loop's tile bounds it too); None where that is not known."""
    most = 0
    for cs in state.comps_with(loop):
        bounds = {lp.name: lp for lp in state.program.enclosing_loops(cs.comp)}
        lp = bounds.get(unwrap(cs.levels[cs.level_of(loop)]))
        if lp is None or lp.lower.terms or lp.upper.terms:
            return None
        most = max(most, lp.upper.const - lp.lower.const)
    tiled = state.tag_of(loop, "tiled")
    return min(most, tiled.factor) if tiled is not None else most


def balance(state: ProgramState) -> float:
    """Statement instances run per memory access, over the whole program: each computation's instances
    (its domain's points) times its memory accesses per copy in its innermost running loop; scaled by
    ``REGISTERS / registers`` when the elements kept in registers there (each distinct element once: a
    reduction's load and store keep one) are more than that. A computation with no running loop left is
    straight-line code: every access counts."""
    ops = mem = 0.0
    kept: set[tuple] = set()
    for cs in state.comps:
        comp = state.program.computation(cs.comp)
        moves_with = state.moves_with(cs)
        jams = {q: min(t.factor, trips(state, name) or t.factor) for q, name in enumerate(cs.loops)
                if name is not None and (t := state.tag_of(name, "jam")) is not None}  # copies that run
        running = [q for q, name in enumerate(cs.loops) if name is not None and q not in jams]
        inner = moves_with[running[-1]] if running else None
        n_mem = 0
        for access in [comp.target, *comp.reads()]:
            used = {v for a in access.index for v, _ in a.terms}
            n = math.prod(f for q, f in jams.items() if used & moves_with[q])
            if inner is None or used & inner:
                n_mem += n
            else:
                kept |= {(access.buffer, access.index, k) for k in range(n)}
        instances = points(domain_str(comp, state.program.enclosing_loops(cs.comp)))
        ops += instances
        mem += instances * n_mem / math.prod(jams.values())
    return ops / max(mem, 1.0) * min(1.0, REGISTERS / max(len(kept), 1))


def nest_of(schedule: Schedule, jams: bool = True) -> str:
    """The text of ``schedule``'s steps that shape its loop nest (``NEST_KINDS``; without its jams: its base
    nest)."""
    return " ".join(str(s) for s in schedule.steps if s.kind in NEST_KINDS and (jams or s.kind != "jam"))


#: a block's jams, the state they reach and, of each jammed loop, its loop over blocks
_Jams = tuple[tuple[UnrollJam, ...], ProgramState, dict[str, str]]


def _fits(state: ProgramState, loop: str, factor: int, factors: tuple[int, ...]) -> bool:
    """Whether a jam of ``loop`` by ``factor`` is worth listing: the loop runs more than once, and no smaller
    factor of ``factors`` already copies all its iterations (on a loop of 7, ``J(r,16)`` is ``J(r,8)``)."""
    n = trips(state, loop)
    return n is None or (n > 1 and not any(n <= f < factor for f in factors))


def _jams(state: ProgramState, space: SpaceOptions, avoid: set[str]) -> list[_Jams]:
    """Every legal block of one jam, or two of distinct loops around one computation (a block of each of
    two computations is a block of a block: ``blocks`` of a schedule with jams), of loops not in
    ``avoid``, from ``state``, with the loop over blocks of each jammed loop."""
    jam = replace(space, kinds=("jam",))

    def legal(before: ProgramState, first: str | None, first_outer: str | None) \
            -> list[tuple[UnrollJam, ProgramState, str]]:
        out = []
        for m in moves(before, jam):
            if m.step.loop in avoid or not _fits(before, m.step.loop, m.step.factor, space.jam_factors):
                continue
            if first is not None and (m.step.loop in (first, first_outer)
                                      or not any({first, m.step.loop} <= set(cs.loops) for cs in before.comps)):
                continue
            try:
                out.append((m.step, m.state if m.proven else m.step.checked(before, m.state), m.step.outer(before)))
            except ScheduleError:
                continue
        return out

    out = []
    for step, one, outer in legal(state, None, None):
        out.append(((step,), one, {step.loop: outer}))
        out += [((step, second), two, {step.loop: outer, second.loop: outer2})
                for second, two, outer2 in legal(one, step.loop, outer)]
    return out


def blocks(root: ProgramState, schedule: Schedule, space: SpaceOptions = SpaceOptions()) -> list[Block]:
    """The register blocks of ``schedule``'s loop nest, best ``worth`` first: its nest steps, one or two jams,
    then its other steps where they still apply (an unroll of a jammed loop does not; a jammed loop that
    the tail makes parallel hands that to its loop over blocks: conv1d's ``P(o)`` becomes ``P(o_r)``
    under ``J(o,8)``, which reads each ``X[c][x+r]`` once for eight output channels). Empty if the nest
    cannot be replayed."""
    nest = tuple(s for s in schedule.steps if s.kind in NEST_KINDS)
    tail = tuple(s for s in schedule.steps if s.kind not in NEST_KINDS)
    base, avoid = root, set()  # the loops over blocks of the nest's jams: a jam of one is a block of blocks
    try:
        for step in nest:
            if step.kind == "jam":
                avoid.add(step.outer(base))
            base = step.apply(base)
    except ScheduleError:
        return []
    out: dict[frozenset, Block] = {}
    for jams, state, outers in _jams(base, space, avoid):
        key = frozenset((j.loop, j.factor) for j in jams)
        if key in out:  # the same jams in the other order: the same block
            continue
        levels = [cs.level_of(j.loop) for j in jams for cs in base.comps_with(j.loop)[:1]]
        iters = {v for j in jams for cs in base.comps_with(j.loop) for v in base.moves_with(cs)[cs.level_of(j.loop)]}
        worth = balance(state)
        moved = tuple(Parallelize(outers[s.loop]) if s.kind == "parallelize" and s.loop in outers else s for s in tail)
        state, kept = Schedule(moved).replay(state)
        out[key] = Block(Schedule(nest + jams) + kept, state, nest_of(schedule), key, frozenset(iters), worth,
                         sum(levels))
    return sorted(out.values(), key=lambda b: (-b.worth, -b.depth))


def packs(root: ProgramState, schedule: Schedule) -> list[tuple[Schedule, ProgramState]]:
    """``schedule`` with a pack of each buffer that one of its register blocks reads across rows (in the
    innermost loop that runs, an index other than the last moves), scaled (its reads, moving with that loop,
    multiplied by one constant) or a row per copy (an index other than the last moves with the block's copies,
    the last with that loop, in a block whose vectors are its copies: the copy puts the copies' elements side
    by side, ``ir.packing.copy_layout``), at the outermost loop where the pack is legal, fits, where it only
    reads across rows, cuts them short (a tile, not whole rows; inside the parallel loop, each thread packs
    its own copy) and, where it holds a row per copy, holds one block's rows (gemm's ``A[i][k]`` for the rows
    of the 8x16 block, ``K(A,j_1_r)``: packed at the loop over the blocks' rows, ``i_1_r``, it holds the
    tile's 128 rows and each block's eight values of a ``k`` sit a kilobyte from the next ``k``'s: 61-68 GFLOP/s
    against 91-93 at the same tiles, Xeon); none for a schedule without jams."""
    try:
        state = schedule.apply(root)
    except ScheduleError:
        return []
    out: dict[str, tuple[Schedule, ProgramState]] = {}
    for cs in state.comps:
        jammed = [q for q, name in enumerate(cs.loops) if name is not None and state.tag_of(name, "jam")]
        running = [q for q, name in enumerate(cs.loops) if name is not None and q not in jammed]
        if not jammed or not running:
            continue
        comp = state.program.computation(cs.comp)
        inner = state.moves_with(cs)[running[-1]]
        copies = set().union(*(state.moves_with(cs)[q] for q in jammed))
        side_by_side = vector_copies(state, cs)
        from_copies = {t.buffer for t in state.tags if t.kind == "pack" and t.loop in cs.loops}
        for r in comp.reads():
            moving = [bool({v for v, _ in a.terms} & inner) for a in r.index]
            across = any(moving[:-1])
            scaled = any(moving) and pack_scale([comp], r.buffer) is not None
            per_copy = {v for a in r.index[:-1] for v, _ in a.terms if {u for u, _ in a.terms} & copies}
            rows = side_by_side and any(moving) and bool(per_copy)
            if not (across or scaled or rows) or r.buffer in (comp.target.buffer, *from_copies) or r.buffer in out:
                continue
            row = state.program.buffer(r.buffer).shape[-1]
            for q in running:
                if rows and per_copy & set().union(*(state.moves_with(cs)[p] for p in running if p >= q)):
                    continue  # a copy of several blocks' rows: one block's would not sit side by side
                step = Pack(r.buffer, cs.loops[q])
                try:
                    packed = step.apply(state)
                    if not (scaled or rows) and read_box(packed, cs.loops[q], r.buffer).extents[-1] >= row:
                        continue  # whole rows: the copy would lay them out as they are
                except ScheduleError:
                    continue
                out[r.buffer] = (schedule + step, packed)
                break
    return list(out.values())
