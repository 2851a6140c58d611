"""The dataset that ships with loopcost: an xz-compressed SQLite file and its manifest."""

from __future__ import annotations

import hashlib
import lzma
import shutil
from pathlib import Path

from ..codegen.compiler import cache_root
from ..errors import LoopcostError

DATA = Path(__file__).resolve().parent.parent / "data"
SHIPPED = DATA / "dataset.sqlite.xz"
MANIFEST = DATA / "dataset.manifest.json"


def shipped_db() -> Path:
    """The shipped database, decompressed once into the cache."""
    if not SHIPPED.exists():
        raise LoopcostError(f"no shipped dataset at {SHIPPED}; give --db")
    digest = hashlib.sha256(SHIPPED.read_bytes()).hexdigest()[:16]
    out = cache_root() / "shipped" / f"dataset-{digest}.sqlite"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        with lzma.open(SHIPPED) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.replace(out)
    return out
