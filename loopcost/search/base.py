"""The contracts every search shares: what scores candidates (``Evaluator``) and what a search returns
(``Scored``). A step of the space is a ``loopcost.transforms.space.Move``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..ir.state import ProgramState
from ..transforms.schedule import Schedule


class Evaluator(Protocol):
    """Scores a batch of states of one program, higher is faster (a predicted or measured speedup);
    ``scored`` counts the states it was asked about. ``labels`` name the states by the schedules that
    reached them (their texts), for an evaluator that records what it measures."""

    scored: int

    def score(self, states: Sequence[ProgramState], labels: Sequence[str] | None = None) -> np.ndarray: ...


@dataclass(frozen=True)
class Scored:
    """A schedule, the state it gives, and its score."""

    score: float
    schedule: Schedule
    state: ProgramState
