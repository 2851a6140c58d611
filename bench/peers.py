"""loopcost against what users would pick instead: TVM MetaSchedule, Halide's autoschedulers, clang with
Polly, and OpenBLAS, side by side on the same kernels, shapes and float64 inputs.

    python bench/peers.py [--kernels gemm conv2d] [--systems loopcost polly tvm] [--size bench]

The peers come from the optional extra (``pip install -e '.[peers]'``: apache-tvm, xgboost, halide); one
that is not installed is skipped and the report says so. For each kernel of the library:

1. the unscheduled program runs once in loopcost's harness on seeded random inputs and dumps them with its
   outputs; every system gets those inputs, and its outputs are compared with those (max relative error);
2. loopcost: the adaptive search (``optimize``'s default) at each ``--budgets``, each with the number of
   schedules it measured; clang -O3, Polly and Polly with OpenMP on the generated unscheduled C;
   NumPy (OpenBLAS) where the kernel's reference is BLAS calls; TVM MetaSchedule at each ``--trials``;
   Halide's Adams2019, Mullapudi2016 and Li2018 autoschedulers, given the core count;
3. each system's result is timed alone, the median of ``--runs`` runs after a warm-up, every core for
   everyone (OpenMP, TVM's and Halide's thread pools, OpenBLAS).

Rows go to ``OUT.jsonl`` as kernels finish, with every raw time; a rerun skips the kernels it holds. Run it
on a quiet machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from polly import CLANG, COMPILERS, ensure_polly
from report import default_model, head_commit, write_rows

from loopcost.codegen.compiler import Toolchain, compile_c
from loopcost.codegen.harness import harness_c
from loopcost.costmodel.model import CostModel
from loopcost.database.fingerprint import fingerprint, machine_info
from loopcost.ir.program import Program
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner.process import Timing, run_variants
from loopcost.runner.verify import read_dump
from loopcost.search.adaptive import AdaptiveOptions
from loopcost.search.optimize import optimize
from loopcost.transforms.schedule import Schedule

ROOT = Path(__file__).resolve().parent.parent
#: the kernels of the table: where each peer is strong somewhere
KERNELS_DEFAULT = ("gemm", "2mm", "conv2d", "depthwise-conv", "jacobi-2d", "heat-3d", "atax")
#: kernels whose NumPy reference is BLAS calls (OpenBLAS)
BLAS = ("gemm", "2mm", "3mm", "atax", "mvt", "bicg", "gesummv")
#: Python modules each peer needs
PEERS = {"tvm": ("tvm", "xgboost"), "halide": ("halide",)}
#: the adaptive search's budget when ``optimize`` is given none
DEFAULT_BUDGET = AdaptiveOptions().measure_budget


def installed(peer: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in PEERS[peer])


def max_rel_error(p: Program, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> float:
    """The largest error of any output element, relative to the largest magnitude of that output."""
    worst = 0.0
    for b in p.outputs():
        w, g = want[b.name].astype(np.float64), np.asarray(got[b.name], dtype=np.float64)
        if g.shape != w.shape:
            return math.inf
        worst = max(worst, float(np.max(np.abs(g - w))) / max(float(np.max(np.abs(w))), 1e-300))
    return worst if math.isfinite(worst) else math.inf


class Reference:
    """The unscheduled program's inputs and outputs on seeded random data, from one run of its harness."""

    def __init__(self, program: Program, folder: Path, seed: int = 0):
        self.program = program
        exe = compile_c(harness_c(ProgramState.initial(program)))
        r = run_variants(exe, [0], timing=Timing(1, 0), seed=seed, dump_prefix=str(folder / "ref"), timeout=3600)[0]
        if not r.ok:
            raise SystemExit(f"{program.name}: the unscheduled program failed: {r.error}")
        self.inputs = read_dump(program, folder / "ref.in")
        self.outputs = read_dump(program, folder / "ref.out")
        self.folder = folder

    def check(self, got: dict[str, np.ndarray]) -> float:
        return max_rel_error(self.program, got, self.outputs)


def timed_c(ref: Reference, state: ProgramState, toolchain: Toolchain, runs: int, tag: str) -> dict:
    """A schedule's C (or the unscheduled C under another compiler): its outputs checked, then timed."""
    exe = compile_c(harness_c(state), toolchain)
    prefix = str(ref.folder / tag)
    first = run_variants(exe, [0], timing=Timing(1, 0), dump_prefix=prefix, timeout=3600)[0]
    if not first.ok:
        return {"error": first.error}
    err = ref.check(read_dump(ref.program, prefix + ".out"))
    r = run_variants(exe, [0], timing=Timing(runs, 1), timeout=3600)[0]
    return {"times": list(r.times), "max_rel_error": err} if r.ok else {"error": r.error}


