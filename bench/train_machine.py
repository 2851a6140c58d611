"""A CPU kind's model: the shipped recipe trained over several seeds and architectures, and scored.

    python bench/train_machine.py --dataset loopcost/data/machines/amd-epyc --work /tmp/train-amd \
        [--seeds 0,1,2] [--archs transformer,lstm] [--export-seeds 2,3,4,5] [--out bench/TRAIN-amd.md] \
        [--pretrain loopcost/data [--pretrain DATASET@2,3,4]] [--device cuda --jobs 12 --deadline 420] [--layout 7]

``--dataset`` is a folder of ``loopcost/data/machines/`` (its packed ``dataset.sqlite.xz`` and ``heldout/``) or a
database (then ``--heldout DB`` names the held-out one). For each architecture and seed the script trains the
shipped model's recipe, a pair of networks (one on MAPE, one with the ranking loss), ensembles the pair, and scores
it on the validation split (where models are chosen), the test split and every record of the held-out set whose
program the training database does not hold (``unseen``: never trained on, never used to choose; a generator may
draw a training program again under another seed; where the held-out set holds several builds, each build's records
apart too, ``unseen@SEED``); then the ensemble of all pairs of one seed (both architectures).
The table (every model, and the mean and spread over seeds of each recipe) goes to ``--out``; every evaluation is a
JSON line of ``WORK/results.jsonl``. Each network resumes from its checkpoint and finished work is skipped: after
an interruption, rerun the same command. Training is CPU work (any machine: it needs no quiet one), or GPU work
with ``--device cuda``; ``--jobs N`` trains N networks at once (each in its own process: batching feature trees is
CPU work, so a GPU is kept busy by several), and ``--deadline S`` stops the networks still training S seconds after
the start (their checkpoints stay: a rerun resumes them) and scores the pairs that are whole. ``--pretrain
DATASET`` (a folder holding a packed ``dataset.sqlite.xz``, the packed file, or a database: another CPU's
measurements, e.g. the Intel one in ``loopcost/data``) first trains, per architecture and seed, a base network on
all of that dataset (the MAPE member's loss, ``PRETRAIN_EPOCHS``) and starts both networks of the pair from it
instead of from random weights. ``DATASET@2,3,4`` takes only the programs of those builds' seeds; given several
times, the stages run in order, each base starting from the one before (e.g. the Intel dataset, then this CPU's
builds left out of training by ``--export-seeds``). Choosing between the models on the search
(``bench/compare_models.py``) needs the CPU kind itself; what it asks of a model can be read without measuring:
after the table, each model ranks the kernel schedules that the committed benchmark runs measured on the training
database's machine (``bench/kernel_ranking.py``; ``--kernel-runs FILES``, none to skip). ``--layout 7`` trains
on the training and pretraining exports cut to an older feature layout (its vectors a prefix of today's), in a
``--work`` of its own: beside a run at today's layout, what the newer fields add to the same recipe.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import kernel_ranking

from loopcost.costmodel.card import combine_files
from loopcost.costmodel.data import export
from loopcost.costmodel.evaluate import evaluate
from loopcost.costmodel.model import CostModel
from loopcost.costmodel.train import TrainConfig, train_ensemble
from loopcost.database.store import Store
from loopcost.dataset.shipped import shipped_db
from loopcost.features import layout

START = time.time()
#: the cores the networks training at once share
CORES = os.cpu_count() or 1
#: the recipe's two networks: name, loss, ranking weight, epochs. 1.5x the Intel model's 28 and 30 since the
#: AMD layout-7 pairs (3 seeds, bench/TRAIN-amd.md): Spearman/program +0.013 val, +0.017 test, +0.026 held-out
MEMBERS = (("mape", "mape", 0.0, 42), ("rank", "mape", 1.0, 45))
#: epochs of the base network on the ``--pretrain`` dataset: the Intel recipe's MAPE member
PRETRAIN_EPOCHS = 28
METRICS = (("mape", "MAPE %", "{:.1f}"), ("spearman_per_program_mean", "Spearman/program", "{:.3f}"),
           ("top1_recovery", "top-1", "{:.3f}"))


def database(src: Path) -> Path:
    """The database at ``src``: a folder's packed ``dataset.sqlite.xz`` or a packed file, unpacked; else ``src``."""
    path = src / "dataset.sqlite.xz" if src.is_dir() else src
    if not path.exists():
        raise SystemExit(f"{src}: no dataset there")
    return shipped_db(path) if path.suffix == ".xz" else path


