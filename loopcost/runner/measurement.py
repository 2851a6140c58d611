"""What every measurement returns, and the interface of the runners that make them.

A ``Runner`` measures states (or a prebuilt ``Harness``) and returns one ``Measurement`` per variant:
data, never an exception, whether the variant ran, crashed, timed out, failed to build or computed
something else than the reference. ``LocalRunner`` measures on this machine, ``DaskRunner`` on a
Dask cluster's workers; callers do not care which.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..codegen.harness import Harness
from ..ir.state import ProgramState
from .process import Timing


@dataclass(frozen=True)
class Measurement:
    """One variant of a harness, measured beside the harness's reference variant (the unscheduled program,
    or the user's original function): every timed run of both, whether its outputs matched the
    reference's (``error`` says why not) and the largest relative error of its outputs (inf: not finite),
    the output checksums, the machine that ran it (fingerprint and description), and the seconds the whole
    harness took to compile and to run, and waited for a timed run to end before compiling (``wait_s``, not in
    ``compile_s``). ``reused``: taken from the machine's store, not measured again."""

    label: str
    times: tuple[float, ...] = ()
    reference_times: tuple[float, ...] = ()
    verified: bool = False
    error: str | None = None
    max_rel_error: float | None = None
    checksum: dict | None = None
    fingerprint: str = ""
    machine: dict = field(default_factory=dict)
    compile_s: float = 0.0
    run_s: float = 0.0
    wait_s: float = 0.0
    reused: bool = False
    #: why the check against the reference checked nothing (then ``verified`` is False), or None
    vacuous: str | None = None
    #: timing stopped after two runs far slower than the reference's (``Timing.censor``): ``times`` is a
    #: lower bound of the time, ``speedup`` an upper bound of the speedup
    censored: bool = False

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def reference_median(self) -> float | None:
        return statistics.median(self.reference_times) if self.reference_times else None

    @property
    def speedup(self) -> float | None:
        """Reference median over this variant's median; None unless verified and both were timed."""
        m, r = self.median, self.reference_median
        return r / m if self.verified and m and r else None

    def to_json(self) -> dict:
        return {"verified": self.verified, "error": self.error, "median_s": self.median,
                "min_s": min(self.times, default=None), "times_s": list(self.times),
                "baseline_median_s": self.reference_median, "baseline_times_s": list(self.reference_times),
                "speedup": self.speedup, "compile_s": self.compile_s, "machine": self.fingerprint,
                "reused": self.reused, **({"vacuous": self.vacuous} if self.vacuous else {}),
                **({"censored": True} if self.censored else {})}

    def describe(self) -> str:
        """Verdict, times and speedup, one line each, for a state measured beside its unscheduled program."""
        lines = [f"verified   {'yes' if self.verified else f'NO: {self.error}'}"]
        if self.times:
            lines.append(f"median     {_seconds(self.median)}  over {len(self.times)} runs "
                         f"(min {_seconds(min(self.times))})")
        if self.reference_times:
            lines.append(f"baseline   {_seconds(self.reference_median)}  (unscheduled)")
        if self.speedup is not None:
            lines.append(f"speedup    {self.speedup:.2f}x")
        lines.append("reused     from this machine's store (--remeasure measures again)" if self.reused
                     else f"compile    {self.compile_s:.2f} s")
        return "\n".join(lines)


def _seconds(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


class Runner(Protocol):
    """Measures schedules of one program beside a reference, or a prebuilt harness."""

    def measure(self, states: Sequence[ProgramState], *, timing: Timing = Timing(),
                reference: ProgramState | None = None, seed: int = 0, timeout: float | None = None,
                labels: Sequence[str] | None = None) -> list[Measurement]:
        """One measurement per state, each timed in one harness with ``reference`` (default: the
        unscheduled program) and verified against it; ``labels`` (e.g. schedule texts) name them."""
        ...

    def measure_harness(self, harness: Harness, *, timing: Timing = Timing(), seed: int = 0,
                        timeout: float | None = None) -> list[Measurement]:
        """One measurement per variant of ``harness`` but the reference (variant 0)."""
        ...

    def machine(self) -> tuple[str, dict] | None:
        """The fingerprint and description of the machine that will measure, if known before measuring."""
        ...
