"""What a search asks for a batch of candidate states: a score each (higher is faster).

``ModelEvaluator`` asks the cost model (``predict`` on a batch); ``MeasuringEvaluator`` measures the
batch through a runner and scores each state by its measured, verified speedup (0 if it failed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..costmodel.model import CostModel
from ..errors import ScheduleError, VacuousCheckError
from ..features.extract import FeatureLimitError, featurize
from ..ir.state import ProgramState
from ..runner import LocalRunner, Measurement, Runner, Timing
from ..runner.process import ABORT


@dataclass
class ModelEvaluator:
    """Scores by the cost model; a state beyond the features' limits (too deep after tiling) scores 0,
    so the search never keeps what the model cannot judge, and so does one whose packs cannot be laid
    out (a neighbor built without checks, ``search.neighbors``: its box unbounded or too big)."""

    model: CostModel
    scored: int = 0

    def score(self, states: Sequence[ProgramState], labels: Sequence[str] | None = None) -> np.ndarray:
        self.scored += len(states)
        trees, keep = [], []
        for k, st in enumerate(states):
            try:
                trees.append(featurize(st))
                keep.append(k)
            except (FeatureLimitError, ScheduleError):
                pass
        out = np.zeros(len(states))
        if trees:
            out[keep] = self.model.predict_trees(trees)
        return out


#: how a measured candidate is timed by default: at least 3 runs and 50 ms, at most 10 runs or 1 s; a run past
#: ``ABORT`` times the unscheduled program's fastest is stopped (the candidate fails: 0.0)
MEASURE_TIMING = Timing(min_runs=3, warmup=1, max_runs=10, min_time=0.05, max_time=1.0, abort=ABORT)


@dataclass
class MeasuringEvaluator:
    """Scores by measuring through ``runner`` (on this machine by default): each state's verified speedup
    over the unscheduled program timed beside it in one harness (0.0 if it failed). Every measurement it
    made is kept in ``measurements``, in order. A check that checks nothing (``Measurement.vacuous``)
    stops the search: ``VacuousCheckError``."""

    runner: Runner = field(default_factory=LocalRunner)
    timing: Timing = MEASURE_TIMING
    scored: int = 0
    measurements: list[Measurement] = field(default_factory=list)

    def measure(self, states: Sequence[ProgramState], labels: Sequence[str] | None = None) -> list[Measurement]:
        """One measurement per state (named by ``labels``, e.g. schedule texts, when given)."""
        self.scored += len(states)
        out = self.runner.measure(states, timing=self.timing, labels=labels)
        self.measurements += out
        why = next((m.vacuous for m in out if m.vacuous), None)
        if why is not None:  # every candidate would "verify" against nothing: a search cannot rank them
            raise VacuousCheckError(f"{why} with these inputs, so no candidate can be verified against it; "
                                    "give other inputs (a C file's own: --init FUNC)")
        return out

    def score(self, states: Sequence[ProgramState], labels: Sequence[str] | None = None) -> np.ndarray:
        return np.array([m.speedup or 0.0 for m in self.measure(states, labels)])
