"""Per-search model updates side by side, replayed offline on measured data (issue 20).

    python bench/update_strategies.py [--programs N] [--seed S] [--batch B] [--threads T] [--strategies ...]
                                      [--out bench/UPDATE.jsonl] [--report bench/UPDATE.md]

Nothing is measured: the programs of the AMD EPYC dataset that ships in
``loopcost/data/machines/amd-epyc`` (about 21 verified schedules each, never seen by the shipped
model, trained on an Intel CPU) replay what ``--search adaptive`` sees. Per program and strategy: the
offline model's top B (8) are "measured" (their labels revealed); the strategy updates on them and the
next B are its best among the rest (round 2); it updates again on all 2B and ranks the rest (round 3).
Each row records the best true speedup found within k schedules (k = B, B + 1, 3B/2, 2B, 2B + 1), the
program's best, the Spearman correlation of the updated model on the schedules not measured yet, and
the wall time of each update with T torch threads (the measured schedules featurized beforehand, as in
the search). Rows are appended to ``--out`` as each program finishes; a rerun with the same file skips
the (program, strategy, B, T) it holds. ``--report`` writes the markdown summary of every row of
``--out`` (and only that with ``--programs 0``), keeping its hand-written "Findings" section.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import json
import lzma
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from report import head_commit

from loopcost.costmodel.batch import collate
from loopcost.costmodel.data import Dataset, load
from loopcost.costmodel.metrics import spearman
from loopcost.costmodel.model import CostModel
from loopcost.costmodel.train import rank_loss
from loopcost.costmodel.update import UpdateConfig, update
from loopcost.database.fingerprint import cpu_model
from loopcost.dataset.shipped import cached_export
from loopcost.features.extract import FeatureTree
from loopcost.paths import DATA, cache_root

MACHINE_DATA = DATA / "machines" / "amd-epyc"
BENCH = Path(__file__).resolve().parent
#: speedups within this fraction of a program's best are as good as the best (the dataset's noise: 7% MAPE)
NOISE = 0.07
#: the heading of the report's hand-written conclusions, kept when the report is written again
FINDINGS = "## Findings"


@dataclass
class Kernel:
    """One program's schedules, with what the offline model says of them (computed once)."""

    pid: int
    trees: list[FeatureTree]
    speedup: np.ndarray       # (n,) measured
    member_log: np.ndarray    # (members, n) each member's predicted log-speedup
    embed: np.ndarray         # (members, n, E) each member's regression-head input
    flat: np.ndarray          # (n, F) the computation vectors, flattened, and loop summaries that vary


#: a strategy: (offline model, kernel, indices measured, their speedups) -> predicted log-speedups of all
#: the kernel's schedules, computed after the timed part (the update) is done
Predictor = Callable[[], np.ndarray]
Strategy = Callable[[CostModel, Kernel, np.ndarray, np.ndarray], Predictor]


def kernel(model: CostModel, data: Dataset, pid: int) -> Kernel:
    """Program ``pid`` of ``data`` with the offline members' predictions and head inputs."""
    idx = np.nonzero(data.program == pid)[0]
    trees = [data.trees[i] for i in idx]
    logs, embeds = model.head_inputs(trees)
    flat = np.stack([np.concatenate([t.comps.ravel(), t.loops.sum(0), t.loops.max(0), [len(t.loops)]])
                     for t in trees])
    flat = flat[:, flat.std(0) > 0]  # what tells the program's schedules apart
    return Kernel(pid, trees, data.speedup[idx], logs, embeds, flat)


def _targets(y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    t = torch.tensor(y, dtype=torch.float32)
    return t, torch.log(t), torch.zeros(len(y), dtype=torch.long)


# ---- strategies --------------------------------------------------------------------------------------


def none(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray) -> Predictor:
    """(0) The offline model."""
    return lambda: k.member_log.mean(0)


def current(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray, steps: int = 25,
            lr: float = 3e-4) -> Predictor:
    """(1) The update of the first adaptive search (efcca1f): all weights, 25 AdamW steps at 3e-4, log-MSE +
    ranking, on every measured schedule."""
    target, log_target, program = _targets(y)
    batch = collate([k.trees[i] for i in idx])
    nets = []
    for net in model.nets:
        m = copy.deepcopy(net).eval()
        opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
        for _ in range(steps):
            out = m(batch)
            loss = ((out - log_target) ** 2).mean() + rank_loss(out, target, program)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 5.0)
            opt.step()
        nets.append(m.eval())
    new = CostModel(nets)
    return lambda: np.log(new.predict_trees(k.trees))


