"""``loopcost dataset build``: measure random programs and schedules into a store, resumably.

Work is a stream of tasks, one program each (see ``tasks.py``), run by a local
process pool or a Dask cluster through the same ``concurrent.futures`` interface
(``loopcost.runner.dask.executor``); each task measures through a ``LocalRunner`` on its worker.
Workers generate and compile in parallel, but never beside a timed run: the
machine-wide lock lets one measurement run at a time on each machine, alone
(``runner.process.machine_busy``). Results are written, one transaction per program,
by this process only. Killed at any moment, a build resumes where it stopped.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import time
from dataclasses import asdict, replace

from ..codegen.c_source import VERSION_WITHOUT_TEMPS
from ..database.store import Store
from ..errors import LoopcostError
from ..runner.dask import executor
from ..runner.process import machine_busy
from ..transforms.space import SPACE_VERSION
from .progress import Progress
from .tasks import LEGACY_TIMING, BatchResult, BuildConfig, measure_program, remeasure

#: share of measured schedules that are measured a second time, later, for the noise estimate
NOISE_FRACTION = 0.05
#: schedules measured slower than this (speedup) are measured again later, and the faster measurement is the
#: label: another process on the machine can stall OpenMP barriers a thousandfold (seen in noise pairs)
RECHECK_BELOW = 0.1
#: a recheck re-runs labels that were slow, most likely stalled: one that is really that slow is not worth
#: waiting the full timeout for (it keeps its first label)
RECHECK_TIMEOUT = 60.0


def _check_machine(store: Store, r: BatchResult, allow_mixed: bool) -> int:
    known = {m["fingerprint"] for m in store.machines()}
    if known and r.fingerprint not in known and not allow_mixed:
        raise LoopcostError(
            f"{store.path} holds measurements from another machine ({sorted(known)}); this one is "
            f"{r.fingerprint} ({r.machine['cpu']}, {r.machine['compiler']}). Use another --db, or "
            "--allow-mixed-machines to mix them on purpose")
    return store.machine_id(r.fingerprint, r.machine)


def _resume_hint(before: dict, settings: dict) -> str:
    """How to resume a build stored with the settings ``before`` that differ from ``settings``."""
    if before["codegen"] != VERSION_WITHOUT_TEMPS:
        return ("; its labels were measured on C from an older code generator, which this version no longer prints: "
                "continue in another --db")
    if before["space"] != SPACE_VERSION:
        return ("; its schedules were drawn from an older space of schedules (other skews), which this version no "
                "longer draws: continue with another --seed")
    flags, fixed = [], dict(settings)  # its parts are replaced, never changed in place
    if before["generator"]["version"] != settings["generator"]["version"]:
        flags.append(f"--generator-version {before['generator']['version']}")
        fixed["generator"] = {**settings["generator"], "version": before["generator"]["version"],
                              "families": before["generator"]["families"],
                              "max_bytes": before["generator"]["max_bytes"]}
    if before["timing"] == asdict(LEGACY_TIMING) and settings["timing"] != before["timing"]:
        flags.append("--legacy-timing")
        fixed["timing"] = before["timing"]
    elif before["timing"]["abort"] != settings["timing"]["abort"]:
        flags.append(f"--abort {before['timing']['abort']:g}")
        fixed["timing"] = {**settings["timing"], "abort": before["timing"]["abort"]}
    if flags and fixed == before:
        return f"; it was built by an older loopcost: pass {' '.join(flags)} to resume it, or use another seed"
    return "; use the same settings to resume, or another seed or --db"


def build(db: str, *, programs: int, cfg: BuildConfig, workers: int = 2, cluster: str | None = None,
          allow_mixed: bool = False, noise_fraction: float = NOISE_FRACTION, progress: bool = True,
          security: str | None = None) -> dict:
    """Measure programs ``0 .. programs-1`` of ``cfg.seed``'s stream; skip those already stored (``cluster``,
    ``security``: see ``runner.dask.executor``)."""
    if programs < 1 or workers < 1:
        raise LoopcostError("--programs and --workers must be at least 1")
    with Store(db) as store:
        config = json.dumps({"schedules": cfg.schedules, "generator": asdict(cfg.generator),
                             "timing": asdict(cfg.timing), "flags": list(cfg.toolchain.flags),
                             "staged_share": cfg.staged_share, "codegen": VERSION_WITHOUT_TEMPS,
                             "space": SPACE_VERSION}, sort_keys=True)
        settings = json.loads(config)
        old = store.meta(f"build:{cfg.seed}")
        if old is not None:
            # builds before the staged sampler drew none; builds before the versions were stored used codegen 1
            # and space 1
            before = {"staged_share": 0.0, "codegen": 1, "space": 1, **json.loads(old)}
            # builds before censoring timed every schedule in full, after an untimed check
            before["timing"] = {"timed_check": False, "censor": 0.0, "steady": 0.0, **before["timing"]}
            # builds before slow runs were stopped ran every one to its end
            before["timing"] = {"abort": 0.0, **before["timing"]}
            # builds before the generator's version was stored drew version 1's programs
            before["generator"] = {"version": 1, **before["generator"]}
            if before != settings:
                differ = ", ".join(f"{k} {before.get(k)!r} (now {v!r})" for k, v in settings.items()
                                   if before.get(k) != v)
                hint = _resume_hint(before, settings)
                raise LoopcostError(f"{db} was built with seed {cfg.seed} and other settings: {differ}{hint}")
        store.set_meta(f"build:{cfg.seed}", config)
        todo = [i for i in range(programs) if i not in store.done_indices(cfg.seed)]
        bar = Progress(len(todo), "programs", progress)
        stats = {"programs": 0, "schedules": 0, "censored": 0, "failures": 0, "noise": 0, "errors": [], "seconds": {}}
        t0 = time.monotonic()
        with executor(workers, cluster, security) as ex:
            pending: dict[cf.Future, tuple[str, int | None]] = {}
            queue = list(todo)
            noise_due, flushed = 0, False

            def fill() -> None:
                while queue and len(pending) < 2 * workers:
                    pending[ex.submit(measure_program, cfg, queue.pop(0))] = ("label", None)

            def submit_noise(final: bool) -> None:
                # re-measure at a different moment: programs stored a while ago (or all, at the end)
                recent = set() if final else set(store.recent_programs(2 * workers + 2))
                for kind, due in (("noise", store.pending("noise", fraction=noise_fraction)),
                                  ("recheck", store.pending("recheck", below=RECHECK_BELOW))):
                    for prog, texts in due.items():
                        if prog not in recent and (kind, prog) not in pending.values():
                            c = cfg if kind == "noise" else replace(cfg, timeout=min(cfg.timeout, RECHECK_TIMEOUT))
                            pending[ex.submit(remeasure, c, store.program_json(prog), texts)] = (kind, prog)

            def take(fut: cf.Future) -> None:
                nonlocal noise_due
                kind, prog = pending.pop(fut)
                r: BatchResult = fut.result()
                if kind != "label":
                    store.add_remeasured(prog, _check_machine(store, r, allow_mixed), r.rows, time.time(), kind)
                    stats[kind] = stats.get(kind, 0) + len(r.rows)
                    return
                if r.error:
                    stats["errors"].append(f"program {r.idx}: {r.error}")
                    bar.advance(1)
                    return
                machine = _check_machine(store, r, allow_mixed)
                store.add_batch(program_json=r.program_json, program_hash=r.program_hash, seed=cfg.seed,
                                idx=r.idx, machine=machine, baseline_times=r.baseline_times, rows=r.rows,
                                now=time.time(), seconds=r.seconds)
                ok = sum(row.verified for row in r.rows)
                stats["programs"] += 1
                stats["schedules"] += ok
                stats["censored"] += sum(row.verified and row.censored for row in r.rows)
                stats["failures"] += len(r.rows) - ok
                for k, v in r.seconds.items():
                    stats["seconds"][k] = stats["seconds"].get(k, 0.0) + v
                noise_due += 1
                bar.advance(1, ok, f"| failures {stats['failures']}")

            fill()
            while pending:
                done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                with machine_busy():  # the store's writes and queries, never beside a worker's timed run
                    for fut in done:
                        take(fut)
                    if noise_due >= 10:
                        noise_due = 0
                        submit_noise(final=False)
                    fill()
                    if not pending and not queue and not flushed:
                        flushed = True
                        submit_noise(final=True)
        stats["wall_s"] = time.monotonic() - t0
        stats["schedules_per_hour"] = stats["schedules"] / stats["wall_s"] * 3600 if stats["wall_s"] else 0.0
        return stats


def format_build(stats: dict) -> str:
    """``build``'s result as text: counts, rate and worker time, and the first errors."""
    secs = ", ".join(f"{k} {v:.0f} s" for k, v in stats["seconds"].items())
    return "\n".join([f"measured {stats['programs']} programs, {stats['schedules']} verified schedules "
                      f"({stats['censored']} censored, {stats['failures']} failed, {stats['noise']} re-measured for "
                      f"noise) in {stats['wall_s']:.0f} "
                      f"s: {stats['schedules_per_hour']:,.0f} schedules/hour (worker time: {secs})",
                      *(f"  {e}" for e in stats["errors"][:10])])
