"""What every benchmark's report needs: the commit it ran at, and its rows kept whole on disk."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def head_commit() -> str:
    """The short hash of the checkout's HEAD ("unknown" outside a git checkout)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip() or "unknown"


def write_rows(path: Path, rows: list[dict]) -> None:
    """``rows`` as JSON lines at ``path``, through a rename: a stop mid-write leaves the previous rows whole."""
    part = path.with_suffix(".part")
    part.write_text("".join(json.dumps(r) + "\n" for r in rows))
    part.replace(path)


def default_model() -> Path:
    """The cost model a bench searches with by default: the one shipped for this machine's CPU (as
    ``loopcost optimize`` picks it before any fine-tuning on the machine's own measurements)."""
    from loopcost.database.fingerprint import cpu_model
    from loopcost.paths import shipped_for

    return shipped_for(cpu_model()).model
