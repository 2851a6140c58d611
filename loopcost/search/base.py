"""The contracts every search shares: what scores candidates (``Evaluator``) and what a search returns
(``Scored``). A step of the space is a ``loopcost.transforms.space.Move``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
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


def without_needless_skews(best: Sequence[Scored], state: ProgramState, evaluator: Evaluator,
                           known: Mapping[tuple, Scored]) -> list[Scored]:
    """``best`` (schedules of ``state``) with each schedule replaced by itself less the skews it stays legal
    without (``Schedule.without_needless_skews``), scored anew unless ``known`` (the legal states the search
    scored, by ``ProgramState.key``) holds its state; best first, each state once. A skew kept for a later step
    that never came only slants the loops' bounds, and models rate it on a state unlike those they learned."""
    out: dict[tuple, Scored] = {}
    fresh: list[Scored] = []
    for s in best:
        short = s.schedule.without_needless_skews(state)
        if short != s.schedule:
            new = short.apply(state, check=False)
            s = known.get(new.key)
            if s is None:
                s = Scored(0.0, short, new)
                fresh.append(s)
        out.setdefault(s.state.key, s)
    if fresh:
        scores = evaluator.score([s.state for s in fresh], [str(s.schedule) for s in fresh])
        rescored = {s.state.key: replace(s, score=float(v)) for s, v in zip(fresh, scores, strict=True)}
        out = {k: rescored.get(k, v) for k, v in out.items()}
    return sorted(out.values(), key=lambda s: -s.score)
