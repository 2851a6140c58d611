"""A dense layer in float32: Y = relu(X * W^T + bias), W stored row per output."""
from loopcost import ProgramBuilder
from loopcost.ir.dsl import maximum


def build(size="small"):
    b, o, i_ = (30, 40, 50) if size == "small" else (500, 600, 700)
    p = ProgramBuilder("mlp")
    X, W = p.input("X", (b, i_), "float32"), p.input("W", (o, i_), "float32")
    bias = p.input("bias", (o,), "float32")
    H, Y = p.temp("H", (b, o), "float32"), p.output("Y", (b, o), "float32")
    with p.loop("n", 0, b) as n:
        with p.loop("j", 0, o) as j:
            H[n, j] = 0.0
            with p.loop("k", 0, i_) as k:
                H[n, j] += X[n, k] * W[j, k]
    with p.loop("n", 0, b) as n:
        with p.loop("j", 0, o) as j:
            Y[n, j] = maximum(H[n, j] - bias[j] * i_, 0.0)
    return p.build()
