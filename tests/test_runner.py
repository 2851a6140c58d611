"""The one measurement path: runners on this machine and on a Dask cluster, harnesses of several units."""

import json
import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from loopcost.codegen.compiler import Toolchain, Unit, compile_units
from loopcost.codegen.harness import Harness, compilers_harness, state_harness
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner import LocalRunner, Timing, open_runner
from loopcost.transforms.schedule import Schedule

from .programs import matvec


def test_every_state_is_measured_beside_the_reference_and_verified():
    p = matvec()
    states = [ProgramState.initial(p), Schedule.parse("P(i)").apply(p), Schedule.parse("U(j,2)").apply(p)]
    ms = LocalRunner().measure(states, timing=Timing(2, 0))
    assert [m.verified for m in ms] == [True, True, True]
    assert all(len(m.times) == 2 and m.reference_times == ms[0].reference_times for m in ms)
    assert all(m.speedup == pytest.approx(m.reference_median / m.median) for m in ms)
    assert ms[0].fingerprint and ms[0].max_rel_error == 0.0 and ms[0].compile_s > 0


def test_a_harness_that_does_not_build_comes_back_as_data():
    good = state_harness([ProgramState.initial(matvec())] * 2, Toolchain())
    broken = Harness((good.units[0], Unit("int lc_nothing(void) { return undefined_thing; }")), good.labels,
                     good.outputs)
    ms = LocalRunner().measure_harness(broken, timing=Timing(1, 0))
    assert len(ms) == 1 and not ms[0].verified and ms[0].error.startswith("build:") and ms[0].times == ()
    assert ms[0].speedup is None


def test_a_failing_reference_fails_every_variant():
    p = matvec()
    variant = Schedule.parse("U(j,2)").apply(p)
    h = state_harness([ProgramState.initial(p), variant], Toolchain())
    # the reference's call crashes: variant 0 dereferences a null pointer before its kernel
    src = h.units[0].source.replace("    case 0: ", "    case 0: *(volatile int *)0 = 1; ", 1)
    ms = LocalRunner().measure_harness(Harness((Unit(src),), h.labels, h.outputs), timing=Timing(1, 0))
    assert not ms[0].verified and "(the reference) failed: crash" in ms[0].error


def test_kernels_of_several_compilers_link_into_one_harness():
    state = ProgramState.initial(KERNELS["gemm"].program("small"))
    toolchains = {"O3": Toolchain(), "O1": Toolchain(flags=("-O1", "-fopenmp")),
                  "O0": Toolchain(flags=("-O0",))}
    ms = LocalRunner().measure_harness(compilers_harness(state, toolchains, rtol=1e-6), timing=Timing(2, 0))
    assert [m.label for m in ms] == ["O1", "O0"] and all(m.verified for m in ms), [m.error for m in ms]
    assert all(m.speedup > 0 for m in ms)


def test_a_dask_runner_measures_on_the_cluster_workers():
    pytest.importorskip("distributed")
    from distributed import get_task_stream

    p = matvec()
    states = [ProgramState.initial(p), Schedule.parse("U(j,2)").apply(p)]
    with open_runner("local", workers=1) as runner, get_task_stream() as stream:
        ms = runner.measure(states, timing=Timing(1, 0))
    assert [m.verified for m in ms] == [True, True]
    ran = [t["key"] for t in stream.data]
    assert ran and all("measure_built" in str(k) for k in ran), ran
    assert ms[0].fingerprint == LocalRunner().measure(states[:1], timing=Timing(1, 0))[0].fingerprint


