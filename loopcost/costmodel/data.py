"""The training format: featurized trees of a dataset, exported once, loaded fast.

``export(db, path)`` reads every verified label of a measurement store,
featurizes its schedule, and writes one ``.npz``: concatenated computation
and loop vectors with offsets, the tree shapes (JSON), speedups, program ids
and splits. Loading it needs only NumPy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
    #: (N,) bool: the speedup is an upper bound (timing stopped after two runs far slower than the baseline)
    censored: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.censored is None:
            self.censored = np.zeros(len(self.speedup), bool)

    def subset(self, split: str) -> Dataset:
        """The records of one split, or every record (``"all"``: a set held out from training altogether)."""
        return self if split == "all" else self.select(np.nonzero(self.split == SPLITS.index(split))[0])

    def select(self, idx: np.ndarray) -> Dataset:
        """The records at ``idx``."""
        return Dataset([self.trees[i] for i in idx], self.speedup[idx], self.program[idx], self.split[idx],
                       [self.schedules[i] for i in idx], self.programs, self.censored[idx])

    def timed(self) -> Dataset:
        """The records whose speedup was timed in full (not censored): what accuracy is measured on."""
        return self.select(np.nonzero(~self.censored)[0])

    def __len__(self) -> int:
        return len(self.trees)


def _featurized(rows: Iterable[tuple], program_json: Callable, progress=None, total: int = 0) -> _Records:
    """The records of ``rows`` (program key, split, schedule text, speedup, censored), each program read once with
    ``program_json(key)``; a schedule beyond the feature limits is counted and left out."""
    out, programs = _Records(), {}
    for k, (key, split, text, sp, censored) in enumerate(rows):
        if key not in programs:
            programs[key] = Program.from_json(program_json(key))
        try:
            out.trees.append(featurize(Schedule.parse(text).apply(programs[key], check=False)))
        except FeatureLimitError:
            out.skipped += 1
            continue
        out.speedups.append(sp)
        out.censored.append(bool(censored))
        out.program.append(out.order.setdefault(key, len(out.order)))
        out.split.append(SPLITS.index(split))
        out.schedules.append(text)
        if progress:
            progress(k + 1, total)
    return out


def export(db: str, path: str, progress=None, seeds: Sequence[int] | None = None,
           version: int = layout.VERSION) -> dict:
    """Featurize every verified label of ``db`` (a dataset build; of the builds ``seeds`` only, if given) into
    ``path`` (.npz) in feature layout ``version`` (this one or one of ``layout.PREFIX_WIDTHS``: its vectors are
    a prefix of this one's); returns counts."""
    if version not in layout.PREFIX_WIDTHS:
        raise LoopcostError(f"feature layout {version} cannot be exported; use one of "
                            f"{', '.join(map(str, sorted(layout.PREFIX_WIDTHS)))}")
    with Store(db) as store:
        rows = list(store.labels(seeds=seeds))
        records = _featurized(rows, store.program_json, progress, len(rows))
    if not records.trees:
        raise LoopcostError(f"{db} holds no verified measurement to export"
                            + (f" of the builds of seeds {', '.join(map(str, seeds))}" if seeds is not None else ""))
    return records.write(path, version)


def export_store(store_path: str | Path, path: str | Path, *, fingerprint: str,
                 codegen: Callable[[Program], int], for_training: bool = True) -> dict:
    """Featurize what the machine ``fingerprint`` measured into its store (``loopcost run`` and ``optimize``
    keep every measurement there) from C of the code generator version ``codegen(program)`` into ``path``
    (.npz): one record per measured schedule, labelled with the median of its measured speedups. A store
    holds a few programs of the user's own: schedules, not programs, are held out (1 in 10 for validation,
    by hash), so that a model fine-tuned on it learns these programs on this machine. ``for_training``: refuse a
    store too small to fine-tune on (else: any store that holds a measured schedule of this machine)."""
    with Store(store_path) as store:
        versions: dict[str, int] = {}

        def current(h: str, version: int) -> bool:
            if h not in versions:
                versions[h] = codegen(Program.from_json(store.run_program_json(h)))
            return versions[h] == version

        rows = [(h, "val" if int(schedule_hash(h, text)[:8], 16) % 10 == 0 else "train", text, sp, False)
                for version in store.run_codegens(fingerprint)
                for h, text, sp in store.run_labels(fingerprint, version) if current(h, version)]
        records = _featurized(rows, store.run_program_json)
    if not records.trees or for_training and not {SPLITS.index("val"), SPLITS.index("train")} <= set(records.split):
        need = "fine-tuning" if for_training else "scoring"
        raise LoopcostError(f"{store_path} holds {len(records.trees)} measured schedules of this machine "
                            f"({fingerprint}); {need} needs more (run `loopcost optimize K --search adaptive` on a "
                            "few kernels)")
    return records.write(path)


@dataclass
class _Records:
    """Featurized records on their way to a ``.npz`` of the training format (see ``load``)."""

    trees: list[FeatureTree] = field(default_factory=list)
    speedups: list[float] = field(default_factory=list)
    censored: list[bool] = field(default_factory=list)
    program: list[int] = field(default_factory=list)       # index into ``order``
    split: list[int] = field(default_factory=list)         # index into SPLITS
    schedules: list[str] = field(default_factory=list)
    order: dict = field(default_factory=dict)               # program key (id or hash) -> index
    skipped: int = 0                                        # beyond the feature limits

    def write(self, path: str | Path, version: int = layout.VERSION) -> dict:
        """Write the ``.npz`` in feature layout ``version`` (one of ``layout.PREFIX_WIDTHS``); returns counts."""
        t = self.trees
        np.savez_compressed(
            path, version=np.array(version),
            comps=np.concatenate([x.comps for x in t])[:, :layout.PREFIX_WIDTHS[version]],
            comp_counts=np.array([len(x.comps) for x in t]),
            loops=np.concatenate([x.loops for x in t]), loop_counts=np.array([len(x.loops) for x in t]),
            shapes=np.frombuffer(json.dumps([x.shape for x in t]).encode(), np.uint8),
            speedup=np.array(self.speedups, np.float64), censored=np.array(self.censored, bool),
            program=np.array(self.program),
            split=np.array(self.split, np.int8), schedules=np.frombuffer(json.dumps(self.schedules).encode(), np.uint8),
            programs=np.frombuffer(json.dumps(list(self.order)).encode(), np.uint8))
        return {"records": len(t), "programs": len(self.order), "censored": int(sum(self.censored)),
                "skipped_over_limits": self.skipped}


def _tuplify(x):
    return tuple(_tuplify(v) for v in x) if isinstance(x, list) else x


#: the arrays of a dataset written by ``export`` (and ``censored``, since December 2026: none before)
ARRAYS = ("version", "comps", "comp_counts", "loops", "loop_counts", "shapes", "speedup", "program", "split",
          "schedules", "programs")


def load(path: str | Path) -> Dataset:
    """A dataset written by ``export``; a file that is not one is named in a ``LoopcostError``."""
    try:
        z = np.load(path, allow_pickle=False)
        missing = [a for a in ARRAYS if a not in getattr(z, "files", ())]
    except Exception as e:  # noqa: BLE001 - whatever numpy trips on (not a zip, a cut one), it is not a dataset
        raise LoopcostError(f"{path} is not a dataset exported by `loopcost dataset export`: {e}") from None
    if missing:
        raise LoopcostError(f"{path} is not a dataset exported by `loopcost dataset export` (it lacks "
                            f"{', '.join(missing)})")
    if int(z["version"]) not in layout.READS:
        raise LoopcostError(f"{path} holds features of layout {int(z['version'])}; this loopcost uses "
                            f"{layout.VERSION}: export the dataset again")
    shapes = json.loads(z["shapes"].tobytes())
    cs = np.concatenate([[0], np.cumsum(z["comp_counts"])])
    ls = np.concatenate([[0], np.cumsum(z["loop_counts"])])
    comps, loops = z["comps"], z["loops"]
    trees = [FeatureTree(comps[cs[k]:cs[k + 1]], loops[ls[k]:ls[k + 1]], _tuplify(shapes[k]))
             for k in range(len(shapes))]
    return Dataset(trees, z["speedup"], z["program"], z["split"], json.loads(z["schedules"].tobytes()),
                   json.loads(z["programs"].tobytes()), z["censored"] if "censored" in z.files else None)
