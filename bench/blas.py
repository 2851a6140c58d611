"""Gemm-class kernels against OpenBLAS: GFLOP/s of loopcost's schedules and of NumPy, side by side.

    python bench/blas.py [--kernels gemm 2mm 3mm doitgen] [--searches adaptive exec] [--polly]
                         [--schedule 'gemm=J(i,4) J(j,8)']

For each kernel at its benchmark size (float64, every core): the NumPy reference of the kernel (its
products are OpenBLAS dgemm calls), the unscheduled program, the best schedule of each search
(``adaptive``: ``loopcost optimize``'s default; ``exec``: execution-based beam search; each with its
measurement count and search time) and any hand schedule given with ``--schedule``. Then ``--rounds``
rounds of: NumPy timed (median of ``--runs`` after a warm-up), every schedule timed in one harness beside
the unscheduled program and verified, and with ``--polly`` the unscheduled C compiled by clang -O3, Polly
and Polly with OpenMP (one harness, gcc's build the reference; clang-16 installed where missing). A
column's time is the median over rounds. Rows go to ``OUT.jsonl`` with every raw time. Run it on a quiet
machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
from polly import COMPILERS, ensure_polly, measure_compilers
from report import default_model, head_commit, write_rows

from loopcost.codegen.compiler import Toolchain
from loopcost.costmodel.model import CostModel
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.errors import LoopcostError
from loopcost.ir.program import Program
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner import LocalRunner
from loopcost.runner.process import Timing
from loopcost.search.evaluator import MeasuringEvaluator
from loopcost.search.optimize import optimize
from loopcost.transforms.schedule import Schedule

ROOT = Path(__file__).resolve().parent.parent


def flops(program: Program) -> int:
    """Floating-point operations of one run: 2 per multiply-add of each product (the scalings are not
    counted: they are O(n^2))."""
    s = KERNELS[program.name].sizes["bench"]
    if program.name == "gemm":
        return 2 * s["ni"] * s["nj"] * s["nk"]
    if program.name == "2mm":
        return 2 * s["ni"] * s["nj"] * s["nk"] + 2 * s["ni"] * s["nl"] * s["nj"]
    if program.name == "3mm":
        return 2 * (s["ni"] * s["nj"] * s["nk"] + s["nj"] * s["nl"] * s["nm"] + s["ni"] * s["nl"] * s["nj"])
    if program.name == "doitgen":
        return 2 * s["nr"] * s["nq"] * s["np_"] ** 2
    raise SystemExit(f"no flop count for {program.name!r}: use gemm, 2mm, 3mm or doitgen")


def numpy_times(name: str, runs: int, seed: int = 0) -> list[float]:
    """Seconds of each of ``runs`` calls of the kernel's NumPy reference, after one untimed call."""
    program = KERNELS[name].program("bench")
    rng = np.random.default_rng(seed)
    arrays = {b.name: rng.random(b.shape) for b in program.buffers}
    sizes = KERNELS[name].sizes["bench"]
    out = []
    for k in range(runs + 1):
        work = {n: a.copy() for n, a in arrays.items()}
        t0 = time.perf_counter()
        KERNELS[name].reference(work, **sizes)
        if k:
            out.append(time.perf_counter() - t0)
    return out


def searched(program: Program, method: str) -> dict:
    """The best schedule a search found, its measurement count and wall time."""
    r = optimize(program, method=method, model=None if method == "exec" else CostModel.load(default_model()))
    return {"schedule": str(r.schedule), "measurements": r.measurements, "search_s": r.search_time_s}


def compiler_times(program: Program, runs: int) -> dict[str, list[float]]:
    """Seconds of each run of the unscheduled C compiled by each of ``COMPILERS``, in one harness whose
    reference is gcc's build (``polly.measure_compilers``); a configuration whose outputs differ from gcc's
    gets none."""
    ms = measure_compilers(ProgramState.initial(program), COMPILERS, runs)
    return {m.label: list(m.times) if m.verified else [] for m in ms if m.label in COMPILERS}


