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
from ..errors import LoopcostError, first_line
from ..generator.programs import GeneratorOptions, stream_program
from ..generator.schedules import STAGED_SHARE, random_schedules
from ..ir.program import Program
from ..ir.state import ProgramState
from ..runner import Timing
from ..runner.local import harnesses, measure_built
from ..runner.process import ABORT, machine_busy
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions

#: the timing of datasets built before December 2026: an untimed checked run, then at least 3 runs and
#: 20 ms, at most 30 runs, but no more than 0.25 s of runs for one schedule (slow ones get 1 or 2 runs)
LEGACY_TIMING = Timing(min_runs=3, warmup=0, max_runs=30, min_time=0.02, max_time=0.25)
#: the dataset's default timing: the same bounds, but the checked run is the first timed one, timing stops
#: once the runs agree within STEADY, and a schedule whose first two runs disagree but are both over CENSOR
#: times slower than the unscheduled program's fastest stops there (a censored label); ``bench/BUILD.md``
#: measured both side by side
CENSOR = 3.0
STEADY = 0.02
DATASET_TIMING = Timing(min_runs=3, warmup=0, max_runs=30, min_time=0.02, max_time=0.25, timed_check=True,
                        censor=CENSOR, steady=STEADY, abort=ABORT)


@dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    schedules: int = 20
    timing: Timing = DATASET_TIMING
    toolchain: Toolchain = field(default_factory=Toolchain)
    generator: GeneratorOptions = GeneratorOptions()
    space: SpaceOptions = SpaceOptions()
    timeout: float = 300.0
    #: seconds the compiler may take on one program's harness; a program past it fails its schedules (a few
    #: random programs unroll into C that gcc -O3 takes many minutes on: they would cost more than they teach)
    compile_timeout: float = 60.0
    #: the share of schedules drawn as walks through the search's stage order (0: random order only)
    staged_share: float = STAGED_SHARE
    #: hashes of programs not to measure (another database's: a set held out from it); a program drawn with
    #: one of them is drawn again from the same stream
    exclude: frozenset[str] = frozenset()

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
    """All ``states`` in one harness beside the unscheduled program, on this machine (a worker's); the
    seconds spent printing the C (``codegen``), compiling it, running the harness (``run``: the timed runs,
    ``timed``, and the rest: checks, resets, inputs, waiting for the machine) and checking the verdicts, and
    waiting for a timed run to end before printing and compiling (``wait``)."""
    t0 = time.perf_counter()
    with machine_busy() as waited:
        [harness] = harnesses(states, None, cfg.toolchain, len(states))
    codegen = time.perf_counter() - t0 - waited
    ms = measure_built(harness, timing=cfg.timing, seed=cfg.seed, timeout=cfg.timeout,
                       compile_timeout=cfg.compile_timeout)
    rows = [Row(str(sched), sched.to_json(), m.verified, m.error, m.times, m.reference_times, m.censored)
            for sched, m in zip(schedules, ms, strict=True)]
    timed = sum(ms[0].reference_times) + sum(sum(m.times) for m in ms)
    return ms[0].reference_times, rows, {"codegen": codegen, "compile": ms[0].compile_s, "run": ms[0].run_s,
                                         "timed": timed, "wait": waited + ms[0].wait_s}


def measure_program(cfg: BuildConfig, idx: int) -> BatchResult:
    """Generate program ``idx`` of the seed's stream and ``cfg.schedules`` random schedules; measure them."""
    info = machine_info(cfg.toolchain.describe())
    fp = fingerprint(info)
    t0 = time.perf_counter()
    try:
        with machine_busy() as waited:
            program = stream_program(cfg.seed, idx, cfg.generator, cfg.exclude)
    except RuntimeError as e:
        return BatchResult(idx, None, None, fp, info, (), [], {}, f"generator: {e}")
    try:
        with machine_busy() as also:
            drawn = random_schedules(program, cfg.schedules, random.Random(f"{cfg.seed}:{idx}:schedules"),
                                     cfg.space, staged_share=cfg.staged_share)
        waited += also
        schedules = [Schedule()] + [s for s, _ in drawn]
        states = [ProgramState.initial(program)] + [st for _, st in drawn]
        t_gen = time.perf_counter() - t0 - waited
        base, rows, secs = _measure(schedules, states, cfg)  # a compile error of generated code comes back as data
    except Exception as e:  # noqa: BLE001 - a bug met on one program must not stop a build of thousands
        # reported in the build's errors and not stored: a resume (after the fix) measures the program again
        return BatchResult(idx, None, None, fp, info, (), [], {}, f"internal error: {type(e).__name__}: "
                                                                   f"{first_line(e)}")
    return BatchResult(idx, program.to_json(), program.content_hash(), fp, info, base, rows,
                       {"generate": t_gen, **secs, "wait": waited + secs["wait"]})


def remeasure(cfg: BuildConfig, program_json: dict, schedule_texts: list[str]) -> BatchResult:
    """Measure already stored schedules again (for the noise estimate)."""
    info = machine_info(cfg.toolchain.describe())
    program = Program.from_json(program_json)
    schedules = [Schedule.parse(t) for t in schedule_texts]
    with machine_busy():
        states = [s.apply(program) for s in schedules]
    base, rows, secs = _measure(schedules, states, cfg)
    return BatchResult(-1, program_json, program.content_hash(), fingerprint(info), info, base, rows, secs)
