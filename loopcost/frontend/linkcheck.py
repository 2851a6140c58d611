"""Link the original C function and the emitted one into one small program, check that they compute
the same arrays from the same inputs, and time them side by side."""

from __future__ import annotations

import copy
import shlex
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pycparser import c_ast, c_generator

from ..errors import CompileError, LoopcostError
from ..ir.program import DTYPES
from ..runner.local import machine_lock
from ..runner.verify import RTOL
from .parse import define_flags
from .translate import CKernel, base_type

ORIGINAL_FLAGS = ("-O3", "-march=native")
EMITTED_FLAGS = ("-O3", "-march=native", "-fopenmp")


@dataclass(frozen=True)
class LinkCheck:
    """Relative error of each array the function writes, and run times (s) of both versions."""

    errors: dict[str, float]
    tolerance: float
    times_original: tuple[float, ...]
    times_optimized: tuple[float, ...]

    @property
    def ok(self) -> bool:
        return all(e <= self.tolerance for e in self.errors.values())

    @property
    def speedup(self) -> float:
        return statistics.median(self.times_original) / statistics.median(self.times_optimized)


def _prototype(func: c_ast.FuncDef, name: str) -> str:
    decl = copy.deepcopy(func.decl)
    t = decl.type.type
    while not isinstance(t, c_ast.TypeDecl):
        t = t.type
    t.declname = name
    decl.name = name
    return c_generator.CGenerator().visit(decl) + ";"


def harness_source(k: CKernel) -> str:
    """``main``: random inputs, one checked call of each version, then interleaved timed calls."""
    func = k.source.function
    params = func.decl.type.args.params if func.decl.type.args else []
    setup, args_a, args_b, compare, restore_a, restore_b = [], [], [], [], [], []
    scalars = iter([1.5, 1.2, 0.8, 1.1, 0.9, 1.3])
    for p in params:
        if not isinstance(p, c_ast.Decl):
            continue
        dtype, dims = base_type(k.source, p)
        if not dims:
            value = str(k.params.get(p.name, 1)) if dtype == "int32" else repr(next(scalars, 1.0))
            args_a.append(value)
            args_b.append(value)
            continue
        ctype, size = DTYPES[dtype], k.param_buffers[p.name].size
        n = f"lc_n_{p.name}"
        setup.append(f"long {n} = {size}L;")
        for v in ("init", "a", "b"):
            setup.append(f"{ctype} *lc_{v}_{p.name} = malloc(sizeof({ctype}) * {n});")
        setup.append(f"for (long q = 0; q < {n}; q++) lc_init_{p.name}[q] = ({ctype}) lc_rand();")
        restore_a.append(f"memcpy(lc_a_{p.name}, lc_init_{p.name}, sizeof({ctype}) * {n});")
        restore_b.append(f"memcpy(lc_b_{p.name}, lc_init_{p.name}, sizeof({ctype}) * {n});")
        args_a.append(f"(void *) lc_a_{p.name}")
        args_b.append(f"(void *) lc_b_{p.name}")
        compare.append(f'lc_compare("{p.name}", lc_a_{p.name}, lc_b_{p.name}, {n}, sizeof({ctype}));')
    ra, rb = "\n    ".join(restore_a), "\n    ".join(restore_b)
    return f"""#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
{_prototype(func, "lc_original")}
{_prototype(func, "lc_optimized")}
static unsigned long long lc_state = 12345;
static double lc_rand(void) {{
  lc_state = lc_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return 0.5 + (double) ((lc_state >> 11) & 0xFFFFF) / 1048576.0;
}}
static double lc_now(void) {{
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec;
}}
static void lc_compare(const char *name, const void *a, const void *b, long n, size_t width) {{
  double worst = 0, scale = 0;
  for (long q = 0; q < n; q++) {{
    double x = width == sizeof(double) ? ((const double *) a)[q] : width == sizeof(float)
               ? ((const float *) a)[q] : 0;
    if (fabs(x) > scale) scale = fabs(x);
  }}
  for (long q = 0; q < n; q++) {{
    double x, y;
    if (width == sizeof(double)) {{ x = ((const double *) a)[q]; y = ((const double *) b)[q]; }}
    else {{ x = ((const float *) a)[q]; y = ((const float *) b)[q]; }}
    double d = fabs(x - y) / (scale + fabs(x) + 1e-300);
    if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
  }}
  printf("error %s %.6g\\n", name, worst);
}}
int main(int argc, char **argv) {{
  int runs = argc > 1 ? atoi(argv[1]) : 3;
  {chr(10).join("  " + s for s in setup).lstrip()}
  {ra}
  {rb}
  lc_original({", ".join(args_a)});
  lc_optimized({", ".join(args_b)});
  {chr(10).join("  " + s for s in compare).lstrip()}
  for (int r = 0; r < runs; r++) {{
    {ra}
    double t0 = lc_now();
    lc_original({", ".join(args_a)});
    double t1 = lc_now();
    {rb}
    double t2 = lc_now();
    lc_optimized({", ".join(args_b)});
    double t3 = lc_now();
    printf("time %.9f %.9f\\n", t1 - t0, t3 - t2);
  }}
  return 0;
}}
"""