@pytest.mark.slow
def test_optimize_measures_an_execution_based_search_on_a_local_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    from loopcost.database.store import Store

    db = tmp_path / "store.sqlite"
    r = subprocess.run([sys.executable, "-m", "loopcost.cli", "optimize", "jacobi-1d", "--size", "small", "--search",
                        "exec", "--budget", "1", "--cluster", "local", "--workers", "1", "--store", str(db),
                        "--json"], capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert out["verified"] and out["cluster"] == "local" and out["measured_speedup"] > 0
    assert out["measurements"] > out["candidates_scored"] > 1  # the search's measurements and the final top-k
    with Store(db) as store:  # every measurement the workers made, the search's and the final ones, was kept
        kept = [r.schedule_text for r in store.runs(KERNELS["jacobi-1d"].program("small").content_hash())]
    final = [c["schedule"] for c in out["measured_top_k"]]
    assert len(kept) == out["measurements"] and kept[-len(final):] == final


def test_a_recording_runner_keeps_every_labelled_measurement_in_the_store(tmp_path):
    from loopcost.database.store import Store
    from loopcost.runner import RecordingRunner

    p = matvec()
    texts = ["", "U(j,2)", "P(i)"]
    runner = RecordingRunner(LocalRunner(), tmp_path / "m.sqlite", "test")
    ms = runner.measure([Schedule.parse(t).apply(p) for t in texts], timing=Timing(2, 0), labels=texts)
    runner.measure([ProgramState.initial(p)], timing=Timing(1, 0))  # unlabelled: not a schedule to keep
    with Store(tmp_path / "m.sqlite") as store:
        runs = store.runs(p.content_hash())
        machines = store.machines()
    assert [r.schedule_text for r in runs] == texts and [m.label for m in ms] == texts
    assert [r.times for r in runs] == [m.times for m in ms] and all(r.verified for r in runs)
    assert runs[1].speedup == pytest.approx(ms[1].speedup)
    assert [m["fingerprint"] for m in machines] == [ms[0].fingerprint] and machines[0]["cpu"]


def _script(path, body: str):
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(0o755)
    return path


def test_limits_stop_a_harness_that_allocates_writes_or_spins_without_end(tmp_path):
    from loopcost.runner.process import Limits, run_variants

    limits = Limits(address_space=600 << 20, file_size=1 << 20, cpu_seconds=1)
    big = run_variants(_script(tmp_path / "alloc", "x = bytearray(4 << 30)"), [0], limits=limits, timeout=60)
    assert big[0].error and "MemoryError" in big[0].error
    out = tmp_path / "out.bin"
    write = ("import signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
             f"open({str(out)!r}, 'wb').write(b'0' * (8 << 20))")
    wrote = run_variants(_script(tmp_path / "write", write), [0], limits=limits, timeout=60)  # as C does
    assert wrote[0].error == f"limit: wrote a file of more than {1 << 20} bytes"
    spun = run_variants(_script(tmp_path / "spin", "while True: pass"), [0], limits=limits, timeout=60)
    assert spun[0].error == "limit: more than 1 s of CPU time"
    # the defaults leave a real harness alone
    assert Limits.for_run(10).address_space > 1 << 30 and Limits.for_run(10).cpu_seconds >= 10


def test_a_run_past_the_abort_factor_ends_its_variant_and_the_rest_run_on(tmp_path, monkeypatch):
    """``Timing.abort``: a run of a variant longer than the factor times the reference's fastest run (floor set
    to 0 here) ends the harness's process; that variant fails, the ones after it run in a fresh process, and
    the reference (variant 0) is never stopped."""
    from loopcost.codegen import harness
    from loopcost.runner.process import run_variants

    monkeypatch.setattr(harness, "ABORT_FLOOR_S", 0.0)
    h = state_harness([ProgramState.initial(matvec())] * 3, Toolchain())
    exe = compile_units(h.units, cache=False)
    timing = Timing(min_runs=2, warmup=0, timed_check=True, abort=2.0)
    # the reference's fastest run given as a nanosecond: every run of variants 1 and 2 is past 2 ns
    runs = run_variants(exe, [1, 2, 0], timing=timing, reference_min=1e-9)
    assert [r.error for r in runs[:2]] == ["limit: a run took more than 2 times the unscheduled program's "
                                           "fastest"] * 2
    assert runs[2].error is None and len(runs[2].times) == 2
    # without the factor, nothing is stopped
    assert all(r.error is None for r in run_variants(exe, [1, 2, 0], timing=replace(timing, abort=0.0),
                                                     reference_min=1e-9))


def test_the_variants_after_a_stopped_one_are_told_the_reference_time(tmp_path):
    """A process that runs the variants after a stopped one no longer runs variant 0 first: it is given its
    fastest run (``ref_min_ns``), so that censoring and stopping still apply there."""
    from loopcost.runner.process import run_variants

    log = tmp_path / "argv.log"
    fake = _script(tmp_path / "fake", f"""import json, os, signal
open({str(log)!r}, "a").write(" ".join(sys.argv[1:]) + "\\n")
for v in next(a for a in sys.argv if a.startswith("variants=")).split("=")[1].split(","):
    if v == "1":
        os.kill(os.getpid(), signal.SIGALRM)
    print(json.dumps({{"variant": int(v), "errors": {{}}, "checksums": {{}}, "times_s": [0.25, 0.5]}}), flush=True)""")
    runs = run_variants(fake, [0, 1, 2], timing=Timing(abort=5.0))
    assert runs[0].times == (0.25, 0.5) and runs[1].error.startswith("limit: a run took more than 5 times")
    assert runs[2].times == (0.25, 0.5)
    first, second = log.read_text().splitlines()
    assert "ref_min_ns" not in first and "abort_x1000=5000" in first
    assert second.endswith("variants=2 ref_min_ns=250000000")


def _take_machine_lock(out: str) -> None:
    from loopcost.runner.process import machine_lock

    with machine_lock():
        with open(out, "w") as f:
            f.write(repr(time.time()))


def _hold_machine_lock(ready: str, seconds: float) -> None:
    from loopcost.runner.process import machine_lock

    with machine_lock():
        open(ready, "w").close()
        time.sleep(seconds)


def test_busy_work_says_how_long_it_waited_for_a_timed_run(tmp_path, monkeypatch):
    """``machine_busy`` yields the seconds it waited, which a build reports as waiting, not as the work's time."""
    import multiprocessing

    from loopcost.runner.process import machine_busy

    monkeypatch.setenv("LOOPCOST_CACHE_DIR", str(tmp_path / "cache"))
    with machine_busy() as waited:
        assert 0 <= waited < 0.5  # nothing timed: no wait
    ready = tmp_path / "ready"
    child = multiprocessing.get_context("spawn").Process(target=_hold_machine_lock, args=(str(ready), 1.5))
    child.start()
    while not ready.exists():
        time.sleep(0.01)
    t0 = time.perf_counter()
    with machine_busy() as waited:
        assert waited >= 1.0 and waited <= time.perf_counter() - t0
    child.join(30)


def test_a_timed_run_waits_until_no_compiler_or_generator_runs_beside_it(tmp_path, monkeypatch):
    import multiprocessing

    from loopcost.runner.process import machine_busy

    monkeypatch.setenv("LOOPCOST_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "acquired"
    with machine_busy(), machine_busy():  # two busy holders share the machine with each other
        child = multiprocessing.get_context("spawn").Process(target=_take_machine_lock, args=(str(out),))
        child.start()
        time.sleep(1.0)
        released = time.time()
        assert not out.exists()
    child.join(30)
    assert child.exitcode == 0 and float(out.read_text()) >= released
