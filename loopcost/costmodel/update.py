"""A model corrected by what was measured of one kernel on this machine: the per-search update.

The offline model ranks a kernel it has never seen with the mistakes of another machine and of other
programs. ``update`` takes a copy of every network a few full-batch gradient steps on the measured
schedules of the kernel (log-MSE for the scale, a pairwise ranking term for the order), always from the
offline weights, so that a search corrects its model round after round without drifting from what the
model learned elsewhere.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..features.extract import FeatureTree
from .batch import collate
from .model import CostModel
from .train import rank_loss


@dataclass(frozen=True)
class UpdateConfig:
    """Gradient steps on the measured schedules: ``steps`` of AdamW at ``lr``; ``rank_weight`` weighs the
    pairwise ranking term against the log-MSE one."""

    steps: int = 25
    lr: float = 3e-4
    rank_weight: float = 1.0


def update(model: CostModel, trees: Sequence[FeatureTree], speedups: Sequence[float],
           cfg: UpdateConfig = UpdateConfig()) -> CostModel:
    """A copy of ``model`` fitted to the measured ``speedups`` of ``trees`` (schedules of one program); a
    speedup that is not positive (a schedule that failed) is left out. With fewer than two measurements
    there is nothing to learn and ``model`` comes back unchanged."""
    keep = [i for i, s in enumerate(speedups) if s is not None and s > 0 and np.isfinite(s)]
    if len(keep) < 2:
        return model
    batch = collate([trees[i] for i in keep])
    target = torch.tensor([float(speedups[i]) for i in keep], dtype=torch.float32)
    log_target, program = torch.log(target), torch.zeros(len(keep), dtype=torch.long)
    nets = []
    for net in model.nets:
        n = copy.deepcopy(net).eval()  # no dropout: a handful of points, the same answer every time
        opt = torch.optim.AdamW(n.parameters(), lr=cfg.lr, weight_decay=0.0)
        for _ in range(cfg.steps):
            out = n(batch)
            loss = ((out - log_target) ** 2).mean() + cfg.rank_weight * rank_loss(out, target, program)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(n.parameters(), 5.0)
            opt.step()
        nets.append(n.eval())
    return CostModel(nets, {**model.card, "updated_on": len(keep)})
