"""Model cards: what data, machine and settings produced a model (``MODEL.card.json``)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from ..database.store import Store
from ..paths import card_path
from .model import CostModel

#: what a card calls each network architecture
ARCH_NAMES = {"lstm": "recursive LSTM (Baghdadi et al. 2021)",
              "transformer": "self-attention among computations, loop tree as attention bias"}


def machines(db: str | Path) -> list[dict]:
    """The machines whose measurements the database ``db`` holds."""
    with Store(db) as store:
        return store.machines()


def training_card(data_path: str | Path, runs: list[dict], validation: dict, db: str | Path | None = None) -> dict:
    """The card of a model trained on ``data_path`` by ``runs`` (``train``'s results, one per network),
    with its ``validation`` metrics and, given the database ``db``, the machines it was measured on."""
    config = runs[0]["config"]
    card = {"model": ARCH_NAMES[config["arch"]] + (f", ensemble of {len(runs)}" if len(runs) > 1 else ""),
            "trained": datetime.date.today().isoformat(), "data": str(data_path),
            "records": {"train": runs[0]["n_train"], "val": runs[0]["n_val"]}, "config": config,
            "validation": validation, "history": [r["history"] for r in runs] if len(runs) > 1 else runs[0]["history"]}
    if db:
        card["machine"] = machines(db)
    if config.get("init"):
        card["initialized_from"] = initial_weights(config["init"], config["init_member"])
    return card


def initial_weights(model_path: str | Path, member: int) -> dict:
    """What a fine-tuned network started from: network ``member`` of the model at ``model_path``, with the data
    and machines its card names (a model pretrained on another CPU's dataset says so in its own card)."""
    out: dict = {"model": str(model_path), "member": member}
    card = card_path(model_path)
    if card.exists():
        doc = json.loads(card.read_text())
        out.update({k: doc[k] for k in ("trained", "data", "records", "machine", "initialized_from") if k in doc})
    return out


def combine_files(model_paths: list[str], out: str | Path) -> CostModel:
    """Combine the saved models ``model_paths`` into one ensemble (``CostModel.combine``), saved at ``out``
    with a card that records what it was ``combined_from``."""
    model = CostModel.combine([CostModel.load(m) for m in model_paths])
    model.card["combined_from"] = list(model_paths)
    model.save(out)
    return model
