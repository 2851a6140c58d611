"""C = beta*C + alpha*(A*B^T + B*A^T) on the lower triangle (PolyBench's syr2k)."""
from loopcost import ProgramBuilder


def build(size="small"):
    n, m = (40, 30) if size == "small" else (700, 600)
    p = ProgramBuilder("syr2k")
    A, B, C = p.input("A", (n, m)), p.input("B", (n, m)), p.output("C", (n, n))
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, i + 1) as j:
            C[i, j] = C[i, j] * 1.2
        with p.loop("k", 0, m) as k:
            with p.loop("j", 0, i + 1) as j:
                C[i, j] += A[j, k] * 1.5 * B[i, k] + B[j, k] * 1.5 * A[i, k]
    return p.build()
