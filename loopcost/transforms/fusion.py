"""Fusion and distribution: which loops two computations share."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir.state import CompSchedule, ProgramState
from .base import Transformation
from .levels import fresh_name


def shared_depth(a: CompSchedule, b: CompSchedule) -> int:
    """How many outer loops ``a`` and ``b`` share (same betas before them, same loop names)."""
    k = 0
    while (k < len(a.loops) and a.loops[k] is not None and a.loops[k] == b.loops[k]
           and a.betas[k] == b.betas[k]):
        k += 1
    return k


@dataclass(frozen=True)
class Fuse(Transformation):
    """Run computation ``b`` right after ``a``, inside ``a``'s outer ``depth`` loops.

    ``depth`` 0 puts ``b`` after ``a`` at the top level; a depth smaller than
    what they share now distributes them.
    """

    a: str
    b: str
    depth: int
    code = "F"
    kind = "fuse"

    def transformed(self, state: ProgramState) -> ProgramState:
        A, B = state.comp(self.a), state.comp(self.b)
        if self.a == self.b:
            raise ScheduleError(f"fusion needs two different computations, got {self.a!r} twice")
        d = self.depth
        real = min(len(A.real_loops), len(B.real_loops))
        if not 0 <= d <= real or any(n is None for n in A.loops[:d] + B.loops[:d]):
            raise ScheduleError(f"cannot fuse {self.a} and {self.b} at depth {d}: they have "
                                f"{len(A.real_loops)} and {len(B.real_loops)} loops")
        prefix, slot = A.betas[:d], A.betas[d]
        out: dict[str, CompSchedule] = {}
        for cs in state.comps:
            if cs.comp != self.b and cs.betas[:d] == prefix and cs.loops[:d] == A.loops[:d] \
                    and cs.betas[d] > slot:
                betas = list(cs.betas)
                betas[d] += 1
                out[cs.comp] = replace(cs, betas=tuple(betas))
        betas = list(B.betas)
        betas[:d + 1] = list(prefix) + [slot + 1]
        loops = list(A.loops[:d]) + list(B.loops[d:])
        newB = replace(B, betas=tuple(betas), loops=tuple(loops))
        state = state.with_comps({**out, self.b: newB})
        # loops of b below the fused depth that it still shares by name with others must be renamed,
        # since they are now separate loops.
        for k in range(d, len(loops)):
            name = loops[k]
            if name is None:
                continue
            others = [cs for cs in state.comps if cs.comp != self.b and name in cs.loops]
            if others and all(shared_depth(cs, newB) <= k for cs in others):
                loops[k] = fresh_name(state, name)
                newB = replace(newB, loops=tuple(loops))
                state = state.with_comps({self.b: newB})
        return state
