"""The C frontend: read an affine loop-nest region of a C function into the IR, and write the
function back, optimized, with the same signature."""

from __future__ import annotations

from pathlib import Path

from .parse import CSource, parse_c
from .translate import CKernel, translate

__all__ = ["CKernel", "CSource", "load_c"]


def load_c(path: str | Path, *, function: str | None = None, defines: dict[str, str] | None = None,
           params: dict[str, int] | None = None, cc: str | None = None) -> CKernel:
    """Parse ``path`` (preprocessed with ``defines``) and translate its region with ``params`` sizes."""
    return translate(parse_c(path, function=function, defines=defines, cc=cc), params)
