"""Measuring on this machine: build a harness, run it in a process of its own under the machine-wide
lock, verify every variant against the reference, and return the measurements as data."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..codegen.compiler import Toolchain, compile_units
from ..codegen.harness import Harness, UserInit, state_harness
from ..database.fingerprint import fingerprint, machine_info
from ..errors import CompileError, CompileTimeout
from ..ir.state import ProgramState
from .measurement import Measurement
from .process import Timing, machine_busy, run_variants
from .verify import Verdict, verdict


@functools.cache
def _machine(toolchain: Toolchain) -> tuple[str, dict]:
    info = machine_info(toolchain.describe())
    return fingerprint(info), info


def harnesses(states: Sequence[ProgramState], reference: ProgramState | None, toolchain: Toolchain,
              chunk: int, labels: Sequence[str] | None = None, init: UserInit | None = None) -> list[Harness]:
    """``states`` split into harnesses of at most ``chunk`` of them, each with ``reference`` (default: the
    unscheduled program) as its variant 0 (one huge binary would take the compiler minutes), inputs made
    by ``init`` when given."""
    if not states:
        return []
    ref = reference or ProgramState.initial(states[0].program)
    names = list(labels) if labels is not None else [str(k + 1) for k in range(len(states))]
    first = "the unscheduled program" if reference is None else "the reference"
    return [state_harness([ref, *states[k:k + chunk]], toolchain, [first, *names[k:k + chunk]], init)
            for k in range(0, len(states), chunk)]


def measure_built(harness: Harness, *, timing: Timing, seed: int, timeout: float,
                  compile_timeout: float | None = None) -> list[Measurement]:
    """Build and run ``harness`` here; one measurement per variant but the reference. With
    ``compile_timeout``, a compiler call past that many seconds fails the variants (data, as code the
    compiler rejects), instead of the command (``COMPILE_TIMEOUT``)."""
    fp, info = _machine(harness.units[0].toolchain)
    labels = harness.labels[1:]
    t0 = time.perf_counter()
    try:
        with machine_busy() as waited:
            exe = compile_units(harness.units, cache=harness.cache, timeout=compile_timeout)
    except CompileError as e:  # generated code that does not compile is a loopcost bug: kept as data
        return [Measurement(label, error=f"build: {e}"[:4000], fingerprint=fp, machine=info) for label in labels]
    except CompileTimeout as e:
        if compile_timeout is None:
            raise
        return [Measurement(label, error=f"build: {e}"[:4000], fingerprint=fp, machine=info,
                            compile_s=time.perf_counter() - t0) for label in labels]
    t1 = time.perf_counter()
    results = run_variants(exe, list(range(len(harness.labels))), timing=timing, seed=seed, timeout=timeout)
    run_s = time.perf_counter() - t1
    ref, out = results[0], []
    for label, r in zip(labels, results[1:], strict=True):
        if not ref.ok:
            v = Verdict(False, f"{harness.labels[0]} (the reference) failed: {ref.error}")
        else:
            v = verdict(harness.outputs, r, rtol=harness.rtol, reference=harness.labels[0])
        errs = [math.inf if e is None else e for e, _ in (r.rel_errors or {}).values()]
        out.append(Measurement(label, r.times, ref.times, v.ok, None if v.ok else v.detail, max(errs, default=None),
                               r.checksum, fp, info, t1 - t0 - waited, run_s, vacuous=v.vacuous, censored=r.censored,
                               wait_s=waited))
    return out


@dataclass(frozen=True)
class LocalRunner:
    """Measures on this machine with ``toolchain``: one timed program at a time (a file lock in the
    cache), each harness in a process of its own; a crashing variant costs only itself. With ``init``,
    the inputs are the user's (see ``UserInit``)."""

    toolchain: Toolchain = field(default_factory=Toolchain)
    timeout: float = 600.0
    chunk: int = 64
    init: UserInit | None = None

    def measure(self, states: Sequence[ProgramState], *, timing: Timing = Timing(),
                reference: ProgramState | None = None, seed: int = 0, timeout: float | None = None,
                labels: Sequence[str] | None = None) -> list[Measurement]:
        out: list[Measurement] = []
        for h in harnesses(states, reference, self.toolchain, self.chunk, labels, self.init):
            out += self.measure_harness(h, timing=timing, seed=seed, timeout=timeout)
        return out

    def measure_harness(self, harness: Harness, *, timing: Timing = Timing(), seed: int = 0,
                        timeout: float | None = None) -> list[Measurement]:
        return measure_built(harness, timing=timing, seed=seed, timeout=timeout or self.timeout)

    def machine(self) -> tuple[str, dict]:
        return _machine(self.toolchain)
