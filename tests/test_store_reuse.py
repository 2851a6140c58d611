"""The machine's store: what was measured before is reused, not measured again; the store survives
concurrent writers and a writer killed with SIGKILL; an older store is upgraded in place."""

import functools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field

import pytest

from loopcost.database.store import Store
from loopcost.ir.state import ProgramState
from loopcost.runner import Measurement, RecordingRunner, Timing
from loopcost.runner.recorded import record
from loopcost.search.evaluator import MEASURE_TIMING
from loopcost.search.optimize import FINAL_TIMING
from loopcost.transforms.schedule import Schedule

from .faults import killed_at
from .programs import matvec

MACHINE = ("f00dfeedf00dfeed", {"cpu": "test CPU", "cores": 2, "compiler": "cc 1", "flags": ["-O3"]})


@dataclass
class Counting:
    """A runner that measures nothing: it returns made-up times and counts what it was asked to measure."""

    machine_info: tuple[str, dict] | None = MACHINE
    asked: list[list[str]] = field(default_factory=list)
    runs: int = 3

    def measure(self, states, *, timing=Timing(), reference=None, seed=0, timeout=None, labels=None):
        self.asked.append(list(labels))
        fp, info = self.machine_info or ("elsewhere", {})
        return [Measurement(label, tuple(0.1 + 0.01 * k for k in range(self.runs)), (0.2,) * self.runs, True,
                            fingerprint=fp, machine=info) for label in labels]

    def measure_harness(self, harness, *, timing=Timing(), seed=0, timeout=None):
        raise AssertionError("not used")

    def machine(self):
        return self.machine_info


TEXTS = ["", "U(j,2)", "P(i)"]


def states():
    p = matvec()
    return [Schedule.parse(t).apply(p) for t in TEXTS]


def test_a_later_runner_reuses_what_this_machine_measured_and_measures_only_the_rest(tmp_path):
    db, inner = tmp_path / "m.sqlite", Counting()
    first = RecordingRunner(inner, db, "test").measure(states()[:2], timing=Timing(3, 0), labels=TEXTS[:2])
    time.sleep(0.01)
    again = RecordingRunner(inner, db, "test").measure(states(), timing=Timing(3, 0), labels=TEXTS)
    assert inner.asked == [TEXTS[:2], ["P(i)"]]  # the second runner measured only the new schedule
    assert [m.reused for m in again] == [True, True, False] and [m.label for m in again] == TEXTS
    assert [m.times for m in again[:2]] == [m.times for m in first]
    assert again[1].speedup == pytest.approx(first[1].speedup) and again[0].fingerprint == MACHINE[0]
    with Store(db) as store:  # a reused measurement is not stored a second time
        assert [r.schedule_text for r in store.runs(matvec().content_hash())] == TEXTS[:2] + ["P(i)"]



@dataclass
class Slow(Counting):
    """Times every state once, at 1.98 s (an unscheduled bench gemm on a noisy day)."""

    def measure(self, states, *, timing=Timing(), reference=None, seed=0, timeout=None, labels=None):
        self.asked.append(list(labels))
        return [Measurement(label, (1.98,), (1.98,), True, fingerprint=MACHINE[0], machine=MACHINE[1])
                for label in labels]


def test_optimize_times_its_final_candidates_again_where_a_search_timed_them_once(tmp_path):
    db = tmp_path / "m.sqlite"
    RecordingRunner(Slow(), db).measure(states(), timing=MEASURE_TIMING, labels=TEXTS)
    time.sleep(0.01)
    search, final = Slow(), Slow()
    RecordingRunner(search, db).measure(states(), timing=MEASURE_TIMING, labels=TEXTS)
    RecordingRunner(final, db).measure(states(), timing=FINAL_TIMING, labels=TEXTS)
    assert search.asked == [] and final.asked == [TEXTS]  # one run over 1 s does for a search, not for the verdict

