"""Stencil kernels (PolyBench 4.2's stencils), each with its outer time loop ``t``.

No buffer's shape gives the number of time steps, so references take it from
the kernel's sizes (``reference(arrays, **sizes)``).
"""

from __future__ import annotations

import numpy as np

from ..ir.dsl import ProgramBuilder
from ..ir.program import Program
from .registry import kernel

# ---- jacobi-1d -------------------------------------------------------------

JACOBI_1D = {"small": dict(tsteps=6, n=40), "bench": dict(tsteps=40000, n=10000)}


def _jacobi_1d_ref(a: dict[str, np.ndarray], tsteps: int, **_sizes: int) -> None:
    A, B = a["A"], a["B"]
    for _ in range(tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@kernel("jacobi-1d", "1-D Jacobi stencil, tsteps sweeps of A -> B -> A", JACOBI_1D, _jacobi_1d_ref)
def jacobi_1d(tsteps: int, n: int) -> Program:
    p = ProgramBuilder("jacobi-1d")
    A, B = p.output("A", (n,)), p.output("B", (n,))
    with p.loop("t", 0, tsteps):
        with p.loop("i", 1, n - 1) as i:
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        with p.loop("i", 1, n - 1) as i:
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return p.build()


# ---- jacobi-2d -------------------------------------------------------------

JACOBI_2D = {"small": dict(tsteps=5, n=30), "bench": dict(tsteps=200, n=1000)}


def _jacobi_2d_ref(a: dict[str, np.ndarray], tsteps: int, **_sizes: int) -> None:
    A, B = a["A"], a["B"]
    for _ in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@kernel("jacobi-2d", "2-D 5-point Jacobi stencil, tsteps sweeps of A -> B -> A", JACOBI_2D, _jacobi_2d_ref)
def jacobi_2d(tsteps: int, n: int) -> Program:
    p = ProgramBuilder("jacobi-2d")
    A, B = p.output("A", (n, n)), p.output("B", (n, n))
    with p.loop("t", 0, tsteps):
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])
    return p.build()


# ---- heat-3d ---------------------------------------------------------------

HEAT_3D = {"small": dict(tsteps=4, n=20), "bench": dict(tsteps=80, n=120)}


def _heat_step(src: np.ndarray, dst: np.ndarray) -> None:
    c = src[1:-1, 1:-1, 1:-1]
    dst[1:-1, 1:-1, 1:-1] = (0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1])
                             + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1])
                             + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2])
                             + c)


def _heat_3d_ref(a: dict[str, np.ndarray], tsteps: int, **_sizes: int) -> None:
    for _ in range(tsteps):
        _heat_step(a["A"], a["B"])
        _heat_step(a["B"], a["A"])


@kernel("heat-3d", "3-D heat equation, 7-point stencil, tsteps sweeps of A -> B -> A", HEAT_3D, _heat_3d_ref)
def heat_3d(tsteps: int, n: int) -> Program:
    p = ProgramBuilder("heat-3d")
    A, B = p.output("A", (n, n, n)), p.output("B", (n, n, n))

    def step(dst, src):
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                with p.loop("k", 1, n - 1) as k:
                    dst[i, j, k] = (0.125 * (src[i + 1, j, k] - 2.0 * src[i, j, k] + src[i - 1, j, k])
                                    + 0.125 * (src[i, j + 1, k] - 2.0 * src[i, j, k] + src[i, j - 1, k])
                                    + 0.125 * (src[i, j, k + 1] - 2.0 * src[i, j, k] + src[i, j, k - 1])
                                    + src[i, j, k])

    with p.loop("t", 1, tsteps + 1):
        step(B, A)
        step(A, B)
    return p.build()


# ---- seidel-2d -------------------------------------------------------------

SEIDEL_2D = {"small": dict(tsteps=4, n=30), "bench": dict(tsteps=20, n=1000)}


def _seidel_2d_ref(a: dict[str, np.ndarray], tsteps: int, **_sizes: int) -> None:
    # In place and sequential in i and j: row i reads the new rows i-1 and the
    # new A[i][j-1], so only the sums over rows i-1 and i+1 vectorize.
    A = a["A"]
    n = A.shape[0]
    for _ in range(tsteps):
        for i in range(1, n - 1):
            up, row, down = A[i - 1], A[i], A[i + 1]
            for j in range(1, n - 1):
                row[j] = (up[j - 1] + up[j] + up[j + 1]
                          + row[j - 1] + row[j] + row[j + 1]
                          + down[j - 1] + down[j] + down[j + 1]) / 9.0


@kernel("seidel-2d", "2-D 9-point Gauss-Seidel stencil, in place, tsteps sweeps", SEIDEL_2D, _seidel_2d_ref)
def seidel_2d(tsteps: int, n: int) -> Program:
    p = ProgramBuilder("seidel-2d")
    A = p.output("A", (n, n))
    with p.loop("t", 0, tsteps):
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0
    return p.build()


# ---- fdtd-2d ---------------------------------------------------------------

FDTD_2D = {"small": dict(tmax=5, nx=30, ny=40), "bench": dict(tmax=100, nx=1000, ny=1200)}


def _fdtd_2d_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    ex, ey, hz, fict = a["ex"], a["ey"], a["hz"], a["_fict_"]
    for t in range(fict.shape[0]):
        ey[0, :] = fict[t]
        ey[1:, :] = ey[1:, :] - 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


@kernel("fdtd-2d", "2-D finite-difference time-domain kernel (ex, ey, hz), tmax steps", FDTD_2D, _fdtd_2d_ref)
def fdtd_2d(tmax: int, nx: int, ny: int) -> Program:
    p = ProgramBuilder("fdtd-2d")
    ex, ey, hz = p.output("ex", (nx, ny)), p.output("ey", (nx, ny)), p.output("hz", (nx, ny))
    fict = p.input("_fict_", (tmax,))
    with p.loop("t", 0, tmax) as t:
        with p.loop("j", 0, ny) as j:
            ey[0, j] = fict[t]
        with p.loop("i", 1, nx) as i:
            with p.loop("j", 0, ny) as j:
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        with p.loop("i", 0, nx) as i:
            with p.loop("j", 1, ny) as j:
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        with p.loop("i", 0, nx - 1) as i:
            with p.loop("j", 0, ny - 1) as j:
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return p.build()
