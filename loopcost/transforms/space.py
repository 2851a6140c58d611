"""The space of schedules: which transformations may come next from a state.

``proposals`` lists every transformation worth trying, before legality (MCTS expands nodes with it);
``moves`` applies them and says which results are already known to be legal, so that beam search can
score first and check only what it keeps; ``random_step`` draws one step at random, a kind first (the
schedule generator and MCTS rollouts). ``candidates`` keeps only the legal moves. Nothing else decides
what a search or the generator may try. No code tag is proposed on a loop that runs one iteration per entry
(``ir.trips``): the code has no loop there, so the tag would only make a second name for the same code.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir.state import CODE_TAGS, ProgramState
from ..ir.trips import single_trip_loops
from .base import Transformation
from .fusion import Fuse, shared_depth
from .jam import UnrollJam
from .legality import permutable, slanted
from .packing import Pack
from .reorder import Interchange, Reverse, Skew
from .tags import Parallelize, Unroll, Vectorize
from .tiling import Tile

#: the version of the space below: builds record it, since the schedules a seed draws depend on it (2: skews
#: only of slanted pairs, ``_skewable``)
SPACE_VERSION = 2
KINDS = ("fuse", "interchange", "skew", "reverse", "tile", "parallelize", "vectorize", "unroll", "jam", "pack")
#: the order in which beam search (and the staged sampler) consider transformation kinds; an interchange
#: after skewing makes wavefronts reachable (seidel-2d: ``S(i,j,2) I(i,j)`` runs 5.1x faster at bench size);
#: two unroll-and-jams make a register block of two loops of a tile (gemm: ``J(i,8) J(j,16)``). Before the
#: interchanges, on the order as written, the shipped model (which never saw ``J``) ranked jams so high that
#: an adaptive search of gemm measured 57 of them in 64 (4.2x at best, against 13.6x for the rest). Packs are
#: not among the stages: the random sampler and MCTS draw them, and the searches measure the packs of their
#: register blocks (``search.blocks.packs``), as long as no model has learned them
STAGES = ("fuse", "interchange", "interchange", "skew", "interchange", "reverse", "tile", "jam", "jam",
          "parallelize", "vectorize", "unroll")


@dataclass(frozen=True)
class SpaceOptions:
    """Factor sets of the parameterized transformations, and which kinds to list."""

    tile_sizes: tuple[int, ...] = (8, 16, 32, 64, 128)
    unroll_factors: tuple[int, ...] = (2, 4, 8, 16)
    vector_widths: tuple[int, ...] = (4, 8, 16)
    jam_factors: tuple[int, ...] = (2, 4, 8, 16)
    skew_factors: tuple[int, ...] = (1, 2)
    kinds: tuple[str, ...] = KINDS


def _pairs_outer_inner(state: ProgramState) -> list[tuple[str, str]]:
    out: dict[tuple[str, str], None] = {}
    for cs in state.comps:
        real = cs.real_loops
        for a, b in itertools.combinations(real, 2):
            out.setdefault((a, b))
    return list(out)


def _windows(state: ProgramState, n: int) -> list[tuple[str, ...]]:
    out: dict[tuple[str, ...], None] = {}
    for cs in state.comps:
        for p in range(len(cs.loops) - n + 1):
            w = cs.loops[p:p + n]
            if None not in w:
                out.setdefault(tuple(w))
    return list(out)


def _innermost(state: ProgramState) -> list[str]:
    out: dict[str, None] = {}
    for cs in state.comps:
        if cs.real_loops:
            out.setdefault(cs.real_loops[-1])
    return list(out)


def _outer(state: ProgramState) -> list[str]:
    """The loops that enclose another loop in some computation (those an unroll-and-jam can sink)."""
    out: dict[str, None] = {}
    for cs in state.comps:
        for lp in cs.real_loops[:-1]:
            out.setdefault(lp)
    return list(out)


def _parallel_nest(state: ProgramState, loop: str) -> bool:
    """True if a loop around or inside ``loop`` is already parallel."""
    return any(state.tag_of(other, "parallel") for cs in state.comps if loop in cs.loops
               for other in cs.real_loops)


def _skewable(state: ProgramState, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs a skew can serve: a dependence goes forward along the outer loop and backward along the
    inner one (``legality.slanted``); only then does an interchange or a tile of the two need a skew.
    Space version 1 skewed every pair of which one loop carried a dependence (a reduction's too): 55 of
    the AMD EPYC model's 140 picks on the benchmark and selection kernels skewed such a pair, predicted
    2.00x, measured 0.78x (geometric means, ``bench/MODELS.amd-l7.*.jsonl``)."""
    return [(a, b) for a, b in pairs if slanted(state, a, b)]


def _packable(state: ProgramState, loop: str) -> list[str]:
    """The buffers that computations inside ``loop`` read, none writes and ``loop`` does not pack yet."""
    comps = [state.program.computation(cs.comp) for cs in state.comps_with(loop)]
    written = {c.target.buffer for c in comps}
    read = dict.fromkeys(r.buffer for c in comps for r in c.reads())
    return [b for b in read if b not in written and b not in state.packs(loop)]


