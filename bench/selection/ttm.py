"""Tensor-times-matrix: Y[i,j,l] = sum_k X[i,j,k] * M[k,l]."""
from loopcost import ProgramBuilder


def build(size="small"):
    ni, nj, nk, nl = (8, 10, 12, 14) if size == "small" else (128, 200, 256, 160)
    p = ProgramBuilder("ttm")
    X, M, Y = p.input("X", (ni, nj, nk)), p.input("M", (nk, nl)), p.output("Y", (ni, nj, nl))
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nj) as j:
            with p.loop("l", 0, nl) as l_:
                Y[i, j, l_] = 0.0
                with p.loop("k", 0, nk) as k:
                    Y[i, j, l_] += X[i, j, k] * M[k, l_]
    return p.build()
