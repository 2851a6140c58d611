"""Small programs shared by the tests."""

from loopcost.ir.dsl import ProgramBuilder, sqrt


def chain(n: int = 16):
    """S0 writes T, S1 reads T (shifted), S2 a triangular nest reading S1's output."""
    p = ProgramBuilder("chain")
    A = p.input("A", (n + 1,))
    T = p.temp("T", (n + 1,))
    B = p.output("B", (n, n))
    with p.loop("i", 0, n + 1) as i:
        T[i] = sqrt(A[i]) * 2.0
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, i + 1) as j:
            B[i, j] = T[i + 1] - T[j]
    return p.build()


def matvec(n: int = 12, m: int = 9, dtype: str = "float64"):
    p = ProgramBuilder("matvec")
    A = p.input("A", (n, m), dtype)
    x = p.input("x", (m,), dtype)
    y = p.output("y", (n,), dtype)
    with p.loop("i", 0, n) as i:
        y[i] = 0.0
        with p.loop("j", 0, m) as j:
            y[i] += A[i, j] * x[j]
    return p.build()


def two_maps(n: int = 32):
    """Two independent element-wise loops, then a consumer reading a shifted producer."""
    p = ProgramBuilder("two_maps")
    A = p.input("A", (n + 1,))
    B, C, D = p.output("B", (n + 1,)), p.output("C", (n,)), p.output("D", (n,))
    with p.loop("i", 0, n + 1) as i:
        B[i] = A[i] * 2.0
    with p.loop("i", 0, n) as i:
        C[i] = A[i] + 1.0
    with p.loop("i", 0, n) as i:
        D[i] = B[i + 1] - C[i]
    return p.build()


def measure_one(state, runs: int = 1, warmup: int = 0):
    """``state`` measured beside its unscheduled program on this machine, and verified."""
    from loopcost.runner import LocalRunner, Timing

    return LocalRunner().measure([state], timing=Timing(runs, warmup))[0]


def run_once(exe, *, runs: int = 5, warmup: int = 1, seed: int = 0, dump_prefix: str | None = None,
             timeout: float = 120.0):
    """Variant 0 of a built harness, run ``runs`` times (the raw ``RunResult``)."""
    from loopcost.runner.process import Timing, run_variants

    return run_variants(exe, [0], timing=Timing(runs, warmup), seed=seed, dump_prefix=dump_prefix,
                        timeout=timeout)[0]
