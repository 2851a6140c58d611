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


def pack(db: str | Path, out_dir: str | Path = DATA, command: str = "", fields: dict | None = None) -> dict:
    """Snapshot ``db`` consistently, compress it to ``out_dir/dataset.sqlite.xz`` and write the manifest
    (with ``fields`` added: notes such as the build rate)."""
    import datetime
    import json
    import sqlite3
    import tempfile

    from ..database.store import Store
    from .stats import dataset_stats

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snap.sqlite"
        src, dst = sqlite3.connect(str(db)), sqlite3.connect(str(snap))
        with dst:
            src.backup(dst)
        src.close()
        dst.execute("PRAGMA journal_mode=DELETE")
        dst.execute("VACUUM")
        dst.close()
        stats = dataset_stats(str(snap))
        store = Store(snap)
        builds = {k: store.meta(k) for k, in store.db.execute("SELECT key FROM meta WHERE key LIKE 'build:%'")}
        store.close()
        with open(snap, "rb") as f, lzma.open(out_dir / "dataset.sqlite.xz", "wb", preset=9) as g:
            shutil.copyfileobj(f, g)
    manifest = {
        "date": datetime.date.today().isoformat(),
        "machine": stats["machine"],
        "programs": stats["programs"], "schedules": stats["schedules"], "failures": stats["failures"],
        "splits": stats["splits"],
        "noise": {"pairs": stats["noise_pairs"], "median_rel": stats["noise_median_rel"],
                  "p90_rel": stats["noise_p90_rel"], "floor_mape_vs_label": stats["noise_floor_mape"]},
        "rechecked": {"labels": stats["rechecked"], "over_2x_faster": stats["recheck_over_2x_faster"],
                      "rule": "labels below 0.1x measured again later; the faster measurement is the label"},
        "speedup": stats["speedup"], "transformation_share": stats["transformation_share"],
        "builds": {k: json.loads(v) for k, v in builds.items()},
        "command": command,
        "file": "dataset.sqlite.xz", "bytes": (out_dir / "dataset.sqlite.xz").stat().st_size,
        **(fields or {}),
    }
    (out_dir / "dataset.manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest
