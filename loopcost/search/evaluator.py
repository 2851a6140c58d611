"""What a search asks for a batch of candidate states: a score each (higher is faster).

``ModelEvaluator`` asks the cost model (``predict`` on a batch); ``MeasuringEvaluator``
compiles the whole batch into one harness, runs it, and scores each state by its
measured, verified speedup (0 if it failed verification).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..codegen.compiler import Toolchain, compile_c
from ..codegen.harness import harness_c
from ..costmodel.model import CostModel
from ..features.extract import FeatureLimitError, featurize
from ..ir.state import ProgramState
from ..runner.local import Timing, run_variants
from ..runner.verify import verdict


@dataclass
class ModelEvaluator:
    """Scores by the cost model; a state beyond the features' limits (too deep after tiling) scores 0,
    so the search never keeps what the model cannot judge."""

    model: CostModel
    scored: int = 0

    def score(self, states: list[ProgramState]) -> np.ndarray:
        self.scored += len(states)
        trees, keep = [], []
        for k, st in enumerate(states):
            try:
                trees.append(featurize(st))
                keep.append(k)
            except FeatureLimitError:
                pass
        out = np.zeros(len(states))
        if trees:
            out[keep] = self.model.predict_trees(trees)
        return out


@dataclass
class MeasuringEvaluator:
    """Scores by measuring: states are compiled ``chunk`` at a time into one harness with the unscheduled
    program, which is timed beside them (a search stage can hold thousands of candidates: one huge
    binary would take gcc minutes)."""

    toolchain: Toolchain = field(default_factory=Toolchain)
    timing: Timing = Timing(min_runs=3, warmup=1, max_runs=10, min_time=0.05, max_time=1.0)
    timeout: float = 600.0
    chunk: int = 64
    scored: int = 0

    def measure(self, states: list[ProgramState]) -> tuple[np.ndarray, list]:
        """Speedup of each state over the unscheduled program (0.0 if not verified), and the raw results
        (each chunk's unscheduled run first, then its states')."""
        if not states:
            return np.zeros(0), []
        self.scored += len(states)
        initial = ProgramState.initial(states[0].program)
        out, raw = [], []
        for k in range(0, len(states), self.chunk):
            part = states[k:k + self.chunk]
            exe = compile_c(harness_c([initial, *part]), self.toolchain)
            results = run_variants(exe, list(range(len(part) + 1)), timing=self.timing, timeout=self.timeout)
            base = results[0]
            for st, r in zip(part, results[1:], strict=True):
                ok = base.ok and verdict(st.program, r).ok
                out.append(base.median / r.median if ok and r.times else 0.0)
            raw += results
        return np.array(out), raw

    def score(self, states: list[ProgramState]) -> np.ndarray:
        return self.measure(states)[0]
