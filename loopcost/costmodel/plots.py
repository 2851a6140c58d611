"""PNG plots of a model's predictions: predicted against measured speedup (log-log), and the error
distribution. Needs matplotlib (the ``plots`` extra)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import LoopcostError


def save_plots(out_dir: str | Path, measured: np.ndarray, predictions: dict[str, np.ndarray],
               title: str = "") -> list[Path]:
    """Write ``scatter.png`` and ``errors.png`` into ``out_dir``; returns their paths."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise LoopcostError("plots need matplotlib: pip install 'loopcost[plots]'") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lo, hi = float(measured.min()) / 1.5, float(measured.max()) * 1.5
    fig, axes = plt.subplots(1, len(predictions), figsize=(5 * len(predictions), 5), squeeze=False)
    for ax, (name, pred) in zip(axes[0], predictions.items(), strict=True):
        ax.scatter(measured, pred, s=3, alpha=0.3)
        ax.plot([lo, hi], [lo, hi], "k--", lw=1)
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured speedup",
               ylabel="predicted speedup", title=f"{name} {title}".strip())
    fig.tight_layout()
    scatter = out / "scatter.png"
    fig.savefig(scatter, dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    bins = np.linspace(-3, 3, 121)
    for name, pred in predictions.items():
        ax.hist(np.clip(np.log2(pred / measured), -3, 3), bins=bins, alpha=0.5, label=name)
    ax.set(xlabel="log2(predicted / measured)", ylabel="schedules", title=f"errors {title}".strip())
    ax.legend()
    fig.tight_layout()
    errors = out / "errors.png"
    fig.savefig(errors, dpi=120)
    plt.close(fig)
    return [scatter, errors]
