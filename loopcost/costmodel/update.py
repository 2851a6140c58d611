"""A model corrected by what was measured of one kernel on this machine: the per-search update.

The offline model ranks a kernel it has never seen with the mistakes of another machine and of other
programs. ``update`` keeps the offline networks as they are and adds a kernel-local residual: a
Gaussian-kernel ridge regression, in the space of the networks' embeddings of the scheduled programs,
of log(measured) - log(predicted) over the measured schedules. Near a measured schedule the corrected
model predicts close to what was measured; far from every measurement it is the offline model again,
shifted by the mean residual (the scale of this machine). It is refitted from the offline model after
every batch, in milliseconds.

Chosen by ``bench/update_strategies.py`` (``bench/UPDATE.md``: nine updates replayed on 200 programs
measured on an AMD EPYC): every update was within about 1% of the others on the best speedup found
after 16 measurements, but fine-tuning every weight (25 AdamW steps) took 0.9-2.4 s a call (12-23 s on
a busy machine) and lowered the ranking of the schedules not measured yet (Spearman 0.551 -> 0.466),
where this residual takes 0.01 s and keeps it (0.553).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..features.extract import FeatureTree
from .model import CostModel


@dataclass(frozen=True)
class UpdateConfig:
    """``ridge``: how much the residual trusts each measurement (larger: smoother, nearer the offline
    model); the length scale is the median distance between the measured schedules' embeddings."""

    ridge: float = 0.25


def _unit(emb: np.ndarray) -> np.ndarray:
    """(N, members x E): each member's embedding scaled to unit norm, side by side."""
    return np.concatenate([e / np.linalg.norm(e, axis=1, keepdims=True).clip(1e-9) for e in emb], axis=1)


def _gram(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared distances between the rows of ``a`` and of ``b``."""
    return np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T, 0.0)


class CorrectedModel:
    """The offline ``model`` plus a kernel-local residual fitted to measured schedules (see ``update``);
    scores like a ``CostModel`` (``predict_trees``, ``predict_log_std``), and is never saved: it knows one
    kernel on one machine."""

    def __init__(self, model: CostModel, points: np.ndarray, alpha: np.ndarray, shift: float, scale: float,
                 measured: int) -> None:
        self.model, self.points, self.alpha, self.shift, self.scale = model, points, alpha, shift, scale
        self.card = {**model.card, "updated_on": measured}

    def predict_trees(self, trees: list[FeatureTree], batch_size: int = 512) -> np.ndarray:
        logs, emb = self.model.head_inputs(trees, batch_size)
        if not len(trees):
            return np.zeros(0)
        k = np.exp(-_gram(_unit(emb), self.points) / self.scale)
        return np.exp(logs.mean(0) + self.shift + k @ self.alpha)

    def predict_log_std(self, trees: list[FeatureTree], batch_size: int = 512) -> np.ndarray:
        """The offline members' disagreement: what the measurements have not settled."""
        return self.model.predict_log_std(trees, batch_size)


def update(model: CostModel, trees: Sequence[FeatureTree], speedups: Sequence[float],
           cfg: UpdateConfig = UpdateConfig()) -> CostModel | CorrectedModel:
    """``model`` corrected by the measured ``speedups`` of ``trees`` (schedules of one program); a speedup
    that is not positive (a schedule that failed) is left out. With fewer than two measurements there is
    nothing to learn and ``model`` comes back unchanged; ``model`` itself never changes."""
    keep = [i for i, s in enumerate(speedups) if s is not None and s > 0 and np.isfinite(s)]
    if len(keep) < 2:
        return model
    logs, emb = model.head_inputs([trees[i] for i in keep])
    x = _unit(emb)
    resid = np.log([float(speedups[i]) for i in keep]) - logs.mean(0)
    d2 = _gram(x, x)
    scale = float(np.median(d2[np.triu_indices(len(x), 1)])) or 1.0
    alpha = np.linalg.solve(np.exp(-d2 / scale) + cfg.ridge * np.eye(len(x)), resid - resid.mean())
    return CorrectedModel(model, x, alpha, float(resid.mean()), scale, len(keep))
