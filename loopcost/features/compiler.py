"""What gcc does with a program before any schedule: the compiler block of a computation vector (layout 6).

A schedule's speedup is the unscheduled program's time over its own, and gcc at ``-O3`` already optimizes the
unscheduled program: it vectorizes an outer loop whose inner one is a reduction (a matrix product's ``j`` loop
around its ``k`` loop), or interchanges a nest. Where it does, most schedules break what it did and run slower;
where it does not, they run faster. The loop tree does not say which: on the AMD EPYC test split, programs whose
unscheduled C gcc vectorizes only in an outer loop held half of the model's error (MAPE 60% against 31%, 72 of
206 programs). gcc says it itself (``-fopt-info``): ``program_report`` compiles the unscheduled C once per program
(to assembly, for a fixed target: ``x86-64-v3`` on x86, so that the fields do not depend on the machine that
featurizes) and reads, per computation, whether a loop around it was vectorized, how far out from its innermost
loop, and whether its nest was interchanged. ``compiler_fields`` adds, per schedule, whether the computation's
innermost loops down from the one gcc vectorized are still the original ones, none inside it tiled (``untiled``).
"""

from __future__ import annotations

import functools
import platform
import re
import subprocess

import numpy as np

from ..codegen.c_source import MACROS, kernel_statements
from ..codegen.compiler import Toolchain
from ..errors import CompileError
from ..ir.program import Program
from ..ir.state import ProgramState
from . import layout as L

#: per computation: (a loop around it vectorized, how many loops that loop is outside its innermost, its nest
#: interchanged)
Report = dict[str, tuple[int, int, int]]
_OPTIMIZED = re.compile(r"^<stdin>:(\d+):\d+: optimized: (.*)$", re.M)
_FOR = re.compile(r"^(\s*)for \(")


def _target() -> tuple[str, ...]:
    return ("-march=x86-64-v3",) if platform.machine() in ("x86_64", "AMD64") else ()


def _spans(lines: list[str]) -> dict[int, tuple[int, int]]:
    """Each ``for`` line's number (from 1) and the last line of its body."""
    out = {}
    for k, text in enumerate(lines):
        m = _FOR.match(text)
        if m is None:
            continue
        indent, end = len(m.group(1)), k
        for j in range(k + 1, len(lines)):
            line = lines[j]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                end = j
                break
        out[k + 1] = (k + 1, end + 1)
    return out


def read_report(source: str, statements: list[tuple[int, str]], messages: str) -> Report:
    """The report of ``messages`` (gcc's ``-fopt-info`` on ``source`` read from stdin) for the computations whose
    statements sit at the given lines of ``source``."""
    spans = _spans(source.splitlines())
    out: dict[str, list[int]] = {c: [0, 0, 0] for _, c in statements}
    for m in _OPTIMIZED.finditer(messages):
        line, what = int(m.group(1)), m.group(2)
        if line not in spans:
            continue
        first, last = spans[line]
        for at, comp in statements:
            if not first < at <= last:
                continue
            if "loop vectorized" in what:
                inside = sum(1 for f, (a, b) in spans.items() if first < f and a < at <= b)
                fields = out[comp]
                fields[1] = max(fields[1], inside) if fields[0] else inside
                fields[0] = 1
            elif "interchanged" in what:
                out[comp][2] = 1
    return {c: (v[0], v[1], v[2]) for c, v in out.items()}


@functools.lru_cache(maxsize=256)
def program_report(p: Program, cc: str | None = None) -> Report:
    """gcc's report on the unscheduled program ``p`` (``cc``: the compiler, default the toolchain's)."""
    cc = cc or Toolchain().cc
    text, statements = kernel_statements(ProgramState.initial(p), name="lc_report")
    head = "#include <math.h>\n#include <stdlib.h>\n" + MACROS + "\n"
    offset = head.count("\n")
    cmd = [cc, "-O3", *_target(), "-fopt-info-vec-optimized", "-fopt-info-loop-optimized", "-S", "-o",
           "/dev/null", "-x", "c", "-"]
    try:
        done = subprocess.run(cmd, input=head + text, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"{p.name}: `{' '.join(cmd)}` for the compiler report failed: {e}") from None
    if done.returncode != 0:
        raise CompileError(f"{p.name}: `{' '.join(cmd)}` for the compiler report failed:\n{done.stderr[-2000:]}")
    shifted = re.sub(r"^<stdin>:(\d+):", lambda m: f"<stdin>:{int(m.group(1)) - offset}:", done.stderr, flags=re.M)
    return read_report(text, statements, shifted)


def compiler_fields(report: tuple[int, int, int], rows: list[tuple[float, ...]], n_iters: int) -> dict[str, float]:
    """The compiler block of a computation whose real levels have the schedule ``rows`` (outermost first, over
    its ``n_iters`` original iterators), from its ``report`` (``program_report``); ``gcc_vector_kept`` before
    loop tags (``untiled`` clears it where they tile a loop inside the vectorized one)."""
    vectorized, inside, interchanged = report
    if not vectorized and not interchanged:
        return {}
    n = inside + 1  # the original innermost loops, the vectorized one outermost
    original = [tuple(1.0 if j == k else 0.0 for j in range(n_iters)) for k in range(n_iters - n, n_iters)]
    kept = len(rows) >= n and [tuple(r[:n_iters]) + (0.0,) * (n_iters - len(r)) for r in rows[-n:]] == original
    return {"gcc_vectorized": vectorized, "gcc_vector_depth": inside, "gcc_interchanged": interchanged,
            "gcc_vector_kept": float(bool(vectorized and kept))}


def untiled(comps: np.ndarray) -> None:
    """Clear ``gcc_vector_kept`` of the tagged computation vectors ``comps`` (in place) where a loop inside the
    vectorized one is tiled: the reduction's tile loop then sits outside it (gcc no longer vectorizes it)."""
    kept = comps[:, L.NEST_AT + L.NEST_INDEX["gcc_vector_kept"]]
    for c in np.flatnonzero(kept):
        n = int(comps[c, L.FIELDS_AT + L.COMP_INDEX["n_levels"]])
        inside = int(comps[c, L.NEST_AT + L.NEST_INDEX["gcc_vector_depth"]])
        tiled = comps[c, [d * L.LEVEL_SIZE + L.LEVEL_INDEX["tiled"] for d in range(n - inside, n)]]
        if tiled.any():
            comps[c, L.NEST_AT + L.NEST_INDEX["gcc_vector_kept"]] = 0
