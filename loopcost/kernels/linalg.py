"""Dense linear algebra kernels (PolyBench's linear-algebra/blas and kernels)."""

from __future__ import annotations

import numpy as np

from ..ir.dsl import ProgramBuilder
from ..ir.program import Program
from .registry import kernel

ALPHA, BETA = 1.5, 1.2


def _gemm_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["C"][:] = a["C"] * BETA + ALPHA * (a["A"] @ a["B"])


@kernel("gemm", "C = beta*C + alpha*A*B", {"small": dict(ni=40, nj=50, nk=30),
                                            "bench": dict(ni=1000, nj=1100, nk=1200)}, _gemm_ref)
def gemm(ni: int, nj: int, nk: int) -> Program:
    p = ProgramBuilder("gemm")
    A, B, C = p.input("A", (ni, nk)), p.input("B", (nk, nj)), p.output("C", (ni, nj))
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nj) as j:
            C[i, j] = C[i, j] * BETA
            with p.loop("k", 0, nk) as k:
                C[i, j] += ALPHA * A[i, k] * B[k, j]
    return p.build()


def _2mm_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["tmp"][:] = ALPHA * (a["A"] @ a["B"])
    a["D"][:] = a["D"] * BETA + a["tmp"] @ a["C"]


@kernel("2mm", "D = alpha*A*B*C + beta*D", {"small": dict(ni=40, nj=50, nk=30, nl=45),
                                             "bench": dict(ni=600, nj=700, nk=800, nl=900)}, _2mm_ref)
def k2mm(ni: int, nj: int, nk: int, nl: int) -> Program:
    p = ProgramBuilder("2mm")
    A, B = p.input("A", (ni, nk)), p.input("B", (nk, nj))
    C, D = p.input("C", (nj, nl)), p.output("D", (ni, nl))
    tmp = p.temp("tmp", (ni, nj))
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nj) as j:
            tmp[i, j] = 0.0
            with p.loop("k", 0, nk) as k:
                tmp[i, j] += ALPHA * A[i, k] * B[k, j]
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nl) as j:
            D[i, j] = D[i, j] * BETA
            with p.loop("k", 0, nj) as k:
                D[i, j] += tmp[i, k] * C[k, j]
    return p.build()


def _3mm_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["E"][:] = a["A"] @ a["B"]
    a["F"][:] = a["C"] @ a["D"]
    a["G"][:] = a["E"] @ a["F"]


@kernel("3mm", "G = (A*B)*(C*D)", {"small": dict(ni=40, nj=50, nk=30, nl=45, nm=35),
                                    "bench": dict(ni=400, nj=500, nk=600, nl=700, nm=800)}, _3mm_ref)
def k3mm(ni: int, nj: int, nk: int, nl: int, nm: int) -> Program:
    p = ProgramBuilder("3mm")
    A, B = p.input("A", (ni, nk)), p.input("B", (nk, nj))
    C, D = p.input("C", (nj, nm)), p.input("D", (nm, nl))
    E, F, G = p.temp("E", (ni, nj)), p.temp("F", (nj, nl)), p.output("G", (ni, nl))
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nj) as j:
            E[i, j] = 0.0
            with p.loop("k", 0, nk) as k:
                E[i, j] += A[i, k] * B[k, j]
    with p.loop("i", 0, nj) as i:
        with p.loop("j", 0, nl) as j:
            F[i, j] = 0.0
            with p.loop("k", 0, nm) as k:
                F[i, j] += C[i, k] * D[k, j]
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nl) as j:
            G[i, j] = 0.0
            with p.loop("k", 0, nj) as k:
                G[i, j] += E[i, k] * F[k, j]
    return p.build()


def _mvt_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["x1"][:] = a["x1"] + a["A"] @ a["y_1"]
    a["x2"][:] = a["x2"] + a["A"].T @ a["y_2"]


@kernel("mvt", "x1 += A*y1; x2 += A^T*y2", {"small": dict(n=60),
                                             "bench": dict(n=6400)}, _mvt_ref)
def mvt(n: int) -> Program:
    p = ProgramBuilder("mvt")
    A = p.input("A", (n, n))
    x1, x2 = p.output("x1", (n,)), p.output("x2", (n,))
    y_1, y_2 = p.input("y_1", (n,)), p.input("y_2", (n,))
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, n) as j:
            x1[i] += A[i, j] * y_1[j]
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, n) as j:
            x2[i] += A[j, i] * y_2[j]
    return p.build()


def _atax_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["tmp"][:] = a["A"] @ a["x"]
    a["y"][:] = a["A"].T @ a["tmp"]


@kernel("atax", "y = A^T*(A*x)", {"small": dict(m=38, n=42),
                                   "bench": dict(m=8000, n=9000)}, _atax_ref)
def atax(m: int, n: int) -> Program:
    p = ProgramBuilder("atax")
    A, x = p.input("A", (m, n)), p.input("x", (n,))
    y, tmp = p.output("y", (n,)), p.temp("tmp", (m,))
    with p.loop("i", 0, n) as i:
        y[i] = 0.0
    with p.loop("i", 0, m) as i:
        tmp[i] = 0.0
        with p.loop("j", 0, n) as j:
            tmp[i] += A[i, j] * x[j]
        with p.loop("j", 0, n) as j:
            y[j] += A[i, j] * tmp[i]
    return p.build()


def _bicg_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["s"][:] = a["r"] @ a["A"]
    a["q"][:] = a["A"] @ a["p"]


