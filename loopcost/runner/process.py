"""Run a compiled harness in a process of its own, one timed program at a time on the machine."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import LoopcostError
from ..paths import cache_root
from .result import RunResult


@contextlib.contextmanager
def _flock(path: Path, mode: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def machine_lock():
    """Hold the machine-wide measurement lock: no other timed run, and no work under ``machine_busy``
    (a compiler, a program generator), runs beside this one's timed runs. A timed run waiting for the lock
    holds the turnstile, so new busy work waits behind it and cannot starve it."""
    root = cache_root()
    with _flock(root / "measure.turnstile", fcntl.LOCK_EX), _flock(root / "measure.lock", fcntl.LOCK_EX):
        yield


@contextlib.contextmanager
def machine_busy():
    """Mark heavy work of this process (compiling, generating programs) that must not run beside a timed
    run: any number of busy holders run together, never while ``machine_lock`` is held. On 2 cores, a
    compiler beside a timed run tripled the labels' noise (median 2.6% to 8.0%; parallel schedules 4% to
    23%: ``bench/BUILD-amd.md``). Yields the seconds it waited for a timed run to end: the work's own time is
    the rest."""
    t0 = time.perf_counter()
    root = cache_root()
    with _flock(root / "measure.turnstile", fcntl.LOCK_EX):
        pass
    with _flock(root / "measure.lock", fcntl.LOCK_SH):
        yield time.perf_counter() - t0


#: the factor past which the dataset's and the searches' runs are stopped (``Timing.abort``): on the AMD EPYC dataset
#: (7.3 h of runs) the 3.4% of labels slower than 1/20 took 1.6 h past that point; no search keeps such a schedule
ABORT = 20.0


@dataclass(frozen=True)
class Timing:
    """How many runs: ``warmup`` untimed, then at least ``min_runs`` and ``min_time`` seconds,
    at most ``max_runs`` (None: exactly ``min_runs``); with ``max_time``, stop once that much
    time is spent (after at least one run), so slow schedules cost a bounded time.

    ``timed_check``: the run whose outputs are checked is the first timed one (needs ``warmup=0``);
    ``steady`` (> 0): stop once two runs and ``min_time`` are done and the runs so far are within this
    relative spread, even before ``min_runs``; ``censor`` (> 1, with ``timed_check``): a schedule that
    would run again although its first two runs were both more than ``censor`` times slower than the
    reference's fastest run stops there, its time *censored* (a lower bound). Two runs, not one: with
    one, a run stalled by another process (a compiler beside it) censored 12 of 105 labels wrongly
    (``bench/BUILD.md``); ``abort`` (> 1): a run of a schedule still going after ``abort`` times the reference's
    fastest run (and at least ``harness.ABORT_FLOOR_S``) is stopped, and the schedule fails (no label: its
    check did not finish): a schedule 200 times slower costs ``abort`` times the program, not 200 times twice."""

    min_runs: int = 5
    warmup: int = 1
    max_runs: int | None = None
    min_time: float = 0.0
    max_time: float = 0.0
    timed_check: bool = False
    censor: float = 0.0
    steady: float = 0.0
    abort: float = 0.0

    def __post_init__(self) -> None:
        if self.timed_check and self.warmup:
            raise LoopcostError("a timed check is the first timed run: it allows no warm-up run")
        if self.censor and (self.censor <= 1 or not self.timed_check):
            raise LoopcostError(f"censoring needs a factor above 1 and a timed check (censor={self.censor:g})")
        if self.steady < 0:
            raise LoopcostError(f"the steady spread must be at least 0 (steady={self.steady:g})")
        if self.abort and self.abort <= 1:
            raise LoopcostError(f"stopping slow runs needs a factor above 1 (abort={self.abort:g})")

    def args(self) -> list[str]:
        return [f"warmup={self.warmup}", f"min_runs={self.min_runs}",
                f"max_runs={self.max_runs or self.min_runs}", f"min_time_us={int(self.min_time * 1e6)}",
                f"max_time_us={int(self.max_time * 1e6)}", f"timed_check={int(self.timed_check)}",
                f"censor_x1000={round(self.censor * 1000)}", f"steady_x1000={round(self.steady * 1000)}",
                f"abort_x1000={round(self.abort * 1000)}"]


@dataclass(frozen=True)
class Limits:
    """What one harness process may take: bytes of address space, bytes of any file it writes, seconds of
    CPU (all its threads together). A variant that allocates or writes without end is stopped by them and
    reported as a failed measurement, never the machine's failure."""

    address_space: int
    file_size: int
    cpu_seconds: int

    @staticmethod
    def for_run(timeout: float) -> Limits:
        """Three quarters of the machine's memory, half of it for a file, and the timeout's worth of CPU on
        every core (the wall-clock timeout stops a process that waits)."""
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return Limits(memory * 3 // 4, memory // 2, int(timeout * (os.cpu_count() or 1)) + 10)

    def apply(self) -> None:
        """Set the limits on this process (the harness's, between fork and exec)."""
        resource.setrlimit(resource.RLIMIT_AS, (self.address_space, self.address_space))
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size, self.file_size))
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 5))

    def why(self, returncode: int) -> str | None:
        """The limit a process killed with ``returncode`` ran into, if that is what killed it."""
        if returncode == -signal.SIGXCPU:
            return f"limit: more than {self.cpu_seconds} s of CPU time"
        if returncode == -signal.SIGXFSZ:
            return f"limit: wrote a file of more than {self.file_size} bytes"
        return None


