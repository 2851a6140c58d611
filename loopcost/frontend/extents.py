"""The extent of an array that comes as a pointer (``double *A``, ``double (*A)[M]``, ``double A[][M]``, a
``malloc``'d temporary): one past the largest first index the region's accesses reach, computed exactly over
the loops (isl), not over their bounding box."""

from __future__ import annotations

import islpy as isl

from ..errors import ProgramError
from ..ir.expr import reads
from ..ir.polyhedral import access_map
from ..ir.program import Buffer, Node, walk_computations

#: the first extent of such an array until its accesses are read (larger than any index they can reach)
PROVISIONAL = 2 ** 40


def sized_by_accesses(buffers: tuple[Buffer, ...], body: tuple[Node, ...], unsized: set[str]) -> tuple[Buffer, ...]:
    """``buffers`` with the first extent of each one in ``unsized`` (a pointer's) made what the accesses of the
    loop tree ``body`` reach: one past the largest first index (an index below 0 is refused)."""
    touched: dict[str, isl.Set] = {}
    for c, loops in walk_computations(body):
        for r in [c.target, *reads(c.rhs)]:
            if r.buffer in unsized:
                first = access_map(c, loops, r).range().project_out(isl.dim_type.set, 1, len(r.index) - 1)
                touched[r.buffer] = touched[r.buffer].union(first) if r.buffer in touched else first
    extents = {}
    for name, reached in touched.items():
        if reached.is_empty():
            extents[name] = 1
            continue
        lo, hi = (int(x.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python())
                  for x in (reached.lexmin(), reached.lexmax()))
        if lo < 0:
            raise ProgramError(f"an access of {name!r} reaches index {lo} of its first dimension: loopcost reads "
                               "pointers from their first element on")
        extents[name] = hi + 1
    return tuple(Buffer(b.name, (extents.get(b.name, 1), *b.shape[1:]), b.dtype, b.role) if b.name in unsized
                 else b for b in buffers)
