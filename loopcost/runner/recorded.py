"""A runner that keeps what it measures and does not measure twice: every labelled measurement of a
schedule goes into the machine's store (``runs``: program, schedule text, machine, code generator
version, input seed, every run time), so what a search measured is never thrown away and a model can
later learn from it; and a schedule this machine already measured before (same program, schedule,
fingerprint of CPU, compiler and flags, code generator and inputs) is taken from the store instead of
being measured again."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..codegen.c_source import codegen_version
from ..codegen.harness import Harness
from ..database.store import Run, Store
from ..ir.state import ProgramState
from .measurement import Measurement, Runner
from .process import Timing


def record(store_path: str | Path, program_state: ProgramState, measurements: Sequence[Measurement],
           source: str, seed: int = 0) -> None:
    """Store ``measurements`` (labelled by schedule text) of schedules of ``program_state``'s program, made on
    inputs of ``seed``, in one transaction per machine."""
    if not measurements:
        return
    p = program_state.program
    with Store(store_path) as store:
        by_machine: dict[str, list[Measurement]] = {}
        for m in measurements:
            by_machine.setdefault(m.fingerprint, []).append(m)
        for fp, ms in by_machine.items():
            store.add_runs(program_json=p.to_json(), program_hash=p.content_hash(),
                           machine=store.machine_id(fp, ms[0].machine), codegen=codegen_version(p), source=source,
                           runs=[Run(m.label, m.verified, m.error, m.times, m.reference_times, m.speedup, seed)
                                 for m in ms], now=time.time())


def stored(store_path: str | Path, program_state: ProgramState, labels: Sequence[str], machine: tuple[str, dict],
           *, seed: int, timing: Timing, before: float) -> dict[str, Measurement]:
    """The measurements of ``labels`` (schedule texts) of ``program_state``'s program that ``machine`` made
    before the time ``before`` (see ``Store.reusable``) and that ``timing`` would have accepted (as many
    runs as it asks for, or as much time as it allows), as ``Measurement``s marked ``reused``."""
    def enough(times: tuple[float, ...]) -> bool:
        return len(times) >= timing.min_runs or (timing.max_time > 0 and sum(times) >= timing.max_time)

    fp, info = machine
    p = program_state.program
    with Store(store_path) as store:
        runs = store.reusable(p.content_hash(), labels, fingerprint=fp, codegen=codegen_version(p), seed=seed,
                              before=before, enough=enough)
    return {label: Measurement(label, r.times, r.reference_times, True, None, fingerprint=fp, machine=info,
                               reused=True) for label, r in runs.items()}


@dataclass
class RecordingRunner:
    """Measures through ``inner`` and records every measurement of labelled states (schedule texts) in the
    store at ``store``, tagged with ``source`` (e.g. ``optimize:beam``). With ``reuse``, a labelled state
    that ``inner``'s machine measured before this runner was made (``since``), verified and with at least
    the timing's minimum of runs, is taken from the store; a runner whose machine is known only after
    measuring (a Dask cluster) always measures. Harnesses that are not schedules of one program (a
    drop-in check, compilers side by side) are measured, not recorded.

    Measurements made by this runner are never reused by it: a search that measures its best again
    means to measure them again, beside each other."""

    inner: Runner
    store: Path
    source: str = "search"
    reuse: bool = True
    since: float = field(default_factory=time.time)

    def measure(self, states: Sequence[ProgramState], *, timing: Timing = Timing(),
                reference: ProgramState | None = None, seed: int = 0, timeout: float | None = None,
                labels: Sequence[str] | None = None) -> list[Measurement]:
        if labels is None or reference is not None or not states:
            return self.inner.measure(states, timing=timing, reference=reference, seed=seed, timeout=timeout,
                                      labels=labels)
        machine = self.inner.machine() if self.reuse else None
        known = {} if machine is None else stored(self.store, states[0], labels, machine, seed=seed, timing=timing,
                                                  before=self.since)
        todo = [k for k, label in enumerate(labels) if label not in known]
        fresh = self.inner.measure([states[k] for k in todo], timing=timing, seed=seed, timeout=timeout,
                                   labels=[labels[k] for k in todo]) if todo else []
        record(self.store, states[0], fresh, self.source, seed)
        by_index = dict(zip(todo, fresh, strict=True))
        return [by_index[k] if k in by_index else known[label] for k, label in enumerate(labels)]

    def measure_harness(self, harness: Harness, *, timing: Timing = Timing(), seed: int = 0,
                        timeout: float | None = None) -> list[Measurement]:
        return self.inner.measure_harness(harness, timing=timing, seed=seed, timeout=timeout)

    def machine(self) -> tuple[str, dict] | None:
        return self.inner.machine()
