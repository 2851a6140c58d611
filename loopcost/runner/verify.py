"""Compare a scheduled program's outputs with the unscheduled program's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..ir.program import Program

NP_DTYPES = {"float64": np.float64, "float32": np.float32, "int32": np.int32}
#: relative tolerance for floating-point reassociation, per dtype.
RTOL = {"float64": 1e-8, "float32": 1e-3, "int32": 0.0}


def read_dump(p: Program, path: str | Path) -> dict[str, np.ndarray]:
    """Split a harness dump (every buffer, in program order) into named arrays."""
    raw = Path(path).read_bytes()
    out, pos = {}, 0
    for b in p.buffers:
        dt = np.dtype(NP_DTYPES[b.dtype])
        n = b.size * dt.itemsize
        out[b.name] = np.frombuffer(raw[pos:pos + n], dtype=dt).reshape(b.shape)
        pos += n
    if pos != len(raw):
        raise ValueError(f"dump {path} has {len(raw)} bytes, program needs {pos}")
    return out


@dataclass(frozen=True)
class Verdict:
    ok: bool
    detail: str = ""


def compare_arrays(p: Program, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> Verdict:
    """Element-wise comparison of every output buffer, with a dtype tolerance.

    The absolute tolerance scales with the largest reference magnitude, so
    cancellation in a long sum does not fail an otherwise exact schedule.
    """
    for b in p.outputs():
        g, w = got[b.name].astype(np.float64), want[b.name].astype(np.float64)
        rtol = RTOL[b.dtype]
        finite = np.isfinite(w)
        scale = float(np.max(np.abs(w[finite]))) if finite.any() else 0.0
        close = np.isclose(g, w, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if not close.all():
            idx = tuple(int(i) for i in np.argwhere(~close)[0])
            return Verdict(False, f"{b.name}{list(idx)} = {g[idx]!r}, expected {w[idx]!r} "
                                  f"({int((~close).sum())} of {close.size} elements differ)")
    return Verdict(True)


def compare_checksums(p: Program, got: dict, want: dict) -> Verdict:
    """Compare harness checksums (sum and absolute sum per output) with the dtype tolerance."""
    for b in p.outputs():
        g, w = got.get(b.name), want.get(b.name)
        if g is None or w is None:
            if g != w:
                return Verdict(False, f"{b.name}: non-finite output in one run only")
            continue
        tol = max(RTOL[b.dtype], 1e-12) * max(abs(w["abs"]), 1e-30)
        for key in ("sum", "abs"):
            if abs(g[key] - w[key]) > tol:
                return Verdict(False, f"{b.name}: checksum {key} {g[key]!r}, expected {w[key]!r}")
    return Verdict(True)
