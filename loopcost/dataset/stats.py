"""``loopcost dataset stats``: counts, speedups, transformation shares, noise, machine."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..costmodel.metrics import noise_floor_mape, noise_rel
from ..database.store import Store
from ..transforms.schedule import step_kinds


def _quantiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    a = np.asarray(xs)
    return {f"p{q}": float(np.percentile(a, q)) for q in (5, 25, 50, 75, 95)} | {
        "geomean": float(math.exp(np.mean(np.log(a)))), "share_faster": float(np.mean(a > 1.0))}


def dataset_stats(db: str) -> dict:
    with Store(db) as store:
        counts = store.counts()
        speedups, kinds, splits = [], Counter(), Counter()
        n_nonempty = 0
        for _prog, split, text, sp, censored in store.labels():
            splits[split] += 1
            if sp and not censored:
                speedups.append(sp)
            if text:
                n_nonempty += 1
                kinds.update(set(step_kinds(text)))
        pairs = store.noise_pairs()
        rel = noise_rel(pairs)
        rechecks = store.recheck_pairs()
        seconds, measured = store.stage_seconds()
        per = {k: v / measured for k, v in seconds.items()} if measured else {}
        by_build = {}
        for key in sorted(store.builds(), key=lambda k: int(k.split(":")[1])):
            seed = int(key.split(":")[1])
            if rel_b := noise_rel(store.noise_pairs(seed=seed)).tolist():
                by_build[key] = {"pairs": len(rel_b), "median_rel": float(np.median(rel_b)),
                                 "p90_rel": float(np.percentile(rel_b, 90)),
                                 "floor_mape_vs_label": noise_floor_mape(store.noise_pairs(True, seed))}
        out = {
            **counts,
            "splits": dict(splits),
            "speedup": _quantiles(speedups),
            "transformation_share": {k: v / n_nonempty for k, v in sorted(kinds.items())} if n_nonempty else {},
            "noise_pairs": len(pairs),
            "noise_median_rel": float(np.median(rel)) if len(rel) else None,
            "noise_p90_rel": float(np.percentile(rel, 90)) if len(rel) else None,
            "noise_floor_mape": noise_floor_mape(store.noise_pairs(effective=True)),
            "noise_by_build": by_build,
            "rechecked": len(rechecks),
            "recheck_over_2x_faster": int(sum(b > 2 * a for a, b in rechecks)),
            "seconds_per_schedule": per,
            # timed runs wait for each other (``runner.process.machine_lock``): whatever the workers, a build of
            # schedules timed this long measures at most this many an hour
            "timed_bound_per_hour": 3600 / per["timed"] if per.get("timed") else None,
            "machine": store.machines(),
            "failure_examples": [{"program": p, "schedule": s, "error": (e or "")[:300]}
                                 for p, s, e in store.failures(5)],
        }
    return out


def format_stats(s: dict) -> str:
    lines = [f"programs     {s['programs']}", f"schedules    {s['schedules']} verified "
             f"({s['failures']} failed)", f"splits       {s['splits']}"]
    if s.get("censored"):
        lines.append(f"censored     {s['censored']} of the verified labels stopped timing early, far slower than the "
                     "unscheduled program (their speedup is an upper bound; not in the quantiles below)")
    if s["speedup"]:
        q = s["speedup"]
        lines.append(f"speedup      p5 {q['p5']:.2f}  p25 {q['p25']:.2f}  median {q['p50']:.2f}  p75 {q['p75']:.2f}  "
                     f"p95 {q['p95']:.2f}  geomean {q['geomean']:.2f}  faster {q['share_faster']:.0%}")
    lines.append("transforms   " + ", ".join(f"{k} {v:.0%}" for k, v in s["transformation_share"].items()))
    if s["noise_median_rel"] is not None:
        lines.append(f"noise        {s['noise_pairs']} re-measured: median {s['noise_median_rel']:.1%}, "
                     f"p90 {s['noise_p90_rel']:.1%} relative difference of speedup; against the training label "
                     f"(faster of label and recheck) a MAPE of {s['noise_floor_mape']:.1f}%")
        if len(s.get("noise_by_build", {})) > 1:
            lines.extend(f"  {k:<10} {v['pairs']} re-measured: median {v['median_rel']:.1%}, p90 {v['p90_rel']:.1%}, "
                         f"MAPE {v['floor_mape_vs_label']:.1f}%" for k, v in s["noise_by_build"].items())
    if s.get("rechecked"):
        lines.append(f"rechecked    {s['rechecked']} slow labels measured again; {s['recheck_over_2x_faster']} were "
                     "over 2x faster the second time (the faster measurement is the label)")
    if sec := s.get("seconds_per_schedule"):
        other = sec.get("run", 0.0) - sec.get("timed", 0.0)
        lines.append("time         per measured schedule, worker seconds: " + ", ".join(
            f"{k} {sec[k]:.3f}" for k in ("generate", "codegen", "compile") if k in sec)
            + (f" (and {sec['wait']:.3f} waiting for a timed run to end before them)" if "wait" in sec else "")
            + f", run {sec.get('run', 0.0):.3f} (timed runs {sec.get('timed', 0.0):.3f}, checks, resets and "
              f"waiting for the machine {other:.3f})")
    if bound := s.get("timed_bound_per_hour"):
        lines.append(f"bound        timed runs take turns on the machine: at these run times a build measures at most "
                     f"{bound:,.0f} schedules an hour, however fast the rest")
    for m in s["machine"]:
        lines.append(f"machine      {m['fingerprint']}: {m['cpu']}, {m['cores']} cores, {m['compiler']}, "
                     f"{' '.join(m['flags'] or [])}")
    for f in s["failure_examples"]:
        lines.append(f"failure      {f['program']} {f['schedule']}: {f['error'][:120]}")
    return "\n".join(lines)
