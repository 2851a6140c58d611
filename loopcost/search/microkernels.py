"""Register-tiled schedules built from the program and the CPU, as BLIS builds a matrix multiply.

A computation that accumulates into its target (``C[i][j] += A[i][k] * B[k][j]``: a loop ``k`` that the
target does not move with) runs fastest as an outer product in registers: a block of ``mr`` x ``nr``
targets (rows ``i``, columns ``j`` along the target's rows, so that the block's columns are vectors) kept
in registers while the reduction loop runs innermost, each step reading ``mr`` values of one operand (a
broadcast each) and ``nr`` of the other (``nr / vector`` loads) for ``mr * nr`` multiply-adds; tiles of
``i``, ``j`` and ``k`` around it sized so that what each level reuses stays in a cache; packed copies of
the operands (``search.blocks.packs``) laid out in the order the block reads them; the outermost loop
parallel. Nothing here is particular to gemm: each role is found from the accesses (2mm's and 3mm's
products, a convolution's ``out[f][x] += w[f][c] * in[c][x]``; not doitgen's ``sum[p] += A[r][q][s] *
C4[s][p]``, whose target has no rows), and the sizes come from the caches and vector registers this
machine reports (``search.hardware``).

The model-guided searches never reach this schedule by themselves: it is eight steps deep and its first
ones (tiling ``k`` innermost against the memory order, jams the shipped model never saw) measure slower
than their neighbors on the way (gemm at bench size, AMD EPYC: the adaptive search's i-k-j blocks 78% of
OpenBLAS, the i-j-k block with both packs, by hand, 88%). An adaptive search measures these seeds first,
beside the memory-order ones, and refines the fastest (``search.adaptive``; Xeon, ``bench/BLAS-seeds.md``:
gemm 90-92% of OpenBLAS, 2mm 107%, 3mm 91%, 6-9x Polly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.packing import ELEMENT_BYTES, PACK_BYTES
from ..ir.state import ProgramState
from ..transforms.base import Transformation
from ..transforms.fusion import Fuse
from ..transforms.jam import MAX_BLOCK, MAX_JAM, UnrollJam
from ..transforms.reorder import Interchange
from ..transforms.schedule import Schedule
from ..transforms.tags import Parallelize
from ..transforms.tiling import Tile
from .blocks import packs
from .hardware import Hardware
from .orders import most_trips


@dataclass(frozen=True)
class Roles:
    """A computation's loops in an outer-product block, by the original iterator each moves with: ``i``
    moves the target's rows (copies broadcast one operand), ``j`` its last index by one element (copies
    side by side: vectors), ``reductions`` do not move the target (innermost, in the order they run: a
    reduction's order is its result's, bit for bit)."""

    i: str
    j: str
    reductions: tuple[str, ...]


@dataclass(frozen=True)
class Shape:
    """A register block of ``mr`` x ``nr`` copies and the tiles around it (``ti`` rows, ``tj`` columns,
    ``tr`` reduction steps)."""

    mr: int
    nr: int
    ti: int
    tj: int
    tr: int


def roles(state: ProgramState, comp: str) -> Roles | None:
    """The roles of ``comp``'s original iterators, where it accumulates into its target (it reads the
    element it writes) over loops the target does not move with and that its operands do (a contraction,
    not a time loop), and its target's last index moves by one element with another loop; None otherwise.
    Of several row loops, the one whose copies share most of the reads that move with ``j`` (gemm's
    ``B[k][j]`` for ``i``: each broadcast of ``A[i][k]`` meets the same vectors of ``B``; a convolution's
    input for its output channels, not for its rows), then the one moving the later index of the target."""
    c = state.program.computation(comp)
    target = c.target
    if not target.index or not any(r.buffer == target.buffer and r.index == target.index for r in c.reads()):
        return None
    cs = state.comp(comp)
    iters = {next(iter(its)): name for its, name in zip(state.moves_with(cs), cs.loops, strict=True)
             if name is not None and len(its) == 1}
    writes = [{v for v, _ in a.terms} for a in target.index]
    j = [v for v in iters if abs(target.index[-1].coeff(v)) == 1 and all(v not in w for w in writes[:-1])]
    reads = [{v for a in r.index for v, _ in a.terms} for r in c.reads() if r.buffer != target.buffer]
    reductions = tuple(v for v in iters if not any(v in w for w in writes) and any(v in r for r in reads))
    if not j or not reductions:
        return None
    rows = [(sum(j[0] in r and v not in r for r in reads), max(d for d, w in enumerate(writes) if v in w), v)
            for v in iters if v != j[0] and any(v in w for w in writes)]
    if not rows or max(rows)[0] == 0:
        return None
    return Roles(max(rows)[2], j[0], reductions)


def shapes(hw: Hardware, element: int) -> list[Shape]:
    """The block and tiles this CPU's registers and caches call for (BLIS's analytical model, Low et al.
    2016, for a block whose row operand is packed per block and whose column operand per tile): ``nr`` two
    vectors, ``mr`` the most rows (a power of two) whose ``mr * nr / vector`` accumulators leave registers
    for the two vectors and a broadcast; ``tr`` steps of the ``mr`` rows filling half the L1 cache; ``tj``
    columns of ``tr`` steps filling half the L2 cache (and a pack); ``ti`` rows about 128 (``balanced``).
    Then the same block with ``tr`` halved and ``tj`` doubled: caches shared with another thread, or the
    prefetcher's reach, make the analytical sizes a starting point."""
    lanes = max(1, hw.vector_bytes // element)
    nr = min(2 * lanes, MAX_JAM)
    fit = (hw.registers - 3) * lanes // nr
    mr = 1 << max(0, int(math.log2(max(1, min(fit, MAX_BLOCK // nr)))))
    tr = max(8, hw.l1 // 2 // (mr * element) // 8 * 8)
    tj = max(nr, min(hw.l2 // 2, PACK_BYTES) // (tr * element) // nr * nr)
    half = max(8, tr // 2)
    wide = max(nr, min(2 * tj, PACK_BYTES // (half * element) // nr * nr))
    return list(dict.fromkeys([Shape(mr, nr, 128, tj, tr), Shape(mr, nr, 128, wide, half)]))


def balanced(trips: int, target: int, threads: int, multiple: int) -> int:
    """Rows of a tile, a multiple of ``multiple``, near ``target`` (the nearest; of two, the larger), that
    cut ``trips`` rows into tiles that ``threads`` threads share evenly (a multiple of ``threads`` of them,
    the last one possibly shorter): 2mm's 600 rows in tiles of 128 are 5 tiles on 2 cores, one core running
    3 of them; in tiles of 152, 4. ``target`` where no such size is (fewer rows than threads' blocks)."""
    sizes = {-(-trips // (threads * k)) for k in range(1, trips // multiple + 1)}
    sizes = {-(-t // multiple) * multiple for t in sizes}
    even = [t for t in sizes if -(-trips // t) % threads == 0]
    return min(even, key=lambda t: (abs(t - target), -t)) if even else target


def _loop(state: ProgramState, comp: str, it: str) -> str | None:
    """The innermost loop of ``comp`` that moves with original iterator ``it`` alone."""
    cs = state.comp(comp)
    found = [name for its, name in zip(state.moves_with(cs), cs.loops, strict=True) if name is not None and its == {it}]
    return found[-1] if found else None


#: a schedule and the state it reaches
_Done = tuple[Schedule, ProgramState]


def _then(done: _Done, steps: list[Transformation]) -> _Done:
    """``done`` with ``steps`` added where each is legal after the ones before, else ``done``."""
    schedule, state = done
    try:
        for step in steps:
            state = step.apply(state)
    except ScheduleError:
        return done
    return schedule + Schedule(tuple(steps)), state


def _apart(done: _Done, comp: str) -> _Done:
    """``done`` with ``comp`` distributed from the computations that share its outermost loop, where legal
    (gemm's ``C[i][j] *= beta`` would otherwise be tiled, jammed and packed with it)."""
    for _ in range(len(done[1].comps)):
        cs = done[1].comp(comp)
        shared = [o for o in done[1].comps if o.comp != comp and o.loops[:1] == cs.loops[:1] != (None,)]
        if not shared:
            break
        o = shared[0]
        longer = _then(done, [Fuse(o.comp, comp, 0) if o.betas < cs.betas else Fuse(comp, o.comp, 0)])
        if longer is done:
            break
        done = longer
    return done


def _reorder(done: _Done, comp: str, inner: list[str]) -> _Done:
    """``done`` with ``comp``'s loops ``inner`` made its innermost, in that order, the others keeping theirs:
    the fewest adjacent interchanges, where all of them are legal; else ``done``."""
    loops = done[1].comp(comp).real_loops
    want = [n for n in loops if n not in inner] + inner
    steps: list[Transformation] = []
    for q, name in enumerate(want):  # bubble each loop up to its place
        for k in range(loops.index(name), q, -1):
            steps.append(Interchange(loops[k - 1], loops[k]))
            loops[k - 1], loops[k] = loops[k], loops[k - 1]
    return _then(done, steps)


def microkernel(done: _Done, comp: str, shape: Shape, threads: int = 1) -> _Done:
    """``done`` with ``comp`` made an outer-product block (see the module) where its ``roles`` allow:
    distributed from the computations around it, its row, column and reduction loops made the innermost in
    that order, tiled by ``shape`` (where one loop is the reduction; the rows ``balanced`` for ``threads``
    where their tiles are the outermost loop, the one made parallel), its rows and columns jammed, its
    outermost loop parallel, the operands its block reads packed; each step kept where legal, ``done``
    unchanged where no jam is."""
    if (role := roles(done[1], comp)) is None:
        return done
    out = _apart(done, comp)
    loops = [_loop(out[1], comp, it) for it in (role.i, role.j, *role.reductions)]
    if None in loops:
        return done
    out = _reorder(out, comp, loops)
    real = out[1].comp(comp).real_loops
    if real[len(real) - len(loops):] != loops:
        return done  # the block's loops could not be made the innermost ones
    if len(loops) == 3:  # one reduction: the tiles of a contraction
        ti = shape.ti
        if real[0] == loops[0] and (trips := most_trips(out[1], comp, loops[0])):
            ti = balanced(trips, shape.ti, threads, shape.mr)
        out = _then(out, [Tile(tuple(loops), (ti, shape.tj, shape.tr))])
    jammed = out
    for it, factor in ((role.i, shape.mr), (role.j, shape.nr)):
        loop = _loop(jammed[1], comp, it)
        trips = most_trips(jammed[1], comp, loop) or factor if loop is not None else 1
        if trips > 1:
            jammed = _then(jammed, [UnrollJam(loop, min(factor, trips))])
    if jammed is out:
        return done
    outer = jammed[1].comp(comp).loops[0]
    if outer is not None and jammed[1].tag_of(outer, "parallel") is None:
        jammed = _then(jammed, [Parallelize(outer)])
    for pack, _ in packs(jammed[1], Schedule()):  # each a pack of the state the block reaches
        jammed = _then(jammed, list(pack.steps))
    return jammed


def microkernel_seeds(root: ProgramState, hw: Hardware) -> list[Schedule]:
    """Of each ``shapes`` of this CPU, the schedule that makes every computation that can be one an
    outer-product block (``microkernel``; the deepest computations first); those with a block, each once."""
    comps = sorted(root.comps, key=lambda c: -sum(n is not None for n in c.loops))
    element = max((ELEMENT_BYTES[b.dtype] for b in root.program.buffers), default=8)
    out = []
    for shape in shapes(hw, element):
        done: _Done = (Schedule(), root)
        for cs in comps:
            done = microkernel(done, cs.comp, shape, hw.cores)
        if any(s.kind == "jam" for s in done[0].steps):
            out.append(done[0])
    return list(dict.fromkeys(out))
