"""Unscheduled time of every library kernel at its benchmark size, and compile times.

    python bench/kernel_times.py [--runs 5] [--json out.json]

Compiles with an empty cache (so every compile is real), then runs each kernel
alone: median of --runs timed runs after one warm-up, verified against itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from loopcost.codegen.compiler import Toolchain, compile_c
from loopcost.codegen.harness import harness_c
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner.local import run_binary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["LOOPCOST_CACHE_DIR"] = cache
        print(f"toolchain: {Toolchain().describe()}")
        print("| kernel | bench sizes | compile (s) | median (s) | min (s) | runs |")
        print("|---|---|---|---|---|---|")
        for name in sorted(KERNELS):
            k = KERNELS[name]
            src = harness_c(ProgramState.initial(k.program("bench")))
            t0 = time.perf_counter()
            exe = compile_c(src)
            compile_s = time.perf_counter() - t0
            res = run_binary(exe, runs=a.runs, warmup=1, timeout=600)
            sizes = ", ".join(f"{s}={v}" for s, v in k.sizes["bench"].items())
            if not res.ok:
                print(f"| {name} | {sizes} | {compile_s:.3f} | error: {res.error} | | |")
                continue
            rows.append({"kernel": name, "sizes": k.sizes["bench"], "compile_s": compile_s,
                         "median_s": res.median, "min_s": res.min, "times_s": list(res.times)})
            print(f"| {name} | {sizes} | {compile_s:.3f} | {res.median:.4f} | {res.min:.4f} | {len(res.times)} |",
                  flush=True)
    cs = [r["compile_s"] for r in rows]
    print(f"\ncompile time: median {statistics.median(cs):.3f} s, min {min(cs):.3f} s, max {max(cs):.3f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
