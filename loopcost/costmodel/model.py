"""``CostModel``: predict speedups of scheduled programs; save and load with a model card."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from ..errors import LoopcostError
from ..features import layout
from ..features.extract import FeatureTree, featurize
from ..ir.state import ProgramState
from .batch import collate
from .network import RecursiveLSTM


class CostModel:
    """A trained network and what it needs to be used: ``predict(batch) -> speedups``."""

    def __init__(self, net: RecursiveLSTM, card: dict | None = None) -> None:
        self.net = net.eval()
        self.card = card or {}

    @torch.no_grad()
    def predict_trees(self, trees: list[FeatureTree], batch_size: int = 512) -> np.ndarray:
        out = []
        for k in range(0, len(trees), batch_size):
            out.append(torch.exp(self.net(collate(trees[k:k + batch_size]))).numpy())
        return np.concatenate(out) if out else np.zeros(0)

    def predict(self, states: list[ProgramState], batch_size: int = 512) -> np.ndarray:
        """Predicted speedups over the unscheduled program, one per state."""
        return self.predict_trees([featurize(s) for s in states], batch_size)

    def save(self, path: str | Path, card: dict | None = None) -> None:
        """Write ``path`` (weights and config) and ``path.card.json`` (what produced them)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if card is not None:
            self.card = card
        torch.save({"config": self.net.config, "state_dict": self.net.state_dict(),
                    "feature_version": layout.VERSION}, path)
        Path(str(path) + ".card.json").write_text(json.dumps(self.card, indent=2))

    @staticmethod
    def load(path: str | Path) -> CostModel:
        path = Path(path)
        if not path.exists():
            raise LoopcostError(f"no model at {path}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if blob.get("feature_version") != layout.VERSION:
            raise LoopcostError(f"{path} was trained on feature layout {blob.get('feature_version')}; this "
                                f"loopcost computes layout {layout.VERSION}: train it again")
        net = RecursiveLSTM(**blob["config"])
        net.load_state_dict(blob["state_dict"])
        card_path = Path(str(path) + ".card.json")
        card = json.loads(card_path.read_text()) if card_path.exists() else {}
        return CostModel(net, card)
