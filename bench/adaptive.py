"""Adaptive search against the model-guided beam and execution-based search, side by side per kernel.

    python bench/adaptive.py [--kernels bench selection c] [--budgets 16 32 64] [--out bench/ADAPTIVE.md]

For each kernel (the 19 library kernels, the 8 of ``bench/selection/``, the C files of ``tests/c`` read
through the C frontend, all at their benchmark size), it runs:

- ``beam``: the default search (shipped model, beam 4; its diverse top 5 are its picks);
- ``exec``: execution-based beam search (every candidate measured; its measured top 5 are its picks);
- ``rounds-N``, ``staged-N``: an adaptive search with budget N (``--strategy rounds``, the default, or
  ``staged``), for each of ``--budgets`` (each spreads its budget over its phases: the rounds, then register
  blocks and the neighbors of the fastest schedules); its picks are the 5 fastest it measured;
- ``rounds-N-nolocal`` (with ``--without-local``): the same search without neighbors (5/8 of the budget
  to the rounds, 3/8 to register blocks: the adaptive search before its local phase existed).

``--no-exec`` leaves execution-based search out (15 minutes a kernel on 2 cores): a comparison of
adaptive searches alone.

Then every column's picks and the unscheduled program are compiled into one harness, measured side by
side and verified, ``--repeats`` times (default 3, each harness in another order; a pick's speedup is its
median over them: on AMD EPYC parallel runs of 40-100 ms moved 10-30% between two harnesses); a column's
speedup is the best of its picks there (1.0 when none beats the
unscheduled program, as ``loopcost optimize`` returns). Each column's measurement count (the final 5
included) and search wall time are kept. Measures nothing into the machine's store and reuses nothing
from it: every column measures for itself. Rows are appended to ``OUT.jsonl`` as kernels finish, with
every raw run time; a rerun skips the kernels it holds. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path

from c_files import sizes_of
from compare_models import SELECTION, kernel_name
from report import default_model, head_commit, write_rows

from loopcost.codegen.compiler import Toolchain
from loopcost.costmodel.model import CostModel
from loopcost.costmodel.shipped import card_cpus
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.frontend import load_c
from loopcost.ir.program import Program
from loopcost.kernels import KERNELS
from loopcost.kernels.loader import load_program
from loopcost.runner import LocalRunner
from loopcost.search.adaptive import AdaptiveOptions
from loopcost.search.base import Scored
from loopcost.search.evaluator import MeasuringEvaluator
from loopcost.search.optimize import optimize
from loopcost.transforms.schedule import Schedule

ROOT = Path(__file__).resolve().parent.parent
TOP_K = 5


def programs(groups: list[str]) -> list[tuple[str, str, Program]]:
    """(group, name, program at benchmark size) of each kernel of ``groups`` (bench, selection, c)."""
    out = []
    for g in groups:
        if g == "bench":
            out += [(g, n, KERNELS[n].program("bench")) for n in sorted(KERNELS)]
        elif g == "selection":
            out += [(g, kernel_name(str(p)), load_program(str(p), "bench")) for p in sorted(SELECTION.glob("*.py"))]
        elif g == "c":
            for path in sorted((ROOT / "tests" / "c").glob("*.c")):
                if path.stem in KERNELS:
                    defines, params = sizes_of(path, "bench")
                    out.append((g, f"{path.stem}.c", load_c(path, defines=defines, params=params).program))
        else:
            raise SystemExit(f"unknown kernel group {g!r}: use bench, selection or c")
    return out


#: the adaptive search as it was before its local phase: rounds, then 3/8 of the budget to register blocks
NO_LOCAL = dict(refine=0.375, refiners=("blocks",))


def bench_kernel(program: Program, model: CostModel, budgets: list[int], strategies: list[str],
                 earlier: dict | None = None, *, exec_search: bool = True, without_local: bool = False,
                 repeats: int = 3) -> dict:
    """Every column's picks, measurement count and search time; then all picks side by side, in ``repeats``
    harnesses (a pick's speedup: its median over them). The beam
    and exec columns' searches are taken from ``earlier`` (a row of this kernel on this machine) when
    given: their picks are measured again, beside the others."""
    picks: dict[str, list[str]] = {}
    row: dict = {"measurements": {}, "search_s": {}, "own_harness": {}}
    for method in ("beam", "exec") if exec_search else ("beam",):
        if earlier is not None and method in earlier["picks"]:
            picks[method] = earlier["picks"][method]
            for key in ("measurements", "search_s", "own_harness"):
                row[key][method] = earlier[key][method]
            continue
        r = optimize(program, method=method, model=model)
        picks[method] = [s for s, _ in r.measured]
        row["measurements"][method] = r.measurements
        row["search_s"][method] = r.search_time_s
        row["own_harness"][method] = r.measured_speedup
    variants = {"": {}} | ({"-nolocal": NO_LOCAL} if without_local else {})
    for strategy, b, (suffix, extra) in itertools.product(strategies, budgets, variants.items()):
        # each budget is spread over its own phases: one search per budget
        history, rounds, r = adaptive_history(program, model, b, strategy, **extra)
        name = f"{strategy}-{b}{suffix}"
        picks[name] = [s for s, _ in sorted(history, key=lambda x: -x[1])[:TOP_K]]
        row["measurements"][name] = len(history) + TOP_K
        row["search_s"][name] = rounds[-1][1] if rounds else 0.0
        row["own_harness"][name] = r.measured_speedup
        row.setdefault("history", {})[name] = history  # in the order measured: which phase found what
    texts = list(dict.fromkeys(["", *(t for ts in picks.values() for t in ts)]))
    states = {t: Schedule.parse(t).apply(program) for t in texts}
    runs: dict[str, list[float]] = {t: [] for t in texts}  # a text's speedup in each harness
    row["raw_times"] = []
    for r in range(repeats):  # each harness in another order: no schedule always runs first or last
        order = texts[r * len(texts) // repeats:] + texts[:r * len(texts) // repeats]
        ms = MeasuringEvaluator(LocalRunner(chunk=len(order))).measure([states[t] for t in order], order)
        base = ms[order.index("")].speedup or 0.0  # the unscheduled program's own copy, beside the baseline run
        for t, m in zip(order, ms, strict=True):
            runs[t].append((m.speedup or 0.0) / base if base > 0 else 0.0)
        row["raw_times"].append({"baseline": list(ms[0].reference_times)}
                                | {t: list(m.times) for t, m in zip(order, ms, strict=True)})
    sp = {t: statistics.median(v) for t, v in runs.items()}
    row["speedup"] = {c: max([1.0] + [sp[t] for t in ts]) for c, ts in picks.items()}
    row["best_schedule"] = {c: max(ts, key=lambda t: sp[t], default="") for c, ts in picks.items()}
    row["picks"], row["side_by_side"], row["side_by_side_runs"] = picks, sp, runs
    return row


def adaptive_history(program: Program, model: CostModel, budget: int, strategy: str, **options: object):
    """(schedule, measured speedup) in the order an adaptive search measured them, (count, seconds) after
    each of its batches, and its result."""
    rounds: list[tuple[int, float]] = []
    history: list[tuple[str, float]] = []
    t0 = time.perf_counter()

    def seen(measured: list[Scored]) -> None:
        rounds.append((len(measured), time.perf_counter() - t0))
        history[:] = [(str(c.schedule), c.score) for c in measured]

    r = optimize(program, method="adaptive", model=model, on_round=seen,
                 adaptive=AdaptiveOptions(measure_budget=budget, strategy=strategy, **options))
    return history, rounds, r


def gmean(values: list[float]) -> float:
    return statistics.geometric_mean(values) if values else float("nan")


def table(rows: list[dict], columns: list[str]) -> str:
    lines = []
    for group in dict.fromkeys(r["group"] for r in rows):
        rs = [r for r in rows if r["group"] == group]
        lines += [f"\n### {group} ({len(rs)} kernels)\n",
                  "| kernel | " + " | ".join(columns) + " | measurements (" + " / ".join(columns)
                  + ") | search s (same order) |",
                  "|---|" + "---:|" * len(columns) + "---|---|"]
        for r in rs:
            lines.append(f"| {r['kernel']} | " + " | ".join(f"{r['speedup'][c]:.2f}x" for c in columns)
                         + " | " + " / ".join(str(r["measurements"][c]) for c in columns)
                         + " | " + " / ".join(f"{r['search_s'][c]:.0f}" for c in columns) + " |")
        gm = {c: gmean([r["speedup"][c] for r in rs]) for c in columns}
        lines.append("| **geometric mean** | " + " | ".join(f"**{gm[c]:.2f}x**" for c in columns) + " | | |")
        if "exec" in columns:
            lines.append("| ratio to exec | " + " | ".join(f"{100 * gm[c] / gm['exec']:.0f}%" for c in columns)
                         + " | | |")
        wall = {c: statistics.median(r["search_s"][c] for r in rs) for c in columns}
        lines.append("| median search s | " + " | ".join(f"{wall[c]:.0f}" for c in columns) + " | | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=["bench", "selection", "c"],
                    help="groups (bench, selection, c) or kernel names of them")
    ap.add_argument("--budgets", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--strategies", nargs="+", default=["rounds"], choices=["rounds", "staged"])
    ap.add_argument("--no-exec", action="store_true", help="leave execution-based search out")
    ap.add_argument("--without-local", action="store_true",
                    help="also run each adaptive search without its local phase (columns ...-nolocal)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="harnesses that measure every column's picks side by side (each in another order); a "
                         "pick's speedup is its median over them (one harness: parallel runs moved 10-30%%)")
    ap.add_argument("--model", default=str(default_model()), help="cost model (default: the one shipped for this CPU)")
    ap.add_argument("--redo", action="store_true",
                    help="search again the kernels OUT.jsonl holds, taking beam's and exec's searches (not their "
                         "measurements) from their rows when measured on this machine")
    ap.add_argument("--out", default=str(ROOT / "bench" / "ADAPTIVE.md"))
    ap.add_argument("--pause-file", type=Path,
                    help="before each kernel, wait while this file exists (to use the machine for other work "
                         "without disturbing a measurement)")
    ap.add_argument("--report", action="store_true",
                    help="measure nothing: write OUT from the rows OUT.jsonl holds (a run stopped part way)")
    args = ap.parse_args()
    chosen = [g for g in args.kernels if g in ("bench", "selection", "c")]
    names = {k for k in args.kernels if k not in ("bench", "selection", "c")}
    model = CostModel.load(args.model)
    info = machine_info(Toolchain().describe())
    jsonl = Path(args.out).with_suffix(".jsonl")
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()] if jsonl.exists() else []
    done = {(r["group"], r["kernel"]): r for r in rows}
    for group, name, program in [] if args.report else programs(["bench", "selection", "c"] if names else chosen):
        old = done.get((group, name))
        if (old is not None and not args.redo) or not (group in chosen or name in names):
            continue
        while args.pause_file is not None and args.pause_file.exists():
            time.sleep(5)
        earlier = old if old is not None and old["machine"] == fingerprint(info) else None
        t0 = time.time()
        row = {"group": group, "kernel": name,
               **bench_kernel(program, model, sorted(args.budgets), args.strategies, earlier,
                              exec_search=not args.no_exec, without_local=args.without_local,
                              repeats=args.repeats),
               "wall_s": time.time() - t0, "machine": fingerprint(info)}
        if earlier is not None:
            row["wall_s"] += sum(earlier["search_s"].get(m, 0.0) for m in ("beam", "exec") if m in row["picks"])
        rows = [r for r in rows if r is not old] + [row]
        write_rows(jsonl, rows)
        print(group, name, {c: round(v, 2) for c, v in row["speedup"].items()}, f"{row['wall_s']:.0f} s", flush=True)
    columns = ["beam"] + ([] if args.no_exec else ["exec"]) + [
        f"{st}-{b}{v}" for st in args.strategies for b in sorted(args.budgets)
        for v in ["", *(["-nolocal"] if args.without_local else [])]]
    rows = [r for r in rows if all(c in r["speedup"] for c in columns)]
    commit = head_commit()
    header = ("# Adaptive search against beam and exec\n\n"
              f"`python bench/adaptive.py --kernels {' '.join(args.kernels)} "
              f"--budgets {' '.join(map(str, sorted(args.budgets)))} --strategies {' '.join(args.strategies)}"
              f"{' --no-exec' if args.no_exec else ''}{' --without-local' if args.without_local else ''}` "
              f"({time.strftime('%Y-%m-%d')}, commit {commit}, "
              f"{sum(r['wall_s'] for r in rows) / 60:.0f} min in all). Machine: {info['cpu']}, {info['cores']} cores, "
              f"{info['compiler']} (fingerprint {fingerprint(info)}); model trained on: "
              f"{', '.join(sorted(card_cpus(Path(args.model)))) or 'unknown'}. Each column's picks measured side "
              f"by side, per kernel in {args.repeats} harness(es) (a pick's speedup: its median); speedups "
              f"over the unscheduled program (gcc -O3 -march=native "
              f"-fopenmp), verified. Raw rows: `{jsonl.name}`.\n")
    Path(args.out).write_text(header + table(rows, columns))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
