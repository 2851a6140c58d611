"""A model's accuracy on a split, next to baselines, the noise floor and a simulated re-measurement."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..database.fingerprint import cpu_model
from ..database.store import Store
from ..errors import LoopcostError
from ..paths import card_path, shipped_for
from .baselines import GradientBoosted
from .data import Dataset, load
from .metrics import error_by_speedup, error_by_transformation, metrics, noise_ceiling, noise_floor_mape
from .model import CostModel
from .plots import save_plots


def _noise_pairs(db: str | Path) -> list[tuple[float, float]]:
    """(label, re-measurement) speedups of ``db``, against the labels models are trained on."""
    with Store(db) as store:
        return store.noise_pairs(effective=True)


def evaluate(model_path: str | Path | None, data_path: str | Path, db: str | Path | None = None, *,
             split: str = "test", gbt: bool = False, plots: str | Path | None = None, write_card: bool = False,
             manifest: str | Path | None = None, unseen_by: str | Path | None = None) -> dict:
    """Score the model at ``model_path`` (default: the one shipped for this CPU) on ``split`` of the export
    ``data_path``.

    Returns ``metrics``' keys with the split, model and data, ``baselines`` (a constant speedup of 1 and, with
    ``gbt``, gradient-boosted trees trained on the train split), and, given the measurement database ``db``,
    ``noise_floor_mape`` and ``remeasurement`` (how a second measurement would score; else None). ``plots``:
    a folder to write scatter.png and errors.png into (their paths under ``plots``). ``write_card``: record the
    evaluation in the model's card (under ``card_key(split)``), with the dataset ``manifest`` (a file), if
    given and there. ``split`` ``all`` scores every record: a set never seen in training or selection.
    ``unseen_by``: a database trained on; the programs it also holds (a generator may draw a program again under
    another seed) are left out, counted under ``left_out_seen``. It needs ``db``, the database of ``data_path``.
    """
    if gbt and split == "all":
        raise LoopcostError("--gbt trains the baseline on the train split: it cannot be scored on every record "
                            "(--split all); pick a split, or leave --gbt out")
    data_path = Path(data_path)
    everything = load(data_path)
    whole = everything.subset(split)
    left_out = None
    if unseen_by is not None:
        if db is None:
            raise LoopcostError("leaving out the programs a model was trained on needs the database of the data "
                                "(--db), which names its programs")
        whole, left_out = _unseen(whole, db, unseen_by)
    data = whole.timed()
    if len(data) == 0:
        raise LoopcostError(f"{data_path} has no timed record in split {split!r}"
                            + (f" of a program that {unseen_by} does not hold" if unseen_by is not None else ""))
    model_path = Path(model_path) if model_path else shipped_for(cpu_model()).model
    model = CostModel.load(model_path)
    predictions = {"model": model.predict_trees(data.trees)}
    baselines = {"speedup_1": metrics(np.ones(len(data)), data.speedup, data.program)}
    if gbt:
        train = everything.subset("train").timed()
        predictions["gradient_boosted"] = GradientBoosted().fit(train.trees, train.speedup).predict(data.trees)
        baselines["gradient_boosted"] = metrics(predictions["gradient_boosted"], data.speedup, data.program)
    noise = ceiling = pairs = None
    if db is not None:
        pairs = _noise_pairs(db)
        noise = noise_floor_mape(pairs)
        ceiling = noise_ceiling(pairs, data.speedup, data.program)
    out = {**metrics(predictions["model"], data.speedup, data.program), "split": split, "model": str(model_path),
           "data": str(data_path), "baselines": baselines, "noise_floor_mape": noise, "remeasurement": ceiling,
           "censored": _censored(model, whole),
           "by_speedup": error_by_speedup(predictions["model"], data.speedup, pairs),
           "by_transformation": error_by_transformation(predictions["model"], data.speedup, data.schedules),
           "left_out_seen": left_out}
    if plots:
        out["plots"] = [str(p) for p in save_plots(plots, data.speedup, predictions, f"({split} split)")]
    if write_card:
        card = dict(model.card)
        key = card_key(split)
        card[key] = {k: v for k, v in out.items() if k != "plots"}
        if manifest and Path(manifest).exists():
            card[key]["dataset_manifest"] = json.loads(Path(manifest).read_text())
        card_path(model_path).write_text(json.dumps(card, indent=2))
    return out


def card_key(split: str) -> str:
    """Where a card keeps an evaluation on ``split``: every record of a held-out set (``all``) under
    ``out_of_sample``, a split under ``evaluation``."""
    return "out_of_sample" if split == "all" else "evaluation"


def _unseen(data: Dataset, db: str | Path, trained: str | Path) -> tuple[Dataset, dict]:
    """The records of ``data`` (exported from the dataset build ``db``) whose program the database ``trained``
    does not hold (by hash), and what was left out."""
    with Store(db) as store:
        hashes = store.program_hashes()
    with Store(trained) as store:
        seen = set(store.program_hashes().values())
    keep = np.array([hashes[int(data.programs[p])] not in seen for p in data.program], bool)
    left = {"database": str(trained), "programs": len(set(data.program[~keep].tolist())),
            "records": int((~keep).sum())}
    return data.select(np.nonzero(keep)[0]), left


def _censored(model: CostModel, data: Dataset) -> dict:
    """How many records of ``data`` are censored (their speedup an upper bound, left out of the metrics)
    and the share of them the model predicts at or below their bound."""
    cens = data.select(np.nonzero(data.censored)[0])
    if not len(cens):
        return {"n": 0, "predicted_within_bound": None}
    return {"n": len(cens), "predicted_within_bound": float(np.mean(model.predict_trees(cens.trees) <= cens.speedup))}


def format_evaluation(r: dict, wrote_card: bool = False) -> str:
    """``evaluate``'s result as text: a line per model and baseline, the noise floor, the files written."""
    lines = [f"{r['split']}: {r['n']} schedules of {r['programs']} programs"]
    if u := r.get("left_out_seen"):
        lines[0] += (f" (left out: {u['records']} schedules of {u['programs']} programs that {u['database']} also "
                     "holds)")
    for name, m in (("model", r), *r["baselines"].items()):
        lines.append(f"  {name:16} MAPE {m['mape']:.1f}%  median APE {m['median_ape']:.1f}%  Spearman/program "
                     f"{m['spearman_per_program_mean']:.3f}  pairwise {m['pairwise_accuracy']:.3f}  "
                     f"top-1 recovery {m['top1_recovery']:.3f}")
    if r["noise_floor_mape"] is not None:
        lines.append(f"  noise floor (re-measured labels) MAPE {r['noise_floor_mape']:.1f}%")
    if (c := r["remeasurement"]) is not None:
        lines.append(f"  a second measurement (simulated from the noise pairs): MAPE {c['mape']:.1f}%  "
                     f"Spearman/program {c['spearman_per_program_mean']:.3f}  pairwise "
                     f"{c['pairwise_accuracy']:.3f}  top-1 recovery {c['top1_recovery']:.3f}")
    if (c := r.get("censored")) and c["n"]:
        lines.append(f"  {c['n']} censored labels (timing stopped early, far slower than unscheduled; left out above): "
                     f"{c['predicted_within_bound']:.1%} predicted at or below their bound")
    if (b := r.get("by_speedup")) and b["ranges"]:
        lines.append("  the model's error by measured speedup (share: of the summed percentage errors; above: "
                     "share predicted faster than measured; re-measured: the noise pairs' MAPE there):")
        for g in b["ranges"]:
            again = "" if g.get("remeasured_mape") is None else f"  re-measured {g['remeasured_mape']:5.1f}%"
            lines.append(f"    [{g['low']:g}, {g['high']:g})x  {g['n']:6d} schedules  MAPE {g['mape']:6.1f}%  "
                         f"median APE {g['median_ape']:5.1f}%  share {g['error_share']:6.1%}  "
                         f"above {g['over_predicted']:.0%}{again}")
        lines.append(f"    the single worst schedule holds {b['worst_record_share']:.1%} of the summed error")
    if t := r.get("by_transformation"):
        lines.append("  by transformation (the schedules holding each kind; bias: geometric mean of predicted over "
                     "measured speedup):")
        for g in t:
            lines.append(f"    {g['kind']:12} {g['n']:6d} schedules  bias {g['bias']:5.2f}x  MAPE {g['mape']:6.1f}%  "
                         f"median APE {g['median_ape']:5.1f}%  above {g['over_predicted']:.0%}")
    lines += [f"  wrote {p}" for p in r.get("plots", [])]
    if wrote_card:
        lines.append(f"  wrote the evaluation into {card_path(r['model'])}")
    return "\n".join(lines)
