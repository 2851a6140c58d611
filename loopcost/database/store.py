"""The SQLite measurement store: dataset builds (programs, schedules, labels) and every measurement a
search made (``runs``).

One transaction per program batch (the program, its schedules and their
measurements), so a build killed at any moment leaves only whole batches
behind and resumes where it stopped. Every raw run time is kept. A program
row is one (seed, index) of a generator stream; two indices may draw the same
program (same content hash): both are kept, and land in the same split.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EnvironmentFailure, LoopcostError

SCHEMA_VERSION = "2"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS machines (
    id INTEGER PRIMARY KEY, fingerprint TEXT UNIQUE NOT NULL, info TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS programs (
    id INTEGER PRIMARY KEY, hash TEXT NOT NULL, name TEXT NOT NULL, seed INTEGER, idx INTEGER,
    split TEXT NOT NULL, json TEXT NOT NULL, baseline_times TEXT, machine INTEGER REFERENCES machines(id),
    created REAL NOT NULL, UNIQUE (seed, idx));
CREATE TABLE IF NOT EXISTS schedules (
    id INTEGER PRIMARY KEY, program INTEGER NOT NULL REFERENCES programs(id),
    text TEXT NOT NULL, json TEXT NOT NULL, hash TEXT NOT NULL, UNIQUE (program, text));
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, schedule INTEGER NOT NULL REFERENCES schedules(id),
    machine INTEGER NOT NULL REFERENCES machines(id), kind TEXT NOT NULL,
    verified INTEGER NOT NULL, error TEXT, times TEXT NOT NULL, baseline_times TEXT NOT NULL,
    median REAL, baseline_median REAL, speedup REAL, created REAL NOT NULL,
    UNIQUE (schedule, machine, kind));
CREATE TABLE IF NOT EXISTS run_programs (hash TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, program TEXT NOT NULL REFERENCES run_programs(hash), schedule TEXT NOT NULL,
    machine INTEGER NOT NULL REFERENCES machines(id), codegen INTEGER NOT NULL, source TEXT NOT NULL,
    verified INTEGER NOT NULL, error TEXT, times TEXT NOT NULL, reference_times TEXT NOT NULL, speedup REAL,
    created REAL NOT NULL, seed INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS runs_by_program ON runs (program, schedule);
"""

#: columns added to a table after its first release: (table, column, declaration); added on open
ADDED_COLUMNS = (("runs", "seed", "INTEGER NOT NULL DEFAULT 0"),
                 ("measurements", "censored", "INTEGER NOT NULL DEFAULT 0"),
                 ("programs", "seconds", "TEXT"))


def schedule_hash(program_hash: str, schedule_text: str) -> str:
    return hashlib.sha256(f"{program_hash}\0{schedule_text}".encode()).hexdigest()


def split_of(program_hash: str) -> str:
    """Programs, never schedules, are held out: 10% test, 10% validation, by hash."""
    r = int(program_hash[:8], 16) % 10
    return "test" if r == 0 else "val" if r == 1 else "train"


@dataclass(frozen=True)
class Run:
    """One measurement a search (or ``run``) made, as stored: the schedule's text, whether it was verified
    (else why not), every timed run of it and of the reference beside it, its speedup, the seed of its
    inputs, and (once stored) when it was made and by what (``optimize:exec``, ``run``, ...)."""

    schedule_text: str
    verified: bool
    error: str | None
    times: tuple[float, ...]
    reference_times: tuple[float, ...]
    speedup: float | None
    seed: int = 0
    created: float = 0.0
    source: str = ""


@dataclass(frozen=True)
class Row:
    """One measured schedule, as stored."""

    schedule_text: str
    schedule_json: list
    verified: bool
    error: str | None
    times: tuple[float, ...]
    baseline_times: tuple[float, ...]
    #: timing stopped early, both runs far slower than the unscheduled program: ``speedup`` is an upper bound
    censored: bool = False

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def baseline_median(self) -> float | None:
        return statistics.median(self.baseline_times) if self.baseline_times else None

    @property
    def speedup(self) -> float | None:
        m, b = self.median, self.baseline_median
        return b / m if self.verified and m and b else None


#: seconds a store waits for another process's lock before the command fails (exit 3)
LOCK_TIMEOUT = 60.0


