"""Image-processing and machine-learning kernels: a two-stage blur, a direct
convolution, a depthwise convolution, and a matrix product followed by a ReLU."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..ir.dsl import ProgramBuilder, maximum
from ..ir.program import Program
from .registry import kernel

# ---- blur ------------------------------------------------------------------


def _blur_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    inp, bx, by = a["input"], a["bx"], a["by"]
    bx[:, 1:-1] = (inp[:, :-2] + inp[:, 1:-1] + inp[:, 2:]) / 3.0
    by[1:-1, 1:-1] = (bx[:-2, 1:-1] + bx[1:-1, 1:-1] + bx[2:, 1:-1]) / 3.0


@kernel("blur", "two-stage 3x3 box blur (Halide's example): horizontal into bx, then vertical into by",
        {"small": dict(height=30, width=40), "bench": dict(height=6000, width=8000)}, _blur_ref)
def blur(height: int, width: int) -> Program:
    p = ProgramBuilder("blur")
    inp = p.input("input", (height, width))
    bx, by = p.temp("bx", (height, width)), p.output("by", (height, width))
    with p.loop("y", 0, height) as y:
        with p.loop("x", 1, width - 1) as x:
            bx[y, x] = (inp[y, x - 1] + inp[y, x] + inp[y, x + 1]) / 3.0
    with p.loop("y", 1, height - 1) as y:
        with p.loop("x", 1, width - 1) as x:
            by[y, x] = (bx[y - 1, x] + bx[y, x] + bx[y + 1, x]) / 3.0
    return p.build()


# ---- conv2d ----------------------------------------------------------------


def _windowed_ref(a: dict[str, np.ndarray], weight: str, out: str) -> None:
    """A valid-padding convolution with a bias, the weight's and the output's dimensions given as einsum
    subscripts against the input's windows ``ncyxij``."""
    k = a["weight"].shape[-1]
    win = sliding_window_view(a["input"], (k, k), axis=(2, 3))  # [n, c, y, x, ky, kx]
    a["output"][:] = a["bias"][None, :, None, None] + np.einsum(f"{weight},ncyxij->{out}", a["weight"], win)


def _conv2d_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    _windowed_ref(a, "fcij", "nfyx")


@kernel("conv2d", "direct 2-D convolution (NCHW, valid padding) with a bias",
        {"small": dict(batch=2, channels=3, filters=4, height=12, width=14, ksize=3),
         "bench": dict(batch=8, channels=64, filters=64, height=58, width=58, ksize=3)}, _conv2d_ref)
def conv2d(batch: int, channels: int, filters: int, height: int, width: int, ksize: int) -> Program:
    p = ProgramBuilder("conv2d")
    oh, ow = height - ksize + 1, width - ksize + 1
    inp = p.input("input", (batch, channels, height, width))
    w = p.input("weight", (filters, channels, ksize, ksize))
    bias = p.input("bias", (filters,))
    out = p.output("output", (batch, filters, oh, ow))
    with p.loop("n", 0, batch) as n:
        with p.loop("f", 0, filters) as f:
            with p.loop("y", 0, oh) as y:
                with p.loop("x", 0, ow) as x:
                    out[n, f, y, x] = bias[f]
                    with p.loop("c", 0, channels) as c:
                        with p.loop("ky", 0, ksize) as ky:
                            with p.loop("kx", 0, ksize) as kx:
                                out[n, f, y, x] += w[f, c, ky, kx] * inp[n, c, y + ky, x + kx]
    return p.build()


# ---- depthwise-conv ----------------------------------------------------------


def _depthwise_conv_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    _windowed_ref(a, "cij", "ncyx")


@kernel("depthwise-conv", "depthwise 2-D convolution (NCHW, valid padding, one filter per channel) with a bias",
        {"small": dict(batch=2, channels=5, height=12, width=14, ksize=3),
         "bench": dict(batch=4, channels=128, height=114, width=114, ksize=3)}, _depthwise_conv_ref)
def depthwise_conv(batch: int, channels: int, height: int, width: int, ksize: int) -> Program:
    p = ProgramBuilder("depthwise-conv")
    oh, ow = height - ksize + 1, width - ksize + 1
    inp = p.input("input", (batch, channels, height, width))
    w = p.input("weight", (channels, ksize, ksize))
    bias = p.input("bias", (channels,))
    out = p.output("output", (batch, channels, oh, ow))
    with p.loop("n", 0, batch) as n:
        with p.loop("c", 0, channels) as c:
            with p.loop("y", 0, oh) as y:
                with p.loop("x", 0, ow) as x:
                    out[n, c, y, x] = bias[c]
                    with p.loop("ky", 0, ksize) as ky:
                        with p.loop("kx", 0, ksize) as kx:
                            out[n, c, y, x] += w[c, ky, kx] * inp[n, c, y + ky, x + kx]
    return p.build()


# ---- matmul-relu -------------------------------------------------------------


def _matmul_relu_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    c = a["A"].astype(np.float64) @ a["B"].astype(np.float64)
    a["C"][:] = c
    a["R"][:] = np.maximum(c - a["bias"].astype(np.float64) * a["A"].shape[1], 0.0)


@kernel("matmul-relu", "R = relu(A*B - k*bias) in float32: a matrix product into C, then a separate ReLU",
        {"small": dict(m=40, n=50, k=30), "bench": dict(m=1000, n=1100, k=1200)}, _matmul_relu_ref)
def matmul_relu(m: int, n: int, k: int) -> Program:
    p = ProgramBuilder("matmul-relu")
    A, B = p.input("A", (m, k), "float32"), p.input("B", (k, n), "float32")
    C, R = p.temp("C", (m, n), "float32"), p.output("R", (m, n), "float32")
    # inputs lie in [0.5, 1.5): a bias of k * [0.5, 1.5) makes about half of the outputs negative before the ReLU
    bias = p.input("bias", (n,), "float32")
    with p.loop("i", 0, m) as i:
        with p.loop("j", 0, n) as j:
            C[i, j] = 0.0
            with p.loop("k", 0, k) as kk:
                C[i, j] += A[i, kk] * B[kk, j]
    with p.loop("i", 0, m) as i:
        with p.loop("j", 0, n) as j:
            R[i, j] = maximum(C[i, j] - float(k) * bias[j], 0.0)
    return p.build()
