"""The common shape of every transformation."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from ..ir.state import ProgramState
from .legality import check, check_tags


@dataclass(frozen=True)
class Transformation:
    """A named, pure change of a schedule.

    ``apply`` returns a new, legal state or raises ``ScheduleError``
    (``IllegalScheduleError`` when a dependence would break). Subclasses give
    ``code`` (the notation letter) and implement ``transformed``.
    """

    code: ClassVar[str]
    kind: ClassVar[str]
    #: True for transformations that keep the execution order (tagging a loop, strip-mining an innermost
    #: one): from a legal state, only the tags they add need checking
    keeps_order: ClassVar[bool] = False

    def apply(self, state: ProgramState) -> ProgramState:
        """The transformed state, checked for legality (``state`` is taken to be legal, as every state
        that ``apply`` returns is)."""
        return self.checked(state, self.transformed(state))

    def checked(self, before: ProgramState, after: ProgramState) -> ProgramState:
        """``after``, which ``transformed(before)`` returned, once checked for legality; raises
        ``IllegalScheduleError`` if it is not. ``before`` is taken to be legal."""
        if self.keeps_order:
            old = set(before.tags)
            return check_tags(after, [t for t in after.tags if t not in old])
        return check(after)

    def transformed(self, state: ProgramState) -> ProgramState:
        """The transformed state, without the legality check (for callers that proved it)."""
        raise NotImplementedError

    def args(self) -> list:
        """Arguments in notation order (flattened)."""
        out: list = []
        for f in fields(self):
            v = getattr(self, f.name)
            out.extend(v if isinstance(v, tuple) else [v])
        return out

    def __str__(self) -> str:
        return f"{self.code}({','.join(str(a) for a in self.args())})"

    def to_json(self) -> dict:
        d = {"transform": self.kind}
        for f in fields(self):
            v = getattr(self, f.name)
            d[f.name] = list(v) if isinstance(v, tuple) else v
        return d
