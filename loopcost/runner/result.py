"""What a run returns: data, never an exception."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class RunResult:
    """One variant's run: times in seconds, output checksums, the relative error of each
    output against the reference variant with the flat index of its worst element
    (error None: not finite), an error message (None if it ran), and what the reference run's outputs
    are worth as a check (``vacuity``)."""

    times: tuple[float, ...] = ()
    checksum: dict | None = None
    error: str | None = None
    rel_errors: dict[str, tuple[float | None, int]] | None = None
    #: per output of the reference run: (elements NaN or infinite, elements left as before the run, elements)
    vacuity: dict[str, tuple[int, int, int]] | None = None
    #: timing stopped after two runs both far slower than the reference's (``Timing.censor``)
    censored: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    @property
    def min(self) -> float:
        return min(self.times) if self.times else float("nan")