def test_reuse_needs_the_same_machine_seed_enough_runs_an_earlier_time_and_no_remeasure(tmp_path):
    db = tmp_path / "m.sqlite"
    RecordingRunner(Counting(), db).measure(states(), timing=Timing(3, 0), labels=TEXTS)
    time.sleep(0.01)

    def asked(inner=None, timing=Timing(3, 0), seed=0, **kw):
        inner = inner or Counting()
        RecordingRunner(inner, db, **kw).measure(states(), timing=timing, seed=seed, labels=TEXTS)
        return inner.asked

    assert asked() == []
    assert asked(reuse=False) == [TEXTS]  # --remeasure
    assert asked(seed=1) == [TEXTS]  # other inputs
    assert asked(timing=Timing(5, 0)) == [TEXTS]  # asks for more runs than were made
    assert asked(timing=Timing(5, 0, max_time=0.3)) == []  # ... but they took the time it allows
    other = ("0123456789abcdef", dict(MACHINE[1], cpu="another CPU"))
    assert asked(Counting(machine_info=other)) == [TEXTS]  # another machine (or compiler, or flags)
    assert asked(Counting(machine_info=None)) == [TEXTS]  # a cluster: the machine is known only after
    runner = RecordingRunner(Counting(), db, since=time.time() - 3600)  # made before those runs were stored
    runner.measure(states(), timing=Timing(3, 0), labels=TEXTS)
    assert runner.inner.asked == [TEXTS]


def test_a_failed_measurement_is_measured_again(tmp_path):
    db = tmp_path / "m.sqlite"
    failed = Measurement("P(i)", (), (), False, "crash: killed by signal SIGSEGV", fingerprint=MACHINE[0],
                         machine=MACHINE[1])
    record(db, states()[0], [failed], "test")
    time.sleep(0.01)
    inner = Counting()
    RecordingRunner(inner, db).measure(states()[2:], timing=Timing(3, 0), labels=["P(i)"])
    assert inner.asked == [["P(i)"]]


def test_a_store_of_an_older_loopcost_gains_the_new_columns_and_keeps_its_runs(tmp_path):
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '2');
        CREATE TABLE machines (id INTEGER PRIMARY KEY, fingerprint TEXT UNIQUE NOT NULL, info TEXT NOT NULL);
        INSERT INTO machines VALUES (1, 'f00dfeedf00dfeed', '{"cpu": "test CPU"}');
        CREATE TABLE run_programs (hash TEXT PRIMARY KEY, json TEXT NOT NULL);
        INSERT INTO run_programs VALUES ('abc', '{"name": "old"}');
        CREATE TABLE runs (id INTEGER PRIMARY KEY, program TEXT NOT NULL, schedule TEXT NOT NULL,
            machine INTEGER NOT NULL, codegen INTEGER NOT NULL, source TEXT NOT NULL, verified INTEGER NOT NULL,
            error TEXT, times TEXT NOT NULL, reference_times TEXT NOT NULL, speedup REAL, created REAL NOT NULL);
        INSERT INTO runs VALUES (1, 'abc', 'P(i)', 1, 2, 'run', 1, NULL, '[0.1]', '[0.2]', 2.0, 1.0);
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        runs = store.runs("abc")
        stats = store.run_stats()
    assert [(r.schedule_text, r.seed, r.speedup, r.source) for r in runs] == [("P(i)", 0, 2.0, "run")]
    assert stats["runs"] == 1 and stats["by_program"][0]["program"] == "old"


WRITER = """
import sys
from loopcost.ir.state import ProgramState
from loopcost.runner import Measurement
from loopcost.runner.recorded import record
from tests.programs import matvec

db, tag, batches, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
state = ProgramState.initial(matvec())
for b in range(batches):
    ms = [Measurement(f"{tag}-{b}-{k}", (0.1,), (0.2,), True, fingerprint="f00dfeedf00dfeed",
                      machine={"cpu": "test CPU"}) for k in range(size)]
    record(db, state, ms, tag)
    print(b, flush=True)
"""


