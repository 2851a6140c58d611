"""Unroll-and-jam: a block of a loop's iterations kept in registers (register tiling).

``J(L,f)`` strip-mines ``L`` by ``f`` (the loop over blocks, ``L_r``, stays where ``L`` was) and sinks the
point loop ``L`` below every loop it enclosed, in every computation inside it: the ``f`` copies of each
statement then sit side by side in the innermost loop body. Code generation unrolls the point loop
fully (``jam`` tag), keeps the block's reduction targets in local variables across the loops around it
(scalar replacement) and moves the guards of partial blocks out of those loops. Legal exactly when the
strip-mined and sunk order is (exact dependences); the unrolling keeps that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import repeat

from ..errors import ScheduleError
from ..ir.state import CompSchedule, LoopTag, ProgramState
from .base import Transformation
from .legality import loop_level
from .levels import fresh_name, identity, rewrite
from .tags import untagged
from .tiling import tile_levels

#: the largest block of one loop that code generation unrolls, and of all the jammed loops of a computation
#: (the copies of its statement in the innermost body)
MAX_JAM = 16
MAX_BLOCK = 128


def _sunk(cs: CompSchedule, q: int, scale: int) -> CompSchedule:
    """``cs`` with its level ``q`` moved below its last real loop.

    In the 2d+1 tree, each child of the moved loop becomes a child of the loop around it, in the same
    order (beta ``b[q] * scale + b[q+1]``), and gets its own copy of the moved loop innermost.
    """
    last = max(k for k, name in enumerate(cs.loops) if name is not None)
    if any(name is None for name in cs.loops[q:last + 1]):
        raise ScheduleError(f"{cs.comp}: cannot sink {cs.loops[q]!r} past a level it does not enclose")
    order = list(range(q)) + list(range(q + 1, last + 1)) + [q] + list(range(last + 1, len(cs.loops)))
    exprs = [identity(cs)[k] for k in order]
    loops = [cs.loops[k] for k in order]
    b = cs.betas
    betas = list(b[:q]) + [b[q] * scale + b[q + 1]]
    if last > q:
        betas += list(b[q + 2:last + 1]) + [b[last + 1]]
    betas += [0] * (len(b) - len(betas))
    return rewrite(cs, exprs, betas, loops)


def sink_innermost(state: ProgramState, loop: str) -> ProgramState:
    """``loop`` moved below every real loop it encloses, in each computation inside it."""
    q = loop_level(state, loop)
    inside = {cs.comp for cs in state.comps_with(loop)}
    scale = 1 + max(cs.betas[q + 1] for cs in state.comps if cs.comp in inside)
    changed = {}
    for cs in state.comps:
        if cs.comp in inside:
            changed[cs.comp] = _sunk(cs, q, scale)
        else:  # siblings keep their place among the moved loop's children
            betas = list(cs.betas)
            betas[q] *= scale
            changed[cs.comp] = CompSchedule(cs.comp, cs.loop_map, tuple(betas), cs.loops, cs.levels)
    return state.with_comps(changed)


@dataclass(frozen=True)
class UnrollJam(Transformation):
    """Unroll ``loop`` by ``factor`` and jam the copies into the innermost loop body (see the module)."""

    loop: str
    factor: int
    code = "J"
    kind = "jam"

    def outer(self, state: ProgramState) -> str:
        """The name the loop over blocks gets when this jam applies to ``state``."""
        return fresh_name(state, f"{self.loop}_r")

    def transformed(self, state: ProgramState) -> ProgramState:
        if not 2 <= self.factor <= MAX_JAM:
            raise ScheduleError(f"unroll-and-jam factor must be 2..{MAX_JAM}, got {self.factor}")
        untagged(state, self.loop, "jammed")
        for cs in state.comps_with(self.loop):
            block = self.factor * math.prod(t.factor for t in map(state.tag_of, cs.real_loops, repeat("jam")) if t)
            if block > MAX_BLOCK:
                raise ScheduleError(f"unroll-and-jam {self}: a block of {block} copies of {cs.comp} (at most "
                                    f"{MAX_BLOCK})")
        outer = self.outer(state)
        state = tile_levels(state, (self.loop,), (self.factor,), [outer])
        state = sink_innermost(state, self.loop)
        return state.with_tags(LoopTag(outer, "tile", self.factor), LoopTag(self.loop, "tiled", self.factor),
                               LoopTag(self.loop, "jam", self.factor))
