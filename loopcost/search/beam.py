"""Beam search over the transformation stages, as in the paper.

Stages are transformation kinds in a fixed order. At each stage every state
of the beam is expanded with every legal candidate of that kind; the
candidates and their unchanged parents compete, scored in one batch, and the
``beam_size`` best survive.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions, candidates

#: the order in which beam search considers transformation kinds
STAGES = ("fuse", "interchange", "interchange", "skew", "reverse", "tile", "parallelize", "vectorize", "unroll")


@dataclass(frozen=True)
class Scored:
    score: float
    schedule: Schedule
    state: ProgramState


def _key(s: Scored) -> str:
    return str(s.schedule)


def beam_search(state: ProgramState, evaluator, *, beam_size: int = 4, stages: tuple[str, ...] = STAGES,
                opts: SpaceOptions = SpaceOptions(), keep: int = 20) -> list[Scored]:
    """The ``keep`` best distinct schedules seen, best first (the empty schedule among them)."""
    root = Scored(float(evaluator.score([state])[0]), Schedule(), state)
    beam = [root]
    seen = {_key(root): root}
    for kind in stages:
        children: list[Scored] = []
        for parent in beam:
            for t, new in candidates(parent.state, replace(opts, kinds=(kind,))):
                sched = parent.schedule + t
                if str(sched) not in seen:
                    children.append(Scored(0.0, sched, new))
        if children:
            scores = evaluator.score([c.state for c in children])
            children = [replace(c, score=float(s)) for c, s in zip(children, scores, strict=True)]
            for c in children:
                seen[_key(c)] = c
        pool = beam + children
        order = np.argsort([-c.score for c in pool], kind="stable")
        beam = [pool[i] for i in order[:beam_size]]
    ranked = sorted(seen.values(), key=lambda c: -c.score)
    return ranked[:keep]