def databases(a: argparse.Namespace) -> tuple[Path, Path]:
    """The training database and the held-out one, unpacked from a machine folder where given one."""
    src = Path(a.dataset)
    if src.is_dir():
        return database(src), database(src / "heldout")
    if not a.heldout:
        raise SystemExit("--dataset DB needs --heldout DB (a set never trained on)")
    return database(src), database(Path(a.heldout))


def splits(heldout_seeds: list[int]) -> list[str]:
    """What each model is scored on: the validation and test splits, the held-out set and, where it holds several
    builds (e.g. of two generator versions), each build's programs apart (``unseen@SEED``)."""
    return ["val", "test", "unseen"] + ([f"unseen@{s}" for s in heldout_seeds] if len(heldout_seeds) > 1 else [])


def exported(db: Path, out: Path, seeds: list[int] | None, version: int = layout.VERSION) -> Path:
    """``db`` in the training format (feature layout ``version``) at ``out``, exported once."""
    if not out.exists():
        print(f"exporting {db} -> {out}", file=sys.stderr)
        export(str(db), str(out), seeds=seeds, version=version)
    return out


def network(data: Path, db: Path, path: Path, cfg: TrainConfig) -> None:
    """One network of a pair trained into ``path`` (in a process of its own)."""
    print(f"training {path.name} on {cfg.device}", file=sys.stderr, flush=True)
    train_ensemble(data, path, cfg, db=db)


def network_jobs(data: Path, db: Path, work: Path, runs: list[tuple[str, int]], a: argparse.Namespace,
                 stages: int) -> list[tuple]:
    """The networks of the pairs ``runs`` (arch, seed) not trained yet, each from the base network of the last
    of ``stages`` pretraining stages (from random weights if none)."""
    todo = []
    for arch, seed in runs:
        for name, loss, rank, epochs in MEMBERS:
            path = work / f"{arch}-s{seed}-{name}.pt"
            if not path.exists() and not (work / f"{arch}-s{seed}.pt").exists():
                init = str(base(work, arch, seed, stages - 1)) if stages else ""
                cfg = TrainConfig(epochs=max(1, round(epochs * a.epoch_scale)), loss=loss, rank_weight=rank,
                                  seed=seed, arch=arch, device=a.device, init=init,
                                  dropout=a.dropout)
                todo.append((data, db, path, cfg))
    return todo


def pretraining(spec: str) -> tuple[Path, list[int] | None]:
    """A ``--pretrain`` value, ``DATASET`` or ``DATASET@SEEDS``: its database and the builds' seeds to take."""
    src, _, seeds = spec.partition("@")
    return database(Path(src)), [int(s) for s in seeds.split(",")] if seeds else None


def base(work: Path, arch: str, seed: int, stage: int) -> Path:
    """The base network of pretraining stage ``stage`` (0: the first) of the pair ``arch``, ``seed``."""
    return work / f"{arch}-s{seed}-base{stage or ''}.pt"


def base_jobs(data: Path, db: Path, work: Path, runs: list[tuple[str, int]], a: argparse.Namespace,
              stage: int) -> list[tuple]:
    """The base networks of pretraining stage ``stage`` (trained on its export ``data``, each from the base of
    the stage before) of the pairs ``runs`` not trained yet."""
    _, loss, rank, _ = MEMBERS[0]
    return [(data, db, base(work, arch, seed, stage),
             TrainConfig(epochs=max(1, round(a.pretrain_epochs * a.epoch_scale)), loss=loss, rank_weight=rank,
                         seed=seed, arch=arch, device=a.device,
                         init=str(base(work, arch, seed, stage - 1)) if stage else ""))
            for arch, seed in runs if not base(work, arch, seed, stage).exists()]


