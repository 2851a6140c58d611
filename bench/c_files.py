"""Optimize the PolyBench-style C files in tests/c with loopcost and compare the emitted functions with
the originals under gcc -O3 and under Polly, every pair linked into one harness and timed side by side.

    python bench/c_files.py [--size bench] [--search beam --model loopcost/data/model.pt] [--out bench/c_files.md]

Needs clang-16 with Polly (``apt-get install clang-16 libpolly-16-dev libomp-16-dev``; the script
installs them when it runs as root and they are missing). Each column is a speedup over the original
function compiled with gcc -O3 -march=native, measured in the same harness beside it (median of
--runs); every candidate's arrays are compared with the original's first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from polly import CLANG, POLLY, POLLY_PAR, ensure_polly
from report import default_model

from loopcost.costmodel.model import CostModel
from loopcost.frontend import load_c
from loopcost.frontend.dropin import choose_drop_in
from loopcost.frontend.linkcheck import Build, link_check, original
from loopcost.frontend.parse import parse_c
from loopcost.kernels import KERNELS
from loopcost.search.optimize import optimize

ROOT = Path(__file__).resolve().parent.parent


def sizes_of(path: Path, size: str) -> tuple[dict[str, str], dict[str, int]]:
    """-D defines and --param values of a library kernel's C file at one of its sizes."""
    sizes = KERNELS[path.stem].sizes[size]
    defines = {name.rstrip("_").upper(): str(v) for name, v in sizes.items()}
    params = {n: int(defines[n.upper()]) for n in parse_c(path, defines=defines).int_params}
    return defines, params


def bench_file(path: Path, args, model) -> dict:
    defines, params = sizes_of(path, args.size)
    k = load_c(path, defines=defines, params=params)
    r = optimize(k.program, method=args.search, model=model, budget=args.budget, top_k=args.top_k)
    # what `loopcost optimize --emit-c` writes (the original, unchanged, when no candidate beat it), timed again below
    emitted, check = choose_drop_in(k, r.measured, defines)
    row = {"file": path.name, "schedule": str(r.schedule), "written": check["schedule"], "search_s": r.search_time_s,
           "harness_speedup": r.measured_speedup}
    columns = {"loopcost": emitted, "polly": Build(k.source.path.read_text(), CLANG, POLLY),
               "polly_parallel": Build(k.source.path.read_text(), CLANG, POLLY_PAR)}
    for name, cand in columns.items():
        chk = link_check(k, cand, reference=original(k), runs=args.runs, defines=defines)
        row[name] = chk.speedup
        row[f"{name}_error"] = chk.max_rel_error
        row[f"{name}_gcc_median_s"] = chk.reference_median
    return row


def table(rows: list[dict], header: str) -> str:
    def cell(v):
        return "wrong" if v is None else f"{v:.2f}x"

    lines = [header, "", "| file | loopcost schedule | search (s) | schedule alone | loopcost emitted | Polly | "
             "Polly parallel | gcc -O3 (s) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        written = r.get("written", r["schedule"])  # rows before the drop-in choice: the search's best
        shown = "the original (no candidate beat it)" if written is None else f"`{written or '(none)'}`"
        lines.append(f"| {r['file']} | {shown} | {r['search_s']:.1f} | "
                     f"{cell(r['harness_speedup'])} | {cell(r['loopcost'])} | {cell(r['polly'])} | "
                     f"{cell(r['polly_parallel'])} | {r['loopcost_gcc_median_s']:.3f} |")
    for col in ("harness_speedup", "loopcost", "polly", "polly_parallel"):
        vals = [r[col] for r in rows if r[col]]
        if vals:
            gm = statistics.geometric_mean(vals)
            lines.append(f"\ngeometric mean {col}: {gm:.2f}x over {len(vals)} files")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--search", default="beam", choices=["beam", "mcts", "random", "exec"])
    ap.add_argument("--model", default=str(default_model()), help="cost model (default: the one shipped for this CPU)")
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", nargs="*", default=None, help="stems of tests/c files (default: all library ones)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "c_files.md"))
    ap.add_argument("--from-log", default=None, help="only render the table from the JSON lines of an earlier run")
    args = ap.parse_args()
    if args.from_log:
        rows = [json.loads(ln) for ln in Path(args.from_log).read_text().splitlines() if ln.startswith("{")]
        Path(args.out).write_text(table(rows, header_of(args, None)))
        return
    ensure_polly()
    model = None if args.search == "exec" else CostModel.load(args.model)
    files = sorted(p for p in (ROOT / "tests" / "c").glob("*.c") if p.stem in KERNELS)
    if args.files:
        files = [p for p in files if p.stem in args.files]
    rows = []
    t0 = time.time()
    for path in files:
        row = bench_file(path, args, model)
        rows.append(row)
        print(json.dumps(row), flush=True)
    Path(args.out).write_text(table(rows, header_of(args, time.time() - t0)))
    print(f"wrote {args.out}")


def header_of(args, seconds: float | None) -> str:
    took = f", {seconds:.0f} s" if seconds is not None else ""
    model = "" if args.search == "exec" else f" --model {args.model}"
    return (f"# C files: loopcost's emitted function vs Polly, over gcc -O3\n\n"
            f"`python bench/c_files.py --size {args.size} --search {args.search}{model} --budget {args.budget} "
            f"--runs {args.runs}` ({time.strftime('%Y-%m-%d')}{took}). Speedups over the original function "
            f"compiled with gcc -O3 -march=native, median of {args.runs} runs each in one harness; "
            "\"wrong\" = results differ from the original. *Schedule alone*: the chosen schedule over the "
            "unscheduled program, both as loopcost's generated C (restrict, constant bounds), in loopcost's "
            "harness; *loopcost emitted*: the emitted drop-in function over the user's original function.")


if __name__ == "__main__":
    main()