def loopcost_columns(ref: Reference, budgets: list[int], runs: int) -> dict[str, dict]:
    """The adaptive search (``optimize``'s default, at 48 measurements) at each budget, and the unscheduled
    program."""
    program, model = ref.program, CostModel.load(default_model())
    cols = {"loopcost unscheduled": {"schedule": "", "measurements": 0, "tuning_s": 0.0}}
    for b in budgets:
        r = optimize(program, method="adaptive", model=model, adaptive=AdaptiveOptions(measure_budget=b))
        label = f"loopcost adaptive-{b}" + (" (default)" if b == DEFAULT_BUDGET else "")
        cols[label] = {"schedule": str(r.schedule), "measurements": r.measurements, "tuning_s": r.search_time_s}
    for k, c in enumerate(cols.values()):
        state = Schedule.parse(c["schedule"]).apply(program)
        c |= {"system": "loopcost"} | timed_c(ref, state, Toolchain(), runs, f"loopcost-{k}")
    return cols


def compiler_columns(ref: Reference, runs: int) -> dict[str, dict]:
    """clang -O3, Polly and Polly with OpenMP on the generated unscheduled C."""
    state = ProgramState.initial(ref.program)
    return {name: {"system": "clang", "schedule": " ".join(flags), "measurements": 0, "tuning_s": 0.0}
            | timed_c(ref, state, Toolchain(CLANG, flags), runs, f"clang-{k}")
            for k, (name, flags) in enumerate(COMPILERS.items())}


def numpy_column(ref: Reference, sizes: dict, runs: int) -> dict[str, dict]:
    """The kernel's NumPy reference, whose products are OpenBLAS calls."""
    def bind(arrays: dict[str, np.ndarray]) -> tuple[Callable[[], None], Callable[[], dict]]:
        return (lambda: KERNELS[ref.program.name].reference(arrays, **sizes)), (lambda: arrays)

    return {"NumPy (OpenBLAS)": {"system": "numpy", "schedule": "", "measurements": 0, "tuning_s": 0.0}
            | peer_column(ref, bind, runs)}


def peer_column(ref: Reference, bind: Callable, runs: int) -> dict:
    """A compiled kernel (``bind(arrays) -> (run, outputs)``): checked after one run on fresh inputs, then
    timed on others, its arrays bound once (a run is the kernel's call, nothing copied)."""
    run, outputs = bind({n: a.copy() for n, a in ref.inputs.items()})
    run()
    err = ref.check(outputs())
    run, _ = bind({n: a.copy() for n, a in ref.inputs.items()})
    times = []
    for k in range(runs + 1):
        t0 = time.perf_counter()
        run()
        if k:
            times.append(time.perf_counter() - t0)
    return {"times": times, "max_rel_error": err}


def tvm_columns(ref: Reference, sizes: dict, trials: list[int], runs: int) -> dict[str, dict]:
    import peers_tvm

    out = {}
    for n in trials:
        t0 = time.perf_counter()
        tuned = peers_tvm.tune(ref.program.name, sizes, n, ref.folder / f"tvm-{n}")
        out[f"TVM MetaSchedule-{n}"] = {"system": "tvm", "schedule": tuned.schedule, "measurements": tuned.measured,
                                        "tuning_s": time.perf_counter() - t0} | peer_column(ref, tuned.bind, runs)
    return out


def halide_columns(ref: Reference, sizes: dict, runs: int) -> dict[str, dict]:
    import peers_halide

    out = {}
    for scheduler in peers_halide.AUTOSCHEDULERS:
        t0 = time.perf_counter()
        built = peers_halide.build(ref.program.name, sizes, scheduler)
        out[f"Halide {scheduler}"] = {"system": "halide", "schedule": built.schedule, "measurements": 0,
                                      "tuning_s": time.perf_counter() - t0} | peer_column(ref, built.bind, runs)
    return out


def bench_kernel(name: str, size: str, systems: list[str], args: argparse.Namespace) -> dict:
    sizes = KERNELS[name].sizes[size]
    program = KERNELS[name].program(size)
    with tempfile.TemporaryDirectory(prefix="loopcost-peers-") as d:
        ref = Reference(program, Path(d))
        cols: dict[str, dict] = {}
        if "loopcost" in systems:
            cols |= loopcost_columns(ref, args.budgets, args.runs)
        if "polly" in systems:
            cols |= compiler_columns(ref, args.runs)
        if "numpy" in systems and name in BLAS:
            cols |= numpy_column(ref, sizes, args.runs)
        if "tvm" in systems:
            cols |= tvm_columns(ref, sizes, args.trials, args.runs)
        if "halide" in systems:
            cols |= halide_columns(ref, sizes, args.runs)
    for c in cols.values():
        c["seconds"] = statistics.median(c["times"]) if c.get("times") else None
        c["verified"] = c.get("max_rel_error", math.inf) <= args.rtol
    return {"kernel": name, "size": size, "sizes": sizes, "columns": cols}