def _run(cmd: list[str], what: str) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
    if res.returncode != 0:
        raise CompileError(f"{what}: {shlex.join(cmd)} failed (exit {res.returncode}):\n{res.stderr.strip()[:3000]}")
    return res.stdout


@dataclass(frozen=True)
class Build:
    """One version of the function: a C file's text and how to compile it."""

    source: str
    cc: str = "cc"
    flags: tuple[str, ...] = EMITTED_FLAGS


def original(k: CKernel, cc: str = "cc", flags: tuple[str, ...] = ORIGINAL_FLAGS) -> Build:
    """The user's own file, compiled with ``cc flags`` (gcc -O3 by default)."""
    return Build(k.source.path.read_text(), cc, flags)


def link_check(k: CKernel, candidate: Build | str, *, reference: Build | None = None, runs: int = 3,
               defines: dict[str, str] | None = None) -> LinkCheck:
    """Link ``reference`` (default: the original file, gcc -O3) and ``candidate`` (emitted C, or any
    Build) into one harness, compare the arrays they compute from the same inputs and time them
    interleaved. ``defines`` apply to both compiles, as to the original's preprocessing."""
    fn = k.source.name
    if isinstance(candidate, str):
        candidate = Build(candidate)
    reference = reference or original(k)
    common = define_flags(defines) + ["-I", str(k.source.path.resolve().parent), "-Dmain=lc_unused_main"]
    with tempfile.TemporaryDirectory(prefix="loopcost-link-") as tmp:
        d = Path(tmp)
        objs = []
        for role, b in (("original", reference), ("optimized", candidate)):
            (d / f"{role}.c").write_text(b.source)
            cmd = shlex.split(b.cc) + list(b.flags) + common + [f"-D{fn}=lc_{role}", "-c", str(d / f"{role}.c"),
                                                                "-o", str(d / f"{role}.o")]
            _run(cmd, f"compiling the {role} function")
            objs.append(str(d / f"{role}.o"))
        (d / "main.c").write_text(harness_source(k))
        _run(["cc", "-O2", "-fopenmp", str(d / "main.c"), *objs, "-o", str(d / "check"), "-lm"],
             "linking the check harness")
        with machine_lock():
            out = _run([str(d / "check"), str(runs)], "running the check harness")
    errors: dict[str, float] = {}
    t_orig, t_opt = [], []
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["error"]:
            errors[parts[1]] = float(parts[2])
        elif parts[:1] == ["time"]:
            t_orig.append(float(parts[1]))
            t_opt.append(float(parts[2]))
    if not t_orig:
        raise LoopcostError(f"the check harness printed no times:\n{out[:2000]}")
    written = {b.name for b in k.program.outputs()}
    tol = max(RTOL[b.dtype] for b in k.program.buffers)
    return LinkCheck({n: e for n, e in errors.items() if n in written}, tol, tuple(t_orig), tuple(t_opt))