def networks(todo: list[tuple], a: argparse.Namespace) -> None:
    """Train the networks ``todo`` (arguments of ``network``), ``a.jobs`` at once, each on ``a.threads`` threads
    or its share of the cores, until ``a.deadline`` seconds after the start (the ones still training then are
    stopped: their checkpoints stay)."""
    ctx = multiprocessing.get_context("spawn")  # a CUDA context does not survive fork
    running: list = []
    end = START + a.deadline if a.deadline else float("inf")
    # a stop (kill, ^C) stops the networks too: spawned processes outlive their parent, and two runs would
    # then write the same checkpoints
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))
    try:
        while (todo or running) and time.time() < end:
            running = [p for p in running if p.is_alive()]
            while todo and len(running) < a.jobs:
                data, db, path, cfg = todo.pop(0)
                # the cores shared among the networks that will train beside this one (alone: all of them)
                share = a.threads or max(1, CORES // min(a.jobs, len(running) + 1 + len(todo)))
                p = ctx.Process(target=network, args=(data, db, path, replace(cfg, threads=share)))
                p.start()
                running.append(p)
            time.sleep(1)
        if running:
            print(f"deadline: stopping {', '.join(p.name for p in running)}", file=sys.stderr)
    finally:
        for p in running:
            p.terminate()
            p.join()


def pair(work: Path, arch: str, seed: int) -> Path | None:
    """The recipe's pair of ``arch`` networks trained from ``seed`` as one ensemble; None while a network of
    it is missing."""
    out = work / f"{arch}-s{seed}.pt"
    members = [work / f"{arch}-s{seed}-{name}.pt" for name, *_ in MEMBERS]
    if not out.exists():
        if not all(m.exists() for m in members):
            return None
        combine_files([str(m) for m in members], out)
    return out


def scored(model: Path, split: str, data: dict[str, Path], dbs: dict[str, Path], results: Path,
           done: dict[tuple[str, str], dict]) -> dict:
    """``model``'s evaluation on ``split`` (``unseen``: every record of the held-out set whose program the
    training database does not hold): from ``done`` (the evaluations already in ``results``), else evaluated and
    appended to ``results``."""
    if (str(model), split) in done:
        return done[str(model), split]
    if split.startswith("unseen"):  # unseen@SEED: the held-out build of SEED, exported apart
        r = evaluate(model, data["heldout" + split[len("unseen"):]], dbs["heldout"], split="all",
                     unseen_by=dbs["train"])
    else:
        r = evaluate(model, data["train"], dbs["train"], split=split)
    r["name"] = split
    with results.open("a") as f:
        f.write(json.dumps(r) + "\n")
    return r


def table(rows: dict[str, dict[str, dict]], recipes: dict[str, list[str]], ceilings: dict[str, dict],
          columns: list[str]) -> str:
    """Markdown: a row per model, then each recipe's mean and spread over its seeds, then the noise ceiling; a
    column per metric of each split of ``columns``."""
    head = "| model | " + " | ".join(f"{s} {label}" for s in columns for _, label, _ in METRICS) + " |"
    lines = [head, "|---|" + "---:|" * (len(columns) * len(METRICS))]

    def cells(get) -> str:
        return " | ".join(get(s, k, fmt) for s in columns for k, _, fmt in METRICS)

    for name, r in rows.items():
        lines.append(f"| {name} | " + cells(lambda s, k, fmt, r=r: fmt.format(r[s][k])) + " |")
    for recipe, names in recipes.items():
        if len(names) < 2:  # one seed: its row says it all
            continue

        def spread(s, k, fmt, names=names):
            v = [rows[n][s][k] for n in names]
            return f"{fmt.format(statistics.mean(v))} ± {fmt.format(statistics.stdev(v))}"
        lines.append(f"| **{recipe}**, mean ± sd of {len(names)} seeds | " + cells(spread) + " |")
    lines.append("| a second measurement (simulated from the noise pairs) | "
                 + cells(lambda s, k, fmt: fmt.format(ceilings[s][k]) if ceilings.get(s) else "-") + " |")
    return "\n".join(lines)


def kernel_section(models: dict[str, Path], db: Path, files: list[Path]) -> str:
    """Markdown: how each model ranks the kernel schedules that ``files`` measured on ``db``'s machine (what a
    search asks of it; bench/kernel_ranking.py), or why there is nothing to rank."""
    if not files:
        return ""
    with Store(str(db)) as store:
        machines = [m["fingerprint"] for m in store.machines()]
    if len(machines) != 1:
        return f"\nKernel runs not scored: the training database holds {len(machines)} machines.\n"
    results = kernel_ranking.rank({name: CostModel.load(m) for name, m in models.items()}, files, machines[0])
    if not results:
        return f"\nNo kernel run of machine {machines[0]} in {len(files)} files to rank.\n"
    return (f"\nThe kernels' schedules measured on this machine ({machines[0]}), ranked by each model "
            f"(bench/kernel_ranking.py):\n\n{kernel_ranking.table(results, list(models))}\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="a folder of loopcost/data/machines/, or a database")
    ap.add_argument("--heldout", help="the held-out database (with --dataset DB)")
    ap.add_argument("--work", required=True, help="folder for the exports, models, checkpoints and results")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--archs", default="transformer,lstm")
    ap.add_argument("--export-seeds", help="only the programs of these builds' seeds (default: all)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads per network (default: the cores shared among the networks training at once)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto (see `loopcost train --device`)")
    ap.add_argument("--jobs", type=int, default=0,
                    help="networks trained at once, each in its own process (default: 2 on a CPU, 1 on a GPU: on "
                    "2 cores, two networks of one thread each train 1.3-1.6x the epochs an hour of one with two)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds after the start when training stops (0: none); whole pairs are scored")
    ap.add_argument("--epoch-scale", type=float, default=1.0, help="scale the recipe's epochs (a quick trial)")
    ap.add_argument("--pretrain", action="append", default=[],
                    help="another dataset (folder, packed file or database; DATASET@SEEDS: those builds only) to "
                    "train each pair's base network on first; several: stages in order")
    ap.add_argument("--pretrain-epochs", type=int, default=PRETRAIN_EPOCHS,
                    help=f"epochs of each pretraining stage's base network (default {PRETRAIN_EPOCHS})")
    ap.add_argument("--dropout", type=float, default=TrainConfig.dropout,
                    help=f"dropout of the pairs' networks (default {TrainConfig.dropout}; base networks keep it)")
    ap.add_argument("--kernel-runs", nargs="*", type=Path, default=None,
                    help="benchmark rows (.jsonl) whose kernel schedules, measured on the training database's "
                    "machine, each model ranks (bench/kernel_ranking.py; default: bench/*.jsonl; none given: skip)")
    ap.add_argument("--layout", type=int, choices=sorted(layout.PREFIX_WIDTHS), default=layout.VERSION,
                    help="train on the vectors of this feature layout (an older one: a prefix of today's vectors; "
                         "its models read the prefix), to measure what a newer layout adds; its own --work")
    ap.add_argument("--out", help="markdown table to write")
    a = ap.parse_args()
    a.jobs = a.jobs or (2 if a.device == "cpu" else 1)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    train_db, heldout_db = databases(a)
    seeds = [int(s) for s in a.seeds.split(",")]
    archs = a.archs.split(",")
    export_seeds = [int(s) for s in a.export_seeds.split(",")] if a.export_seeds else None
    data = {"train": exported(train_db, work / "data.npz", export_seeds, a.layout),
            "heldout": exported(heldout_db, work / "heldout.npz", None)}
    with Store(str(heldout_db)) as store:
        heldout_seeds = sorted(int(key.partition(":")[2]) for key in store.builds())
    columns = splits(heldout_seeds)
    for col in columns[3:]:  # unseen@SEED
        seed = col.partition("@")[2]
        data[f"heldout@{seed}"] = exported(heldout_db, work / f"heldout-{seed}.npz", [int(seed)])
    dbs = {"train": train_db, "heldout": heldout_db}
    results = work / "results.jsonl"
    models: dict[str, Path] = {}
    recipes: dict[str, list[str]] = {}
    runs = [(arch, seed) for seed in seeds for arch in archs if not (work / f"{arch}-s{seed}.pt").exists()]
    stages = len(a.pretrain)
    for stage, spec in enumerate(a.pretrain if runs else []):
        base_db, base_seeds = pretraining(spec)
        base_data = exported(base_db, work / f"pretrain{stage or ''}.npz", base_seeds, a.layout)
        networks(base_jobs(base_data, base_db, work, runs, a, stage), a)
        if not all(base(work, arch, seed, stage).exists() for arch, seed in runs):
            raise SystemExit("the base networks are not all trained yet: rerun to resume their training")
    networks(network_jobs(data["train"], train_db, work, runs, a, stages), a)
    for seed in seeds:
        pairs = [(arch, p) for arch in archs if (p := pair(work, arch, seed)) is not None]
        for arch, p in pairs:
            models[p.stem] = p
            recipes.setdefault(f"{arch} pair", []).append(p.stem)
        if len(pairs) == len(archs) > 1:
            both = work / f"all-s{seed}.pt"
            if not both.exists():
                combine_files([str(p) for _, p in pairs], both)
            models[both.stem] = both
            recipes.setdefault("all pairs", []).append(both.stem)
    if not models:
        raise SystemExit("no pair of networks is whole yet: rerun to resume their training")
    done = {(r["model"], r["name"]): r for r in map(json.loads, results.read_text().splitlines())} \
        if results.exists() else {}
    rows = {name: {s: scored(m, s, data, dbs, results, done) for s in columns} for name, m in models.items()}
    ceilings = {s: next(iter(rows.values()))[s]["remeasurement"] for s in columns}
    text = table(rows, recipes, ceilings, columns)
    best = max(rows, key=lambda n: rows[n]["val"]["spearman_per_program_mean"])
    text += f"\n\nBest on the validation split (Spearman/program): {best} ({models[best]})\n"
    kernel_runs = sorted(kernel_ranking.BENCH.glob("*.jsonl")) if a.kernel_runs is None else a.kernel_runs
    text += kernel_section(models, train_db, kernel_runs)
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
