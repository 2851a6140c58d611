"""Unscheduled time of every library kernel at its benchmark size, and compile times.

    python bench/kernel_times.py [--runs 5] [--json out.json]

Compiles with an empty cache (so every compile is real), then runs each kernel
beside itself in one harness: median of --runs timed runs after one warm-up, verified.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile

from loopcost.codegen.compiler import Toolchain
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner import LocalRunner, Timing


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
        runner = LocalRunner(timeout=600)
        for name in sorted(KERNELS):
            k = KERNELS[name]
            m = runner.measure([ProgramState.initial(k.program("bench"))], timing=Timing(a.runs, 1))[0]
            sizes = ", ".join(f"{s}={v}" for s, v in k.sizes["bench"].items())
            if not m.verified:
                print(f"| {name} | {sizes} | {m.compile_s:.3f} | error: {m.error} | | |")
                continue
            rows.append({"kernel": name, "sizes": k.sizes["bench"], "compile_s": m.compile_s,
                         "median_s": m.median, "min_s": min(m.times), "times_s": list(m.times)})
            print(f"| {name} | {sizes} | {m.compile_s:.3f} | {m.median:.4f} | {min(m.times):.4f} | {len(m.times)} |",
                  flush=True)
    cs = [r["compile_s"] for r in rows]
    print(f"\ncompile time: median {statistics.median(cs):.3f} s, min {min(cs):.3f} s, max {max(cs):.3f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
