"""Adaptive search: the cost model corrected, round after round, by what the search measures.

Each round runs the model-guided beam search with the current model, measures a batch of the best
candidates not measured yet (the best of distinct cores by prediction, plus the ones the ensemble's
members disagree on most among the rest: the model's blind spots), and refits the model to every
measurement so far (``costmodel.update``, always from the offline model). The search stops when the
measurement budget is spent or when the best-predicted candidates have all been measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..costmodel.model import CostModel
from ..costmodel.update import UpdateConfig, update
from ..errors import LoopcostError
from ..features.extract import FeatureLimitError, FeatureTree, featurize
from ..ir.state import ProgramState
from ..transforms.space import SpaceOptions
from .base import Scored
from .beam import beam_search
from .evaluator import MeasuringEvaluator, ModelEvaluator
from .ranking import RANKED, diverse_top


@dataclass(frozen=True)
class AdaptiveOptions:
    """``measure_budget`` schedules measured at most, ``batch`` a round, of which ``explore`` are chosen
    by the ensemble's disagreement; the beam search of each round keeps ``beam_size`` states."""

    measure_budget: int = 48
    batch: int = 8
    explore: int = 2
    beam_size: int = 4
    update: UpdateConfig = UpdateConfig()

    def __post_init__(self) -> None:
        if self.measure_budget < 1 or self.batch < 1 or self.beam_size < 1 or self.explore < 0:
            raise LoopcostError("--measure-budget, --batch and --budget must be at least 1")


def _batch(fresh: list[Scored], model: CostModel, n: int, explore: int) -> list[Scored]:
    """``n`` candidates: the best predicted of distinct cores, then the most disputed of the rest."""
    exploit = diverse_top(fresh, max(1, n - explore))
    rest = [c for c in fresh if all(c is not d for d in exploit)]
    if not rest or len(exploit) >= n:
        return exploit
    spread = model.predict_log_std([featurize(c.state) for c in rest])
    disputed = [rest[i] for i in np.argsort(-spread, kind="stable")[:n - len(exploit)]]
    return exploit + disputed


def adaptive_search(state: ProgramState, scorer: ModelEvaluator, measurer: MeasuringEvaluator, *,
                    opts: AdaptiveOptions = AdaptiveOptions(), space: SpaceOptions = SpaceOptions(),
                    keep: int = RANKED) -> list[Scored]:
    """The measured schedules, fastest first, scored by their measured speedups (0: failed verification).

    ``scorer`` holds the offline model and, after each round, the model updated on every measurement
    so far (the last one stays there); ``measurer`` measures, and keeps, every batch.
    """
    offline = scorer.model
    measured: dict[tuple, Scored] = {}
    trees: list[FeatureTree] = []
    speedups: list[float] = []
    while len(measured) < opts.measure_budget:
        ranked = beam_search(state, scorer, beam_size=opts.beam_size, opts=space, keep=RANKED)
        fresh = [c for c in ranked if c.state.key not in measured]
        if not fresh or all(c.state.key in measured for c in ranked[:opts.batch]):
            break  # nothing new ranks high: the model agrees with what was measured
        n = min(opts.batch, opts.measure_budget - len(measured))
        chosen = _batch(fresh, scorer.model, n, opts.explore)
        ms = measurer.measure([c.state for c in chosen], [str(c.schedule) for c in chosen])
        for c, m in zip(chosen, ms, strict=True):
            measured[c.state.key] = Scored(m.speedup or 0.0, c.schedule, c.state)
            try:
                trees.append(featurize(c.state))
                speedups.append(m.speedup or 0.0)
            except FeatureLimitError:  # the model cannot read it: measured, not learned from
                pass
        scorer.model = update(offline, trees, speedups, opts.update)
    return sorted(measured.values(), key=lambda c: -c.score)[:keep]
