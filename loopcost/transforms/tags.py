"""Loop tags: parallel (OpenMP), vector (strip-mined, SIMD) and unrolled loops."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.state import CODE_TAGS, LoopTag, ProgramState
from .base import Transformation
from .legality import loop_level
from .levels import fresh_name, identity, insert_levels, rewrite


def untagged(state: ProgramState, loop: str, kind: str) -> None:
    """Raise unless ``loop`` exists and has no code tag yet (a loop takes one: GCC needs ``omp parallel
    for``/``omp simd`` right before the ``for``)."""
    state.comps_with(loop)
    for t in state.tags:
        if t.loop == loop and t.kind in CODE_TAGS:
            raise ScheduleError(f"loop {loop!r} is already {t.kind}; a loop can be parallel, vector or "
                                f"unrolled, not {t.kind} and {kind}")


@dataclass(frozen=True)
class Parallelize(Transformation):
    """``loop`` becomes ``#pragma omp parallel for``; it must carry no dependence."""

    loop: str
    code = "P"
    kind = "parallelize"
    keeps_order = True

    def transformed(self, state: ProgramState) -> ProgramState:
        untagged(state, self.loop, "parallel")
        return state.with_tags(LoopTag(self.loop, "parallel"))


@dataclass(frozen=True)
class Unroll(Transformation):
    """``loop`` is unrolled ``factor`` times (``#pragma GCC unroll``); always legal."""

    loop: str
    factor: int
    code = "U"
    kind = "unroll"
    keeps_order = True

    def transformed(self, state: ProgramState) -> ProgramState:
        if self.factor < 2:
            raise ScheduleError(f"unroll factor must be at least 2, got {self.factor}")
        untagged(state, self.loop, "unroll")
        return state.with_tags(LoopTag(self.loop, "unroll", self.factor))


@dataclass(frozen=True)
class Vectorize(Transformation):
    """Strip-mine innermost ``loop`` by ``width``; the inner strip ``<loop>_v`` becomes ``omp simd``.

    The strip loop must carry no dependence.
    """

    loop: str
    width: int
    code = "V"
    kind = "vectorize"
    keeps_order = True

    def transformed(self, state: ProgramState) -> ProgramState:
        if self.width < 2:
            raise ScheduleError(f"vector width must be at least 2, got {self.width}")
        inner = fresh_name(state, f"{self.loop}_v")
        changed = {}
        p = loop_level(state, self.loop)
        for cs in state.comps_with(self.loop):
            if any(name is not None for name in cs.loops[p + 1:]):
                raise ScheduleError(f"only an innermost loop can be vectorized; {self.loop!r} encloses "
                                    f"{[n for n in cs.loops[p + 1:] if n]} in {cs.comp}")
            exprs = identity(cs)
            exprs[p:p + 1] = [f"floor(l{p}/{self.width})", f"l{p}"]
            betas = list(cs.betas)
            betas[p + 1:p + 1] = [0]
            loops = list(cs.loops)
            loops[p + 1:p + 1] = [inner]
            changed[cs.comp] = rewrite(cs, exprs, betas, loops)
        return insert_levels(state, p + 1, 1, changed).with_tags(LoopTag(inner, "vector", self.width))
