"""The autoscheduler against gcc, clang and Polly on every library kernel at its benchmark size.

    python bench/autoscheduler.py [--model M] [--kernels gemm 2mm] [--no-exec]

The table names the machine it measured on and the CPUs whose measurements trained the model.

Columns are speedups over the unscheduled program compiled with gcc -O3 -march=native -fopenmp:
loopcost beam and MCTS (model-guided, then the top-k measured), random search (k random legal
schedules, measured), execution-based beam search (every candidate measured), and clang -O3 /
Polly / Polly with OpenMP on the same generated unscheduled C. Search results are timed inside one
harness binary beside the unscheduled program; compiler columns are one harness too, whose variants
are the kernel compiled by gcc (the reference) and by each clang configuration, linked together.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from polly import CLANG_O3, CROSS_RTOL, POLLY, POLLY_PAR, ensure_polly, measure_compilers
from report import default_model, head_commit

from loopcost.codegen.compiler import Toolchain
from loopcost.costmodel.model import CostModel
from loopcost.costmodel.shipped import card_cpus
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.generator.schedules import random_schedules
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.search.evaluator import MeasuringEvaluator
from loopcost.search.optimize import optimize
from loopcost.transforms.space import SpaceOptions

ROOT = Path(__file__).resolve().parent.parent
COMPILERS = {"clang": CLANG_O3, "polly": POLLY, "polly_parallel": POLLY_PAR}  # the names of RESULTS.jsonl's fields


def compilers_vs_gcc(state: ProgramState, runs: int) -> dict[str, float | None]:
    """Speedup of each clang configuration over gcc on the unscheduled C, every compiler's kernel a variant
    of one harness (gcc's the reference); None if its outputs differ from gcc's by more than CROSS_RTOL."""
    ms = measure_compilers(state, COMPILERS, runs)
    return {m.label: m.speedup for m in ms} | {"gcc_s": ms[0].reference_median}


def random_measured(program, k: int, seed: int, space: SpaceOptions) -> float:
    """Best measured speedup of k random legal schedules (the unscheduled program competes)."""
    states = [st for _, st in random_schedules(program, k, random.Random(seed), space)]
    speedups = MeasuringEvaluator().score(states)
    return max(1.0, float(speedups.max())) if len(speedups) else 1.0


def bench_kernel(name: str, args, model) -> dict:
    program = KERNELS[name].program(args.size)
    space = SpaceOptions(tile_sizes=tuple(args.tile_sizes))
    t0 = time.time()
    row: dict = {"kernel": name}
    for method in ("beam", "mcts") + (() if args.no_exec else ("exec",)):
        r = optimize(program, method=method, model=model, budget=args.budget, top_k=args.top_k, space=space)
        row[method] = r.measured_speedup if r.verified else None
        row[f"{method}_schedule"] = str(r.schedule)
        row[f"{method}_search_s"] = r.search_time_s
        row[f"{method}_scored"] = r.candidates_scored
    row["random"] = random_measured(program, args.top_k, seed=0, space=space)
    row.update(compilers_vs_gcc(ProgramState.initial(program), args.runs))
    row["wall_s"] = time.time() - t0
    return row


COLUMNS = [("beam", "loopcost beam"), ("mcts", "loopcost MCTS"), ("random", "random (k measured)"),
           ("exec", "exec beam"), ("clang", "clang -O3"), ("polly", "Polly"), ("polly_parallel", "Polly parallel")]


def gmean(rows, key) -> float | None:
    vals = [r[key] for r in rows if r.get(key)]
    return statistics.geometric_mean(vals) if len(vals) == len(rows) else None


def table(rows: list[dict], header: str) -> str:
    cols = [(k, t) for k, t in COLUMNS if any(k in r for r in rows)]
    lines = [header, "", "| kernel | gcc -O3 (s) | " + " | ".join(t for _, t in cols)
             + " | beam search (s) | MCTS search (s) |",
             "|---|---:|" + "---:|" * len(cols) + "---:|---:|"]
    for r in rows:
        cells = ["wrong" if r.get(k) is None else f"{r[k]:.2f}x" for k, _ in cols]
        lines.append(f"| {r['kernel']} | {r['gcc_s']:.4g} | " + " | ".join(cells)
                     + f" | {r['beam_search_s']:.1f} | {r['mcts_search_s']:.1f} |")
    gm = {k: gmean(rows, k) for k, _ in cols}
    lines.append("| **geometric mean** | | " + " | ".join("—" if gm[k] is None else f"**{gm[k]:.2f}x**"
                                                     for k, _ in cols) + " | | |")
    lines.append("")
    if gm.get("beam") and gm.get("exec"):
        lines.append(f"- model-guided beam reaches {100 * gm['beam'] / gm['exec']:.0f}% of execution-based beam "
                     "search's geometric mean (goal: 90%)")
    polly_best = max((gm[k] for k in ("polly", "polly_parallel") if gm.get(k)), default=None)
    if gm.get("beam") and polly_best:
        lines.append(f"- beam {gm['beam']:.2f}x vs Polly's best configuration {polly_best:.2f}x (goal: at or above)")
    slowest = max(rows, key=lambda r: r["beam_search_s"])
    lines.append(f"- slowest beam search: {slowest['beam_search_s']:.1f} s ({slowest['kernel']}; goal: under 10 s)")
    lines.append("\nSchedules chosen by beam search:\n")
    lines += [f"- {r['kernel']}: `{r['beam_schedule'] or '(none)'}`" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--model", default=str(default_model()), help="cost model (default: the one shipped for this CPU)")
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--tile-sizes", type=int, nargs="+", default=list(SpaceOptions().tile_sizes),
                    help="tile sizes of the space every search explores (fewer: a tractable exec search)")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernels", nargs="*", default=None)
    ap.add_argument("--no-exec", action="store_true", help="skip execution-based search (the slow column)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    ap.add_argument("--resume", action="store_true",
                    help="keep the kernels already in OUT.jsonl (an interrupted run) and bench the others")
    args = ap.parse_args()
    ensure_polly()
    model = CostModel.load(args.model)
    info = machine_info(Toolchain().describe())
    machine = fingerprint(info)
    jsonl = Path(args.out).with_suffix(".jsonl")
    names = args.kernels or sorted(KERNELS)
    done = {}
    if args.resume and jsonl.exists():
        done = {r["kernel"]: r for r in map(json.loads, jsonl.read_text().splitlines()) if r["kernel"] in names}
    rows = [done[n] for n in names if n in done]
    with open(jsonl, "w") as log:
        for r in rows:
            log.write(json.dumps(r) + "\n")
        for name in names:
            if name in done:
                continue
            rows.append(bench_kernel(name, args, model) | {"machine": machine})
            log.write(json.dumps(rows[-1]) + "\n")
            log.flush()
            print(json.dumps(rows[-1]), flush=True)
    model_name = Path(args.model).relative_to(ROOT) if Path(args.model).is_relative_to(ROOT) else Path(args.model)
    cmd = (f"python bench/autoscheduler.py --size {args.size} --model {model_name} --budget "
           f"{args.budget} --tile-sizes {' '.join(map(str, args.tile_sizes))} --top-k {args.top_k} --runs {args.runs}"
           + (" --no-exec" if args.no_exec else ""))
    wall = sum(r.get("wall_s", 0.0) for r in rows)
    commit = head_commit()
    header = (f"# Autoscheduler benchmark\n\n`{cmd}` ({time.strftime('%Y-%m-%d')}, commit {commit}, "
              f"{wall / 60:.0f} min in all). Speedups over the unscheduled program under gcc -O3 -march=native "
              "-fopenmp; every result verified against it (search columns in loopcost's harness, compiler "
              "columns, compiled into one harness with gcc's, to a relative "
              f"{CROSS_RTOL:g}). Raw rows: `{jsonl.name}`.\n\n"
              f"Machine: {info['cpu']}, {info['cores']} cores, {info['compiler']} (fingerprint "
              f"{machine}). Model trained on measurements of: "
              f"{', '.join(sorted(card_cpus(Path(args.model)))) or 'unknown (no card)'}.")
    Path(args.out).write_text(table(rows, header))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
