"""How well models rank the schedules of real kernels that searches measured: no measuring, only predictions.

    python bench/kernel_ranking.py intel=loopcost/data/model.pt amd=loopcost/data/machines/amd-epyc/model.pt \
        [--machine 00437a06a17e2598] [--files bench/*.jsonl] [--json OUT.json]

Every committed benchmark row that holds measured speedups of a kernel's schedules (``compare_models.py``'s
``speedups``, ``adaptive.py``'s ``history``) is a *run*: schedules of one kernel (bench size) timed beside one
baseline on one machine. For each model and run the script predicts every schedule and scores the ranking: the
Spearman correlation with the measured speedups, the measured speedup of the model's first pick over the run's
best (top-1), the best of its first five over the run's best (top-5), and the share of pairs of schedules it
orders right, by how far apart they measured. Runs of the selection kernels (``bench/selection``) and of the
benchmark's are reported apart, each with its noise yardstick where the rows keep every run's time
(``compare_models.py``'s): the Spearman between the schedules' median times over the even and the odd runs.
A model chosen on random programs is scored here on what a search asks of it, with labels that cost nothing
more; the figures of ``bench/TRAIN-amd.md`` (2026-12-07) come from it.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from compare_models import kernel_name, kernel_specs

from loopcost.costmodel.metrics import spearman
from loopcost.costmodel.model import CostModel
from loopcost.errors import LoopcostError
from loopcost.features.extract import FeatureTree, featurize
from loopcost.ir.state import ProgramState
from loopcost.kernels.loader import load_program
from loopcost.transforms.schedule import Schedule

BENCH = Path(__file__).resolve().parent
#: bounds of |log(speedup a / speedup b)| for the pairs ordered right
PAIR_BINS = (0.0, 0.2, 0.7, math.inf)


def runs_of(rows: Iterable[tuple[str, dict]], machine: str | None) -> list[dict]:
    """The runs (kernel, set, source, [(schedule, measured speedup)]) of benchmark rows ``(file name, row)``
    measured on ``machine`` (a fingerprint; None: any); the unscheduled program is in every run at 1.0."""
    out = []
    for name, row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("machine"), str) or "kernel" not in row:
            continue
        if machine and row["machine"] != machine:
            continue
        found = []
        if "speedups" in row:  # compare_models.py's rows keep every run's time of the schedules they measured
            raw = row["raw_times"] if isinstance(row.get("raw_times"), dict) else {}
            found.append(("selection" if ".selection." in name else "bench", name, list(row["speedups"].items()), raw))
        for key, hist in row.get("history", {}).items():
            found.append((row.get("group", "bench"), f"{name}:{key}", [("", 1.0), *map(tuple, hist)], {}))
        for kset, source, items, raw in found:
            measured = {text: float(sp) for text, sp in items if sp and sp > 0}
            if len(measured) >= 5:
                out.append({"kernel": row["kernel"], "set": kset, "source": source, "measured": measured,
                            "raw": {t: raw[t] for t in measured if len(raw.get(t, ())) >= 2}})
    return out


def remeasured(raw: dict[str, list[float]]) -> float | None:
    """The noise yardstick of a run: the Spearman between its schedules' median times over the even and over the
    odd runs (None with fewer than 5 schedules timed twice or more)."""
    if len(raw) < 5:
        return None
    even = [float(np.median(t[0::2])) for t in raw.values()]
    odd = [float(np.median(t[1::2])) for t in raw.values()]
    return spearman(np.array(even), np.array(odd))


def featurized(run: dict, programs: dict[str, ProgramState],
               seen: dict[tuple[str, str], FeatureTree | None]) -> tuple[list[str], list[FeatureTree]]:
    """The run's schedules that apply and featurize today (a schedule of an older space may not), and their
    trees (``seen``: those of earlier runs, by kernel and schedule)."""
    initial = programs[run["kernel"]]
    texts, trees = [], []
    for text in run["measured"]:
        key = (run["kernel"], text)
        if key not in seen:
            try:
                seen[key] = featurize(Schedule.parse(text).apply(initial) if text else initial)
            except (LoopcostError, ValueError):
                seen[key] = None
        if seen[key] is not None:
            texts.append(text)
            trees.append(seen[key])
    return texts, trees


def scores(log_pred: np.ndarray, measured: np.ndarray) -> dict:
    """One model on one run: Spearman, top-1 and top-5 over the best measured, pairs (right, all) per bin."""
    order = np.argsort(-log_pred)
    pairs = []
    d = np.log(measured)[:, None] - np.log(measured)[None, :]
    p = log_pred[:, None] - log_pred[None, :]
    upper = np.triu_indices(len(measured), 1)
    d, p = d[upper], p[upper]
    for lo, hi in zip(PAIR_BINS, PAIR_BINS[1:], strict=False):
        sel = (np.abs(d) >= lo) & (np.abs(d) < hi)
        pairs.append((int((d[sel] * p[sel] > 0).sum()), int(sel.sum())))
    return {"spearman": spearman(log_pred, measured),
            "top1": float(measured[order[0]] / measured.max()),
            "top5": float(measured[order[:5]].max() / measured.max()), "pairs": pairs}


def summary(results: list[dict], model: str, kset: str) -> dict:
    """Mean Spearman, geometric-mean top-1 and top-5, and the pairs ordered right per bin, over the runs of a
    set."""
    runs = [r for r in results if r["set"] == kset]
    rs = [r["scores"][model] for r in runs]
    if not rs:
        return {}
    rights = np.array([[right for right, _ in r["pairs"]] for r in rs]).sum(0)
    totals = np.array([[n for _, n in r["pairs"]] for r in rs]).sum(0)
    return {"runs": len(rs), "schedules": sum(r["n"] for r in runs),
            "spearman": float(np.nanmean([r["spearman"] for r in rs])),
            "top1": float(np.exp(np.mean(np.log([r["top1"] for r in rs])))),
            "top5": float(np.exp(np.mean(np.log([r["top5"] for r in rs])))),
            "pairs_right": [float(a / b) if b else None for a, b in zip(rights, totals, strict=True)]}


def table(results: list[dict], models: list[str]) -> str:
    """Markdown: each model on each set of kernels."""
    bins = [f"|log ratio| {lo:g}-{hi:g}" for lo, hi in zip(PAIR_BINS, PAIR_BINS[1:], strict=False)]
    lines = ["| kernels | model | runs (schedules) | Spearman per run | top-1 | top-5 | pairs ordered right: "
             + ", ".join(bins) + " |", "|---|---|---:|---:|---:|---:|---|"]
    for kset in ("selection", "bench"):
        for m in models:
            s = summary(results, m, kset)
            if s:
                right = ", ".join("-" if x is None else f"{x:.2f}" for x in s["pairs_right"])
                lines.append(f"| {kset} | {m} | {s['runs']} ({s['schedules']}) | {s['spearman']:.3f} | "
                             f"{s['top1']:.3f} | {s['top5']:.3f} | {right} |")
        noise = [r["remeasured"] for r in results if r["set"] == kset and r["remeasured"] is not None]
        if noise:
            lines.append(f"| {kset} | runs timed again (odd against even runs) | {len(noise)} | "
                         f"{float(np.nanmean(noise)):.3f} | - | - | - |")
    return "\n".join(lines)


def rank(models: dict[str, CostModel], files: list[Path], machine: str | None) -> list[dict]:
    """Every run of ``files`` measured on ``machine`` (None: any), scored for each of ``models`` (see the module
    docstring); runs of kernels this loopcost does not know, or with fewer than 5 schedules that apply today,
    are left out."""
    rows = [(f.name, json.loads(line)) for f in files for line in f.read_text().splitlines() if line.strip()]
    specs = {kernel_name(s): s for s in kernel_specs(["selection"]) + kernel_specs(["bench"])}
    programs: dict[str, ProgramState] = {}
    seen: dict[tuple[str, str], FeatureTree | None] = {}
    results = []
    for run in runs_of(rows, machine):
        if run["kernel"] not in specs:
            continue
        if run["kernel"] not in programs:
            programs[run["kernel"]] = ProgramState.initial(load_program(specs[run["kernel"]], "bench"))
        texts, trees = featurized(run, programs, seen)
        if len(texts) < 5:
            continue
        measured = np.array([run["measured"][t] for t in texts])
        results.append({"kernel": run["kernel"], "set": run["set"], "source": run["source"], "n": len(texts),
                        "remeasured": remeasured({t: run["raw"][t] for t in texts if t in run["raw"]}),
                        "scores": {name: scores(np.log(m.predict_trees(trees)), measured)
                                   for name, m in models.items()}})
    return results


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="NAME=MODEL.pt")
    ap.add_argument("--machine", default="00437a06a17e2598", help="the fingerprint whose runs are scored "
                    "(default: the AMD EPYC's; 'any': all)")
    ap.add_argument("--files", nargs="+", type=Path, default=sorted(BENCH.glob("*.jsonl")))
    ap.add_argument("--json", type=Path, default=None, help="write every run's scores here")
    a = ap.parse_args(argv)
    models = dict(m.split("=", 1) for m in a.models)
    results = rank({name: CostModel.load(path) for name, path in models.items()}, a.files,
                   None if a.machine == "any" else a.machine)
    if not results:
        raise SystemExit(f"no run of measured schedules of machine {a.machine} in {len(a.files)} files")
    print(table(results, list(models)))
    if a.json:
        a.json.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
