"""Compile, run and verify a scheduled program against its unscheduled self."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..codegen.compiler import Toolchain, compile_c
from ..codegen.harness import harness_c
from ..ir.state import ProgramState
from .local import Timing, run_variants
from .result import RunResult
from .verify import verdict


@dataclass(frozen=True)
class Measurement:
    """A scheduled run, the baseline run it was compared with, and the verdict."""

    result: RunResult
    baseline: RunResult
    verified: bool
    detail: str
    compile_s: float

    @property
    def speedup(self) -> float:
        return self.baseline.median / self.result.median if self.result.times else float("nan")


def measure(state: ProgramState, *, toolchain: Toolchain | None = None, runs: int = 5, warmup: int = 1,
            seed: int = 0, timeout: float = 120.0) -> Measurement:
    """Time ``state`` and its unscheduled program side by side, in one process, and verify it.

    Every output element is compared with the unscheduled program's, with a
    reassociation tolerance (``loopcost.runner.verify.RTOL``).
    """
    t0 = time.perf_counter()
    exe = compile_c(harness_c([ProgramState.initial(state.program), state]), toolchain)
    compile_s = time.perf_counter() - t0
    base, res = run_variants(exe, [0, 1], timing=Timing(runs, warmup), seed=seed, timeout=timeout)
    if not base.ok:
        return Measurement(res, base, False, f"unscheduled program failed: {base.error}", compile_s)
    v = verdict(state.program, res)
    return Measurement(res, base, v.ok, v.detail if res.ok else f"scheduled program failed: {v.detail}",
                       compile_s)
