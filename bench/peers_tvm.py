"""TVM MetaSchedule on the peers benchmark's kernels: each library kernel as a TE computation over float64
tensors, tuned by MetaSchedule (XGBoost cost model, evolutionary search) with a number of measured
trials on this machine, every core, then built and run.

A time-iterated stencil is its step as one function, called twice per time step from Python (as a TVM
user writes it): the step writes a whole array, its border copied from the array's previous values, and
the arrays rotate through a third one so that no call writes what it reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))  # TVM's default: physical cores only

import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm import te, tirx  # noqa: E402
from tvm.s_tir import meta_schedule as ms  # noqa: E402

from loopcost.kernels.linalg import ALPHA, BETA  # noqa: E402

F64 = "float64"


@dataclass
class Kernel:
    """A kernel's TE function: its arguments (inputs by NumPy name, then the outputs by name) and how one
    run calls it (``None``: once, on the kernel's arrays)."""

    inputs: dict[str, te.Tensor]
    outputs: dict[str, te.Tensor]
    steps: Callable[[Callable, dict[str, np.ndarray]], None] | None = None


#: a compiled kernel bound to its arrays: (run it once, its outputs)
Bound = tuple[Callable[[], None], Callable[[], dict[str, np.ndarray]]]


@dataclass
class Tuned:
    """The schedule MetaSchedule found (its trace), how many trials it measured, and ``bind(arrays)``: the
    compiled kernel on those arrays (copied to TVM tensors once)."""

    schedule: str
    measured: int
    bind: Callable[[dict[str, np.ndarray]], Bound]


def _p(name: str, shape: tuple[int, ...]) -> te.Tensor:
    return te.placeholder(shape, F64, name=name)


def _c(v: float) -> tirx.PrimExpr:
    return tirx.const(v, F64)


def gemm(ni: int, nj: int, nk: int) -> Kernel:
    A, B, C = _p("A", (ni, nk)), _p("B", (nk, nj)), _p("C", (ni, nj))
    k = te.reduce_axis((0, nk), "k")
    prod = te.compute((ni, nj), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="prod")
    out = te.compute((ni, nj), lambda i, j: _c(BETA) * C[i, j] + _c(ALPHA) * prod[i, j], name="out")
    return Kernel({"A": A, "B": B, "C": C}, {"C": out})


def k2mm(ni: int, nj: int, nk: int, nl: int) -> Kernel:
    A, B, C, D = _p("A", (ni, nk)), _p("B", (nk, nj)), _p("C", (nj, nl)), _p("D", (ni, nl))
    k, j = te.reduce_axis((0, nk), "k"), te.reduce_axis((0, nj), "j")
    tmp = te.compute((ni, nj), lambda i, jj: te.sum(_c(ALPHA) * A[i, k] * B[k, jj], axis=k), name="tmp")
    prod = te.compute((ni, nl), lambda i, m: te.sum(tmp[i, j] * C[j, m], axis=j), name="prod")
    out = te.compute((ni, nl), lambda i, m: _c(BETA) * D[i, m] + prod[i, m], name="out")
    return Kernel({"A": A, "B": B, "C": C, "D": D}, {"D": out})


def atax(m: int, n: int) -> Kernel:
    A, x = _p("A", (m, n)), _p("x", (n,))
    j, i = te.reduce_axis((0, n), "j"), te.reduce_axis((0, m), "i")
    tmp = te.compute((m,), lambda ii: te.sum(A[ii, j] * x[j], axis=j), name="tmp")
    y = te.compute((n,), lambda jj: te.sum(A[i, jj] * tmp[i], axis=i), name="y")
    return Kernel({"A": A, "x": x}, {"y": y})


def conv2d(batch: int, channels: int, filters: int, height: int, width: int, ksize: int) -> Kernel:
    oh, ow = height - ksize + 1, width - ksize + 1
    inp, w = _p("input", (batch, channels, height, width)), _p("weight", (filters, channels, ksize, ksize))
    bias = _p("bias", (filters,))
    c, ky, kx = te.reduce_axis((0, channels), "c"), te.reduce_axis((0, ksize), "ky"), te.reduce_axis((0, ksize), "kx")
    conv = te.compute((batch, filters, oh, ow), lambda n, f, y, x: te.sum(
        w[f, c, ky, kx] * inp[n, c, y + ky, x + kx], axis=[c, ky, kx]), name="conv")
    out = te.compute((batch, filters, oh, ow), lambda n, f, y, x: bias[f] + conv[n, f, y, x], name="out")
    return Kernel({"input": inp, "weight": w, "bias": bias}, {"output": out})


def depthwise_conv(batch: int, channels: int, height: int, width: int, ksize: int) -> Kernel:
    oh, ow = height - ksize + 1, width - ksize + 1
    inp, w = _p("input", (batch, channels, height, width)), _p("weight", (channels, ksize, ksize))
    bias = _p("bias", (channels,))
    ky, kx = te.reduce_axis((0, ksize), "ky"), te.reduce_axis((0, ksize), "kx")
    conv = te.compute((batch, channels, oh, ow), lambda n, c, y, x: te.sum(
        w[c, ky, kx] * inp[n, c, y + ky, x + kx], axis=[ky, kx]), name="conv")
    out = te.compute((batch, channels, oh, ow), lambda n, c, y, x: bias[c] + conv[n, c, y, x], name="out")
    return Kernel({"input": inp, "weight": w, "bias": bias}, {"output": out})


def _interior(shape: tuple[int, ...], idx: tuple) -> tirx.PrimExpr:
    conds = [tirx.all(v >= 1, v <= n - 2) for v, n in zip(idx, shape, strict=True)]
    return tirx.all(*conds)


def _rotating(tsteps: int, names: tuple[str, str]) -> Callable[[Callable, dict[str, np.ndarray]], None]:
    """``tsteps`` time steps of ``step(src, old, out)``: A into B, then B into A, through a spare array."""
    def steps(step: Callable, arrays: dict[str, np.ndarray]) -> None:
        a, b = (arrays[n] for n in names)
        spare = tvm.runtime.empty(a.shape, F64)
        for _ in range(tsteps):
            step(a, b, spare)
            b, spare = spare, b
            step(b, a, spare)
            a, spare = spare, a
        arrays[names[0]], arrays[names[1]] = a, b
    return steps


def jacobi_2d(tsteps: int, n: int) -> Kernel:
    src, old = _p("src", (n, n)), _p("old", (n, n))
    out = te.compute((n, n), lambda i, j: tirx.if_then_else(
        _interior((n, n), (i, j)),
        _c(0.2) * (src[i, j] + src[i, j - 1] + src[i, j + 1] + src[i + 1, j] + src[i - 1, j]), old[i, j]), name="out")
    return Kernel({"src": src, "old": old}, {"out": out}, _rotating(tsteps, ("A", "B")))


def heat_3d(tsteps: int, n: int) -> Kernel:
    src, old = _p("src", (n, n, n)), _p("old", (n, n, n))

    def stencil(i, j, k):
        c = src[i, j, k]
        return (_c(0.125) * (src[i + 1, j, k] - _c(2.0) * c + src[i - 1, j, k])
                + _c(0.125) * (src[i, j + 1, k] - _c(2.0) * c + src[i, j - 1, k])
                + _c(0.125) * (src[i, j, k + 1] - _c(2.0) * c + src[i, j, k - 1]) + c)

    out = te.compute((n, n, n), lambda i, j, k: tirx.if_then_else(
        _interior((n, n, n), (i, j, k)), stencil(i, j, k), old[i, j, k]), name="out")
    return Kernel({"src": src, "old": old}, {"out": out}, _rotating(tsteps, ("A", "B")))


KERNELS: dict[str, Callable[..., Kernel]] = {
    "gemm": gemm, "2mm": k2mm, "atax": atax, "conv2d": conv2d, "depthwise-conv": depthwise_conv,
    "jacobi-2d": jacobi_2d, "heat-3d": heat_3d}


def target() -> tvm.target.Target:
    """LLVM for this CPU, every core."""
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": os.cpu_count() or 1})


def tune(name: str, sizes: dict[str, int], trials: int, work_dir: Path) -> Tuned:
    """The kernel tuned with ``trials`` measured trials, built; ``run(arrays)`` runs it on NumPy arrays (the
    kernel's buffers, by name) and returns the outputs as NumPy arrays."""
    k = KERNELS[name](**sizes)
    args = [*k.inputs.values(), *k.outputs.values()]
    mod = tvm.IRModule({"main": te.create_prim_func(args)})
    tgt = target()
    db = ms.tune_tir(mod=mod, target=tgt, work_dir=str(work_dir), max_trials_global=trials,
                     num_trials_per_iter=min(64, trials), builder=ms.builder.LocalBuilder(timeout_sec=300),
                     runner=ms.runner.LocalRunner(timeout_sec=300))
    sch = ms.tir_integration.compile_tir(db, mod, tgt)
    if sch is None:
        raise RuntimeError(f"MetaSchedule found no valid schedule of {name} in {trials} trials")
    lib = tvm.compile(sch.mod, target=tgt)
    fn = lib["main"]
    dev = tvm.cpu()

    def bind(arrays: dict[str, np.ndarray]) -> Bound:
        t = {n: tvm.runtime.tensor(a, dev) for n, a in arrays.items()}
        if k.steps is not None:
            return (lambda: k.steps(fn, t)), (lambda: {n: a.numpy() for n, a in t.items()})
        args = [t[n] for n in k.inputs] + [tvm.runtime.empty(tuple(int(d) for d in o.shape), F64, dev)
                                           for o in k.outputs.values()]
        outs = dict(zip(k.outputs, args[len(k.inputs):], strict=True))
        return (lambda: fn(*args)), (lambda: arrays | {n: o.numpy() for n, o in outs.items()})

    return Tuned(summary(str(sch.trace)), len(db.get_all_tuning_records()), bind)


def summary(trace: str) -> str:
    """One line of a MetaSchedule trace: the tile sizes it sampled, loop by loop, its unroll depth, and how
    many loops it made parallel or vector and blocks it moved."""
    tiles = re.findall(r"sample_perfect_tile\([^)]*decision=\[([^\]]*)\]", trace)
    unroll = re.findall(r"sample_categorical\(candidates=\[([^\]]*)\][^)]*decision=(\d+)", trace)
    parts = [f"tiles {' '.join('[' + t.replace(' ', '') + ']' for t in tiles)}"] if tiles else []
    parts += [f"unroll {c.split(',')[int(k)].strip()}" for c, k in unroll]
    parts += [f"{op} x{n}" for op in ("parallel", "vectorize", "compute_at", "reverse_compute_at", "cache_write")
              if (n := trace.count(f"sch.{op}("))]
    return ", ".join(parts) or "(no schedule steps)"