def bench_kernel(name: str, searches: list[str], hand: list[str], rounds: int, runs: int, polly: bool) -> dict:
    """Every column's schedule found or given, then ``rounds`` rounds of NumPy, the schedules and (``polly``)
    the compilers timed."""
    program = KERNELS[name].program("bench")
    columns: dict[str, dict] = {m: searched(program, m) for m in searches}
    columns |= {f"hand {k + 1}": {"schedule": s, "measurements": 1, "search_s": 0.0} for k, s in enumerate(hand)}
    texts = list(dict.fromkeys(c["schedule"] for c in columns.values()))
    states = [Schedule.parse(t).apply(program) for t in texts]
    raw: dict[str, list[list[float]]] = {"numpy": [], "unscheduled": [], **{t: [] for t in texts},
                                         **{c: [] for c in (COMPILERS if polly else ())}}
    verified = {t: True for t in texts}
    for _ in range(rounds):
        raw["numpy"].append(numpy_times(name, runs))
        ms = MeasuringEvaluator(LocalRunner(chunk=len(texts) or 1), timing=Timing(min_runs=runs)).measure(states, texts)
        raw["unscheduled"].append(list(ms[0].reference_times) if ms else [])
        for t, m in zip(texts, ms, strict=True):
            raw[t].append(list(m.times))
            verified[t] &= m.verified
        if polly:
            for c, times in compiler_times(program, runs).items():
                raw[c].append(times)
    med = {k: statistics.median(statistics.median(r) for r in v if r) for k, v in raw.items() if any(v)}
    gflops = {k: flops(program) / t / 1e9 for k, t in med.items()}
    return {"kernel": name, "columns": columns, "seconds": med, "gflops": gflops, "verified": verified,
            "raw_times": raw}


def table(rows: list[dict]) -> str:
    lines = ["| kernel | column | schedule | GFLOP/s | of OpenBLAS | seconds | verified | measurements | search s |",
             "|---|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        blas = r["gflops"]["numpy"]
        lines.append(f"| {r['kernel']} | NumPy (OpenBLAS) | | {blas:.1f} | 100% | {r['seconds']['numpy']:.4f} | | | |")
        lines.append(f"| {r['kernel']} | unscheduled | | {r['gflops']['unscheduled']:.1f} | "
                     f"{100 * r['gflops']['unscheduled'] / blas:.0f}% | {r['seconds']['unscheduled']:.4f} | yes | | |")
        for col, c in r["columns"].items():
            t = c["schedule"]
            ok = "yes" if r["verified"][t] else "NO"
            lines.append(f"| {r['kernel']} | {col} | `{t}` | {r['gflops'][t]:.1f} | "
                         f"{100 * r['gflops'][t] / blas:.0f}% | {r['seconds'][t]:.4f} | {ok} | "
                         f"{c['measurements']} | {c['search_s']:.0f} |")
        for c in COMPILERS:
            if c in r["gflops"]:
                lines.append(f"| {r['kernel']} | {c} (unscheduled C) | | {r['gflops'][c]:.1f} | "
                             f"{100 * r['gflops'][c] / blas:.0f}% | {r['seconds'][c]:.4f} | yes | | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=["gemm", "2mm"])
    ap.add_argument("--searches", nargs="*", default=["adaptive", "exec"], choices=["adaptive", "exec", "beam"])
    ap.add_argument("--schedule", action="append", default=[], metavar="KERNEL=SCHEDULE",
                    help="a hand schedule of a kernel (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--polly", action="store_true",
                    help="also time clang -O3, Polly and Polly with OpenMP on the unscheduled C")
    ap.add_argument("--out", default=str(ROOT / "bench" / "BLAS.md"))
    args = ap.parse_args()
    hand: dict[str, list[str]] = {}
    for item in args.schedule:
        name, _, text = item.partition("=")
        try:
            Schedule.parse(text).apply(KERNELS[name].program("small"))
        except (KeyError, LoopcostError) as e:
            raise SystemExit(f"--schedule {item!r}: {e}") from None
        hand.setdefault(name, []).append(text)
    if args.polly:
        ensure_polly()
    info = machine_info(Toolchain().describe())
    jsonl = Path(args.out).with_suffix(".jsonl")
    rows = []
    for name in args.kernels:
        t0 = time.time()
        row = bench_kernel(name, args.searches, hand.get(name, []), args.rounds, args.runs, args.polly)
        row |= {"wall_s": time.time() - t0, "machine": fingerprint(info), "threads": os.cpu_count()}
        rows.append(row)
        write_rows(jsonl, rows)  # kernel by kernel: a stop keeps the kernels done
        print(name, {k: round(v, 1) for k, v in row["gflops"].items()}, flush=True)
    commit = head_commit()
    header = (f"# Gemm-class kernels against OpenBLAS\n\n`python bench/blas.py --kernels {' '.join(args.kernels)} "
              f"--searches {' '.join(args.searches)}{' --polly' if args.polly else ''}"
              + "".join(f" --schedule '{s}'" for s in args.schedule)
              + f"` ({time.strftime('%Y-%m-%d')}, commit {commit}). Machine: {info['cpu']}, {info['cores']} cores, "
              f"{info['compiler']} (fingerprint {fingerprint(info)}); float64, bench sizes, every core for both "
              f"(OpenMP and OpenBLAS threads). Median of {args.rounds} rounds, each NumPy then the schedules in one "
              f"harness, {args.runs} timed runs each. Raw rows: `{jsonl.name}`.\n\n")
    Path(args.out).write_text(header + table(rows))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
