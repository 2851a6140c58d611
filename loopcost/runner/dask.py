"""Measuring on a Dask cluster: the same calls as ``LocalRunner``, each harness built and run by a worker
(the machine-wide lock in each worker machine's cache keeps one timed program per machine).

``executor`` is the pool behind it, also used by dataset builds, whose workers generate programs too.
Dask's nanny starts workers with ``OMP_NUM_THREADS=1``; a LocalCluster started here gets this
process's OpenMP thread count instead, and every measurement's fingerprint records the thread count
it ran with (start remote workers with ``DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON__OMP_NUM_THREADS``
set to their core count, or ``dask worker --no-nanny``).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from ..codegen.compiler import Toolchain
from ..codegen.harness import Harness
from ..errors import EnvironmentFailure, LoopcostError
from ..ir.state import ProgramState
from .local import harnesses, measure_built
from .measurement import Measurement
from .process import Timing

#: seconds to wait for a Dask scheduler before the command fails (exit 3)
CONNECT_TIMEOUT = 30.0
#: the settings of ``distributed.Security`` a ``--security`` file may give
SECURITY_KEYS = ("tls_ca_file", "tls_client_cert", "tls_client_key", "require_encryption", "tls_min_version")


def security_from(path: str | None):
    """The ``distributed.Security`` to reach a scheduler with: the settings of a JSON file (``--security``:
    ``{"tls_ca_file": ..., "tls_client_cert": ..., "tls_client_key": ...}``), or, without one, Dask's
    configuration (``distributed.comm.tls.*``)."""
    from distributed.security import Security

    if path is None:
        return Security()
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise LoopcostError(f"--security {path}: not a readable JSON file ({e})") from None
    if not isinstance(doc, dict) or set(doc) - set(SECURITY_KEYS):
        raise LoopcostError(f"--security {path}: a JSON object of {', '.join(SECURITY_KEYS)} only")
    for key, value in doc.items():
        if key.endswith(("_file", "_cert", "_key")) and not Path(value).is_file():
            raise LoopcostError(f"--security {path}: {key} {value} is not a file")
    return Security(**doc)


def _open_warning(cluster: str) -> str | None:
    """What to tell a user who sends programs to a scheduler over plain TCP beyond this machine."""
    host = urlparse(cluster if "://" in cluster else f"tcp://{cluster}").hostname or ""
    if cluster.startswith("tls://") or host in ("localhost", "::1") or host.startswith("127."):
        return None
    return (f"loopcost: warning: {cluster} is plain TCP: anyone who can reach this scheduler can run code on its "
            f"workers (they compile and run what they are sent); use tls://HOST:PORT with --security FILE")


@contextmanager
def executor(workers: int, cluster: str | None, security=None) -> Iterator[cf.Executor]:
    """A process pool on this machine (``cluster`` None), a new Dask LocalCluster (``"local"``), or the
    Dask scheduler at ``cluster`` (``tcp://HOST:PORT``, or ``tls://HOST:PORT`` reached with ``security``:
    a ``--security`` file's name, a ``distributed.Security``, or None for Dask's configuration), as a
    ``concurrent.futures`` executor."""
    if cluster is None:
        with cf.ProcessPoolExecutor(max_workers=workers) as ex:
            yield ex
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise LoopcostError("--cluster needs Dask: pip install 'loopcost[cluster]'") from None
    if cluster == "local":
        import dask

        # Dask's nanny sets OMP_NUM_THREADS=1 in its workers: parallel schedules would run on one core
        threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
        with dask.config.set({"distributed.nanny.pre-spawn-environ.OMP_NUM_THREADS": threads}), \
                LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                             dashboard_address=None) as lc, Client(lc) as client:
            yield client.get_executor()
        return
    warning = _open_warning(cluster)
    if warning:
        print(warning, file=sys.stderr)
    sec = security_from(security) if security is None or isinstance(security, str) else security
    if cluster.startswith("tls://") and not sec.get_tls_config_for_role("client").get("ca_file"):
        raise LoopcostError(f"{cluster} needs certificates: --security FILE, or Dask's distributed.comm.tls "
                            f"configuration")
    try:
        client = Client(cluster, timeout=CONNECT_TIMEOUT, security=sec)
    except (OSError, TimeoutError) as e:
        raise EnvironmentFailure(f"cannot reach Dask scheduler {cluster}: {e}") from None
    with client:
        yield client.get_executor()


@dataclass
class DaskRunner:
    """Measures through ``pool`` (an ``executor``): harnesses are built here and sent as C text; workers
    compile, run and verify them, and each measurement carries the fingerprint of the worker's machine."""

    pool: cf.Executor
    toolchain: Toolchain = field(default_factory=Toolchain)
    timeout: float = 600.0
    chunk: int = 16

    def measure(self, states: Sequence[ProgramState], *, timing: Timing = Timing(),
                reference: ProgramState | None = None, seed: int = 0, timeout: float | None = None,
                labels: Sequence[str] | None = None) -> list[Measurement]:
        futures = [self._submit(h, timing, seed, timeout)
                   for h in harnesses(states, reference, self.toolchain, self.chunk, labels)]
        return [m for f in futures for m in f.result()]

    def measure_harness(self, harness: Harness, *, timing: Timing = Timing(), seed: int = 0,
                        timeout: float | None = None) -> list[Measurement]:
        return self._submit(harness, timing, seed, timeout).result()

    def machine(self) -> None:
        """Unknown until a worker measures: each measurement carries its worker machine's fingerprint."""
        return None

    def _submit(self, h: Harness, timing: Timing, seed: int, timeout: float | None) -> cf.Future:
        return self.pool.submit(measure_built, h, timing=timing, seed=seed, timeout=timeout or self.timeout)
