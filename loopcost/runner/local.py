"""Run a compiled harness in a separate process, one timed program at a time."""

from __future__ import annotations

import contextlib
import fcntl
import json
import signal
import subprocess
from pathlib import Path

from ..codegen.compiler import cache_root
from .result import RunResult


@contextlib.contextmanager
def machine_lock():
    """Hold the machine-wide measurement lock, so no two timed runs overlap."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "measure.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_binary(exe: Path, *, runs: int = 5, warmup: int = 1, seed: int = 0,
               dump_prefix: str | None = None, timeout: float = 120.0) -> RunResult:
    """Run ``exe`` (a loopcost harness) and parse its report.

    A crash, a timeout or unreadable output comes back as ``RunResult.error``.
    """
    cmd = [str(exe), str(warmup), str(runs), str(seed)] + ([dump_prefix] if dump_prefix else [])
    with machine_lock():
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return RunResult(error=f"timeout: no result after {timeout:g} s")
        except OSError as e:
            return RunResult(error=f"could not start {exe}: {e}")
    if res.returncode != 0:
        if res.returncode < 0:
            why = f"killed by signal {signal.Signals(-res.returncode).name}"
        else:
            why = f"exit status {res.returncode}"
        return RunResult(error=f"crash: {why}: {res.stderr.strip()[-2000:]}")
    try:
        report = json.loads(res.stdout)
        times = tuple(float(t) for t in report["times_s"])
        checksum = report["checksums"]
    except (ValueError, KeyError, TypeError) as e:
        return RunResult(error=f"unreadable harness output ({e}): {res.stdout[:500]!r}")
    return RunResult(times, checksum)

