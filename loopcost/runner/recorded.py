"""A runner that keeps what it measures: every labelled measurement of a schedule goes into the machine's
store (``runs``: program, schedule text, machine, code generator version, every run time), so what a
search measured is never thrown away and a model can later learn from it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..codegen.c_source import CODEGEN_VERSION
from ..codegen.harness import Harness
from ..database.store import Run, Store
from ..ir.state import ProgramState
from .measurement import Measurement, Runner
from .process import Timing


def record(store_path: str | Path, program_state: ProgramState, measurements: Sequence[Measurement],
           source: str) -> None:
    """Store ``measurements`` (labelled by schedule text) of schedules of ``program_state``'s program."""
    if not measurements:
        return
    p = program_state.program
    with Store(store_path) as store:
        by_machine: dict[str, list[Measurement]] = {}
        for m in measurements:
            by_machine.setdefault(m.fingerprint, []).append(m)
        for fp, ms in by_machine.items():
            store.add_runs(program_json=p.to_json(), program_hash=p.content_hash(),
                           machine=store.machine_id(fp, ms[0].machine), codegen=CODEGEN_VERSION, source=source,
                           runs=[Run(m.label, m.verified, m.error, m.times, m.reference_times, m.speedup)
                                 for m in ms], now=time.time())


@dataclass
class RecordingRunner:
    """Measures through ``inner`` and records every measurement of labelled states (schedule texts) in the
    store at ``store``, tagged with ``source`` (e.g. ``optimize:beam``). Harnesses that are not schedules
    of one program (a drop-in check, compilers side by side) are measured, not recorded."""

    inner: Runner
    store: Path
    source: str = "search"

    def measure(self, states: Sequence[ProgramState], *, timing: Timing = Timing(),
                reference: ProgramState | None = None, seed: int = 0, timeout: float | None = None,
                labels: Sequence[str] | None = None) -> list[Measurement]:
        out = self.inner.measure(states, timing=timing, reference=reference, seed=seed, timeout=timeout,
                                 labels=labels)
        if labels is not None and reference is None:
            record(self.store, states[0], out, self.source)
        return out

    def measure_harness(self, harness: Harness, *, timing: Timing = Timing(), seed: int = 0,
                        timeout: float | None = None) -> list[Measurement]:
        return self.inner.measure_harness(harness, timing=timing, seed=seed, timeout=timeout)
