"""A model's error by what gcc does with the programs: where it vectorizes the unscheduled C, and whether a
schedule keeps that.

    python bench/gcc_vectorized.py --data DIR/data.npz --db loopcost/data/machines/amd-epyc/dataset.sqlite.xz \
        --model loopcost/data/machines/amd-epyc/model.pt [--split test] [--out F.md]

A schedule's speedup is over the unscheduled program, which gcc at ``-O3`` already optimizes: where it vectorizes
an outer loop (a matrix product's ``j`` loop around its ``k`` reduction) most schedules break that and run slower.
Each program of the split is compiled unscheduled once, to assembly, with ``-fopt-info-vec-optimized`` (for the
fixed target ``x86-64-v3`` on x86, so that any machine classifies alike), and classed by the loops gcc
vectorized: an innermost one, one with a loop inside (outer), both, none. Per class: the model's MAPE, share of
the summed error, Spearman per program. Then every schedule of the "outer only" programs (but parallel ones,
whose bodies gcc compiles apart) is compiled too: does gcc still vectorize as many inner and outer loops as it
did unscheduled? Per answer, the measured and predicted speedups. Compiles only: any machine, no quiet one.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from loopcost.codegen.c_source import kernel_file
from loopcost.costmodel.data import load
from loopcost.costmodel.model import CostModel
from loopcost.dataset.shipped import shipped_db
from loopcost.ir.program import Program
from loopcost.ir.state import ProgramState
from loopcost.transforms.schedule import Schedule

_VECTORIZED = re.compile(r"^<stdin>:(\d+):\d+: optimized: loop vectorized", re.M)
_FOR = re.compile(r"^(\s*)for \(")


def vectorized_loops(source: str) -> Counter:
    """How many loops gcc vectorizes in ``source``, by kind: ``inner`` (no loop in its body) or ``outer``."""
    target = ["-march=x86-64-v3"] if platform.machine() in ("x86_64", "AMD64") else []
    done = subprocess.run(["gcc", "-O3", *target, "-fopenmp", "-fopt-info-vec-optimized", "-S", "-o", "/dev/null",
                           "-x", "c", "-"], input=source, capture_output=True, text=True, check=True)
    lines = source.splitlines()
    kinds: Counter = Counter()
    for m in _VECTORIZED.finditer(done.stderr):
        at = int(m.group(1)) - 1
        head = _FOR.match(lines[at])
        if head is None:
            continue
        indent, inner = len(head.group(1)), True
        for line in lines[at + 1:]:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            inner = inner and _FOR.match(line) is None
        kinds["inner" if inner else "outer"] += 1
    return kinds


def program_class(kinds: Counter) -> str:
    """A program's class by the loops gcc vectorizes in its unscheduled C."""
    if kinds["outer"]:
        return "both" if kinds["inner"] else "outer only"
    return "inner only" if kinds["inner"] else "none"


def errors(pred: np.ndarray, true: np.ndarray, program: np.ndarray, sel: np.ndarray, total: float) -> list[str]:
    """A table row's cells for the records ``sel``: count, MAPE, share of the ``total`` summed error, Spearman
    per program (among the selected records), median speedup, median predicted over measured."""
    ape = np.abs(pred[sel] - true[sel]) / true[sel]
    rho = [spearmanr(pred[m], true[m])[0] for m in (sel & (program == p) for p in np.unique(program[sel]))
           if m.sum() > 2]
    return [f"{sel.sum()}", f"{ape.mean() * 100:.1f}", f"{ape.sum() / total * 100:.0f}%", f"{np.nanmean(rho):.3f}",
            f"{np.median(true[sel]):.2f}", f"{np.median(pred[sel] / true[sel]):.2f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the exported dataset (.npz) of the database")
    ap.add_argument("--db", required=True, help="its database (.sqlite, or packed .sqlite.xz)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--out", help="markdown file to write (default: stdout only)")
    a = ap.parse_args()
    db = shipped_db(Path(a.db)) if a.db.endswith(".xz") else Path(a.db)
    data = load(a.data)
    s = data.subset(a.split).timed()
    pred = CostModel.load(a.model).predict_trees(s.trees)
    total = float((np.abs(pred - s.speedup) / s.speedup).sum())
    con = sqlite3.connect(db)
    programs: dict[int, Program] = {}
    for k in np.unique(s.program):
        row = con.execute("select json from programs where id = ?", (data.programs[k],)).fetchone()
        programs[int(k)] = Program.from_json(json.loads(row[0]))
    base = {k: vectorized_loops(kernel_file(ProgramState.initial(p))) for k, p in programs.items()}
    classes = {k: program_class(v) for k, v in base.items()}
    head = ("| {} | programs | records | MAPE % | share of error | Spearman/program | median speedup "
            "| median predicted/measured |")
    out = [f"`{' '.join(sys.argv)}`", "", head.format("gcc vectorizes unscheduled"), "|---" * 8 + "|"]
    for name in ("outer only", "both", "inner only", "none"):
        members = [k for k, c in classes.items() if c == name]
        if members:
            out.append(f"| {name} | {len(members)} | " +
                       " | ".join(errors(pred, s.speedup, s.program, np.isin(s.program, members), total)) + " |")
    keeps = np.full(len(s.speedup), -1)
    for i in np.flatnonzero([classes[int(k)] == "outer only" for k in s.program]):
        if "P(" not in s.schedules[i]:
            state = Schedule.parse(s.schedules[i]).apply(programs[int(s.program[i])])
            keeps[i] = vectorized_loops(kernel_file(state)) == base[int(s.program[i])]
    out += ["", head.replace(" programs |", "").format("schedules of the outer-only programs"), "|---" * 7 + "|"]
    for value, name in ((1, "gcc vectorizes as unscheduled"), (0, "it does not")):
        row = errors(pred, s.speedup, s.program, keeps == value, total)
        out.append(f"| {name} | " + " | ".join(row) + " |")
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    compiled = keeps[keeps >= 0]
    print(f"{compiled.mean() if len(compiled) else 0:.2f} of {len(compiled)} schedules keep it", file=sys.stderr)


if __name__ == "__main__":
    main()