def early_stop(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray, lr: float = 1e-4,
               max_steps: int = 40, patience: int = 8) -> Predictor:
    """(3) All weights at a small ``lr``, a quarter of the measured schedules held out: the weights of the
    step with the lowest loss (log-MSE + ranking) on the held-out ones and their pairs (step 0: offline)."""
    n = len(idx)
    held = np.zeros(n, bool)
    held[np.random.default_rng(k.pid).choice(n, max(1, n // 4), replace=False)] = True
    fit, hold = torch.tensor(~held), torch.tensor(held)
    target, log_target, program = _targets(y)
    pairs = hold[:, None] | hold[None, :]
    faster = (log_target[:, None] - log_target[None, :]) > 0.02
    batch = collate([k.trees[i] for i in idx])
    nets = []
    for net in model.nets:
        m = copy.deepcopy(net).eval()
        opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
        best, best_state, since = float("inf"), None, 0
        for _ in range(max_steps + 1):
            out = m(batch)
            d = out.detach()
            held_loss = float(((d[hold] - log_target[hold]) ** 2).mean())
            if (faster & pairs).any():
                held_loss += float(torch.nn.functional.softplus(-(d[:, None] - d[None, :])[faster & pairs]).mean())
            if held_loss < best:
                best, best_state, since = held_loss, copy.deepcopy(m.state_dict()), 0
            elif (since := since + 1) >= patience:
                break
            loss = ((out[fit] - log_target[fit]) ** 2).mean() + rank_loss(out[fit], target[fit], program[fit])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 5.0)
            opt.step()
        m.load_state_dict(best_state)
        nets.append(m)
    new = CostModel(nets)
    return lambda: np.log(new.predict_trees(k.trees))


def _measured_embeddings(model: CostModel, k: Kernel, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(members, m) log predictions and (members, m, E) head inputs of the measured schedules, computed
    (the update's own cost) rather than read from the cache."""
    return model.head_inputs([k.trees[i] for i in idx])


def head_only(steps: int, lr: float, mse_weight: float = 1.0) -> Strategy:
    """(2) Only each member's regression head, on the cached head inputs: ``steps`` of AdamW at ``lr`` on
    ``mse_weight`` x log-MSE + pairwise ranking."""

    def strategy(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray) -> Predictor:
        _, emb = _measured_embeddings(model, k, idx)
        target, log_target, program = _targets(y)
        heads = []
        for net, h in zip(model.nets, torch.tensor(emb), strict=True):
            head = copy.deepcopy(net.head).eval()
            opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.0)
            for _ in range(steps):
                out = head(h).squeeze(1)
                loss = mse_weight * ((out - log_target) ** 2).mean() + rank_loss(out, target, program)
                opt.zero_grad()
                loss.backward()
                opt.step()
            heads.append(head)

        def predict() -> np.ndarray:
            with torch.no_grad():
                return torch.stack([hd(torch.tensor(e)).squeeze(1) for hd, e in zip(heads, k.embed, strict=True)]
                                   ).mean(0).numpy()
        return predict
    strategy.__doc__ = (f"(2) Only each member's regression head, on its cached inputs: {steps} AdamW steps at {lr:g} "
                        f"on {mse_weight:g} x log-MSE + pairwise ranking.")
    return strategy


def kernel_ridge(lam: float = 0.25) -> Strategy:
    """(4a) A kernel-local residual (``loopcost.costmodel.update`` since it was chosen here):
    Gaussian-kernel ridge regression, on the members' head inputs (each scaled to unit norm), of
    log(measured) - log(predicted); far from every measurement it is the offline model again. Length
    scale: the median distance between measured schedules."""

    def strategy(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray) -> Predictor:
        new = update(model, [k.trees[i] for i in idx], y, UpdateConfig(ridge=lam))
        return lambda: np.log(new.predict_trees(k.trees))
    strategy.__doc__ = f"{kernel_ridge.__doc__} Ridge {lam:g}."
    return strategy


def lightgbm_residual(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray) -> Predictor:
    """(4b) A kernel-local residual: LightGBM (small, shrunk) on [members' log predictions, flat features]."""
    import lightgbm

    logs, _ = _measured_embeddings(model, k, idx)
    x = np.concatenate([logs.T, k.flat[idx]], axis=1)
    params = {"objective": "regression", "learning_rate": 0.1, "num_leaves": 4, "min_data_in_leaf": 2,
              "min_data_in_bin": 1, "lambda_l2": 1.0, "seed": 0, "deterministic": True, "num_threads": 1,
              "verbose": -1}
    gbm = lightgbm.train(params, lightgbm.Dataset(x, np.log(y) - logs.mean(0)), num_boost_round=50)
    return lambda: k.member_log.mean(0) + gbm.predict(np.concatenate([k.member_log.T, k.flat], axis=1))


def reweight(lam: float = 1.0) -> Strategy:
    """(5) Re-weighting the ensemble: log-speedup = a + sum_m w_m log-prediction_m, least squares on the
    measured schedules with a ridge pull (``lam``) toward the equal weights, weights kept non-negative."""

    def strategy(model: CostModel, k: Kernel, idx: np.ndarray, y: np.ndarray) -> Predictor:
        logs, _ = _measured_embeddings(model, k, idx)
        x, t = logs.T - logs.T.mean(0), np.log(y) - np.log(y).mean()
        w0 = np.full(len(logs), 1.0 / len(logs))
        w = np.linalg.solve(x.T @ x + lam * np.eye(len(w0)), x.T @ t + lam * w0).clip(0.0)
        a = np.log(y).mean() - logs.mean(1) @ w
        return lambda: a + w @ k.member_log
    strategy.__doc__ = reweight.__doc__.replace("``lam``", f"{lam:g}")
    return strategy


STRATEGIES: dict[str, Strategy] = {
    "none": none,
    "current": current,
    "head": head_only(25, 3e-4),
    "head-strong": head_only(100, 1e-3),
    "head-rank": head_only(100, 1e-3, mse_weight=0.0),
    "early-stop": early_stop,
    "kernel-ridge": kernel_ridge(),
    "lightgbm": lightgbm_residual,
    "reweight": reweight(),
}


# ---- the replay ----------------------------------------------------------------------------------------


def ks(batch: int) -> tuple[int, ...]:
    """The budgets at which the best found is recorded: the offline batch, the first 1, half and all of
    round 2's, the first of round 3's."""
    return batch, batch + 1, batch + batch // 2, 2 * batch, 2 * batch + 1


def replay(model: CostModel, k: Kernel, strategy: Strategy, batch: int) -> dict:
    """Two rounds of an adaptive search measuring ``batch`` a round with ``strategy`` as its update, on one
    program's labels."""
    n = len(k.trees)
    first = np.argsort(-k.member_log.mean(0), kind="stable")[:batch]
    picks, spear, times, fit_err = list(first), [], [], []
    for _ in range(2):
        idx = np.array(picks)
        t0 = time.perf_counter()
        predict = strategy(model, k, idx, k.speedup[idx])
        times.append(time.perf_counter() - t0)
        pred = predict()
        fit_err.append(float(np.mean((pred[idx] - np.log(k.speedup[idx])) ** 2)))
        rest = np.array([i for i in range(n) if i not in set(picks)])
        spear.append(spearman(pred[rest], k.speedup[rest]) if len(rest) >= 3 else float("nan"))
        picks += list(rest[np.argsort(-pred[rest], kind="stable")][:batch])
    found = {str(m): float(k.speedup[picks[:m]].max()) for m in ks(batch)}
    return {"program": k.pid, "n": n, "best": float(k.speedup.max()), "found": found, "spearman": spear,
            "update_s": times, "fit_log_mse": fit_err, "picks": [int(i) for i in picks]}


def prepared_data() -> Dataset:
    """The AMD EPYC dataset in the training format (unpacked and featurized once, into the cache)."""
    xz = MACHINE_DATA / "dataset.sqlite.xz"
    db = cache_root() / "shipped" / f"amd-epyc-{hashlib.sha256(xz.read_bytes()).hexdigest()[:16]}.sqlite"
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(xz) as src, open(db.with_suffix(".tmp"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        db.with_suffix(".tmp").replace(db)
    return load(cached_export(db))


def run(out: Path, programs: int, seed: int, strategies: list[str], threads: int, batch: int) -> None:
    """Append a row per (program, strategy) not in ``out`` yet for ``threads`` and ``batch``, ``programs``
    programs drawn with ``seed``."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    data = prepared_data()
    chosen = sorted(np.random.default_rng(seed).permutation(np.unique(data.program))[:programs].tolist())
    done = {(r["program"], r["strategy"]) for r in read_rows(out) if (r["threads"], r["batch"]) == (threads, batch)}
    model = CostModel.load(DATA / "model.pt")
    with open(out, "a") as f:
        for j, pid in enumerate(chosen):
            todo = [s for s in strategies if (pid, s) not in done]
            if not todo:
                continue
            k = kernel(model, data, pid)
            for name in todo:
                row = replay(model, k, STRATEGIES[name], batch)
                f.write(json.dumps({"strategy": name, "threads": threads, "batch": batch, **row}) + "\n")
            f.flush()
            print(f"{j + 1}/{len(chosen)} program {pid}", file=sys.stderr)


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


# ---- the report ----------------------------------------------------------------------------------------


def geomean(x: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(x))))


def summary(rows: list[dict], batch: int, boot: int = 2000) -> tuple[list[str], dict[str, dict]]:
    """Per strategy, over the programs every strategy ran on with 1 thread and ``batch``: regret ratios,
    Spearman, and the comparison with ``current`` at the middle and the end of round 2 (programs won / lost
    by more than the noise, bootstrap CIs over programs); update times per thread count."""
    by: dict[str, dict[int, dict]] = {}
    for r in rows:
        if r["batch"] == batch and r["threads"] == 1:
            by.setdefault(r["strategy"], {})[r["program"]] = r
    names = [s for s in STRATEGIES if s in by]
    common = sorted(set.intersection(*(set(v) for v in by.values())))
    ratio = {s: {m: np.array([by[s][p]["found"][str(m)] / by[s][p]["best"] for p in common]) for m in ks(batch)}
             for s in names}
    resample = np.random.default_rng(0).integers(0, len(common), (boot, len(common)))
    sp = {s: np.array([by[s][p]["spearman"] for p in common], float) for s in names}
    out = {}
    for s in names:
        d = np.nan_to_num(sp[s][:, 0] - sp["current"][:, 0])  # a program without a correlation: no difference
        out[s] = {"programs": len(common), "regret": [geomean(ratio[s][m]) for m in ks(batch)],
                  "near": float(np.mean(ratio[s][2 * batch] >= 1 - NOISE)),
                  "spearman": [float(np.nanmean(sp[s][:, 0])), float(np.nanmean(sp[s][:, 1]))],
                  "spearman_vs_current": [float(d.mean()), *np.percentile(d[resample].mean(1), [2.5, 97.5])],
                  "fit": float(np.mean([by[s][p]["fit_log_mse"][1] for p in common])), "vs_current": [],
                  "times": {}}
        for m in ks(batch)[2:4]:
            rel = np.log(ratio[s][m]) - np.log(ratio["current"][m])
            out[s]["vs_current"].append([float(np.exp(rel.mean())),
                                         *np.exp(np.percentile(rel[resample].mean(1), [2.5, 97.5])),
                                         int((rel > np.log(1 + NOISE)).sum()), int((rel < -np.log(1 + NOISE)).sum())])
        for t in sorted({r["threads"] for r in rows}):
            times = [x for r in rows if (r["strategy"], r["threads"], r["batch"]) == (s, t, batch)
                     for x in r["update_s"]]
            if times:
                out[s]["times"][t] = (float(np.median(times)), float(np.percentile(times, 90)))
    return names, out


def table(rows: list[dict], batch: int) -> list[str]:
    """The markdown table of the strategies replayed with ``batch`` schedules a round."""
    names, s = summary(rows, batch)
    threads = sorted({t for r in s.values() for t in r["times"]})
    k = ks(batch)
    head = (f"| strategy | regret@{k[0]} | @{k[1]} | @{k[2]} | @{k[3]} | @{k[4]} | near@{k[3]} | spearman "
            f"({k[0]} / {k[3]}) | spearman ({k[0]}) - current's | fit | vs current @{k[2]} | W/L "
            f"| vs current @{k[3]} | W/L | " + " | ".join(f"update, {t} thread{'s' * (t > 1)}" for t in threads))
    lines = [f"{s[names[0]]['programs']} programs, batches of {batch}:", "", head + " |",
             "|---|" + "---:|" * (13 + len(threads))]
    for n in names:
        r = s[n]
        cells = [f"{x:.3f}" for x in r["regret"]] + [
            f"{r['near']:.0%}", "{:.3f} / {:.3f}".format(*r["spearman"]),
            "{:+.3f} [{:+.3f}, {:+.3f}]".format(*r["spearman_vs_current"]), f"{r['fit']:.3f}"]
        cells += [c for g, lo, hi, w, lose in r["vs_current"] for c in (f"{g:.3f} [{lo:.3f}, {hi:.3f}]", f"{w}/{lose}")]
        cells += ["{:.2f} / {:.2f} s".format(*r["times"][t]) if t in r["times"] else "" for t in threads]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines + [""]


def report(rows: list[dict], seed: int) -> str:
    """The markdown summary of ``rows``."""
    commit = head_commit()
    runs: dict[tuple[int, int], tuple[set[int], set[str]]] = {}
    for r in rows:
        programs, names = runs.setdefault((r["batch"], r["threads"]), (set(), set()))
        programs.add(r["program"])
        names.add(r["strategy"])
    commands = "; ".join(
        f"`python bench/update_strategies.py --programs {len(p)} --seed {seed} --batch {b} --threads {t}"
        + ("" if n == set(STRATEGIES) else " --strategies " + " ".join(x for x in STRATEGIES if x in n)) + "`"
        for (b, t), (p, n) in sorted(runs.items(), key=lambda x: (-x[0][0], x[0][1])))
    lines = [
        "# Per-search model updates, replayed on measured data",
        "",
        f"{commands} ({datetime.date.today().isoformat()}, commit {commit} with this experiment's uncommitted "
        f"changes; {cpu_model()}, {os.cpu_count()} cores shared with other jobs, load {os.getloadavg()[0]:.1f} "
        f"when this report was written; torch {torch.__version__}). Quality: the rows with 1 thread; times: "
        "each thread count's rows (the 2-thread run replays the first programs of the same seeded draw, "
        "for the times only).",
        "",
        "Programs of `loopcost/data/machines/amd-epyc` (AMD EPYC, ~21 verified schedules each, label noise "
        "~7% MAPE), none of them seen by the shipped model (`loopcost/data/model.pt`, 2 transformers trained "
        "on an Intel CPU). Each strategy replays an adaptive search measuring b schedules a round: the offline "
        "model's top b are measured, the strategy updates on them and round 2 measures its best b of the "
        "rest; it updates again on the 2b and ranks the rest.",
        "",
        "- `regret@k`: geometric mean over programs of (best true speedup among the first k measured) / "
        "(the program's best); k = b is the offline top b (the same for all), b + 1 and 3b/2 the first 1 and "
        "b/2 of round 2, 2b all of round 2, 2b + 1 the first of round 3;",
        "- `near@2b`: share of programs whose first 2b hold one within 7% (the noise) of the best;",
        "- `spearman`: mean per-program Spearman correlation on the schedules not measured yet, after the "
        "update on b and on 2b; `spearman (b) - current's`: the mean per-program difference with `current`'s "
        "after the update on b, 95% bootstrap CI over programs;",
        "- `fit`: log-MSE on the 2b measured after the update on them (`none`: the offline model's);",
        "- `vs current @k`: geometric mean over programs of regret@k / current's, 95% bootstrap CI over "
        "programs, and W/L: programs where it is more than 7% better / worse;",
        "- update: the time of each call (2 per program), median / p90 seconds, per torch thread count.",
        "",
        "Raw rows: `UPDATE.jsonl`.",
        "",
    ]
    for b in sorted({r["batch"] for r in rows}, reverse=True):
        lines += table(rows, b)
    lines += ["Strategies:", ""]
    lines += [f"- `{n}`: {' '.join((STRATEGIES[n].__doc__ or '').split())}" for n in STRATEGIES
              if any(r["strategy"] == n for r in rows)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=431, help="programs drawn (seeded) from the 431")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (times are reported per thread count)")
    ap.add_argument("--batch", type=int, default=8, help="schedules measured a round")
    ap.add_argument("--strategies", nargs="*", default=list(STRATEGIES), choices=list(STRATEGIES))
    ap.add_argument("--out", type=Path, default=BENCH / "UPDATE.jsonl")
    ap.add_argument("--report", type=Path, default=BENCH / "UPDATE.md")
    a = ap.parse_args()
    if a.programs:
        run(a.out, a.programs, a.seed, a.strategies, a.threads, a.batch)
    old = a.report.read_text() if a.report.exists() else ""
    kept = old[old.index(FINDINGS):] if FINDINGS in old else ""  # written by hand from the numbers above it
    a.report.write_text(report(read_rows(a.out), a.seed) + ("\n" + kept if kept else ""))


if __name__ == "__main__":
    main()