def table(rows: list[dict]) -> str:
    lines = ["| kernel | system | schedule | seconds | of the best | max rel. error | measurements | tuning s |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        ok = [c["seconds"] for c in r["columns"].values() if c["verified"] and c["seconds"]]
        best = min(ok) if ok else math.nan
        for name, c in sorted(r["columns"].items(), key=lambda kv: kv[1]["seconds"] or math.inf):
            sched = c["schedule"] if len(c["schedule"]) < 60 else c["schedule"][:57] + "..."
            if c.get("error"):
                lines.append(f"| {r['kernel']} | {name} | `{sched}` | failed: {c['error'][:80]} | | | | |")
                continue
            ratio = f"{best / c['seconds']:.2f}" if c["verified"] else "wrong"
            lines.append(f"| {r['kernel']} | {name} | `{sched}` | {c['seconds']:.4f} | {ratio} | "
                         f"{c['max_rel_error']:.1e} | {c['measurements']} | {c['tuning_s']:.0f} |")
    lines.append("\n## The schedule each system found\n")
    for r in rows:
        for name, c in r["columns"].items():
            if c["system"] in ("loopcost", "tvm", "halide") and c["schedule"]:
                text = c["schedule"] if len(c["schedule"]) <= 400 else c["schedule"][:397] + "..."
                lines.append(f"- {r['kernel']}, {name}: `{text}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS_DEFAULT), choices=sorted(KERNELS))
    ap.add_argument("--systems", nargs="+", default=["loopcost", "polly", "numpy", "tvm", "halide"],
                    choices=["loopcost", "polly", "numpy", "tvm", "halide"])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--budgets", nargs="*", type=int, default=sorted({16, 32, DEFAULT_BUDGET, 64}),
                    help="adaptive search budgets")
    ap.add_argument("--trials", nargs="*", type=int, default=[64, 256], help="MetaSchedule trial counts")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=1e-9, help="largest relative error an output may have")
    ap.add_argument("--out", default=str(ROOT / "bench" / "PEERS.md"))
    ap.add_argument("--pause-file", type=Path, help="before each kernel, wait while this file exists")
    args = ap.parse_args()
    skipped = {p: "not installed (pip install -e '.[peers]')" for p in PEERS if p in args.systems and not installed(p)}
    if "polly" in args.systems and shutil.which(CLANG) is None:
        if os.geteuid() == 0:
            ensure_polly()
        else:
            skipped["polly"] = f"{CLANG} not found (apt-get install clang-16 libpolly-16-dev libomp-16-dev)"
    systems = [s for s in args.systems if s not in skipped]
    for p, why in skipped.items():
        print(f"skipping {p}: {why}", flush=True)
    info = machine_info(Toolchain().describe())
    jsonl = Path(args.out).with_suffix(".jsonl")
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()] if jsonl.exists() else []
    done = {r["kernel"] for r in rows}
    for name in args.kernels:
        if name in done:
            continue
        while args.pause_file is not None and args.pause_file.exists():
            time.sleep(5)
        t0 = time.time()
        row = bench_kernel(name, args.size, systems, args)
        rows.append(row | {"wall_s": time.time() - t0, "machine": fingerprint(info), "threads": os.cpu_count()})
        write_rows(jsonl, rows)
        print(name, {c: v["seconds"] for c, v in row["columns"].items()}, flush=True)
    versions = peer_versions(systems)
    header = (f"# loopcost and its peers, side by side\n\n`python bench/peers.py --size {args.size}` "
              f"({time.strftime('%Y-%m-%d')}, commit {head_commit()}). Machine: {info['cpu']}, {info['cores']} "
              f"cores, {info['compiler']} (fingerprint {fingerprint(info)}); {versions}. float64, the same "
              f"inputs for every system (those of loopcost's harness), outputs compared with the unscheduled "
              f"program's (verified below a relative error of {args.rtol:g}); median of {args.runs} runs after a "
              f"warm-up, every core for every system. \"of the best\": the best verified time over this one. "
              f"Raw rows: `{jsonl.name}`."
              + "".join(f" Left out: {p}, {why}." for p, why in skipped.items()) + "\n\n")
    Path(args.out).write_text(header + table(rows))
    print(f"wrote {args.out}")


def peer_versions(systems: list[str]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = [f"{CLANG}"] if "polly" in systems else []
    for dist in ("apache-tvm", "apache-tvm-ffi", "xgboost", "xgboost-cpu", "halide", "numpy"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


if __name__ == "__main__":
    main()
