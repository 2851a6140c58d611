"""C = A^T * B^T: a matrix product whose operands are both read across rows."""
from loopcost import ProgramBuilder


def build(size="small"):
    ni, nj, nk = (40, 50, 30) if size == "small" else (600, 700, 500)
    p = ProgramBuilder("gemm-tn")
    A, B, C = p.input("A", (nk, ni)), p.input("B", (nj, nk)), p.output("C", (ni, nj))
    with p.loop("i", 0, ni) as i:
        with p.loop("j", 0, nj) as j:
            C[i, j] = 0.0
            with p.loop("k", 0, nk) as k:
                C[i, j] += A[k, i] * B[j, k]
    return p.build()
