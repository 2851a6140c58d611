"""A program together with its schedule: what code generation and features read.

Every computation has a schedule map into one shared time space (all of the
same dimension), and loop tags that say which time dimension becomes a
parallel, vector or unrolled loop for that computation. Transformations
(``loopcost.transforms``) return new states; the state itself never changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ScheduleError
from .polyhedral import original_schedules
from .program import Program

TAG_KINDS = ("parallel", "vector", "unroll")


@dataclass(frozen=True)
class LoopTag:
    """Computation ``comp`` at time dimension ``dim`` is a ``kind`` loop (with ``factor``)."""

    comp: str
    dim: int
    kind: str
    factor: int = 0

    def __post_init__(self) -> None:
        if self.kind not in TAG_KINDS:
            raise ScheduleError(f"unknown loop tag {self.kind!r}; use one of {TAG_KINDS}")


@dataclass(frozen=True)
class ProgramState:
    program: Program
    schedules: tuple[tuple[str, str], ...]
    tags: tuple[LoopTag, ...] = ()

    @staticmethod
    def initial(program: Program) -> ProgramState:
        """The unscheduled program: its source order, no tags."""
        return ProgramState(program, tuple(original_schedules(program).items()))

    def schedule_of(self, comp: str) -> str:
        for name, text in self.schedules:
            if name == comp:
                return text
        raise ScheduleError(f"no computation {comp!r} in program {self.program.name!r}")

    def tags_at(self, comp: str, dim: int) -> list[LoopTag]:
        return [t for t in self.tags if t.comp == comp and t.dim == dim]

    def with_tags(self, *tags: LoopTag) -> ProgramState:
        return replace(self, tags=self.tags + tags)
