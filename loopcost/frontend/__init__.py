"""The C frontend: read an affine loop-nest region of a C function into the IR, and write the
function back, optimized, with the same signature."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import CSourceError
from . import region
from .parse import CSource, parse_c
from .translate import CKernel, translate

__all__ = ["CKernel", "CSource", "load_c"]


def load_c(path: str | Path, *, function: str | None = None, defines: dict[str, str] | None = None,
           params: dict[str, int] | None = None, cc: str | None = None,
           include_dirs: Sequence[str | Path] = ()) -> CKernel:
    """Parse ``path`` (preprocessed with ``defines``, headers found in its folder and ``include_dirs``) and
    translate its region with ``params`` sizes (the others as the file's own call of the function passes
    them); a function without ``#pragma scop`` whose whole body is not read because it does more than
    loops (timers, prints, calls) gives the loops with the most work that are (``region``)."""
    src = parse_c(path, function=function, defines=defines, cc=cc, include_dirs=include_dirs)
    try:
        return translate(src, params)
    except CSourceError as e:
        if src.scop or not region.has_other_code(src):
            raise
        return region.chosen(src, lambda r: translate(r, params), e)
