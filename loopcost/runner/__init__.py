"""The one measurement path: everything that runs generated code goes through a ``Runner``.

``open_runner(None)`` measures on this machine, ``open_runner("local")`` on a Dask LocalCluster, and
``open_runner("tcp://HOST:8786")`` on the workers of a running Dask scheduler.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..codegen.compiler import Toolchain
from ..codegen.harness import UserInit
from ..errors import LoopcostError
from .dask import DaskRunner, executor
from .local import LocalRunner
from .measurement import Measurement, Runner
from .process import Timing
from .recorded import RecordingRunner

__all__ = ["DaskRunner", "LocalRunner", "Measurement", "RecordingRunner", "Runner", "Timing", "open_runner"]


@contextmanager
def open_runner(cluster: str | None = None, *, toolchain: Toolchain | None = None, workers: int = 2,
                timeout: float = 600.0, store: Path | None = None, source: str = "search",
                reuse: bool = True, security: str | None = None, init: UserInit | None = None) -> Iterator[Runner]:
    """A runner on this machine (``cluster`` None) or on a Dask cluster (``"local"`` or a scheduler address),
    closed (with its cluster connection) on exit; with ``store``, it records what it measures there and,
    with ``reuse``, takes what this machine measured before from there instead of measuring it again;
    ``security`` reaches a ``tls://`` scheduler (see ``dask.executor``). With ``init`` (the user's inputs,
    this machine only), nothing is recorded or reused: the store knows inputs by their seed only."""
    toolchain = toolchain or Toolchain()
    if init is not None:
        if cluster is not None:
            raise LoopcostError("--init runs the user's C file, which a cluster's workers do not have: "
                                "measure on this machine, or leave --init out")
        yield LocalRunner(toolchain, timeout, init=init)
        return
    if cluster is None:
        yield _recorded(LocalRunner(toolchain, timeout), store, source, reuse)
        return
    with executor(workers, cluster, security) as pool:
        yield _recorded(DaskRunner(pool, toolchain, timeout), store, source, reuse)


def _recorded(runner: Runner, store: Path | None, source: str, reuse: bool) -> Runner:
    return runner if store is None else RecordingRunner(runner, store, source, reuse)
