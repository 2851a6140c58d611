"""The training format: featurized trees of a dataset, exported once, loaded fast.

``export(db, path)`` reads every verified label of a measurement store,
featurizes its schedule, and writes one ``.npz``: concatenated computation
and loop vectors with offsets, the tree shapes (JSON), speedups, program ids
and splits. Loading it needs only NumPy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..database.store import Store, schedule_hash
from ..errors import LoopcostError
from ..features import layout
from ..features.extract import FeatureLimitError, FeatureTree, featurize
from ..ir.program import Program
from ..transforms.schedule import Schedule

SPLITS = ("train", "val", "test")


@dataclass
class Dataset:
    trees: list[FeatureTree]
    speedup: np.ndarray          # (N,)
    program: np.ndarray          # (N,) program index
    split: np.ndarray            # (N,) index into SPLITS
    schedules: list[str]
    programs: list               # program ids of a dataset build, or program hashes of a store

    def subset(self, split: str) -> Dataset:
        idx = np.nonzero(self.split == SPLITS.index(split))[0]
        return Dataset([self.trees[i] for i in idx], self.speedup[idx], self.program[idx], self.split[idx],
                       [self.schedules[i] for i in idx], self.programs)

    def __len__(self) -> int:
        return len(self.trees)


def export(db: str, path: str, progress=None) -> dict:
    """Featurize every verified label of ``db`` (a dataset build) into ``path`` (.npz); returns counts."""
    with Store(db) as store:
        rows = list(store.labels())
        programs: dict[int, Program] = {}
        trees, speedups, prog_ids, splits, texts = [], [], [], [], []
        skipped = 0
        order: dict[int, int] = {}
        for k, (h, split, text, sp) in enumerate(rows):
            if h not in programs:
                programs[h] = Program.from_json(store.program_json(h))
            try:
                tree = featurize(Schedule.parse(text).apply(programs[h], check=False))
            except FeatureLimitError:
                skipped += 1
                continue
            trees.append(tree)
            speedups.append(sp)
            prog_ids.append(order.setdefault(h, len(order)))
            splits.append(SPLITS.index(split))
            texts.append(text)
            if progress:
                progress(k + 1, len(rows))
    if not trees:
        raise LoopcostError(f"{db} holds no verified measurement to export")
    _write(path, trees, speedups, prog_ids, splits, texts, list(order))
    return {"records": len(trees), "programs": len(order), "skipped_over_limits": skipped}


def export_store(store_path: str | Path, path: str | Path, *, fingerprint: str, codegen: int) -> dict:
    """Featurize what the machine ``fingerprint`` measured into its store (``loopcost run`` and ``optimize``
    keep every measurement there) into ``path`` (.npz): one record per measured schedule, labelled with
    the median of its measured speedups. A store holds a few programs of the user's own: schedules, not
    programs, are held out (1 in 10 for validation, by hash), so that a model fine-tuned on it learns
    these programs on this machine."""
    with Store(store_path) as store:
        rows = store.run_labels(fingerprint, codegen)
        programs: dict[str, Program] = {}
        trees, speedups, prog_ids, splits, texts = [], [], [], [], []
        order: dict[str, int] = {}
        skipped = 0
        for h, text, sp in rows:
            if h not in programs:
                programs[h] = Program.from_json(store.run_program_json(h))
            try:
                trees.append(featurize(Schedule.parse(text).apply(programs[h], check=False)))
            except FeatureLimitError:
                skipped += 1
                continue
            speedups.append(sp)
            prog_ids.append(order.setdefault(h, len(order)))
            splits.append(SPLITS.index("val" if int(schedule_hash(h, text)[:8], 16) % 10 == 0 else "train"))
            texts.append(text)
    if not trees or SPLITS.index("val") not in splits or SPLITS.index("train") not in splits:
        raise LoopcostError(f"{store_path} holds {len(trees)} measured schedules of this machine ({fingerprint}); "
                            "fine-tuning needs more (run `loopcost optimize K --search adaptive` on a few kernels)")
    _write(path, trees, speedups, prog_ids, splits, texts, list(order))
    return {"records": len(trees), "programs": len(order), "skipped_over_limits": skipped}


def _write(path: str | Path, trees: list[FeatureTree], speedups: list[float], prog_ids: list[int],
           splits: list[int], texts: list[str], programs: list) -> None:
    """One ``.npz`` of the training format (see ``load``)."""
    np.savez_compressed(
        path, version=np.array(layout.VERSION),
        comps=np.concatenate([t.comps for t in trees]), comp_counts=np.array([len(t.comps) for t in trees]),
        loops=np.concatenate([t.loops for t in trees]), loop_counts=np.array([len(t.loops) for t in trees]),
        shapes=np.frombuffer(json.dumps([t.shape for t in trees]).encode(), np.uint8),
        speedup=np.array(speedups, np.float64), program=np.array(prog_ids), split=np.array(splits, np.int8),
        schedules=np.frombuffer(json.dumps(texts).encode(), np.uint8),
        programs=np.frombuffer(json.dumps(programs).encode(), np.uint8))


def _tuplify(x):
    return tuple(_tuplify(v) for v in x) if isinstance(x, list) else x


def load(path: str | Path) -> Dataset:
    z = np.load(path)
    if int(z["version"]) != layout.VERSION:
        raise LoopcostError(f"{path} holds features of layout {int(z['version'])}; this loopcost uses "
                            f"{layout.VERSION}: export the dataset again")
    shapes = json.loads(z["shapes"].tobytes())
    cs = np.concatenate([[0], np.cumsum(z["comp_counts"])])
    ls = np.concatenate([[0], np.cumsum(z["loop_counts"])])
    comps, loops = z["comps"], z["loops"]
    trees = [FeatureTree(comps[cs[k]:cs[k + 1]], loops[ls[k]:ls[k + 1]], _tuplify(shapes[k]))
             for k in range(len(shapes))]
    return Dataset(trees, z["speedup"], z["program"], z["split"], json.loads(z["schedules"].tobytes()),
                   json.loads(z["programs"].tobytes()))
