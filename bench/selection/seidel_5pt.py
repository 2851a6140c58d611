"""2-D 5-point Gauss-Seidel sweeps, in place."""
from loopcost import ProgramBuilder


def build(size="small"):
    t, n = (4, 30) if size == "small" else (30, 1200)
    p = ProgramBuilder("seidel-5pt")
    A = p.output("A", (n, n))
    with p.loop("t", 0, t):
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                A[i, j] = (A[i - 1, j] + A[i, j - 1] + A[i, j] + A[i, j + 1] + A[i + 1, j]) * 0.2
    return p.build()
