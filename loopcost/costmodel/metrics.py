"""Accuracy of predicted speedups against measured ones, and the accuracy that measurement noise allows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..transforms.schedule import step_kinds


def _rank(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), float)
    ranks[order] = np.arange(len(x))
    # average ranks of ties
    vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, ranks)
    return (sums / counts)[inv]


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return pearson(_rank(a), _rank(b))


def metrics(pred: np.ndarray, true: np.ndarray, program: np.ndarray) -> dict:
    """MAPE, median APE, correlations, per-program ranking quality and top-1 recovery."""
    pred, true = np.asarray(pred, float), np.asarray(true, float)
    ape = np.abs(pred - true) / true
    per_prog_sp, pairs_ok, pairs_all, recovery = [], 0, 0, []
    for p in np.unique(program):
        idx = program == p
        t, q = true[idx], pred[idx]
        if len(t) >= 3:
            s = spearman(q, t)
            if not np.isnan(s):
                per_prog_sp.append(s)
        if len(t) >= 2:
            dt = np.sign(t[:, None] - t[None, :])
            dq = np.sign(q[:, None] - q[None, :])
            mask = np.triu(dt != 0, 1)
            pairs_ok += int((dt == dq)[mask].sum())
            pairs_all += int(mask.sum())
            recovery.append(t[np.argmax(q)] / t.max())
    return {
        "n": int(len(true)),
        "programs": int(len(np.unique(program))),
        "mape": float(ape.mean() * 100),
        "median_ape": float(np.median(ape) * 100),
        "pearson": pearson(pred, true),
        "pearson_log": pearson(np.log(pred), np.log(true)),
        "spearman": spearman(pred, true),
        "spearman_per_program_mean": float(np.mean(per_prog_sp)) if per_prog_sp else float("nan"),
        "spearman_per_program_median": float(np.median(per_prog_sp)) if per_prog_sp else float("nan"),
        "pairwise_accuracy": pairs_ok / pairs_all if pairs_all else float("nan"),
        "top1_recovery": float(np.mean(recovery)) if recovery else float("nan"),
    }


#: the measured-speedup ranges an evaluation breaks its error down by
SPEEDUP_RANGES = (0.0, 0.1, 0.3, 0.7, 1.0, 1.5, 3.0, 10.0, float("inf"))


def error_by_speedup(pred: np.ndarray, true: np.ndarray, pairs: list[tuple[float, float]] | None = None) -> dict:
    """Where the MAPE comes from: for each range of measured speedups (``SPEEDUP_RANGES``) that holds
    records, their count, MAPE, median APE, share of the summed absolute percentage error and share
    predicted above the measurement; and the share of that sum held by the single worst record (a label
    of 0.003x predicted at 0.65x adds 250 points over one record: MAPE over speedups is ruled by far
    slowdowns). Given the noise ``pairs`` (label, re-measurement), each range also gets the MAPE of the
    re-measurements whose label falls in it (``remeasured_mape``, None without one): what a model can hope
    for there (far slowdowns are measured less steadily than the rest)."""
    pred, true = np.asarray(pred, float), np.asarray(true, float)
    ape = np.abs(pred - true) / true
    labels = np.array([a for a, _ in pairs or ()], float)
    noise = noise_rel(pairs or [])
    total = float(ape.sum()) or 1.0
    ranges = []
    for lo, hi in zip(SPEEDUP_RANGES[:-1], SPEEDUP_RANGES[1:], strict=True):
        idx = (true >= lo) & (true < hi)
        if idx.any():
            ranges.append({"low": lo, "high": hi, "n": int(idx.sum()), "mape": float(ape[idx].mean() * 100),
                           "median_ape": float(np.median(ape[idx]) * 100),
                           "error_share": float(ape[idx].sum() / total),
                           "over_predicted": float(np.mean(pred[idx] > true[idx])),
                           "remeasured_mape": _mean_pct(noise[(labels >= lo) & (labels < hi)])})
    return {"ranges": ranges, "worst_record_share": float(ape.max() / total) if len(ape) else 0.0}


def _mean_pct(rel: np.ndarray) -> float | None:
    return 100 * float(rel.mean()) if len(rel) else None


def error_by_transformation(pred: np.ndarray, true: np.ndarray, schedules: Sequence[str]) -> list[dict]:
    """Which transformations the model misjudges: for each kind of step (``transforms.schedule.step_kinds``)
    that some schedule of ``schedules`` holds, those schedules' count, MAPE, median APE and bias, the geometric
    mean of predicted over measured speedup (above 1: the model expects more of that kind than it gives, which
    is what puts its schedules at the top of a model-guided search), and the share predicted above the
    measurement; the unscheduled program (no step) as ``none``. Sorted by bias, highest first."""
    pred, true = np.asarray(pred, float), np.asarray(true, float)
    ape = np.abs(pred - true) / true
    log_ratio = np.log(np.maximum(pred, 1e-9) / true)
    holds: dict[str, list[int]] = {}
    for i, text in enumerate(schedules):
        for kind in set(step_kinds(text)) or {"none"}:
            holds.setdefault(kind, []).append(i)
    rows = [{"kind": kind, "n": len(idx), "mape": float(ape[idx].mean() * 100),
             "median_ape": float(np.median(ape[idx]) * 100), "bias": float(np.exp(log_ratio[idx].mean())),
             "over_predicted": float(np.mean(pred[idx] > true[idx]))} for kind, idx in holds.items()]
    return sorted(rows, key=lambda r: -r["bias"])


def noise_rel(pairs: list[tuple[float, float]]) -> np.ndarray:
    """Relative difference between a label's speedup and its re-measurement."""
    return np.array([abs(b - a) / a for a, b in pairs])


def noise_floor_mape(pairs: list[tuple[float, float]]) -> float | None:
    """The MAPE a perfect model would score: re-measurements against the labels models are trained on
    (``pairs`` from ``Store.noise_pairs(effective=True)``)."""
    return _mean_pct(noise_rel(pairs))


#: the metrics a simulated re-measurement is scored on
CEILING_KEYS = ("mape", "median_ape", "spearman_per_program_mean", "pairwise_accuracy", "top1_recovery")


def noise_ceiling(pairs: list[tuple[float, float]], speedup: np.ndarray, program: np.ndarray, draws: int = 10,
                  seed: int = 0) -> dict[str, float] | None:
    """How a second measurement of every schedule would score against ``speedup``, the labels: each label
    times a ratio drawn from the measured (label, re-measurement) ``pairs``, metrics averaged over
    ``draws``. The ranking metrics a model can hope for under this noise (assumed alike for every
    schedule, though parallel ones are noisier)."""
    if not pairs:
        return None
    log_ratio = np.log([b / a for a, b in pairs])
    rng = np.random.default_rng(seed)
    runs = [metrics(speedup * np.exp(rng.choice(log_ratio, len(speedup))), speedup, program) for _ in range(draws)]
    return {k: float(np.mean([r[k] for r in runs])) for k in CEILING_KEYS}
