"""Temporaries printed as one local scalar per iteration of the loops around all their accesses.

The C frontend expands a scalar such as ``double s`` of ``s = 0; for k: s += A[i][k] * x[k]; y[i] = s`` into
a temporary ``s[i]`` indexed by its loops, so that dependences allow transformations; printed back as an array,
it costs memory traffic the original program does not have (a 2D blur: twice its time). Where, under the
schedule, the loops its accesses all share name one element per iteration and each element belongs to one
iteration (the map from those loops' iteration to the element is single-valued and injective), the temporary
is printed as a local variable declared in the body of the innermost of those loops.
"""

from __future__ import annotations

import islpy as isl

from ..ir.expr import reads
from ..ir.polyhedral import access_map, domain_str
from ..ir.state import ProgramState


def _shared(loops: list[tuple[str | None, ...]]) -> int:
    """How many outer loop levels all the schedules name alike (a loop they share)."""
    n = 0
    while all(len(ls) > n and ls[n] is not None and ls[n] == loops[0][n] for ls in loops):
        n += 1
    return n


def scalar_temps(state: ProgramState) -> dict[str, int]:
    """Each temporary that can be a local scalar, and how many loops enclose its declaration (>= 1)."""
    p = state.program
    out: dict[str, int] = {}
    if any(t.kind in ("jam", "pack") for t in state.tags):  # register blocks and copies keep their arrays
        return out
    for b in p.buffers:
        if b.role != "temp":
            continue
        uses = [(c, loops, r) for c, loops in p.walk_computations() for r in [c.target, *reads(c.rhs)]
                if r.buffer == b.name]
        if not uses:
            continue
        depth = _shared([state.comp(c.name).loops for c, _, _ in uses])
        if depth == 0:
            continue
        relation = None
        for c, loops, r in uses:
            time = state.comp(c.name).time_map().intersect_domain(isl.Set(domain_str(c, loops)))
            time = time.project_out(isl.dim_type.out, 2 * depth, time.dim(isl.dim_type.out) - 2 * depth)
            one = time.reverse().apply_range(access_map(c, loops, r))
            relation = one if relation is None else relation.union(one)
        if relation.is_single_valued() and relation.is_injective():
            out[b.name] = depth
    return out
