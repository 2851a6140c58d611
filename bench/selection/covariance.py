"""Covariance of the columns of a data matrix (PolyBench's covariance)."""
from loopcost import ProgramBuilder


def build(size="small"):
    n, m = (40, 30) if size == "small" else (1000, 800)
    p = ProgramBuilder("covariance")
    data = p.input("data", (n, m))
    mean, d, cov = p.temp("mean", (m,)), p.temp("d", (n, m)), p.output("cov", (m, m))
    with p.loop("j", 0, m) as j:
        mean[j] = 0.0
        with p.loop("i", 0, n) as i:
            mean[j] += data[i, j] / n
    with p.loop("i", 0, n) as i:
        with p.loop("j", 0, m) as j:
            d[i, j] = data[i, j] - mean[j]
    with p.loop("i", 0, m) as i:
        with p.loop("j", i, m) as j:
            cov[i, j] = 0.0
            with p.loop("k", 0, n) as k:
                cov[i, j] += d[k, i] * d[k, j] / (n - 1)
    return p.build()