@kernel("bicg", "s = A^T*r; q = A*p (BiCG sub-kernel)", {"small": dict(m=38, n=42),
                                                          "bench": dict(m=9000, n=9500)}, _bicg_ref)
def bicg(m: int, n: int) -> Program:
    pb = ProgramBuilder("bicg")
    A = pb.input("A", (n, m))
    s, q = pb.output("s", (m,)), pb.output("q", (n,))
    p, r = pb.input("p", (m,)), pb.input("r", (n,))
    with pb.loop("i", 0, m) as i:
        s[i] = 0.0
    with pb.loop("i", 0, n) as i:
        q[i] = 0.0
        with pb.loop("j", 0, m) as j:
            s[j] += r[i] * A[i, j]
            q[i] += A[i, j] * p[j]
    return pb.build()


def _gemver_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["A"][:] = a["A"] + np.outer(a["u1"], a["v1"]) + np.outer(a["u2"], a["v2"])
    a["x"][:] = a["x"] + BETA * (a["A"].T @ a["y"]) + a["z"]
    a["w"][:] = a["w"] + ALPHA * (a["A"] @ a["x"])


@kernel("gemver", "A += u1*v1^T + u2*v2^T; x += beta*A^T*y + z; w += alpha*A*x",
        {"small": dict(n=60), "bench": dict(n=5700)}, _gemver_ref)
def gemver(n: int) -> Program:
    p = ProgramBuilder("gemver")
    A = p.output("A", (n, n))
    u1, v1, u2, v2 = (p.input(name, (n,)) for name in ("u1", "v1", "u2", "v2"))
    w, x = p.output("w", (n,)), p.output("x", (n,))
    y, z = p.input("y", (n,)), p.input("z", (n,))
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, n) as j:
            A[i, j] += u1[i] * v1[j] + u2[i] * v2[j]
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, n) as j:
            x[i] += BETA * A[j, i] * y[j]
    with p.loop("i", 0, n) as i:
        x[i] += z[i]
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, n) as j:
            w[i] += ALPHA * A[i, j] * x[j]
    return p.build()


def _gesummv_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["tmp"][:] = a["A"] @ a["x"]
    a["y"][:] = ALPHA * a["tmp"] + BETA * (a["B"] @ a["x"])


@kernel("gesummv", "y = alpha*A*x + beta*B*x", {"small": dict(n=60),
                                                 "bench": dict(n=8500)}, _gesummv_ref)
def gesummv(n: int) -> Program:
    p = ProgramBuilder("gesummv")
    A, B, x = p.input("A", (n, n)), p.input("B", (n, n)), p.input("x", (n,))
    tmp, y = p.temp("tmp", (n,)), p.output("y", (n,))
    with p.loop("i", 0, n) as i:
        tmp[i] = 0.0
        y[i] = 0.0
        with p.loop("j", 0, n) as j:
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = ALPHA * tmp[i] + BETA * y[i]
    return p.build()


def _doitgen_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    a["A"][:] = a["A"] @ a["C4"]
    a["sum"][:] = a["A"][-1, -1, :]


@kernel("doitgen", "A[r, q, :] = A[r, q, :] * C4 (multiresolution analysis kernel)",
        {"small": dict(nr=10, nq=8, np_=12), "bench": dict(nr=200, nq=220, np_=180)}, _doitgen_ref)
def doitgen(nr: int, nq: int, np_: int) -> Program:
    p = ProgramBuilder("doitgen")
    A, C4, sum_ = p.output("A", (nr, nq, np_)), p.input("C4", (np_, np_)), p.temp("sum", (np_,))
    with p.loop("r", 0, nr) as r:
        with p.loop("q", 0, nq) as q:
            with p.loop("p", 0, np_) as pp:
                sum_[pp] = 0.0
                with p.loop("s", 0, np_) as s:
                    sum_[pp] += A[r, q, s] * C4[s, pp]
            with p.loop("p", 0, np_) as pp:
                A[r, q, pp] = sum_[pp]
    return p.build()


def _syrk_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    lower = np.tril(np.ones(a["C"].shape, dtype=bool))
    full = a["C"] * BETA + ALPHA * (a["A"] @ a["A"].T)
    a["C"][lower] = full[lower]


@kernel("syrk", "C = beta*C + alpha*A*A^T (lower triangle)", {"small": dict(n=40, m=30),
                                                               "bench": dict(n=900, m=800)}, _syrk_ref)
def syrk(n: int, m: int) -> Program:
    p = ProgramBuilder("syrk")
    A, C = p.input("A", (n, m)), p.output("C", (n, n))
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, i + 1) as j:
            C[i, j] = C[i, j] * BETA
        with p.loop("k", 0, m) as k:
            with p.loop("j", 0, i + 1) as j:
                C[i, j] += ALPHA * A[i, k] * A[j, k]
    return p.build()


def _trmm_ref(a: dict[str, np.ndarray], **_sizes: int) -> None:
    strict_lower = np.tril(a["A"], -1)
    a["B"][:] = ALPHA * (a["B"] + strict_lower.T @ a["B"])


@kernel("trmm", "B = alpha*A^T*B, A unit lower triangular", {"small": dict(m=40, n=30),
                                                              "bench": dict(m=600, n=800)}, _trmm_ref)
def trmm(m: int, n: int) -> Program:
    p = ProgramBuilder("trmm")
    A, B = p.input("A", (m, m)), p.output("B", (m, n))
    with p.loop("i", 0, m) as i:
        with p.loop("j", 0, n) as j:
            with p.loop("k", i + 1, m) as k:
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = ALPHA * B[i, j]
    return p.build()
