"""Baselines on the same split: a constant speedup of 1, and gradient-boosted trees on flat features
(what TVM's Ansor does: per-computation features, summed)."""

from __future__ import annotations

import numpy as np

from ..errors import LoopcostError
from ..features.extract import FeatureTree


def flatten(tree: FeatureTree) -> np.ndarray:
    """Sum and max of the computation vectors, plus the tree's size."""
    c = tree.comps
    return np.concatenate([c.sum(0), c.max(0), [len(c), len(tree.loops)]]).astype(np.float32)


class GradientBoosted:
    """LightGBM regression of log-speedup on ``flatten``ed trees."""

    def __init__(self, seed: int = 0, rounds: int = 400) -> None:
        try:
            import lightgbm
        except ImportError:
            raise LoopcostError("the gradient-boosted baseline needs LightGBM: pip install lightgbm") from None
        self.lgb, self.rounds, self.model = lightgbm, rounds, None
        self.params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 63, "bagging_fraction": 0.8,
                       "bagging_freq": 1, "feature_fraction": 0.5, "seed": seed, "verbose": -1, "num_threads": 2}

    def fit(self, trees: list[FeatureTree], speedup: np.ndarray) -> GradientBoosted:
        params = {**self.params, "min_data_in_leaf": max(1, min(20, len(trees) // 8))}  # small sets still split
        data = self.lgb.Dataset(np.stack([flatten(t) for t in trees]), np.log(speedup), params=params)
        self.model = self.lgb.train(params, data, num_boost_round=self.rounds)
        return self

    def predict(self, trees: list[FeatureTree]) -> np.ndarray:
        return np.exp(self.model.predict(np.stack([flatten(t) for t in trees])))