def _why(returncode: int, stderr: str) -> str:
    if returncode < 0:
        return f"crash: killed by signal {signal.Signals(-returncode).name}: {stderr.strip()[-2000:]}"
    return f"crash: exit status {returncode}: {stderr.strip()[-2000:]}"


def run_variants(exe: Path, variants: list[int], *, timing: Timing = Timing(), seed: int = 0,
                 dump_prefix: str | None = None, timeout: float = 120.0,
                 limits: Limits | None = None, reference_min: float | None = None) -> list[RunResult]:
    """Run ``variants`` of a harness in one process within ``limits`` (default ``Limits.for_run(timeout)``);
    one RunResult per variant, in order.

    A variant that crashes, times out, runs into a limit or runs past ``timing.abort`` gets an error; the
    variants after it run again in a fresh process, so one bad schedule costs only itself (``reference_min``:
    the fastest run of variant 0, for censoring and stopping when variant 0 is not among ``variants``).
    """
    if not variants:
        return []
    limits = limits or Limits.for_run(timeout)
    cmd = [str(exe), f"seed={seed}", *timing.args(), f"variants={','.join(map(str, variants))}"]
    if reference_min:
        cmd.append(f"ref_min_ns={round(reference_min * 1e9)}")
    if dump_prefix:
        cmd.append(f"dump={dump_prefix}")
    with machine_lock():
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                                 preexec_fn=limits.apply)
            out = res.stdout
            failure = (None if res.returncode == 0 else
                       f"limit: a run took more than {timing.abort:g} times the unscheduled program's fastest"
                       if res.returncode == -signal.SIGALRM and timing.abort else
                       limits.why(res.returncode) or _why(res.returncode, res.stderr))
        except subprocess.TimeoutExpired as e:
            out = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout) or ""
            failure = f"timeout: no result after {timeout:g} s"
        except OSError as e:
            return [RunResult(error=f"could not start {exe}: {e}") for _ in variants]
    results: list[RunResult] = []
    for line in out.splitlines():
        if not line.endswith("}"):
            break  # a line cut short by a crash
        try:
            rep = json.loads(line)
            errors = {name: (e, int(i)) for name, (e, i) in rep["errors"].items()}
            vacuity = {name: (int(a), int(b), int(n)) for name, (a, b, n) in rep.get("vacuity", {}).items()}
            results.append(RunResult(tuple(float(t) for t in rep["times_s"]), rep["checksums"], None, errors,
                                     vacuity, bool(rep.get("censored", 0))))
        except (ValueError, KeyError, TypeError) as e:
            return results + [RunResult(error=f"unreadable harness output ({e}): {out[:300]!r}")
                              for _ in variants[len(results):]]
    if len(results) == len(variants):
        return results
    if failure is None:
        failure = f"unreadable harness output: {out[:300]!r}"
    rest = variants[len(results) + 1:]
    reference = [min(r.times) for v, r in zip(variants[:len(results)], results, strict=True) if v == 0 and r.times]
    return results + [RunResult(error=failure)] + run_variants(
        exe, rest, timing=timing, seed=seed, dump_prefix=None, timeout=timeout, limits=limits,
        reference_min=reference[0] if reference else reference_min)