def writer(db, tag: str, batches: int, size: int) -> subprocess.Popen:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(db), tag, str(batches), str(size)], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_recording_at_once_lose_nothing(tmp_path):
    db = tmp_path / "m.sqlite"
    procs = [writer(db, tag, 40, 8) for tag in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    with Store(db) as store:
        runs = store.runs(matvec().content_hash())
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert sorted(r.schedule_text for r in runs) == sorted(f"{t}-{b}-{k}" for t in "ab" for b in range(40)
                                                          for k in range(8))


def test_a_writer_killed_with_sigkill_leaves_whole_batches_behind(tmp_path):
    db = tmp_path / "m.sqlite"
    p = writer(db, "k", 100000, 16)
    for _ in range(5):  # let a few batches land, then kill it mid-stream
        p.stdout.readline()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    with Store(db) as store:
        runs = store.runs(matvec().content_hash())
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(runs) >= 5 * 16 and len(runs) % 16 == 0  # a batch is stored whole or not at all
    names = {r.schedule_text for r in runs}
    assert all(f"k-{b}-{k}" in names for b in range(len(runs) // 16) for k in range(16))


def test_run_twice_reuses_the_store_and_store_stats_shows_it(tmp_path):
    db = tmp_path / "m.sqlite"

    def loopcost(*args):
        r = subprocess.run([sys.executable, "-m", "loopcost.cli", *args], capture_output=True, text=True,
                           env=dict(os.environ), timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout

    cmd = ["run", "gemm", "--schedule", "P(i)", "--runs", "2", "--store", str(db), "--json"]
    first, second = json.loads(loopcost(*cmd)), json.loads(loopcost(*cmd))
    third = json.loads(loopcost(*cmd, "--remeasure"))
    assert not first["reused"] and second["reused"] and not third["reused"]
    assert second["times_s"] == first["times_s"]
    # the remeasure stored a run of its own (its times may repeat the first's to the nanosecond on a 3 us program)
    stats = json.loads(loopcost("store", "stats", "--store", str(db), "--json"))
    assert stats["runs"] == 2 and stats["by_source"] == {"run": 2}
    assert stats["by_program"][0]["program"] == "gemm" and stats["by_program"][0]["schedules"] == 1
    assert "gemm" in loopcost("store", "stats", "--store", str(db))



@pytest.mark.slow
def test_train_store_fine_tunes_on_this_machines_measurements_and_optimize_then_uses_that_model(tmp_path):
    import random

    from loopcost.generator.schedules import random_schedules
    from loopcost.kernels import KERNELS
    from loopcost.runner import LocalRunner

    fp, info = LocalRunner().machine()
    db, cache = tmp_path / "m.sqlite", tmp_path / "cache"
    for name in ("gemm", "atax"):
        program = KERNELS[name].program("small")
        drawn = random_schedules(program, 40, random.Random(0))
        ms = [Measurement(str(s), (0.1 / (1 + k % 5),), (0.1,), True, fingerprint=fp, machine=info)
              for k, (s, _) in enumerate(drawn)]
        record(db, ProgramState.initial(program), ms, "test")
        record(db, ProgramState.initial(program), [Measurement("P(i)", (0.1,), (0.1,), True, fingerprint="other",
                                                               machine={"cpu": "other"})], "test")
    env = dict(os.environ, LOOPCOST_CACHE_DIR=str(cache))

    def loopcost(*args):
        return subprocess.run([sys.executable, "-m", "loopcost.cli", *args], capture_output=True, text=True,
                              env=env, timeout=600)

    r = loopcost("train", "--store", str(db), "--epochs", "1", "--lr", "1e-4")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "on 80 schedules of 2 programs measured on this machine" in r.stderr  # not the other machine's
    model = cache / "models" / fp / "model.pt"
    card = json.loads((cache / "models" / fp / "model.pt.card.json").read_text())
    assert model.exists() and info["cpu"] in {m["cpu"] for m in card["machine"]}
    assert card["records"]["train"] + card["records"]["val"] == 80 and card["records"]["val"] > 0
    r = loopcost("optimize", "atax", "--size", "small", "--no-measure", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["model"] == str(model) and "fine-tuned on this machine" in r.stderr
    r = loopcost("train", "--epochs", "1")
    assert r.returncode == 2 and "--data" in r.stderr and "--store" in r.stderr


def test_evaluate_store_scores_the_model_on_this_machines_measured_schedules_per_program(tmp_path):
    import random

    from loopcost.generator.schedules import random_schedules
    from loopcost.kernels import KERNELS
    from loopcost.runner import LocalRunner

    fp, info = LocalRunner().machine()
    db = tmp_path / "m.sqlite"
    env = dict(os.environ, LOOPCOST_CACHE_DIR=str(tmp_path / "cache"))

    def loopcost(*args):
        return subprocess.run([sys.executable, "-m", "loopcost.cli", "evaluate", *args], capture_output=True,
                              text=True, env=env, timeout=600)

    r = loopcost("--store", str(db))
    assert r.returncode == 2 and "nothing was measured on this machine yet" in r.stderr
    for name, n in (("gemm", 7), ("atax", 5)):
        program = KERNELS[name].program("small")
        drawn = random_schedules(program, n, random.Random(1))
        ms = [Measurement(str(s), (0.1 / (1 + k),), (0.1,), True, fingerprint=fp, machine=info)
              for k, (s, _) in enumerate(drawn)]
        record(db, ProgramState.initial(program), ms, "test")
        record(db, ProgramState.initial(program), [Measurement("P(i)", (0.1,), (0.1,), True, fingerprint="other",
                                                               machine={"cpu": "other"})], "test")
    r = loopcost("--store", str(db), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "on 12 schedules of 2 programs measured on this machine" in r.stderr  # not the other machine's
    out = json.loads(r.stdout)
    assert out["n"] == 12 and -1 <= out["spearman_per_program_mean"] <= 1
    r = loopcost("--store", str(db), "--split", "val")
    assert r.returncode == 2 and "--store scores every schedule" in r.stderr


def test_a_search_sized_batch_is_found_in_the_store_whole(tmp_path):
    db, state = tmp_path / "m.sqlite", states()[0]
    labels = [f"U(j,{k})" for k in range(1, 1201)]  # more than one query's worth of bound parameters
    record(db, state, Counting().measure([state] * len(labels), labels=labels), "test")
    time.sleep(0.01)
    inner = Counting()
    got = RecordingRunner(inner, db).measure([state] * len(labels), timing=Timing(3, 0), labels=labels)
    assert inner.asked == [] and all(m.reused for m in got) and [m.label for m in got] == labels


def test_a_hundred_kills_at_seeded_moments_lose_and_duplicate_nothing(tmp_path):
    """Fault injection: a writer forked from this process appends batches from where the store stands; it
    is killed with SIGKILL after a seeded random delay, 100 times; after every kill the store is whole,
    holds every batch committed before it once, and the next writer resumes from there."""
    import random

    db, size, rng = tmp_path / "m.sqlite", 8, random.Random(20)
    state = ProgramState.initial(matvec())

    def batches_stored() -> list[str]:
        with Store(db) as store:
            assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            return [r.schedule_text for r in store.runs(matvec().content_hash())]

    def write_from(first: int, last: int | None) -> None:
        b = first
        while last is None or b < last:
            record(db, state, [Measurement(f"k-{b}-{k}", (0.1,), (0.2,), True, fingerprint=MACHINE[0],
                                           machine=MACHINE[1]) for k in range(size)], "fault")
            b += 1

    done = 0
    for _ in range(100):
        assert killed_at(functools.partial(write_from, done, None), rng.uniform(0.0, 0.06))
        names = batches_stored()
        assert len(names) == len(set(names)) and len(names) % size == 0  # whole batches, each once
        done = len(names) // size
        assert set(names) == {f"k-{b}-{k}" for b in range(done) for k in range(size)}  # nothing lost
    write_from(done, done + 3)
    assert len(batches_stored()) == (done + 3) * size


@pytest.mark.slow
def test_optimize_exec_killed_at_30_seeded_moments_loses_nothing_and_the_next_search_takes_it_back(tmp_path):
    """``optimize --search exec`` recording in a store, killed with SIGKILL at 30 seeded moments: after every
    kill the store is whole and holds every run stored before it, unchanged, none twice; the search that
    finally runs through takes the stored runs back instead of measuring them again."""
    import random

    from loopcost.kernels import KERNELS
    from loopcost.runner import open_runner
    from loopcost.search.optimize import optimize

    db, rng = tmp_path / "m.sqlite", random.Random(26)
    program = KERNELS["jacobi-1d"].program("small")  # its whole search takes 5 s (gemm's 43 s)

    def search():
        with open_runner(store=db, source="optimize:exec") as runner:
            return optimize(program, method="exec", budget=2, top_k=3, runner=runner)

    def runs() -> dict[int, tuple]:
        if not db.exists():
            return {}
        with Store(db) as store:
            assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            return {i: rest for i, *rest in store.db.execute("SELECT id, schedule, times, created FROM runs")}

    before: dict[int, tuple] = {}
    landed, span = 0, 1.5  # kills that came before the search was done; the moments' range (seconds)
    for _ in range(30):
        t0 = time.perf_counter()
        if killed_at(search, rng.uniform(0.0, span)):
            landed += 1
        else:  # it ran through: from now on it takes the stored runs back, sooner on a fast machine
            span = time.perf_counter() - t0
        now = runs()
        assert all(now.get(i) == row for i, row in before.items())  # nothing lost or changed
        measured = [(schedule, times) for schedule, times, _ in now.values()]
        assert len(measured) == len(set(measured))  # no batch stored twice
        before = now
    assert before and landed >= 20, landed
    r = search()
    assert r.verified and r.reused > 0


def test_a_full_store_refuses_a_batch_whole_keeps_what_it_held_and_exits_3(tmp_path, monkeypatch):
    from loopcost import cli

    db = tmp_path / "m.sqlite"
    record(db, states()[0], Counting().measure(states()[:2], labels=TEXTS[:2]), "test")
    real = sqlite3.connect

    def full(*args, **kw):  # the disk fills up: the file may not grow by a page
        con = real(*args, **kw)
        con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchone()[0]}")
        return con

    monkeypatch.setattr(sqlite3, "connect", full)
    big = Counting().measure(states()[:1] * 300, labels=[f"U(j,{k}) {'V(i,4) ' * 30}" for k in range(300)])
    with pytest.raises(sqlite3.OperationalError, match="full") as e:
        record(db, states()[0], big, "test")
    code, line = cli._failure(e.value)
    assert code == 3 and "the disk is full" in line and "\n" not in line
    monkeypatch.undo()
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sorted(r.schedule_text for r in store.runs(matvec().content_hash())) == sorted(TEXTS[:2])


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a 256 KiB tmpfs, where this machine lets the tests mount one (as root)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("this machine does not let the tests mount a small tmpfs")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def test_a_run_whose_store_is_on_a_full_disk_exits_3_saying_so_and_the_store_keeps_what_it_held(small_disk):
    db = small_disk / "m.sqlite"
    record(db, states()[0], Counting().measure(states()[:2], labels=TEXTS[:2]), "test")
    with open(small_disk / "filler", "wb", buffering=0) as f:  # fill the disk to its last byte
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    r = subprocess.run([sys.executable, "-m", "loopcost.cli", "run", "gemm", "--size", "small", "--schedule",
                        "P(i)", "--runs", "2", "--store", str(db)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "full" in r.stderr.strip().splitlines()[-1], r.stderr[-2000:]
    (small_disk / "filler").unlink()
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sorted(r.schedule_text for r in store.runs(matvec().content_hash())) == sorted(TEXTS[:2])


@pytest.mark.slow
def test_two_adaptive_optimizes_at_once_and_one_killed_mid_search_lose_nothing(tmp_path):
    db = tmp_path / "m.sqlite"
    cmd = [sys.executable, "-m", "loopcost.cli", "optimize", "gemm", "--size", "small", "--search", "adaptive",
           "--measure-budget", "6", "--batch", "3", "--store", str(db), "--json"]
    procs = [subprocess.Popen(cmd + ["--seed", str(k)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        outs.append(json.loads(out))
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    fresh = sum(o["measurements"] - o["reused"] for o in outs)
    assert stored >= fresh > 0  # every measurement either made is in the store (the final ones too)
    # a third search killed once its first batch is stored leaves whole batches; a rerun takes them back
    killed = subprocess.Popen(cmd + ["--remeasure"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline:
        with Store(db) as store:
            if store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= stored + 3:
                break
        time.sleep(0.1)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= stored + 3
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and json.loads(again.stdout)["reused"] >= 3, again.stderr[-2000:]


def test_a_column_another_process_added_first_is_not_added_twice(tmp_path):
    """Two processes opening one new store both read its tables before either adds the newer columns: the
    second to add one finds it there (sqlite: "duplicate column name") and goes on."""
    store = Store(tmp_path / "m.sqlite")

    class StaleColumns:
        """The connection as the slower process saw it: no table had the newer columns yet."""

        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            return iter(()) if sql.startswith("PRAGMA table_info") else self.db.execute(sql, *args)

        def __enter__(self):
            return self.db.__enter__()

        def __exit__(self, *exc):
            return self.db.__exit__(*exc)

    real, store.db = store.db, StaleColumns(store.db)
    store._add_columns()
    store.db = real
    assert "censored" in {r[1] for r in real.execute("PRAGMA table_info(measurements)")}
    store.close()