def _code_tagged(state: ProgramState, loop: str) -> bool:
    return any(t.loop == loop and t.kind in CODE_TAGS for t in state.tags)


def _fusions(state: ProgramState) -> list[Transformation]:
    order = sorted(state.comps, key=lambda cs: cs.betas)
    out: list[Transformation] = []
    for a, b in zip(order, order[1:], strict=False):
        now = shared_depth(a, b)
        for d in range(min(len(a.real_loops), len(b.real_loops)) + 1):
            if d != now:
                out.append(Fuse(a.comp, b.comp, d))
    return out


def proposals(state: ProgramState, opts: SpaceOptions = SpaceOptions()) -> list[Transformation]:
    """Every transformation worth trying from ``state``, before legality."""
    out: list[Transformation] = []
    kinds = set(opts.kinds)
    if "fuse" in kinds:
        out += _fusions(state)
    pairs = _pairs_outer_inner(state)
    if "interchange" in kinds:
        out += [Interchange(a, b) for a, b in pairs]
    if "skew" in kinds:
        out += [Skew(a, b, f) for a, b in _skewable(state, pairs) for f in opts.skew_factors]
    if "reverse" in kinds:
        out += [Reverse(lp) for lp in state.loop_names()]
    if "tile" in kinds:
        for n in (2, 3):
            for w in _windows(state, n):
                out += [Tile(w, sizes) for sizes in itertools.product(opts.tile_sizes, repeat=n)]
    # a code tag on a loop of one iteration per entry changes nothing: the code has no loop there
    once = single_trip_loops(state) if kinds & {"parallelize", "vectorize", "unroll", "jam"} else frozenset()
    if "parallelize" in kinds:
        out += [Parallelize(lp) for lp in state.loop_names()
                if lp not in once and not _parallel_nest(state, lp) and not _code_tagged(state, lp)]
    inner = [lp for lp in _innermost(state) if lp not in once and not _code_tagged(state, lp)]
    if "vectorize" in kinds:
        out += [Vectorize(lp, w) for lp in inner for w in opts.vector_widths]
    if "unroll" in kinds:
        out += [Unroll(lp, f) for lp in inner for f in opts.unroll_factors]
    if "jam" in kinds:
        out += [UnrollJam(lp, f) for lp in _outer(state) if lp not in once and not _code_tagged(state, lp)
                for f in opts.jam_factors]
    if "pack" in kinds:
        out += [Pack(b, lp) for lp in _outer(state) for b in _packable(state, lp)]
    return out


@dataclass(frozen=True)
class Move:
    """A step from a state: the transformation, the state it leads to, and whether that state is known to be
    legal (``proven``); if not, it is legal only if ``step.checked(before, state)`` says so."""

    step: Transformation
    state: ProgramState
    proven: bool = True


def moves(state: ProgramState, opts: SpaceOptions = SpaceOptions()) -> list[Move]:
    """Every well-formed next transformation from ``state``, with the state it leads to; proven legal when
    that is known without a check (tiling a permutable band, unrolling). A search can score first and
    check only what it keeps."""
    out = []
    band: dict[tuple[str, ...], bool] = {}
    for t in proposals(state, opts):
        try:
            new = t.transformed(state)
        except ScheduleError:
            continue
        if isinstance(t, Tile):
            if t.loops not in band:
                band[t.loops] = permutable(state, t.loops)
            out.append(Move(t, new, band[t.loops]))  # permutable: legal for every size
        else:
            out.append(Move(t, new, isinstance(t, Unroll)))  # unrolling is always legal
    return out


def candidates(state: ProgramState, opts: SpaceOptions = SpaceOptions()) -> list[tuple[Transformation, ProgramState]]:
    """Every legal next transformation from ``state``, with the state it leads to."""
    out = []
    for m in moves(state, opts):
        try:
            out.append((m.step, m.state if m.proven else m.step.checked(state, m.state)))
        except ScheduleError:
            continue
    return out


def random_step(state: ProgramState, rng: random.Random, opts: SpaceOptions = SpaceOptions(),
                kinds: tuple[str, ...] | None = None, check: bool = True) -> Move | None:
    """One transformation drawn at random: first a kind, then a proposal of that kind.

    Drawing the kind first keeps the many tile sizes from crowding out the rest.
    Tries proposals in random order until one is legal (with ``check=False``: until one applies,
    legal or not, for callers that check a whole sequence at once: then the move is not ``proven``); None
    if no kind has one.
    """
    order = [k for k in opts.kinds if kinds is None or k in kinds]
    rng.shuffle(order)
    for kind in order:  # a kind's proposals are listed only when it is drawn (skews need dependences)
        options = proposals(state, replace(opts, kinds=(kind,)))
        rng.shuffle(options)
        for t in options:
            try:
                return Move(t, t.apply(state)) if check else Move(t, t.transformed(state), False)
            except ScheduleError:
                continue
    return None
