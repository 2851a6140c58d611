"""The cost model that ships with loopcost, and whether it was trained on this machine's CPU.

A model learns one machine's speedups: its card lists the machines whose
measurements trained it (for an ensemble, each member's card does).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..database.fingerprint import cpu_model
from ..errors import LoopcostError
from ..paths import card_path, shipped_for
from .model import CostModel


def card_cpus(model_path: Path) -> set[str]:
    """The CPUs whose measurements trained the model at ``model_path`` (empty if its card does not say)."""
    card_file = card_path(model_path)
    if not card_file.exists():
        return set()
    card = json.loads(card_file.read_text())
    cards = [card, *card.get("members", [])]
    return {m["cpu"] for c in cards for m in c.get("machine", []) if "cpu" in m}


def machine_warning(model_path: Path, cpu: str | None = None) -> str | None:
    """A warning when the model was trained on other CPUs than this one (``cpu``, by default this
    machine's): its predictions may not carry over."""
    cpu = cpu or cpu_model()
    cpus = card_cpus(model_path)
    if not cpus or cpu in cpus:
        return None
    return (f"note: {model_path} was trained on measurements of {', '.join(sorted(cpus))}, not of this "
            f"{cpu}; its ranking carries over in part (every result below is measured here). A model of "
            "your own: `loopcost dataset build`, then `loopcost train` (see the README)")


def search_model(path: str | Path | None, machine: Path | None = None) -> tuple[CostModel, Path, str | None]:
    """The model at ``path``, its path, and ``machine_warning``'s note. By default: the model fine-tuned on
    this machine's measurements (``loopcost train --store``, at ``machine``) when its card names this CPU,
    else the one shipped for this CPU (``paths.shipped_for``)."""
    if not path and machine is not None and machine.exists() and cpu_model() in card_cpus(machine):
        return CostModel.load(machine), machine, f"note: using {machine}, fine-tuned on this machine's measurements"
    path = Path(path) if path else shipped_for(cpu_model()).model
    if not path.exists():
        raise LoopcostError(f"no cost model at {path}: train one (`loopcost train`) and pass --model, "
                            "or use --search exec")
    return CostModel.load(path), path, machine_warning(path)
