"""``CostModel``: predict speedups of scheduled programs; save and load with a model card."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from ..errors import LoopcostError, first_line
from ..features import layout
from ..features.extract import FeatureTree, featurize
from ..ir.state import ProgramState
from ..paths import card_path
from .batch import collate
from .network import RecursiveLSTM, Standardized
from .transformer import TreeTransformer

#: the network architectures, by the name their config records
ARCHS = {"lstm": RecursiveLSTM, "transformer": TreeTransformer}


def make_net(arch: str = "lstm", **config) -> Standardized:
    """A network of architecture ``arch`` built from its saved ``config`` (or defaults)."""
    if arch not in ARCHS:
        raise LoopcostError(f"unknown network architecture {arch!r}; use one of {sorted(ARCHS)}")
    config.setdefault("comp_size", layout.COMP_SIZE)
    config.setdefault("loop_size", layout.LOOP_SIZE)
    return ARCHS[arch](**config)


class CostModel:
    """Trained networks and what they need to be used: ``predict(states) -> speedups``.

    With several networks (an ensemble trained from different seeds) the prediction is the geometric
    mean of theirs, and ``predict_log_std`` says how much they disagree: an uncertainty estimate.
    """

    def __init__(self, nets: Standardized | list[Standardized], card: dict | None = None) -> None:
        self.nets = [n.eval() for n in (nets if isinstance(nets, list) else [nets])]
        self.card = card or {}

    def _batch(self, trees: list[FeatureTree]):
        """``trees`` collated onto the device of the networks (the first one's: they are used together)."""
        return collate(trees).to(next(self.nets[0].parameters()).device)

    @torch.no_grad()
    def _log_predictions(self, trees: list[FeatureTree], batch_size: int) -> np.ndarray:
        """(members, N) predicted log-speedups."""
        out = []
        for k in range(0, len(trees), batch_size):
            b = self._batch(trees[k:k + batch_size])
            out.append(torch.stack([net(b) for net in self.nets]).cpu().numpy())
        return np.concatenate(out, axis=1) if out else np.zeros((len(self.nets), 0))

    @torch.no_grad()
    def head_inputs(self, trees: list[FeatureTree], batch_size: int = 512) -> tuple[np.ndarray, np.ndarray]:
        """(members, N) predicted log-speedups and (members, N, E) what each member's regression head reads:
        the network's embedding of each scheduled program."""
        logs, embs, seen = [], [], []
        hooks = [net.head.register_forward_pre_hook(lambda _m, args: seen.append(args[0])) for net in self.nets]
        try:
            for k in range(0, len(trees), batch_size):
                b = self._batch(trees[k:k + batch_size])
                seen.clear()
                logs.append(torch.stack([net(b) for net in self.nets]).cpu().numpy())
                embs.append(torch.stack(seen).cpu().numpy())
        finally:
            for h in hooks:
                h.remove()
        if not logs:
            return np.zeros((len(self.nets), 0)), np.zeros((len(self.nets), 0, 0))
        return np.concatenate(logs, axis=1), np.concatenate(embs, axis=1)

    def predict_trees(self, trees: list[FeatureTree], batch_size: int = 512) -> np.ndarray:
        return np.exp(self._log_predictions(trees, batch_size).mean(0))

    def predict_log_std(self, trees: list[FeatureTree], batch_size: int = 512) -> np.ndarray:
        """Spread of the members' log-speedup predictions (zero for a single network)."""
        return self._log_predictions(trees, batch_size).std(0)

    def predict(self, states: list[ProgramState], batch_size: int = 512) -> np.ndarray:
        """Predicted speedups over the unscheduled program, one per state."""
        return self.predict_trees([featurize(s) for s in states], batch_size)

    def save(self, path: str | Path, card: dict | None = None) -> None:
        """Write ``path`` (weights and config) and ``path.card.json`` (what produced them)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if card is not None:
            self.card = card
        torch.save({"members": [{"config": n.config, "state_dict": n.state_dict()} for n in self.nets],
                    "feature_version": layout.VERSION}, path)
        card_path(path).write_text(json.dumps(self.card, indent=2))

    @staticmethod
    def combine(models: list[CostModel]) -> CostModel:
        """One ensemble of every network of ``models`` (trained apart, perhaps differently); its card
        keeps each model's card, less its training history and evaluation."""
        if not models:
            raise LoopcostError("an ensemble needs at least one model")
        nets = [n for m in models for n in m.nets]
        members = [{k: v for k, v in m.card.items() if k not in ("history", "evaluation")} for m in models]
        return CostModel(nets, {"model": f"ensemble of {len(nets)} networks (geometric mean): "
                                         + "; ".join(str(m.get("model", "?")) for m in members),
                                "members": members})

    @staticmethod
    def load(path: str | Path) -> CostModel:
        path = Path(path)
        if not path.exists():
            raise LoopcostError(f"no model at {path}")
        if not path.is_file():
            raise LoopcostError(f"{path} is not a file: give a model file written by `loopcost train`")
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - whatever torch trips on, the file is not a model it can read
            raise LoopcostError(f"{path} is not a loopcost model (or it is damaged): "
                                f"{first_line(e)}") from None
        if not isinstance(blob, dict) or blob.get("feature_version") not in layout.READS:
            found = blob.get("feature_version") if isinstance(blob, dict) else None
            raise LoopcostError(f"{path} was trained on feature layout {found}; this loopcost computes layout "
                                f"{layout.VERSION}: train it again" if found is not None else
                                f"{path} is not a loopcost model (no feature layout in it)")
        nets = []
        try:
            for member in blob.get("members", [blob]):  # a single-network file keeps config/state_dict at the top
                net = make_net(**member["config"])
                net.load_state_dict(member["state_dict"])
                nets.append(net)
        except (KeyError, TypeError, RuntimeError) as e:
            raise LoopcostError(f"{path} is not a loopcost model of this version: "
                                f"{first_line(e)}") from None
        card_file = card_path(path)
        try:
            card = json.loads(card_file.read_text()) if card_file.exists() else {}
        except (OSError, ValueError) as e:
            raise LoopcostError(f"{card_file} (the card of {path}) is not readable JSON: {e}") from None
        return CostModel(nets, card)
