"""Where loopcost keeps files: the shipped data, the user's cache, a model's card.

A leaf module: it imports nothing of loopcost, so every layer may use it.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the data that ships inside the package: datasets, manifests, the trained model and its card
DATA = Path(__file__).resolve().parent / "data"
SHIPPED_DATASET = DATA / "dataset.sqlite.xz"
SHIPPED_MANIFEST = DATA / "dataset.manifest.json"
SHIPPED_MODEL = DATA / "model.pt"


def cache_root() -> Path:
    """``$LOOPCOST_CACHE_DIR``, else ``~/.cache/loopcost``: builds, the shipped data unpacked, locks."""
    return Path(os.environ.get("LOOPCOST_CACHE_DIR", Path.home() / ".cache" / "loopcost"))


def measurement_store() -> Path:
    """The machine's store of everything its searches measured (``loopcost optimize --store``)."""
    return cache_root() / "measurements.sqlite"


def machine_model(fingerprint: str) -> Path:
    """Where ``loopcost train --store`` keeps the model fine-tuned on one machine's measurements, and where
    ``optimize`` looks for it first."""
    return cache_root() / "models" / fingerprint / "model.pt"


def store_path(option: str | None) -> Path | None:
    """What ``--store`` names: a database (default: ``measurement_store()``), or None for ``none``."""
    return None if option == "none" else Path(option) if option else measurement_store()


def card_path(model_path: str | Path) -> Path:
    """The card (``MODEL.card.json``) that says what data, machine and settings produced a model."""
    return Path(str(model_path) + ".card.json")