def full_disk(path: Path) -> str:
    """A note for an error on ``path`` when the disk holding it has (almost) no room left, else ''. SQLite
    says "disk I/O error" when it cannot even create its journal."""
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        return ""
    return f" (the disk is full: {free} bytes free in {path.parent})" if free < 1 << 20 else ""


class Store:
    """A measurement database file; safe to kill at any moment (SQLite WAL, one transaction per batch)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            self.db = None
            try:
                self.db = sqlite3.connect(str(self.path), timeout=LOCK_TIMEOUT)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
                self._add_columns()
                break
            except sqlite3.OperationalError as e:  # another process setting the file up: its lock, briefly
                if self.db is not None:
                    self.db.close()
                if "locked" not in str(e) and "busy" not in str(e):
                    raise EnvironmentFailure(f"{self.path}: {e}{full_disk(self.path)}") from None
                if time.monotonic() > deadline:
                    raise EnvironmentFailure(f"{self.path} stayed locked by another process for "
                                             f"{LOCK_TIMEOUT:g} s") from None
                time.sleep(0.05)
            except sqlite3.DatabaseError as e:
                raise LoopcostError(f"{self.path} is not a loopcost database ({e})") from None
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        if self.meta("schema") != SCHEMA_VERSION:
            raise LoopcostError(f"{self.path} has schema {self.meta('schema')}, this loopcost reads {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _add_columns(self) -> None:
        """Bring a database written by an older loopcost up to ``ADDED_COLUMNS`` (additive, in place)."""
        for table, column, decl in ADDED_COLUMNS:
            have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                try:
                    with self.db:
                        self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
                except sqlite3.OperationalError as e:  # another process opening the same new file added it first
                    if "duplicate column name" not in str(e):
                        raise

    # ---- meta -------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def machine_id(self, fingerprint: str, info: dict) -> int:
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO machines (fingerprint, info) VALUES (?, ?)",
                            (fingerprint, json.dumps(info, sort_keys=True)))
        return self.db.execute("SELECT id FROM machines WHERE fingerprint = ?", (fingerprint,)).fetchone()[0]

    def machines(self) -> list[dict]:
        return [json.loads(r[0]) | {"fingerprint": r[1]}
                for r in self.db.execute("SELECT info, fingerprint FROM machines ORDER BY id")]

    # ---- writing ------------------------------------------------------------
    def done_indices(self, seed: int) -> set[int]:
        return {r[0] for r in self.db.execute("SELECT idx FROM programs WHERE seed = ?", (seed,))}

    def add_batch(self, *, program_json: dict, program_hash: str, seed: int, idx: int, machine: int,
                  baseline_times: tuple[float, ...], rows: list[Row], now: float,
                  seconds: dict[str, float] | None = None) -> int:
        """Store one program with all its measured schedules, atomically, and the worker's ``seconds`` by
        stage; returns the program id."""
        with self.db:
            pid = self.db.execute(
                "INSERT INTO programs (hash, name, seed, idx, split, json, baseline_times, machine, created, "
                "seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (program_hash, program_json["name"], seed, idx, split_of(program_hash),
                 json.dumps(program_json, separators=(",", ":")), json.dumps(list(baseline_times)), machine,
                 now, json.dumps(seconds) if seconds is not None else None)).lastrowid
            for r in rows:
                cur = self.db.execute(
                    "INSERT INTO schedules (program, text, json, hash) VALUES (?, ?, ?, ?)",
                    (pid, r.schedule_text, json.dumps(r.schedule_json, separators=(",", ":")),
                     schedule_hash(program_hash, r.schedule_text)))
                self._insert_measurement(cur.lastrowid, machine, "label", r, now)
        return pid

    def _insert_measurement(self, schedule_id: int, machine: int, kind: str, r: Row, now: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO measurements (schedule, machine, kind, verified, error, times, baseline_times, "
            "median, baseline_median, speedup, created, censored) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (schedule_id, machine, kind, int(r.verified), r.error, json.dumps(list(r.times)),
             json.dumps(list(r.baseline_times)), r.median, r.baseline_median, r.speedup, now, int(r.censored)))

    def add_remeasured(self, program: int, machine: int, rows: list[Row], now: float, kind: str) -> None:
        """Store second measurements (``noise`` or ``recheck``) of measured schedules of program id ``program``."""
        with self.db:
            for r in rows:
                sid = self.db.execute("SELECT id FROM schedules WHERE program = ? AND text = ?",
                                      (program, r.schedule_text)).fetchone()
                if sid:
                    self._insert_measurement(sid[0], machine, kind, r, now)

    def add_runs(self, *, program_json: dict, program_hash: str, machine: int, codegen: int, source: str,
                 runs: list[Run], now: float) -> None:
        """Keep measurements made outside dataset builds (a search's candidates), all of them, atomically."""
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO run_programs VALUES (?, ?)",
                            (program_hash, json.dumps(program_json, separators=(",", ":"))))
            self.db.executemany(
                "INSERT INTO runs (program, schedule, machine, codegen, source, verified, error, times, "
                "reference_times, speedup, created, seed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(program_hash, r.schedule_text, machine, codegen, source, int(r.verified), r.error,
                  json.dumps(list(r.times)), json.dumps(list(r.reference_times)), r.speedup, now, r.seed)
                 for r in runs])

    _RUN_COLUMNS = "schedule, verified, error, times, reference_times, speedup, seed, created, source"

    @staticmethod
    def _run(row: tuple) -> Run:
        t, v, e, a, b, sp, seed, created, source = row
        return Run(t, bool(v), e, tuple(json.loads(a)), tuple(json.loads(b)), sp, seed, created, source)

    def runs(self, program_hash: str) -> list[Run]:
        """Every stored measurement of schedules of the program with ``program_hash``, oldest first."""
        q = f"SELECT {self._RUN_COLUMNS} FROM runs WHERE program = ? ORDER BY id"
        return [self._run(r) for r in self.db.execute(q, (program_hash,))]

    def reusable(self, program_hash: str, schedules: Sequence[str], *, fingerprint: str, codegen: int, seed: int,
                 before: float, enough: Callable[[tuple[float, ...]], bool]) -> dict[str, Run]:
        """For each of ``schedules`` of the program measured before, the first verified measurement made on the
        machine ``fingerprint`` (CPU, compiler and flags) from C of code generator ``codegen``, on inputs of
        ``seed``, stored before the time ``before``, whose run times are ``enough``."""
        out: dict[str, Run] = {}
        wanted = list(dict.fromkeys(schedules))
        for k in range(0, len(wanted), 500):  # within SQLite's limit on bound parameters
            part = wanted[k:k + 500]
            q = (f"SELECT {self._RUN_COLUMNS} FROM runs r JOIN machines m ON m.id = r.machine WHERE r.program = ? "
                 "AND m.fingerprint = ? AND r.codegen = ? AND r.seed = ? AND r.verified = 1 AND r.created < ? "
                 f"AND r.schedule IN ({', '.join('?' * len(part))}) ORDER BY r.id")
            for row in self.db.execute(q, (program_hash, fingerprint, codegen, seed, before, *part)):
                r = self._run(row)
                if r.schedule_text not in out and enough(r.times):
                    out[r.schedule_text] = r
        return out

    def run_labels(self, fingerprint: str, codegen: int) -> list[tuple[str, str, float]]:
        """(program hash, schedule text, median verified speedup) of every schedule the machine with
        ``fingerprint`` measured from C of code generator ``codegen``, by program then schedule."""
        by: dict[tuple[str, str], list[float]] = {}
        q = ("SELECT r.program, r.schedule, r.speedup FROM runs r JOIN machines m ON m.id = r.machine "
             "WHERE m.fingerprint = ? AND r.codegen = ? AND r.verified = 1 AND r.speedup > 0 ORDER BY r.id")
        for h, text, sp in self.db.execute(q, (fingerprint, codegen)):
            by.setdefault((h, text), []).append(sp)
        return [(h, text, statistics.median(v)) for (h, text), v in sorted(by.items())]

    def run_codegens(self, fingerprint: str) -> list[int]:
        """The code generator versions of the C that the machine with ``fingerprint`` measured."""
        q = ("SELECT DISTINCT r.codegen FROM runs r JOIN machines m ON m.id = r.machine WHERE m.fingerprint = ? "
             "ORDER BY r.codegen")
        return [v for (v,) in self.db.execute(q, (fingerprint,))]

    def run_program_json(self, program_hash: str) -> dict:
        """The program of the runs of ``program_hash``."""
        return self._json("SELECT json FROM run_programs WHERE hash = ?", program_hash)

    def run_stats(self) -> dict:
        """What the machine's searches measured: counts in all, by machine, by source, and by program."""
        q = self.db.execute
        by_program = [{"program": json.loads(j)["name"], "hash": h[:12], "runs": n, "schedules": s,
                       "best_speedup": best}
                      for h, j, n, s, best in q(
                          "SELECT p.hash, p.json, COUNT(*), COUNT(DISTINCT r.schedule), MAX(r.speedup) "
                          "FROM runs r JOIN run_programs p ON p.hash = r.program GROUP BY p.hash ORDER BY MAX(r.id)")]
        return {
            "runs": q("SELECT COUNT(*) FROM runs").fetchone()[0],
            "verified": q("SELECT COUNT(*) FROM runs WHERE verified = 1").fetchone()[0],
            "programs": len(by_program),
            "by_machine": [{"fingerprint": fp, **json.loads(info), "runs": n} for fp, info, n in q(
                "SELECT m.fingerprint, m.info, COUNT(*) FROM runs r JOIN machines m ON m.id = r.machine "
                "GROUP BY m.id ORDER BY m.id")],
            "by_source": dict(q("SELECT source, COUNT(*) FROM runs GROUP BY source ORDER BY COUNT(*) DESC")),
            "by_codegen": dict(q("SELECT codegen, COUNT(*) FROM runs GROUP BY codegen ORDER BY codegen")),
            "by_program": by_program,
        }

    # ---- reading ------------------------------------------------------------
    def pending(self, kind: str, *, fraction: float = 0.0, below: float = 0.0) -> dict[int, list[str]]:
        """Labelled schedules due for a second measurement of ``kind`` that have none yet: for ``noise``,
        ``fraction`` of them chosen by hash; for ``recheck``, those with a speedup below ``below``."""
        cut = int(fraction * 2**32)
        out: dict[int, list[str]] = {}
        q = ("SELECT s.program, s.text, s.hash, m.speedup FROM schedules s JOIN measurements m ON m.schedule = s.id "
             "AND m.kind = 'label' AND m.verified = 1 WHERE NOT EXISTS (SELECT 1 FROM measurements n "
             "WHERE n.schedule = s.id AND n.kind = ?)")
        for prog, text, h, speedup in self.db.execute(q, (kind,)):
            if (int(h[:8], 16) < cut) if kind == "noise" else speedup < below:
                out.setdefault(prog, []).append(text)
        return out

    def recent_programs(self, n: int) -> list[int]:
        """Ids of the ``n`` programs stored last."""
        return [r[0] for r in self.db.execute("SELECT id FROM programs ORDER BY id DESC LIMIT ?", (n,))]

    def builds(self) -> dict[str, dict]:
        """The settings of every build stored in this database, by ``build:SEED``."""
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM meta WHERE key LIKE 'build:%'")}

    def snapshot(self, path: str | Path) -> None:
        """A consistent, compact copy of this database at ``path`` (readable while a build writes)."""
        dst = sqlite3.connect(str(path))
        with dst:
            self.db.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
        dst.execute("VACUUM")
        dst.close()

    def program_hashes(self) -> dict[int, str]:
        """The hash of every dataset program, by id."""
        return dict(self.db.execute("SELECT id, hash FROM programs"))

    def program_json(self, program: int) -> dict:
        """The dataset program of id ``program``."""
        return self._json("SELECT json FROM programs WHERE id = ?", program)

    def _json(self, query: str, key: int | str) -> dict:
        row = self.db.execute(query, (key,)).fetchone()
        if row is None:
            raise LoopcostError(f"no program {key} in {self.path}")
        return json.loads(row[0])

    def counts(self) -> dict:
        q = self.db.execute
        return {
            "programs": q("SELECT COUNT(*) FROM programs").fetchone()[0],
            "schedules": q("SELECT COUNT(*) FROM measurements WHERE kind = 'label' AND verified = 1").fetchone()[0],
            "failures": q("SELECT COUNT(*) FROM measurements WHERE kind = 'label' AND verified = 0").fetchone()[0],
            "noise_pairs": q("SELECT COUNT(*) FROM measurements WHERE kind = 'noise' AND verified = 1").fetchone()[0],
            "censored": q("SELECT COUNT(*) FROM measurements WHERE kind = 'label' AND verified = 1 "
                          "AND censored = 1").fetchone()[0],
        }

    def stage_seconds(self) -> tuple[dict[str, float], int]:
        """Worker seconds by stage (generate, codegen, compile, run, ...) summed over the programs whose
        build recorded them, and how many schedules (measured, verified or not) those programs hold."""
        total: dict[str, float] = {}
        for (text,) in self.db.execute("SELECT seconds FROM programs WHERE seconds IS NOT NULL"):
            for k, v in json.loads(text).items():
                total[k] = total.get(k, 0.0) + v
        n = self.db.execute("SELECT COUNT(*) FROM measurements m JOIN schedules s ON m.schedule = s.id JOIN programs p "
                            "ON s.program = p.id WHERE m.kind = 'label' AND p.seconds IS NOT NULL").fetchone()[0]
        return total, n

    def labels(self, split: str | None = None, seeds: Sequence[int] | None = None):
        """Yield (program id, split, schedule text, speedup, censored) of every verified label (of the programs
        of builds ``seeds`` only, if given). A rechecked label gives the faster of its two measurements:
        interference only ever slows a run down; ``censored`` is that measurement's (its speedup an upper
        bound)."""
        q = ("SELECT p.id, p.split, s.text, MAX(m.speedup), m.censored FROM measurements m "
             "JOIN schedules s ON m.schedule = s.id "
             "JOIN programs p ON s.program = p.id WHERE m.kind IN ('label', 'recheck') AND m.verified = 1 "
             "AND EXISTS (SELECT 1 FROM measurements l WHERE l.schedule = s.id AND l.kind = 'label' "
             "AND l.verified = 1)")
        args: tuple = ()
        if split:
            q += " AND p.split = ?"
            args = (split,)
        if seeds is not None:
            q += f" AND p.seed IN ({', '.join('?' * len(seeds))})"
            args += tuple(seeds)
        yield from self.db.execute(q + " GROUP BY s.id ORDER BY p.seed, p.idx, s.id", args)

    def recheck_pairs(self) -> list[tuple[float, float]]:
        """(label speedup, rechecked speedup) of every rechecked schedule."""
        q = ("SELECT a.speedup, b.speedup FROM measurements a JOIN measurements b ON a.schedule = b.schedule "
             "WHERE a.kind = 'label' AND b.kind = 'recheck' AND a.verified = 1 AND b.verified = 1")
        return [(a, b) for a, b in self.db.execute(q) if a and b]

    def noise_pairs(self, effective: bool = False, seed: int | None = None) -> list[tuple[float, float]]:
        """(label speedup, re-measured speedup) of every schedule measured twice (of build ``seed``'s programs
        only, if given). ``effective`` gives the label that ``labels`` gives (the faster of label and
        recheck), the one a model is judged against."""
        label = ("(SELECT MAX(x.speedup) FROM measurements x WHERE x.schedule = a.schedule AND x.verified = 1 "
                 "AND x.kind IN ('label', 'recheck'))") if effective else "a.speedup"
        q = (f"SELECT {label}, b.speedup FROM measurements a JOIN measurements b ON a.schedule = b.schedule "
             "AND a.machine = b.machine JOIN schedules s ON s.id = a.schedule JOIN programs p ON p.id = s.program "
             "WHERE a.kind = 'label' AND b.kind = 'noise' AND a.verified = 1 AND b.verified = 1 "
             "AND a.censored = 0 AND b.censored = 0" + ("" if seed is None else " AND p.seed = ?"))
        return [(a, b) for a, b in self.db.execute(q, () if seed is None else (seed,)) if a and b]

    def failures(self, limit: int = 20) -> list[tuple[str, str, str]]:
        q = ("SELECT p.name, s.text, m.error FROM measurements m JOIN schedules s ON m.schedule = s.id "
             "JOIN programs p ON s.program = p.id WHERE m.verified = 0 AND m.kind = 'label' LIMIT ?")
        return list(self.db.execute(q, (limit,)))
