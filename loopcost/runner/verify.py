"""Verdicts on a scheduled program's outputs, and reading harness dumps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..ir.dtypes import INT_DTYPES
from ..ir.program import Buffer, Program
from .result import RunResult

NP_DTYPES = {"float64": np.float64, "float32": np.float32, "int32": np.int32, "int8": np.int8, "int16": np.int16,
             "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}
#: relative tolerance for floating-point reassociation, per dtype: an output element passes when
#: ``|x - ref| <= RTOL * (scale + |ref|)``, scale being the largest reference magnitude.
RTOL = {"float64": 1e-8, "float32": 1e-3} | dict.fromkeys(INT_DTYPES, 0.0)


@dataclass(frozen=True)
class Verdict:
    """Whether the outputs matched; why not (``detail``), and, when the comparison itself checks nothing
    (``vacuous``), why."""

    ok: bool
    detail: str = ""
    vacuous: str | None = None


def vacuous(outputs: Sequence[Buffer], result: RunResult, reference: str = "the unscheduled program") -> str | None:
    """Why comparing ``outputs`` with the reference run checks nothing, or None: the reference's output has
    NaN or infinite elements (they compare equal to anything NaN), or it left an output as it was."""
    for b in outputs:
        bad, same, n = (result.vacuity or {}).get(b.name, (0, 0, 0))
        if bad:
            return f"the output of {reference} is NaN/Inf in {100 * bad / n:.3g}% of {b.name}"
        if n and same == n:
            return f"{reference} leaves its output {b.name} as it was"
    return None


def verdict(outputs: Sequence[Buffer], result: RunResult, *, rtol: float | None = None,
            reference: str = "the unscheduled program") -> Verdict:
    """Whether every one of ``outputs`` in ``result`` matched the reference variant within ``rtol``
    (default: ``RTOL`` of the buffer's dtype); never when the comparison is ``vacuous``."""
    if not result.ok:
        return Verdict(False, result.error or "")
    why = vacuous(outputs, result, reference)
    if why is not None:
        return Verdict(False, f"vacuous check: {why} with these inputs; give other inputs (a C file's own: "
                              "--init FUNC)", why)
    errs = result.rel_errors or {}
    for b in outputs:
        if b.name not in errs:
            return Verdict(False, f"output {b.name} was not compared")
        e, flat = errs[b.name]
        tol = RTOL[b.dtype] if rtol is None else rtol
        if e is None or e > tol:
            shown = "not finite" if e is None else f"{e:.3g}"
            where = [int(i) for i in np.unravel_index(flat, b.shape)]
            return Verdict(False, f"{b.name}{where} differs from {reference}: relative error {shown} > {tol:g}")
    return Verdict(True)


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
