"""Dataset build throughput: the timing before December 2026 and today's, side by side on the same programs.

    python bench/build_throughput.py [--programs 24] [--seed 900] [--chunk 4] [--dir /tmp/loopcost-build-bench]

Three builds of the same programs and schedules (seed ``--seed``, bench scale: ``--min-work 2e8
--max-work 3e9``, 20 schedules each, 2 workers, the default share of noise re-measurements):

- ``legacy``: ``--legacy-timing`` (an untimed checked run, then 3-30 runs up to 0.25 s, no censoring);
- ``today``: the default timing (the checked run timed, censoring, stopping when steady);
- ``legacy-again``: ``--legacy-timing`` once more: how far two measurements of the same label are apart
  by noise alone, the yardstick of the label agreement;
- ``today-1-worker``: today's timing with one worker, which never compiles while it measures (with two,
  one worker compiles the next program while the other measures: faster, if it does not disturb).

They run interleaved, ``--chunk`` programs at a time, so a drift of the machine hits all of them alike, each
with a compile cache of its own (``LOOPCOST_CACHE_DIR`` in ``--dir``: none reuses another's binaries). The
report (``bench/BUILD.md``) gives each build's verified schedules per hour of wall time, its worker seconds
by stage per schedule, and how today's labels agree with the legacy ones next to how the two legacy builds
agree with each other: relative difference of speedups (median, p90) and per-program Spearman on the
schedules timed in full; the censored labels against the legacy label of the same schedule. The databases
stay in ``--dir``; a rerun resumes them. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from report import ROOT, head_commit

from loopcost.costmodel.metrics import spearman
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.database.store import Store
from loopcost.dataset.build import build
from loopcost.dataset.tasks import CENSOR, DATASET_TIMING, LEGACY_TIMING, BuildConfig
from loopcost.generator.programs import GeneratorOptions

#: name -> (timing, workers: None for ``--workers``)
BUILDS = {"legacy": (LEGACY_TIMING, None), "today": (DATASET_TIMING, None), "legacy-again": (LEGACY_TIMING, None),
          "today-1-worker": (DATASET_TIMING, 1)}


def labels(db: Path) -> dict[tuple[int, str], tuple[float, bool]]:
    """(program index, schedule) -> (speedup, censored) of every verified label the models would see."""
    with Store(db) as store:
        idx = dict(store.db.execute("SELECT id, idx FROM programs"))  # ids differ between databases, indices not
        return {(idx[pid], text): (sp, bool(cens)) for pid, _split, text, sp, cens in store.labels()}


def agreement(a: dict, b: dict) -> dict:
    """How labels ``b`` agree with ``a`` on the schedules both timed in full, and what ``b`` censored."""
    both = [k for k in a if k in b and not a[k][1] and not b[k][1]]
    rel = np.array([abs(b[k][0] - a[k][0]) / a[k][0] for k in both])
    per_prog: dict[int, list] = {}
    for k in both:
        per_prog.setdefault(k[0], []).append((a[k][0], b[k][0]))
    rho = [spearman(np.array([x for x, _ in v]), np.array([y for _, y in v])) for v in per_prog.values() if len(v) > 2]
    cens = [a[k][0] for k in a if k in b and b[k][1] and not a[k][1]]
    return {"pairs": len(both), "median_rel": float(np.median(rel)), "p90_rel": float(np.percentile(rel, 90)),
            "spearman_per_program": float(np.nanmean(rho)),
            "censored": len(cens),
            "censored_legacy_label_max": max(cens, default=None),
            "censored_legacy_label_below_half": float(np.mean(np.array(cens) < 0.5)) if cens else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=900)
    ap.add_argument("--chunk", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/loopcost-build-bench"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "BUILD.md")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    gen = GeneratorOptions(min_work=2e8, max_work=3e9)
    wall_file = args.dir / "wall.json"
    wall = json.loads(wall_file.read_text()) if wall_file.exists() else {name: 0.0 for name in BUILDS}
    for upto in range(args.chunk, args.programs + args.chunk, args.chunk):
        for name, (timing, workers) in BUILDS.items():
            # each build compiles for itself, as a real one does: the builds share no compiled harness
            os.environ["LOOPCOST_CACHE_DIR"] = str(args.dir / f"cache-{name}")
            t0 = time.monotonic()
            s = build(str(args.dir / f"{name}.db"), programs=min(upto, args.programs),
                      cfg=BuildConfig(seed=args.seed, generator=gen, timing=timing), workers=workers or args.workers,
                      progress=False)
            if s["programs"]:
                wall[name] += time.monotonic() - t0
                wall_file.write_text(json.dumps(wall))
                print(f"{name}: {min(upto, args.programs)} programs, {s['schedules']} schedules in "
                      f"{s['wall_s']:.0f} s", flush=True)
    rows = {}
    for name in BUILDS:
        with Store(args.dir / f"{name}.db") as store:
            counts = store.counts()
            seconds, measured = store.stage_seconds()
        rows[name] = {"schedules": counts["schedules"], "censored": counts["censored"], "wall_s": wall[name],
                      "per_hour": counts["schedules"] / wall[name] * 3600,
                      "seconds_per_schedule": {k: v / measured for k, v in seconds.items()}}
    got = {name: labels(args.dir / f"{name}.db") for name in BUILDS}
    agree = {"today vs legacy": agreement(got["legacy"], got["today"]),
             "today-1-worker vs legacy": agreement(got["legacy"], got["today-1-worker"]),
             "legacy-again vs legacy": agreement(got["legacy"], got["legacy-again"])}
    (args.out.with_suffix(".json")).write_text(json.dumps({"builds": rows, "agreement": agree}, indent=2))
    info = machine_info(BuildConfig().toolchain.describe())
    lines = [
        "# Dataset build throughput: the timing before December 2026 and today's, side by side",
        "",
        f"`python bench/build_throughput.py --programs {args.programs} --seed {args.seed} --chunk {args.chunk}` "
        f"at commit {head_commit()}, {time.strftime('%Y-%m-%d')}, on {info['cpu']} ({info['cores']} cores, "
        f"fingerprint {fingerprint(info)}): the same {args.programs} bench-scale programs (work 2e8-3e9) with 20 "
        f"schedules each, built four times, interleaved {args.chunk} programs at a time, {args.workers} workers "
        "but where the name says 1.",
        f"Today's timing: the checked run is the first timed run; timing stops once two runs agree within "
        f"{DATASET_TIMING.steady:.0%} (else 3 runs or 20 ms, at most 0.25 s, as before); a schedule whose first "
        f"two runs disagree but are both over {CENSOR:g}x slower than the unscheduled program's fastest stops "
        "there (censored label).",
        "",
        "| build | verified schedules | censored | wall | schedules/hour | generate | codegen | compile | run "
        "(of which timed) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        sec = r["seconds_per_schedule"]
        lines.append(f"| {name} | {r['schedules']} | {r['censored']} | {r['wall_s']:.0f} s | {r['per_hour']:,.0f} | "
                     + " | ".join(f"{sec.get(k, 0):.3f} s" for k in ("generate", "codegen", "compile"))
                     + f" | {sec.get('run', 0):.3f} s ({sec.get('timed', 0):.3f} s) |")
    speed = statistics.mean([rows["legacy"]["per_hour"], rows["legacy-again"]["per_hour"]])
    lines += ["", f"Today's timing builds {rows['today']['per_hour'] / speed:.2f}x as many verified schedules per "
              "hour as the legacy timing (mean of its two builds). Stage times are worker seconds per measured "
              f"schedule ({args.workers} workers: one compiles while the other measures).", "",
              "## Label agreement", "",
              "| labels | pairs timed in full | median rel. diff | p90 rel. diff | Spearman per program | censored | "
              "their legacy label: max | below 0.5x |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, a in agree.items():
        cm = "-" if a["censored_legacy_label_max"] is None else f"{a['censored_legacy_label_max']:.3f}"
        cb = "-" if a["censored_legacy_label_below_half"] is None else f"{a['censored_legacy_label_below_half']:.0%}"
        lines.append(f"| {name} | {a['pairs']} | {a['median_rel']:.1%} | {a['p90_rel']:.1%} | "
                     f"{a['spearman_per_program']:.3f} | {a['censored']} | {cm} | {cb} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
