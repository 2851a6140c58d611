"""The dataset that ships with loopcost: an xz-compressed SQLite file and its manifest."""

from __future__ import annotations

import hashlib
import lzma
import shutil
from pathlib import Path

from ..database.fingerprint import cpu_model
from ..errors import LoopcostError
from ..paths import DATA, cache_root, shipped_for


def shipped_db(packed: Path | None = None) -> Path:
    """A shipped database (``packed``, by default the one shipped for this machine's CPU: ``shipped_for``),
    decompressed once into the cache."""
    packed = packed or shipped_for(cpu_model()).dataset
    if not packed.exists():
        raise LoopcostError(f"no shipped dataset at {packed}; give --db")
    out = cache_root() / "shipped" / f"dataset-{_digest(packed)}.sqlite"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        with lzma.open(packed) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.replace(out)
    return out


def pack(db: str | Path, out_dir: str | Path = DATA, command: str = "", fields: dict | None = None) -> dict:
    """Snapshot ``db`` consistently, compress it to ``out_dir/dataset.sqlite.xz`` and write the manifest
    (with ``fields`` added: notes such as the build rate)."""
    import datetime
    import json
    import tempfile

    from ..database.store import Store
    from .stats import dataset_stats

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snap.sqlite"
        with Store(db) as store:
            store.snapshot(snap)
        stats = dataset_stats(str(snap))
        with Store(snap) as store:
            builds = store.builds()
        with open(snap, "rb") as f, lzma.open(out_dir / "dataset.sqlite.xz", "wb", preset=9) as g:
            shutil.copyfileobj(f, g)
    manifest = {
        "date": datetime.date.today().isoformat(),
        "machine": stats["machine"],
        "programs": stats["programs"], "schedules": stats["schedules"], "failures": stats["failures"],
        "censored": stats["censored"], "splits": stats["splits"],
        "noise": {"pairs": stats["noise_pairs"], "median_rel": stats["noise_median_rel"],
                  "p90_rel": stats["noise_p90_rel"], "floor_mape_vs_label": stats["noise_floor_mape"],
                  "by_build": stats["noise_by_build"]},
        "rechecked": {"labels": stats["rechecked"], "over_2x_faster": stats["recheck_over_2x_faster"],
                      "rule": "labels below 0.1x measured again later; the faster measurement is the label"},
        "speedup": stats["speedup"], "transformation_share": stats["transformation_share"],
        "builds": builds, "seconds_per_schedule": stats["seconds_per_schedule"],
        "command": command,
        "file": "dataset.sqlite.xz", "bytes": (out_dir / "dataset.sqlite.xz").stat().st_size,
        **(fields or {}),
    }
    (out_dir / "dataset.manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


def export_bar(show: bool):
    """A progress callback ``(done, total)`` for ``costmodel.data.export``, on standard error."""
    from .progress import Progress

    bar = Progress(1, "records", show)

    def tick(done: int, total: int) -> None:
        bar.total = total
        bar.advance(done - bar.done)

    return tick


def _digest(db: Path) -> str:
    """A digest of the database ``db`` with its write-ahead log: what an export of it depends on."""
    h = hashlib.sha256()
    for p in (db, Path(f"{db}-wal")):
        if p.exists():
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def cached_export(db: Path) -> Path:
    """The training-format export of ``db`` (e.g. the shipped database), made once into the cache (it takes
    minutes); a new feature layout, or a database that changed (a build grown since), exports again."""
    import sys

    from ..costmodel.data import export
    from ..features import layout

    out = cache_root() / "shipped" / f"{db.stem}-{_digest(db)}.layout{layout.VERSION}.npz"
    if not out.exists():
        print(f"exporting {db.name} to the training format (once) ...", file=sys.stderr)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp.npz")
        export(str(db), str(tmp), export_bar(sys.stderr.isatty()))
        tmp.replace(out)
    return out
