"""Trained models side by side on the model-guided search, one harness per kernel.

    python bench/compare_models.py ship=loopcost/data/model.pt new=new.pt [--kernels selection] [--out F.jsonl]

Each model runs the shipped beam search (beam 4, the diverse top 5 of its best 60); every pick of
every model is compiled into one harness with the unscheduled program, measured side by side and
verified. A model's speedup on a kernel is the best of its top k, and 1.0 when none is faster (as
``loopcost optimize`` returns). ``--kernels selection`` (the default) runs ``bench/selection/``:
kernels like the benchmark's but not in it, to choose a model without fitting the 19 kernels that
``bench/autoscheduler.py`` scores; ``--kernels bench`` runs those 19; names and DSL files also work.
Rows are appended to ``--out`` as each kernel finishes, with every raw run time; a rerun with the
same file skips the kernels it holds. ``--also RUN=FILE.jsonl`` measures the picks another run stored
(another space, another commit) in the same harness, as ``MODEL@RUN``: no search, only the measurement.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from loopcost.codegen.compiler import Toolchain
from loopcost.costmodel.model import CostModel
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.kernels.loader import load_program
from loopcost.runner import LocalRunner
from loopcost.search.beam import beam_search
from loopcost.search.evaluator import MeasuringEvaluator, ModelEvaluator
from loopcost.search.ranking import RANKED, diverse_top
from loopcost.transforms.schedule import Schedule
from loopcost.transforms.space import SpaceOptions

SELECTION = Path(__file__).resolve().parent / "selection"


def kernel_specs(choice: list[str]) -> list[str]:
    """``selection``, ``bench`` or explicit kernel names / DSL files."""
    if choice == ["selection"]:
        return sorted(str(p) for p in SELECTION.glob("*.py"))
    if choice == ["bench"]:
        return sorted(KERNELS)
    return choice


def kernel_name(spec: str) -> str:
    """A DSL file's stem, or the library kernel's name."""
    return Path(spec).stem if spec.endswith(".py") else spec


def stored_picks(runs: dict[str, Path]) -> dict[str, dict[str, list]]:
    """Each kernel's picks in the rows of other runs' files, by ``MODEL@RUN``."""
    out: dict[str, dict[str, list]] = {}
    for run, path in runs.items():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            for model, picks in row["picks"].items():
                out.setdefault(row["kernel"], {})[f"{model}@{run}"] = picks
    return out


def compare_on(spec: str, models: dict[str, CostModel], beam: int, top_k: int, space: SpaceOptions,
               size: str = "bench", also: dict[str, list] | None = None) -> dict:
    """Every model's top k on one kernel, and the picks of ``also`` (name: ``[(schedule, score)]``), measured
    in one harness."""
    initial = ProgramState.initial(load_program(spec, size))
    picks, times, states = {}, {}, {"": initial}
    for name, stored in (also or {}).items():
        picks[name] = [tuple(p) for p in stored]
        for text, _ in stored:
            states.setdefault(text, Schedule.parse(text).apply(initial))
    for name, model in models.items():
        t0 = time.perf_counter()
        ranked = beam_search(initial, ModelEvaluator(model), beam_size=beam, opts=space, keep=RANKED)
        times[name] = time.perf_counter() - t0
        top = diverse_top(ranked, top_k)
        picks[name] = [(str(c.schedule), c.score) for c in top]
        for c in top:
            states.setdefault(str(c.schedule), c.state)
    texts = list(states)
    ms = MeasuringEvaluator(LocalRunner(chunk=len(texts))).measure([states[t] for t in texts])
    speedups = [m.speedup or 0.0 for m in ms]
    base = speedups[0]  # the unscheduled program measured as a variant beside its own baseline run
    sp = {t: float(s / base) if s > 0 else 0.0 for t, s in zip(texts, speedups, strict=True)}
    best = {name: max([1.0] + [sp[t] for t, _ in p]) for name, p in picks.items()}
    return {"kernel": kernel_name(spec), "best": best, "speedups": sp,
            "picks": picks, "search_s": times,
            "raw_times": {"baseline": list(ms[0].reference_times)} | {t: list(m.times) for t, m in zip(texts, ms,
                                                                                              strict=True)}}


def table(rows: list[dict], names: list[str]) -> str:
    """Markdown: each model's best-of-k speedup per kernel, and the geometric means."""
    lines = ["| kernel | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for r in rows:
        lines.append(f"| {r['kernel']} | " + " | ".join(f"{r['best'][n]:.2f}x" for n in names) + " |")
    means = [statistics.geometric_mean([r["best"][n] for r in rows]) for n in names]
    lines.append("| **geometric mean** | " + " | ".join(f"**{g:.2f}x**" for g in means) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="NAME=MODEL.pt, two or more")
    ap.add_argument("--kernels", nargs="+", default=["selection"])
    ap.add_argument("--out", default="compare_models.jsonl")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--tile-sizes", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--size", choices=["small", "bench"], default="bench")
    ap.add_argument("--also", nargs="+", default=[], metavar="RUN=FILE.jsonl",
                    help="measure the picks stored in another run's file beside these models' picks")
    a = ap.parse_args(argv)
    pairs = [m.split("=", 1) for m in a.models]
    if any(len(p) != 2 for p in pairs) or len({n for n, _ in pairs}) != len(pairs):
        ap.error("give each model as NAME=PATH, with distinct names")
    runs = [r.split("=", 1) for r in a.also]
    if any(len(r) != 2 or not Path(r[1]).is_file() for r in runs):
        ap.error("give each --also as RUN=FILE.jsonl, an existing file")
    models = {n: CostModel.load(p) for n, p in pairs}
    stored = stored_picks({n: Path(f) for n, f in runs})
    names = list(models) + sorted({n for kernel in stored.values() for n in kernel})
    out = Path(a.out)
    done = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    have = {r["kernel"] for r in done if set(r["best"]) == set(models) | set(stored.get(r["kernel"], {}))}
    rows = [r for r in done if r["kernel"] in have]
    machine = fingerprint(machine_info(Toolchain().describe()))
    for spec in kernel_specs(a.kernels):
        name = kernel_name(spec)
        if name in have:
            continue
        row = compare_on(spec, models, a.beam, a.top_k, SpaceOptions(tile_sizes=tuple(a.tile_sizes)), a.size,
                         stored.get(name))
        row["machine"] = machine
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        rows.append(row)
        print(name, {n: round(v, 2) for n, v in row["best"].items()},
              "search s", {n: round(v, 1) for n, v in row["search_s"].items()}, flush=True)
    print(table(rows, [n for n in names if all(n in r["best"] for r in rows)]))


if __name__ == "__main__":
    main()
