"""Where loopcost keeps files: the shipped data, the user's cache, a model's card.

A leaf module: it imports nothing of loopcost, so every layer may use it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

#: the data that ships inside the package: datasets, manifests, the trained model and its card
DATA = Path(__file__).resolve().parent / "data"
SHIPPED_DATASET = DATA / "dataset.sqlite.xz"
SHIPPED_MANIFEST = DATA / "dataset.manifest.json"
SHIPPED_MODEL = DATA / "model.pt"
#: a folder per CPU kind measured for the project (``machines/amd-epyc``): its dataset and manifest, and once
#: trained on it, its model and card
MACHINES = DATA / "machines"


@dataclass(frozen=True)
class Shipped:
    """A shipped model with the dataset that trained it (packed) and that dataset's manifest."""

    model: Path
    dataset: Path
    manifest: Path


#: the model and dataset shipped for CPUs without their own (trained on an Intel Xeon)
DEFAULT_SHIPPED = Shipped(SHIPPED_MODEL, SHIPPED_DATASET, SHIPPED_MANIFEST)


def machine_dir(cpu: str) -> Path | None:
    """The folder of ``MACHINES`` whose dataset manifest names the CPU ``cpu``, or None."""
    if not MACHINES.is_dir():
        return None
    for d in sorted(MACHINES.iterdir()):
        manifest = d / "dataset.manifest.json"
        if manifest.exists() and any(m.get("cpu") == cpu for m in json.loads(manifest.read_text()).get("machine", [])):
            return d
    return None


def shipped_for(cpu: str) -> Shipped:
    """The model and dataset that ship for the CPU ``cpu`` (``database.fingerprint.cpu_model()``): its own
    folder's where that holds a trained model, else ``DEFAULT_SHIPPED``."""
    d = machine_dir(cpu)
    if d is None or not (d / "model.pt").exists():
        return DEFAULT_SHIPPED
    return Shipped(d / "model.pt", d / "dataset.sqlite.xz", d / "dataset.manifest.json")


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
