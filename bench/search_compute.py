"""The time the default search (`loopcost optimize`: adaptive, 48 measurements) spends on its own work,
measuring aside: candidates, legality, features, the cost model and its updates.

    python bench/search_compute.py [--kernels gemm 2mm ...] [--size bench] [--repeats 1]
                                   [--trees DIR DIR ...] [--out bench/SEARCH-COMPUTE.md]

Each kernel is searched with the shipped model of ``--cpu`` (this machine's CPU kind) and a stand-in runner
that answers at once with a speedup drawn from a hash of the schedule's text, so that every run explores
the same schedules and the time is the search's alone. With ``--trees`` (checkouts of other commits, e.g.
``git worktree add /tmp/old HEAD~3``), each tree searches in its own process, the trees alternating kernel
by kernel and repeat by repeat: commits timed side by side in one run; the schedules each one measured
are compared too (a change that only makes the search faster explores the same ones).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

KERNEL_NAMES = ("gemm", "2mm", "doitgen", "conv2d", "jacobi-2d", "heat-3d", "atax")
HERE = Path(__file__).resolve()


class StandIn:
    """A runner that measures nothing: each schedule's speedup is a hash of its text (0.25x to 4x), the
    unscheduled program's 1x; every run is 'verified'."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def measure(self, states, *, timing=None, reference=None, seed=0, timeout=None, labels=None):
        from loopcost.runner.measurement import Measurement

        self.labels += labels
        out = []
        for label in labels:
            h = int.from_bytes(hashlib.sha256(label.encode()).digest()[:4], "big") / 2**32
            speed = 1.0 if not label else 4.0 ** (2 * h - 1)
            out.append(Measurement(label, (1.0 / speed,) * 2, (1.0, 1.0), True))
        return out


def one(kernel: str, size: str, cpu: str) -> dict:
    """Search ``kernel`` once in this process; its wall time and what it measured."""
    import loopcost
    from loopcost.costmodel.model import CostModel
    from loopcost.kernels import KERNELS
    from loopcost.paths import shipped_for
    from loopcost.search.optimize import optimize

    model = CostModel.load(shipped_for(cpu).model)
    program = KERNELS[kernel].program(size)
    runner = StandIn()
    t = time.perf_counter()
    r = optimize(program, method="adaptive", model=model, measure=False, runner=runner)
    return {"kernel": kernel, "seconds": time.perf_counter() - t, "scored": r.candidates_scored,
            "measured": len(runner.labels), "best": str(r.schedule),
            "explored": hashlib.sha256("\n".join(runner.labels).encode()).hexdigest()[:16],
            "source": loopcost.__file__}


def run_tree(tree: Path, kernel: str, size: str, cpu: str) -> dict:
    """``one`` in a fresh process with ``tree``'s loopcost."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = f"import sys; sys.path.insert(0, {str(HERE.parent)!r}); import search_compute as s, json; " \
           f"print(json.dumps(s.one({kernel!r}, {size!r}, {cpu!r})))"
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{tree}: {kernel}: {r.stderr[-2000:]}")
    row = json.loads(r.stdout.strip().splitlines()[-1])
    if not Path(row["source"]).resolve().is_relative_to(tree):  # an installed loopcost came first
        raise SystemExit(f"{tree}: the search ran {row['source']}, not this tree's loopcost")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=list(KERNEL_NAMES))
    ap.add_argument("--size", default="bench")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cpu", default=None,
                    help="whose shipped model scores, the same for every tree (default: this machine's CPU)")
    ap.add_argument("--trees", nargs="+", type=Path, default=[HERE.parent.parent],
                    help="source trees to compare (default: this one)")
    ap.add_argument("--out", type=Path, default=None, help="write the table here (markdown) and rows to .jsonl")
    a = ap.parse_args()
    if a.cpu is None:
        from loopcost.database.fingerprint import cpu_model

        a.cpu = cpu_model()
    rows = []
    for kernel in a.kernels:
        for rep in range(a.repeats):
            for tree in a.trees:
                row = {"tree": str(tree), "repeat": rep, **run_tree(tree.resolve(), kernel, a.size, a.cpu)}
                rows.append(row)
                print(f"{kernel:10s} {tree}  {row['seconds']:7.1f} s  {row['scored']} scored  best {row['best']}",
                      file=sys.stderr, flush=True)
    lines = table(rows, a.trees, a.kernels)
    print("\n".join(lines))
    if a.out:
        head = [f"`python bench/search_compute.py {' '.join(sys.argv[1:])}`, {time.strftime('%Y-%m-%d')}", ""]
        a.out.write_text("\n".join(head + lines) + "\n")
        a.out.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def table(rows: list[dict], trees: list[Path], kernels: list[str]) -> list[str]:
    """Median seconds per kernel and tree, each tree's ratio to the first, and whether every run measured
    the same schedules in the same order."""
    med = {(k, str(t)): statistics.median(r["seconds"] for r in rows if r["kernel"] == k and r["tree"] == str(t))
           for k in kernels for t in trees}
    head = "| kernel | " + " | ".join(f"{t} (s)" for t in trees) + " | " + \
           " | ".join(f"{t} / {trees[0]}" for t in trees[1:]) + " | same schedules |"
    lines = [head, "|---" * (2 * len(trees) + 1) + "|"]
    for k in kernels:
        explored = {r["explored"] for r in rows if r["kernel"] == k}
        ratios = [med[k, str(t)] / med[k, str(trees[0])] for t in trees[1:]]
        lines.append(f"| {k} | " + " | ".join(f"{med[k, str(t)]:.1f}" for t in trees) + " | " +
                     " | ".join(f"{x:.2f}" for x in ratios) + f" | {'yes' if len(explored) == 1 else 'no'} |")
    totals = [sum(med[k, str(t)] for k in kernels) for t in trees]
    lines.append("| **all** | " + " | ".join(f"{x:.1f}" for x in totals) + " | " +
                 " | ".join(f"{x / totals[0]:.2f}" for x in totals[1:]) + " | |")
    return lines


if __name__ == "__main__":
    main()
