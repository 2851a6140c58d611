"""PolyBench/C 4.2.1 as distributed: every kernel read unmodified, optimized, emitted, checked on the file's
own inputs and timed against the original function under gcc -O3 and under clang-16 with Polly.

    python bench/polybench.py PATH_TO_POLYBENCH [--dataset LARGE_DATASET] [--kernels gemm 2mm]

PolyBench's code is not part of loopcost: give the path of a checkout (``utilities/`` and the kernel
folders). Each kernel is read with ``-I utilities -D DATASET`` (MEDIUM_DATASET for floyd-warshall and
seidel-2d, whose LARGE runs take minutes) and no ``--param``: the sizes come from the file's own call of
the kernel. Inputs come from the file's ``init_array`` (where those leave an output as it was, a
vacuous check, from loopcost's random fill, and the row says so). The search is ``optimize``'s default
(``--search``); then the emitted function, the original compiled by clang-16 -O3 with Polly, and with
Polly's OpenMP parallelization, are each linked beside the original compiled by gcc -O3 -march=native
into one harness, verified against it and timed (median of ``--runs``). Needs clang-16 with Polly
(installed from Debian when the script runs as root). Rows go to ``OUT.jsonl`` as kernels finish; a rerun
skips the kernels it holds. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from polly import CLANG, POLLY, POLLY_PAR, ensure_polly
from report import default_model, head_commit, write_rows

from loopcost.codegen.compiler import Toolchain
from loopcost.costmodel.model import CostModel
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.errors import LoopcostError, VacuousCheckError
from loopcost.frontend import load_c
from loopcost.frontend.dropin import choose_drop_in
from loopcost.frontend.inputs import user_init
from loopcost.frontend.linkcheck import Build, link_check, original
from loopcost.runner import LocalRunner
from loopcost.search.optimize import optimize

ROOT = Path(__file__).resolve().parent.parent
#: kernels whose LARGE dataset runs for minutes: measured at MEDIUM
MEDIUM = ("floyd-warshall", "seidel-2d")


def kernel_files(polybench: Path) -> list[Path]:
    """The 30 kernel files of a PolyBench/C checkout (``utilities`` and the ``.orig`` variants left out)."""
    return sorted(p for p in polybench.rglob("*.c") if "utilities" not in p.parts and not p.name.endswith(".orig.c"))


def bench_kernel(path: Path, polybench: Path, dataset: str, search: str, model: CostModel | None, runs: int) -> dict:
    """One row: the kernel read, optimized and checked, every column timed beside the gcc -O3 original."""
    defines = {dataset: ""}
    k = load_c(path, include_dirs=[polybench / "utilities"], defines=defines)
    init = user_init(k, None, defines)
    inputs = init.label if init else "random"
    t0 = time.perf_counter()
    try:
        r = optimize(k.program, method=search, model=model, runner=LocalRunner(init=init))
    except VacuousCheckError as e:  # the file's own inputs check nothing (heat-3d's are linear)
        init, inputs = None, f"random (the file's own: {e})"
        r = optimize(k.program, method=search, model=model)
    wall = time.perf_counter() - t0
    # what `loopcost optimize --emit-c` writes (the original, unchanged, when no candidate beat it), timed again below
    emitted, check = choose_drop_in(k, r.measured, defines, init=init)
    row = {"kernel": path.stem, "dataset": dataset, "sizes": k.specialized, "inputs": inputs,
           "schedule": str(r.schedule), "written": check["schedule"], "search": search, "search_s": wall,
           "measurements": r.measurements, "schedule_alone": r.measured_speedup, "drop_in": check, "columns": {}}
    source = k.source.path.read_text()
    columns = {"loopcost": Build(emitted), "polly": Build(source, CLANG, POLLY),
               "polly_parallel": Build(source, CLANG, POLLY_PAR)}
    for name, candidate in columns.items():
        m = link_check(k, candidate, reference=original(k), runs=runs, defines=defines, init=init)
        row["columns"][name] = {"speedup": m.speedup, "verified": m.verified, "error": m.error,
                                "max_rel_error": m.max_rel_error, "times": list(m.times),
                                "gcc_times": list(m.reference_times)}
    return row


def machines(rows: list[dict]) -> str:
    """A line per machine that measured rows: its CPU, cores, compilers, fingerprint and kernels."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["machine"], []).append(r)
    lines = []
    for fp, rs in by.items():
        i = rs[0].get("machine_info", {})
        commits = ", ".join(sorted({r.get("commit", "?") for r in rs}))
        lines.append(f"- {i.get('cpu', '?')}, {i.get('cores', '?')} cores, {i.get('compiler', '?')}, {CLANG} "
                     f"(fingerprint {fp}): {len(rs)} kernels, measured at commit {commits}")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    """Markdown: a row per kernel (the CPU that measured it), then each column's geometric mean, per CPU too
    when rows come from several."""
    def cell(c: dict) -> str:
        return f"{c['speedup']:.2f}x" if c["verified"] and c["speedup"] else "not verified"

    def cpu(r: dict) -> str:
        return r.get("machine_info", {}).get("cpu", r["machine"])

    lines = ["| kernel | CPU | dataset | inputs | loopcost schedule | measured | search s | loopcost | Polly | "
             "Polly parallel | gcc -O3 s |", "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c = r["columns"]
        gcc = statistics.median(c["loopcost"]["gcc_times"]) if c["loopcost"]["gcc_times"] else float("nan")
        inputs = "own" if r["inputs"].endswith("()") else "random"
        lines.append(f"| {r['kernel']} | {cpu(r)} | {r['dataset'].removesuffix('_DATASET')} | {inputs} | "
                     f"{_written(r)} | {r['measurements']} | {r['search_s']:.0f} | "
                     f"{cell(c['loopcost'])} | {cell(c['polly'])} | {cell(c['polly_parallel'])} | {gcc:.3f} |")
    groups = {"": rows} | ({cpu(r): [x for x in rows if cpu(x) == cpu(r)] for r in rows}
                           if len({cpu(r) for r in rows}) > 1 else {})
    for label, rs in groups.items():
        for name in ("loopcost", "polly", "polly_parallel"):
            vals = [r["columns"][name]["speedup"] for r in rs
                    if r["columns"][name]["verified"] and r["columns"][name]["speedup"]]
            if vals:
                lines.append(f"\ngeometric mean, {name}{f' on {label}' if label else ''}: "
                             f"**{statistics.geometric_mean(vals):.2f}x** over gcc -O3 "
                             f"({len(vals)} of {len(rs)} kernels verified)")
    return "\n".join(lines) + "\n"


def _written(r: dict) -> str:
    """The schedule of the function written (rows before the drop-in choice: the search's best)."""
    if "written" not in r:
        return f"`{r['schedule'] or '(none)'}`"
    return "the original (no candidate beat it)" if r["written"] is None else f"`{r['written'] or '(none)'}`"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("polybench", type=Path, help="a PolyBench/C 4.2.1 checkout")
    ap.add_argument("--dataset", default="LARGE_DATASET")
    ap.add_argument("--kernels", nargs="*", default=None, help="kernel names (default: all 30)")
    ap.add_argument("--search", default="adaptive", choices=["adaptive", "beam", "exec"])
    ap.add_argument("--model", default=str(default_model()), help="cost model (default: the one shipped for this CPU)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "POLYBENCH.md"))
    ap.add_argument("--pause-file", type=Path, help="before each kernel, wait while this file exists")
    ap.add_argument("--report", action="store_true", help="only write the table from the rows measured so far")
    args = ap.parse_args()
    if not (args.polybench / "utilities" / "polybench.h").is_file():
        raise SystemExit(f"{args.polybench}: not a PolyBench/C checkout (no utilities/polybench.h)")
    info = machine_info(Toolchain().describe())
    jsonl = Path(args.out).with_suffix(".jsonl")
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()] if jsonl.exists() else []
    done = {r["kernel"] for r in rows}
    if not args.report:
        ensure_polly()
    model = None if args.search == "exec" or args.report else CostModel.load(args.model)
    for path in kernel_files(args.polybench):
        if args.report or path.stem in done or (args.kernels and path.stem not in args.kernels):
            continue
        while args.pause_file is not None and args.pause_file.exists():
            time.sleep(5)
        dataset = "MEDIUM_DATASET" if path.stem in MEDIUM and args.dataset == "LARGE_DATASET" else args.dataset
        try:
            row = bench_kernel(path, args.polybench, dataset, args.search, model, args.runs)
        except LoopcostError as e:
            row = {"kernel": path.stem, "dataset": dataset, "error": str(e)}
        rows.append({**row, "machine": fingerprint(info), "machine_info": info,
                     "commit": head_commit()})
        write_rows(jsonl, rows)
        print(path.stem, {c: v.get("speedup") for c, v in row.get("columns", {}).items()} or row.get("error"),
              flush=True)
    ok = [r for r in rows if "columns" in r]
    left = len(kernel_files(args.polybench)) - len(rows)
    failed = "".join(f"\n- {r['kernel']}: {r['error']}" for r in rows if "error" in r)
    header = (f"# PolyBench/C 4.2.1 as distributed: loopcost and Polly over gcc -O3\n\n"
              f"`python bench/polybench.py PATH --dataset {args.dataset} --search {args.search}` "
              f"({time.strftime('%Y-%m-%d')}, commit {head_commit()}), each row on the machine it names:\n\n"
              f"{machines(ok)}\n\nEach file read unmodified "
              f"with `-I utilities -D DATASET`, sizes from its own `main`, inputs from its own `init_array` "
              f"(\"random\" where those leave an output as it was); the search with the model shipped for the "
              f"row's CPU; speedups over the original function under "
              f"gcc -O3 -march=native, side by side in one harness on one machine, median of {args.runs} runs, "
              f"every column's outputs compared with the original's first. Raw rows: `{jsonl.name}`.\n\n")
    Path(args.out).write_text(header + table(ok) + (f"\nNot benchmarked:{failed}\n" if failed else "")
                              + (f"\n{left} kernel{'s' * (left > 1)} not measured yet: the run stopped part way.\n"
                                 if left else ""))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
