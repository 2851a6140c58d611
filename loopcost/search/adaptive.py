"""Adaptive search: the cost model corrected, batch after batch, by what the search measures.

It starts by measuring the loop orders that memory cost alone chooses (``search.orders``: the loop with
stride-1 accesses innermost, the outer loop parallel), which a model that never saw the kernel's family can
miss, and the register-tiled outer products that this CPU's registers and caches call for
(``search.microkernels``: gemm's 8x16 block under cache tiles, its operands packed), eight steps deep where no
model-guided step leads. Then two strategies spend the measurement budget. ``rounds`` (the default) runs whole
model-guided beam searches, each measuring a batch of its best candidates not measured yet (the best of
distinct cores by prediction, plus the ones the ensemble's members disagree on most: the model's blind spots,
plus the best of a second beam search that avoids the first steps already measured: the model's early choices,
which no per-kernel correction of its leaves revisits), until the budget is spent or nothing new ranks high.
``staged`` walks beam search's stages like an execution-based beam search, but at each
stage measures only the model's best children of the beam (of distinct cores, the stage's share of the
budget) and keeps the fastest measured states in the beam: as myopic as execution-based search (on 2mm
it kept early interchanges that measured 1.3x and never reached the tiled parallel nests that rounds
found at 4.8x, `bench/ADAPTIVE.md`). Either strategy leaves the end of the budget to register blocks of
the fastest nests (``search.blocks``) and to a measured local search among the neighbors of the fastest
schedules (``search.neighbors``: one step replaced, dropped or added, ranked by the corrected model; the
unscheduled program, 1x without measuring it, is among the fastest where it beats what was measured), a
batch of one kind at a time, the kind whose last batch paid going on. After every batch the model is
refitted to every measurement so far (``costmodel.update``, always from the offline model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from ..costmodel.model import CostModel
from ..costmodel.update import UpdateConfig, update
from ..errors import LoopcostError, ScheduleError
from ..features.extract import FeatureLimitError, FeatureTree, featurize
from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import STAGES, Move, SpaceOptions, moves
from .base import Scored
from .beam import beam_search
from .blocks import Block, blocks, nest_of, packs
from .evaluator import MeasuringEvaluator, ModelEvaluator
from .hardware import this_machine
from .microkernels import microkernel_seeds
from .neighbors import Neighbor, legal, neighbors
from .orders import seeds
from .ranking import RANKED, diverse_top

#: how an adaptive search spends its measurements: ``rounds`` runs whole model-guided beam searches and
#: measures the best of each; ``staged`` walks beam search's stages, measuring at each the model's best
#: children and keeping the measured best in the beam
STRATEGIES = ("rounds", "staged")
#: what an adaptive search's refinement measures after its rounds: register blocks of the fastest nests
#: (``search.blocks``), neighbors of the fastest schedules (``search.neighbors``)
REFINERS = ("blocks", "neighbors")


@dataclass(frozen=True)
class AdaptiveOptions:
    """``measure_budget`` schedules measured at most, by ``strategy``; ``rounds``: ``batch`` a round, of which
    ``explore`` are chosen by the ensemble's disagreement and, after the first round, ``novel`` by a beam
    search turned away from the first steps already measured (``Novelty``; the k-th of them from the first
    ``novel_depths[k % len]`` steps); the beam keeps ``beam_size`` states. The last ``refine`` share of
    the budget measures batches of ``refiners`` (``_refine``): register blocks of the loop nests of the
    ``block_nests`` fastest schedules (``search.blocks``) and the best-predicted neighbors of the
    ``local_bases`` fastest schedules (``search.neighbors``). With ``seeds``, the loop orders chosen by
    memory cost (``search.orders``) and the register-tiled blocks of this CPU (``search.microkernels``) are
    measured first."""

    measure_budget: int = 48
    batch: int = 8
    explore: int = 2
    beam_size: int = 4
    strategy: str = "rounds"
    novel: int = 2
    novel_depths: tuple[int, ...] = (1,)
    refine: float = 0.5
    refiners: tuple[str, ...] = REFINERS
    block_nests: int = 3
    local_bases: int = 2
    seeds: bool = True
    update: UpdateConfig = UpdateConfig()

    def __post_init__(self) -> None:
        if self.measure_budget < 1 or self.batch < 1 or self.beam_size < 1 or self.explore < 0:
            raise LoopcostError("--measure-budget, --batch and --budget must be at least 1")
        if not 0 <= self.refine <= 1:
            raise LoopcostError("the share of the budget spent on register blocks and neighbors must be "
                                "between 0 and 1")
        if unknown := set(self.refiners) - set(REFINERS):
            raise LoopcostError(f"unknown refiners {sorted(unknown)}; use some of {REFINERS}")
        if self.strategy not in STRATEGIES:
            raise LoopcostError(f"unknown adaptive strategy {self.strategy!r}; use one of {STRATEGIES}")


def _batch(fresh: list[Scored], model: CostModel, n: int, explore: int) -> list[Scored]:
    """``n`` candidates: the best predicted of distinct cores, then the most disputed of the rest."""
    exploit = diverse_top(fresh, max(1, n - explore))
    rest = [c for c in fresh if all(c is not d for d in exploit)]
    if not rest or len(exploit) >= n:
        return exploit
    spread = model.predict_log_std([featurize(c.state) for c in rest])
    disputed = [rest[i] for i in np.argsort(-spread, kind="stable")[:n - len(exploit)]]
    return exploit + disputed


def explored(label: str, measured: list[str], depth: int = 1) -> int:
    """How many of the ``measured`` schedule texts begin with the first ``depth`` steps of the schedule
    ``label``; none for a schedule of fewer steps (the empty one: every step left out, never penalized)."""
    head = label.split(" ")[:depth] if label else []
    if len(head) < depth:
        return 0
    return sum(m.split(" ")[:depth] == head for m in measured)


@dataclass
class Novelty:
    """The current model's scores, each halved for every ``half`` measured schedules that begin with the
    scored one's first step: a beam search scored so turns away from the first steps already measured
    (the model's first choices, which its per-kernel correction barely reorders: on 3mm every schedule of
    plain rounds began with the same fusion, 1.39x, where other fusions reach 1.9-2.5x) to the best of the
    others."""

    scorer: ModelEvaluator
    measured: list[str]
    half: int
    depth: int = 1
    scored: int = 0

    def score(self, states: Sequence[ProgramState], labels: Sequence[str] | None = None) -> np.ndarray:
        self.scored += len(states)
        base = self.scorer.score(states, labels)
        if labels is None:
            return base
        return base * np.exp2([-explored(t, self.measured, self.depth) / self.half for t in labels])


@dataclass
class _Learner:
    """What an adaptive search has measured, and the model refitted to it after every batch (always from
    the offline model, so that it cannot drift from what it learned elsewhere). The unscheduled program
    (``root``) is known without measuring it: 1x by definition, a label for the model and a base for the
    refinement (atax, AMD EPYC: every schedule the rounds measured ran at 0.05-0.91x, so the blocks were
    cut from those nests, 1.6x at best, where a block of the unscheduled nest measured 2.4x)."""

    scorer: ModelEvaluator
    measurer: MeasuringEvaluator
    cfg: UpdateConfig
    on_round: Callable[[list[Scored]], None] | None
    root: Scored
    measured: dict[tuple, Scored] = field(default_factory=dict)
    trees: list[FeatureTree] = field(default_factory=list)
    speedups: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.offline = self.scorer.model
        try:
            self.trees.append(featurize(self.root.state))
            self.speedups.append(self.root.score)
        except FeatureLimitError:
            pass

    def measure(self, chosen: list[Scored]) -> list[Scored]:
        """Measure ``chosen``, keep the measurements, and update the model; the measured ``Scored``s."""
        ms = self.measurer.measure([c.state for c in chosen], [str(c.schedule) for c in chosen])
        out = []
        for c, m in zip(chosen, ms, strict=True):
            out.append(Scored(m.speedup or 0.0, c.schedule, c.state))
            self.measured[c.state.key] = out[-1]
            try:
                self.trees.append(featurize(c.state))
                self.speedups.append(m.speedup or 0.0)
            except FeatureLimitError:  # the model cannot read it: measured, not learned from
                pass
        if self.on_round is not None:
            self.on_round(list(self.measured.values()))
        self.scorer.model = update(self.offline, self.trees, self.speedups, self.cfg)
        return out

    def fastest_first(self) -> list[Scored]:
        """Every measured schedule, fastest first."""
        return sorted(self.measured.values(), key=lambda c: -c.score)

    def has(self, key: tuple) -> bool:
        """Whether the state of ``key`` is measured or is the unscheduled program."""
        return key in self.measured or key == self.root.state.key

    def known(self) -> list[Scored]:
        """Every measured schedule and the unscheduled program, fastest first."""
        extra = [] if self.root.state.key in self.measured else [self.root]
        return sorted([*self.measured.values(), *extra], key=lambda c: -c.score)


def _rounds(state: ProgramState, learner: _Learner, opts: AdaptiveOptions, space: SpaceOptions) -> None:
    """Rounds of model-guided beam search, each measuring a batch of its best candidates not measured yet,
    until the budget is spent or the best-predicted candidates have all been measured."""
    while len(learner.measured) < opts.measure_budget:
        ranked = beam_search(state, learner.scorer, beam_size=opts.beam_size, opts=space, keep=RANKED)
        fresh = [c for c in ranked if not learner.has(c.state.key)]
        n = min(opts.batch, opts.measure_budget - len(learner.measured))
        novel = min(opts.novel, n // 2) if learner.measured else 0
        chosen = [] if all(learner.has(c.state.key) for c in ranked[:opts.batch]) else \
            _batch(fresh, learner.scorer.model, n - novel, opts.explore)
        texts = [str(c.schedule) for c in learner.measured.values()]
        depths = [opts.novel_depths[k % len(opts.novel_depths)] for k in range(novel)]
        for depth in dict.fromkeys(depths):
            found = beam_search(state, Novelty(learner.scorer, texts, opts.batch, depth), beam_size=opts.beam_size,
                                opts=space, keep=RANKED)
            taken = {c.state.key for c in chosen}
            chosen += diverse_top([c for c in found if c.state.key not in taken and not learner.has(c.state.key)],
                                  depths.count(depth))
        if not chosen:
            return  # nothing new ranks high: the model agrees with what was measured
        learner.measure(chosen)


def _staged(state: ProgramState, learner: _Learner, opts: AdaptiveOptions, space: SpaceOptions) -> None:
    """Beam search's stages, each measuring the model's best legal children of the beam (of distinct cores),
    its share of what is left of the budget (at most twice an even share: a stage with no children leaves
    its share to the next ones); the beam keeps the fastest measured states, as an execution-based beam
    search does, but measuring only what the (updated) model ranks high. What is left after the last
    stage is spent in ``_rounds``."""
    beam = [learner.root]
    for k, kind in enumerate(STAGES):
        left = opts.measure_budget - len(learner.measured)
        if left <= 0:
            return
        quota = min(max(1, left // (len(STAGES) - k)), 2 * -(-opts.measure_budget // len(STAGES)))
        children: dict[tuple, tuple[Scored, Move, ProgramState]] = {}
        for parent in beam:
            for m in moves(parent.state, replace(space, kinds=(kind,))):
                if not learner.has(m.state.key) and m.state.key not in children:
                    children[m.state.key] = (Scored(0.0, parent.schedule + m.step, m.state), m, parent.state)
        if not children:
            continue
        items = list(children.values())
        scores = learner.scorer.score([c.state for c, _, _ in items])
        legal: list[Scored] = []
        for i in np.argsort(-scores, kind="stable"):  # legality checked only for what may be measured
            c, m, before = items[i]
            if len(legal) == 4 * quota:
                break
            try:
                if not m.proven:
                    m.step.checked(before, m.state)
            except ScheduleError:
                continue
            legal.append(replace(c, score=float(scores[i])))
        if legal:
            learner.measure(diverse_top(legal, quota))
        beam = learner.known()[:opts.beam_size]
    _rounds(state, learner, opts, space)


#: how much faster than every schedule measured before it a batch must make the fastest one to pay: the
#: refinement goes on with the kind of batch that paid
GAIN = 1.05


def _block_batch(nests: list[list[Block]], fastest: dict[tuple, float], n: int) -> list[Block]:
    """``n`` blocks to measure (``nests``: each nest's blocks not measured yet, best worth first; the nests
    fastest first): half of them of the group (nest and iterators jammed) that measured fastest so far,
    best worth first; the rest the best of each group not measured yet, taking the nests in turn; then the
    best of any."""
    chosen: list[Block] = []
    group = lambda b: (b.nest, b.moves_with)  # noqa: E731
    if fastest:
        top = max(fastest, key=fastest.__getitem__)
        chosen += [b for bs in nests for b in bs if group(b) == top][:n // 2]
    turns = [[b for b in bs if group(b) not in fastest] for bs in nests]
    for rank in range(max(map(len, turns), default=0)):
        for bs in turns:
            if rank < len(bs) and len(chosen) < n and all(group(bs[rank]) != group(c) for c in chosen):
                chosen.append(bs[rank])
    for b in (b for bs in nests for b in bs):
        if len(chosen) < n and all(b is not c for c in chosen):
            chosen.append(b)
    return chosen


@dataclass
class _Blocks:
    """Batches of register blocks of the loop nests of the ``block_nests`` fastest known schedules (of
    each nest, its fastest schedule and its fastest without jams; ``search.blocks``: ranked by the reuse
    they create, not by the model, which never saw them), each starting with the packs
    (``search.blocks.packs``) of the fastest schedule so far, where it has blocks. Blocks whose first batch
    does not pay are not asked again: jams do not pay on this kernel (syrk: the rounds' 64 measurements
    found 6.05x, blocks 3.7-4.9x)."""

    root: ProgramState
    space: SpaceOptions
    block_nests: int
    found: dict[str, list[Block]] = field(default_factory=dict)
    tried: set[Schedule] = field(default_factory=set)  # schedules whose packs were measured
    retire_unpaid: ClassVar[bool] = True

    def batch(self, learner: _Learner, n: int) -> list[Scored]:
        """At most ``n`` blocks and packs not measured yet (none when none is left)."""
        fastest_first = learner.known()
        bases = list(dict.fromkeys(nest_of(c.schedule, jams=False) for c in fastest_first))[:self.block_nests]
        sources = []  # of each base nest, its fastest schedule and its fastest without jams
        for base in bases:
            of_base = [c for c in fastest_first if nest_of(c.schedule, jams=False) == base]
            sources += [of_base[0], *[c for c in of_base if "jam" not in {t.kind for t in c.schedule.steps}][:1]]
        nests = list(dict.fromkeys(nest_of(c.schedule) for c in sources))
        for c in sources:
            if nest_of(c.schedule) not in self.found:
                self.found[nest_of(c.schedule)] = blocks(self.root, c.schedule, self.space)
        fastest: dict[tuple, float] = {}
        for b in (b for nest in nests for b in self.found[nest]):
            if (m := learner.measured.get(b.state.key)) is not None:
                fastest[b.nest, b.moves_with] = max(fastest.get((b.nest, b.moves_with), 0.0), m.score)
        fresh = [[b for b in self.found[nest] if b.state.key not in learner.measured] for nest in nests]
        packed = [Scored(0.0, sched, st) for c in fastest_first[:1] if c.schedule not in self.tried
                  for sched, st in packs(self.root, c.schedule) if st.key not in learner.measured]
        self.tried |= {c.schedule for c in fastest_first[:1]}
        chosen = packed[:n // 2]
        return chosen + [Scored(b.worth, b.schedule, b.state) for b in _block_batch(fresh, fastest, n - len(chosen))]


#: how many neighbors of one change (``Neighbor.change``: a step replaced, dropped or added) a batch takes
#: before it takes a second change's
PER_CHANGE = 2


@dataclass
class _Neighbors:
    """Measured local search: batches of the legal neighbors (``search.neighbors``) of the ``bases`` fastest
    measured schedules that the current model ranks highest, at most ``PER_CHANGE`` of each change; each
    batch starts from what the batches before it found."""

    root: ProgramState
    space: SpaceOptions
    bases: int
    found: dict[Schedule, list[Neighbor]] = field(default_factory=dict)
    refused: set[tuple] = field(default_factory=set)  # found illegal: checked once, not again in every batch
    retire_unpaid: ClassVar[bool] = False

    def batch(self, learner: _Learner, n: int) -> list[Scored]:
        """At most ``n`` legal neighbors not measured yet (none when none is left)."""
        fresh: dict[tuple, Neighbor] = {}
        for c in learner.known()[:self.bases]:
            if c.schedule not in self.found:
                self.found[c.schedule] = neighbors(self.root, c.schedule, self.space)
            fresh.update((m.state.key, m) for m in self.found[c.schedule]
                         if not learner.has(m.state.key) and m.state.key not in self.refused
                         and m.state.key not in fresh)
        if not fresh:
            return []
        cands = list(fresh.values())
        scores = learner.scorer.score([m.state for m in cands])
        chosen: list[Scored] = []
        taken: dict[str, int] = {}
        for i in np.argsort(-scores, kind="stable"):
            if len(chosen) == n:
                break
            c = cands[i]
            if taken.get(c.change, 0) >= PER_CHANGE:
                continue
            if not legal(self.root, c):
                self.refused.add(c.state.key)
                continue
            taken[c.change] = taken.get(c.change, 0) + 1
            chosen.append(Scored(float(scores[i]), c.schedule, c.state))
        return chosen


def _refine(state: ProgramState, learner: _Learner, opts: AdaptiveOptions, space: SpaceOptions) -> None:
    """Spend the budget on batches of ``opts.refiners``, first the first: a kind goes on while its batches
    pay (raise the fastest measured by ``GAIN``), and one that does not hands the next batch to the next
    kind (blocks whose first batch does not pay are not asked again); until the budget is spent or no kind
    has anything left. On 2mm and 3mm (AMD EPYC) neighbors pay after the blocks, on gemm-class kernels
    blocks of blocks do: a fixed split of the budget between them lost one or the other."""
    kinds: list[_Blocks | _Neighbors] = [
        _Blocks(state, space, opts.block_nests) if k == "blocks" else _Neighbors(state, space, opts.local_bases)
        for k in opts.refiners]
    asked = [0] * len(kinds)  # batches each kind measured
    turn = 0
    while kinds and (left := opts.measure_budget - len(learner.measured)) > 0:
        chosen = kinds[turn].batch(learner, min(opts.batch, left))
        paid = False
        if chosen:
            before = learner.known()[0].score
            learner.measure(chosen)
            asked[turn] += 1
            paid = learner.known()[0].score >= GAIN * before
        if paid:
            continue
        if not chosen or (asked[turn] == 1 and kinds[turn].retire_unpaid):  # nothing left, or not worth it
            del kinds[turn], asked[turn]
            turn = turn % len(kinds) if kinds else 0
        else:
            turn = (turn + 1) % len(kinds)


def adaptive_search(state: ProgramState, scorer: ModelEvaluator, measurer: MeasuringEvaluator, *,
                    opts: AdaptiveOptions = AdaptiveOptions(), space: SpaceOptions = SpaceOptions(),
                    keep: int = RANKED, on_round: Callable[[list[Scored]], None] | None = None) -> list[Scored]:
    """The measured schedules, fastest first, scored by their measured speedups (0: failed verification).

    ``scorer`` holds the offline model and, after each batch, the model updated on every measurement
    so far (the last one stays there); ``measurer`` measures, and keeps, every batch. ``on_round`` is
    called after each batch's measurements with every measured schedule so far, in the order measured.
    """
    learner = _Learner(scorer, measurer, opts.update, on_round, Scored(1.0, Schedule(), state))
    if opts.seeds and (found := seeds(state) + microkernel_seeds(state, this_machine())):
        learner.measure([Scored(0.0, s, s.apply(state)) for s in found[:opts.measure_budget]])
    first = replace(opts, measure_budget=max(1, opts.measure_budget - round(opts.refine * opts.measure_budget)))
    (_staged if opts.strategy == "staged" else _rounds)(state, learner, first, space)
    _refine(state, learner, opts, space)
    _rounds(state, learner, opts, space)  # what the refinement left of the budget
    return learner.fastest_first()[:keep]
