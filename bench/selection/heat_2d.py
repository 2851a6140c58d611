"""2-D heat equation, two buffers, tsteps double sweeps (PolyBench's heat-2d)."""
from loopcost import ProgramBuilder


def build(size="small"):
    t, n = (4, 30) if size == "small" else (120, 1000)
    p = ProgramBuilder("heat-2d")
    A, B = p.output("A", (n, n)), p.temp("B", (n, n))
    with p.loop("t", 0, t):
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                B[i, j] = (0.125 * (A[i + 1, j] - 2.0 * A[i, j] + A[i - 1, j])
                           + 0.125 * (A[i, j + 1] - 2.0 * A[i, j] + A[i, j - 1]) + A[i, j])
        with p.loop("i", 1, n - 1) as i:
            with p.loop("j", 1, n - 1) as j:
                A[i, j] = (0.125 * (B[i + 1, j] - 2.0 * B[i, j] + B[i - 1, j])
                           + 0.125 * (B[i, j + 1] - 2.0 * B[i, j] + B[i, j - 1]) + B[i, j])
    return p.build()
