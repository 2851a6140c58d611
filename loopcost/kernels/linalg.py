"""Dense linear algebra kernels (PolyBench's linear-algebra/blas and kernels)."""

from __future__ import annotations

import numpy as np

from ..ir.dsl import ProgramBuilder
from ..ir.program import Program
from .registry import kernel

ALPHA, BETA = 1.5, 1.2


def _gemm_ref(a: dict[str, np.ndarray]) -> None:
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
