"""The unit of work of a dataset build: one program with its schedules, compiled and measured.

Tasks are plain functions of plain data, so a process pool or a Dask worker
can run them; they return results and never touch the store.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from ..codegen.compiler import Toolchain
from ..database.fingerprint import fingerprint, machine_info
from ..database.store import Row
from ..errors import LoopcostError
from ..generator.programs import GeneratorOptions, random_program
from ..generator.schedules import STAGED_SHARE, random_schedules
from ..ir.program import Program
from ..ir.state import ProgramState
from ..runner import LocalRunner, Timing
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions

#: the dataset's default timing: at least 3 runs and 20 ms, at most 30 runs, but no more than
#: 0.25 s of runs for one schedule (slow schedules get 1 or 2 runs); the verified run warms up
DATASET_TIMING = Timing(min_runs=3, warmup=0, max_runs=30, min_time=0.02, max_time=0.25)


@dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    schedules: int = 20
    timing: Timing = DATASET_TIMING
    toolchain: Toolchain = field(default_factory=Toolchain)
    generator: GeneratorOptions = GeneratorOptions()
    space: SpaceOptions = SpaceOptions()
    timeout: float = 300.0
    #: the share of schedules drawn as walks through the search's stage order (0: random order only)
    staged_share: float = STAGED_SHARE

    def __post_init__(self) -> None:
        if self.schedules < 1:
            raise LoopcostError("--schedules must be at least 1")
        if not 0 <= self.staged_share <= 1:
            raise LoopcostError("--staged-share must be between 0 and 1")


@dataclass(frozen=True)
class BatchResult:
    """A measured program: its rows (the empty schedule first), where and how long it took."""

    idx: int
    program_json: dict | None
    program_hash: str | None
    fingerprint: str
    machine: dict
    baseline_times: tuple[float, ...]
    rows: list[Row]
    seconds: dict[str, float]
    error: str | None = None


def _measure(schedules: list[Schedule], states: list[ProgramState],
             cfg: BuildConfig) -> tuple[tuple[float, ...], list[Row], dict[str, float]]:
    """All ``states`` in one harness beside the unscheduled program, on this machine (a worker's)."""
    runner = LocalRunner(cfg.toolchain, cfg.timeout, chunk=len(states))
    ms = runner.measure(states, timing=cfg.timing, seed=cfg.seed)
    rows = [Row(str(sched), sched.to_json(), m.verified, m.error, m.times, m.reference_times)
            for sched, m in zip(schedules, ms, strict=True)]
    return ms[0].reference_times, rows, {"compile": ms[0].compile_s, "run": ms[0].run_s}


def measure_program(cfg: BuildConfig, idx: int) -> BatchResult:
    """Generate program ``idx`` of the seed's stream and ``cfg.schedules`` random schedules; measure them."""
    info = machine_info(cfg.toolchain.describe())
    fp = fingerprint(info)
    t0 = time.perf_counter()
    try:
        program = random_program(random.Random(f"{cfg.seed}:{idx}"), f"r{cfg.seed}_{idx}", cfg.generator)
    except RuntimeError as e:
        return BatchResult(idx, None, None, fp, info, (), [], {}, f"generator: {e}")
    drawn = random_schedules(program, cfg.schedules, random.Random(f"{cfg.seed}:{idx}:schedules"), cfg.space,
                             staged_share=cfg.staged_share)
    schedules = [Schedule()] + [s for s, _ in drawn]
    states = [ProgramState.initial(program)] + [st for _, st in drawn]
    t_gen = time.perf_counter() - t0
    base, rows, secs = _measure(schedules, states, cfg)  # a compile error of generated code comes back as data
    return BatchResult(idx, program.to_json(), program.content_hash(), fp, info, base, rows,
                       {"generate": t_gen, **secs})


def remeasure(cfg: BuildConfig, program_json: dict, schedule_texts: list[str]) -> BatchResult:
    """Measure already stored schedules again (for the noise estimate)."""
    info = machine_info(cfg.toolchain.describe())
    program = Program.from_json(program_json)
    schedules = [Schedule.parse(t) for t in schedule_texts]
    states = [s.apply(program) for s in schedules]
    base, rows, secs = _measure(schedules, states, cfg)
    return BatchResult(-1, program_json, program.content_hash(), fingerprint(info), info, base, rows, secs)
