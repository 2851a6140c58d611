"""Affine reorderings of loop levels: interchange, reversal, skewing."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir.state import LoopTag, ProgramState
from .base import Transformation
from .levels import identity, rewrite


@dataclass(frozen=True)
class Interchange(Transformation):
    """Swap loops ``a`` and ``b`` in every computation they both enclose."""

    a: str
    b: str
    code = "I"
    kind = "interchange"

    def transformed(self, state: ProgramState) -> ProgramState:
        if self.a == self.b:
            raise ScheduleError(f"interchange needs two different loops, got {self.a!r} twice")
        out = {}
        for cs in state.comps_with(self.a, self.b):
            p, q = cs.level_of(self.a), cs.level_of(self.b)
            exprs, loops = identity(cs), list(cs.loops)
            exprs[p], exprs[q] = exprs[q], exprs[p]
            loops[p], loops[q] = loops[q], loops[p]
            out[cs.comp] = rewrite(cs, exprs, list(cs.betas), loops)
        return state.with_comps(out).with_tags(LoopTag(self.a, "interchanged"), LoopTag(self.b, "interchanged"))


@dataclass(frozen=True)
class Reverse(Transformation):
    """Run ``loop`` backwards."""

    loop: str
    code = "R"
    kind = "reverse"

    def transformed(self, state: ProgramState) -> ProgramState:
        out = {}
        for cs in state.comps_with(self.loop):
            p = cs.level_of(self.loop)
            exprs = identity(cs)
            exprs[p] = f"-l{p}"
            out[cs.comp] = rewrite(cs, exprs, list(cs.betas), list(cs.loops))
        old = state.tag_of(self.loop, "reversed")
        if old:  # reversing twice restores the loop
            return replace(state.with_comps(out), tags=tuple(t for t in state.tags if t != old))
        return state.with_comps(out).with_tags(LoopTag(self.loop, "reversed"))


@dataclass(frozen=True)
class Skew(Transformation):
    """Replace inner loop ``b`` by ``b + factor * a``; ``a`` must enclose ``b``."""

    a: str
    b: str
    factor: int
    code = "S"
    kind = "skew"

    def transformed(self, state: ProgramState) -> ProgramState:
        if self.factor < 1:
            raise ScheduleError(f"skew factor must be at least 1, got {self.factor}")
        out = {}
        for cs in state.comps_with(self.a, self.b):
            p, q = cs.level_of(self.a), cs.level_of(self.b)
            if q <= p:
                raise ScheduleError(f"skew needs {self.a!r} outside {self.b!r} in {cs.comp}")
            exprs = identity(cs)
            exprs[q] = f"l{q} + {self.factor} * l{p}"
            out[cs.comp] = rewrite(cs, exprs, list(cs.betas), list(cs.loops))
        old = state.tag_of(self.b, "skewed")
        return state.with_comps(out).with_tags(LoopTag(self.b, "skewed", self.factor + (old.factor if old else 0)))
