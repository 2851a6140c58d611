"""Halide on the peers benchmark's kernels: each library kernel as a Halide pipeline over float64 buffers,
scheduled by one of Halide's autoschedulers for this machine's cores, JIT-compiled.

Halide's first dimension is the innermost: a NumPy array ``A[i, k]`` is the Halide buffer ``A(k, i)``.
A time-iterated stencil is its step as a pipeline (from one array into the interior of the other),
called twice per time step from Python, as a Halide user writes it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import halide as hl
import numpy as np

from loopcost.kernels.linalg import ALPHA, BETA

AUTOSCHEDULERS = ("Adams2019", "Mullapudi2016", "Li2018")
F64 = hl.Float(64)


def f64(v: float) -> hl.Expr:
    return hl.f64(v)  # a bare Python float would become float32 in Halide


@dataclass
class Pipeline:
    """A kernel's pipeline: its inputs (NumPy name to ImageParam), its outputs (name to Func) with their
    NumPy shapes, and how one run calls it (``None``: once, on the kernel's arrays)."""

    inputs: dict[str, hl.ImageParam]
    outputs: dict[str, tuple[hl.Func, tuple[int, ...]]]
    steps: Callable[[Callable, dict[str, np.ndarray]], None] | None = None


#: a compiled kernel bound to its arrays: (run it once, its outputs)
Bound = tuple[Callable[[], None], Callable[[], dict[str, np.ndarray]]]


@dataclass
class Built:
    """The schedule the autoscheduler wrote, and ``bind(arrays)``: the compiled kernel on those arrays."""

    schedule: str
    bind: Callable[[dict[str, np.ndarray]], Bound]


def _estimate(f: hl.Func, shape: tuple[int, ...]) -> None:
    f.set_estimates([(0, n) for n in reversed(shape)])


def _param(name: str, shape: tuple[int, ...]) -> hl.ImageParam:
    p = hl.ImageParam(F64, len(shape), name)
    p.set_estimates([(0, n) for n in reversed(shape)])
    return p


def gemm(ni: int, nj: int, nk: int) -> Pipeline:
    A, B, C = _param("A", (ni, nk)), _param("B", (nk, nj)), _param("C", (ni, nj))
    i, j = hl.Var("i"), hl.Var("j")
    r = hl.RDom([hl.Range(0, nk)], "r")
    prod, out = hl.Func("prod"), hl.Func("out")
    prod[j, i] = f64(0.0)
    prod[j, i] += A[r.x, i] * B[j, r.x]
    out[j, i] = f64(BETA) * C[j, i] + f64(ALPHA) * prod[j, i]
    return Pipeline({"A": A, "B": B, "C": C}, {"C": (out, (ni, nj))})


def k2mm(ni: int, nj: int, nk: int, nl: int) -> Pipeline:
    A, B = _param("A", (ni, nk)), _param("B", (nk, nj))
    C, D = _param("C", (nj, nl)), _param("D", (ni, nl))
    i, j, l_ = hl.Var("i"), hl.Var("j"), hl.Var("l")
    rk, rj = hl.RDom([hl.Range(0, nk)], "rk"), hl.RDom([hl.Range(0, nj)], "rj")
    tmp, out = hl.Func("tmp"), hl.Func("out")
    tmp[j, i] = f64(0.0)
    tmp[j, i] += f64(ALPHA) * A[rk.x, i] * B[j, rk.x]
    out[l_, i] = f64(BETA) * D[l_, i]
    out[l_, i] += tmp[rj.x, i] * C[l_, rj.x]
    return Pipeline({"A": A, "B": B, "C": C, "D": D}, {"D": (out, (ni, nl))})


def atax(m: int, n: int) -> Pipeline:
    A, x = _param("A", (m, n)), _param("x", (n,))
    i, j = hl.Var("i"), hl.Var("j")
    rj, ri = hl.RDom([hl.Range(0, n)], "rj"), hl.RDom([hl.Range(0, m)], "ri")
    tmp, y = hl.Func("tmp"), hl.Func("y")
    tmp[i] = f64(0.0)
    tmp[i] += A[rj.x, i] * x[rj.x]
    y[j] = f64(0.0)
    y[j] += A[j, ri.x] * tmp[ri.x]
    return Pipeline({"A": A, "x": x}, {"y": (y, (n,))})


def conv2d(batch: int, channels: int, filters: int, height: int, width: int, ksize: int) -> Pipeline:
    oh, ow = height - ksize + 1, width - ksize + 1
    inp, w = _param("input", (batch, channels, height, width)), _param("weight", (filters, channels, ksize, ksize))
    bias = _param("bias", (filters,))
    x, y, f, n = hl.Var("x"), hl.Var("y"), hl.Var("f"), hl.Var("n")
    r = hl.RDom([hl.Range(0, ksize), hl.Range(0, ksize), hl.Range(0, channels)], "r")
    out = hl.Func("out")
    out[x, y, f, n] = bias[f]
    out[x, y, f, n] += w[r.x, r.y, r.z, f] * inp[x + r.x, y + r.y, r.z, n]
    return Pipeline({"input": inp, "weight": w, "bias": bias}, {"output": (out, (batch, filters, oh, ow))})


def depthwise_conv(batch: int, channels: int, height: int, width: int, ksize: int) -> Pipeline:
    oh, ow = height - ksize + 1, width - ksize + 1
    inp, w = _param("input", (batch, channels, height, width)), _param("weight", (channels, ksize, ksize))
    bias = _param("bias", (channels,))
    x, y, c, n = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("n")
    r = hl.RDom([hl.Range(0, ksize), hl.Range(0, ksize)], "r")
    out = hl.Func("out")
    out[x, y, c, n] = bias[c]
    out[x, y, c, n] += w[r.x, r.y, c] * inp[x + r.x, y + r.y, c, n]
    return Pipeline({"input": inp, "weight": w, "bias": bias}, {"output": (out, (batch, channels, oh, ow))})


def _sweeps(tsteps: int, names: tuple[str, str]) -> Callable[[Callable, dict[str, np.ndarray]], None]:
    """``tsteps`` time steps, each one sweep from the first array into the second's interior and one back."""
    def steps(step: Callable, arrays: dict[str, np.ndarray]) -> None:
        a, b = (arrays[n] for n in names)
        inner = tuple(slice(1, -1) for _ in a.shape)
        for _ in range(tsteps):
            step(a, b[inner])
            step(b, a[inner])
    return steps


def jacobi_2d(tsteps: int, n: int) -> Pipeline:
    src = _param("src", (n, n))
    i, j = hl.Var("i"), hl.Var("j")
    out = hl.Func("out")  # out(j, i) is the element [i + 1, j + 1]
    out[j, i] = f64(0.2) * (src[j + 1, i + 1] + src[j, i + 1] + src[j + 2, i + 1] + src[j + 1, i + 2]
                            + src[j + 1, i])
    return Pipeline({"src": src}, {"dst": (out, (n - 2, n - 2))}, _sweeps(tsteps, ("A", "B")))


def heat_3d(tsteps: int, n: int) -> Pipeline:
    src = _param("src", (n, n, n))
    i, j, k = hl.Var("i"), hl.Var("j"), hl.Var("k")

    def s(di: int, dj: int, dk: int) -> hl.Expr:
        return src[k + 1 + dk, j + 1 + dj, i + 1 + di]

    c = s(0, 0, 0)
    out = hl.Func("out")
    out[k, j, i] = (f64(0.125) * (s(1, 0, 0) - f64(2.0) * c + s(-1, 0, 0))
                    + f64(0.125) * (s(0, 1, 0) - f64(2.0) * c + s(0, -1, 0))
                    + f64(0.125) * (s(0, 0, 1) - f64(2.0) * c + s(0, 0, -1)) + c)
    return Pipeline({"src": src}, {"dst": (out, (n - 2, n - 2, n - 2))}, _sweeps(tsteps, ("A", "B")))


PIPELINES: dict[str, Callable[..., Pipeline]] = {
    "gemm": gemm, "2mm": k2mm, "atax": atax, "conv2d": conv2d, "depthwise-conv": depthwise_conv,
    "jacobi-2d": jacobi_2d, "heat-3d": heat_3d}


def last_level_cache() -> int:
    """Bytes of this machine's last-level cache (8 MiB when the system does not say)."""
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"))
    if not caches:
        return 8 << 20
    text = caches[-1].read_text().strip()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _params(scheduler: str) -> hl.AutoschedulerParams:
    cores = str(os.cpu_count() or 1)
    extra = {"last_level_cache_size": str(last_level_cache()), "balance": "40"} if scheduler == "Mullapudi2016" else {}
    return hl.AutoschedulerParams(scheduler, {"parallelism": cores} | extra)


def build(name: str, sizes: dict[str, int], scheduler: str) -> Built:
    """The kernel's pipeline scheduled by ``scheduler`` and compiled; ``run(arrays)`` runs it on NumPy arrays
    (the kernel's buffers, by name) and returns the outputs."""
    hl.load_plugin(str(Path(hl.__file__).parent / "lib64" / f"libautoschedule_{scheduler.lower()}.so"))
    pipe = PIPELINES[name](**sizes)
    funcs = [f for f, _ in pipe.outputs.values()]
    for f, shape in pipe.outputs.values():
        _estimate(f, shape)
    p = hl.Pipeline(funcs)
    target = hl.get_jit_target_from_environment()
    result = p.apply_autoscheduler(target, _params(scheduler))
    p.compile_jit(target)

    def bind(arrays: dict[str, np.ndarray]) -> Bound:
        if pipe.steps is not None:
            def realize(src: np.ndarray, dst: np.ndarray) -> None:
                pipe.inputs["src"].set(hl.Buffer(src))
                p.realize([hl.Buffer(dst)])

            return (lambda: pipe.steps(realize, arrays)), (lambda: arrays)
        outs = {n: np.empty(shape) for n, (_, shape) in pipe.outputs.items()}
        buffers = [hl.Buffer(o) for o in outs.values()]

        def call() -> None:
            for n, param in pipe.inputs.items():
                param.set(hl.Buffer(arrays[n]))
            p.realize(buffers)

        return call, (lambda: arrays | outs)

    return Built(summary(result.schedule_source), bind)


def summary(source: str) -> str:
    """One line of an autoscheduler's schedule source: its directives, declarations left out."""
    keep = [line.strip() for line in source.splitlines()
            if line.strip() and not re.match(r"(Var|RVar|Func)\b|[{}]$|//", line.strip())]
    return re.sub(r"\s+", " ", " ".join(keep)).replace(" .", ".")
