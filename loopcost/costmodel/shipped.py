"""The cost models that ship with loopcost, and which one suits this machine.

A model learns one machine's speedups: its card lists the machines whose
measurements trained it. ``loopcost/data/model.pt`` is the default; a model
adapted to another CPU lives in ``loopcost/data/machines/<name>/model.pt`` and
is chosen on a machine with that CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..database.fingerprint import cpu_model
from ..dataset.shipped import DATA

DEFAULT = DATA / "model.pt"
MACHINES = DATA / "machines"


def card_cpus(model_path: Path) -> set[str]:
    """The CPUs whose measurements trained the model at ``model_path`` (empty if its card does not say)."""
    card_path = Path(str(model_path) + ".card.json")
    if not card_path.exists():
        return set()
    card = json.loads(card_path.read_text())
    cards = [card, *card.get("members", [])]
    return {m["cpu"] for c in cards for m in c.get("machine", []) if "cpu" in m}


def default_model(cpu: str | None = None) -> Path:
    """The shipped model trained on this CPU (``cpu``, by default this machine's), else the default one."""
    cpu = cpu or cpu_model()
    for path in sorted(MACHINES.glob("*/model.pt")):
        if cpu in card_cpus(path):
            return path
    return DEFAULT


def machine_warning(model_path: Path, cpu: str | None = None) -> str | None:
    """A warning when the model was trained on other CPUs than this one (its predictions may not carry over)."""
    cpu = cpu or cpu_model()
    cpus = card_cpus(model_path)
    if not cpus or cpu in cpus:
        return None
    return (f"warning: {model_path} was trained on measurements of {', '.join(sorted(cpus))}, not of this "
            f"{cpu}; its predictions may not carry over (every result is still measured here). Adapt it with "
            "`loopcost dataset build` + `loopcost train --init`")
