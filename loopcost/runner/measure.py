"""Compile, run and verify a scheduled program against its unscheduled self."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass

from ..codegen.compiler import Toolchain, compile_c
from ..codegen.harness import harness_c
from ..ir.state import ProgramState
from .local import run_binary
from .result import RunResult
from .verify import compare_arrays, compare_checksums, read_dump

#: above this many output bytes, verification compares checksums instead of elements.
ELEMENTWISE_LIMIT = 256 * 2**20


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
    """Time ``state`` and its unscheduled program side by side and verify the output.

    Outputs are compared element by element (with a reassociation tolerance)
    when they are small enough, otherwise by checksum.
    """
    toolchain = toolchain or Toolchain()
    p = state.program
    t0 = time.perf_counter()
    base_exe = compile_c(harness_c(ProgramState.initial(p)), toolchain)
    exe = compile_c(harness_c(state), toolchain)
    compile_s = time.perf_counter() - t0
    elementwise = sum(b.size * 8 for b in p.buffers) <= ELEMENTWISE_LIMIT
    with tempfile.TemporaryDirectory(prefix="loopcost-") as tmp:
        base = run_binary(base_exe, runs=runs, warmup=warmup, seed=seed, timeout=timeout,
                          dump_prefix=f"{tmp}/base" if elementwise else None)
        res = run_binary(exe, runs=runs, warmup=warmup, seed=seed, timeout=timeout,
                         dump_prefix=f"{tmp}/sched" if elementwise else None)
        if not base.ok:
            return Measurement(res, base, False, f"unscheduled program failed: {base.error}", compile_s)
        if not res.ok:
            return Measurement(res, base, False, f"scheduled program failed: {res.error}", compile_s)
        if elementwise:
            verdict = compare_arrays(p, read_dump(p, f"{tmp}/sched.out"), read_dump(p, f"{tmp}/base.out"))
        else:
            verdict = compare_checksums(p, res.checksum, base.checksum)
    return Measurement(res, base, verdict.ok, verdict.detail, compile_s)
