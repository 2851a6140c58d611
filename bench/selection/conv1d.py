"""Multi-channel 1-D convolution (valid padding) with a bias."""
from loopcost import ProgramBuilder


def build(size="small"):
    c, f, w, k = (3, 4, 40, 5) if size == "small" else (64, 64, 24000, 7)
    p = ProgramBuilder("conv1d")
    X, K, bias = p.input("X", (c, w)), p.input("K", (f, c, k)), p.input("bias", (f,))
    Y = p.output("Y", (f, w - k + 1))
    with p.loop("o", 0, f) as o:
        with p.loop("x", 0, w - k + 1) as x:
            Y[o, x] = bias[o]
            with p.loop("c", 0, c) as cc:
                with p.loop("r", 0, k) as r:
                    Y[o, x] += K[o, cc, r] * X[cc, x + r]
    return p.build()
