"""Random search: draw random legal schedules, score them in one batch, keep the best."""

from __future__ import annotations

import random

from ..generator.schedules import random_schedule
from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions
from .base import Evaluator, Scored, without_needless_skews


def random_search(state: ProgramState, evaluator: Evaluator, *, samples: int = 64, seed: int = 0,
                  opts: SpaceOptions = SpaceOptions(), keep: int = 20) -> list[Scored]:
    """The ``keep`` best of ``samples`` random schedules that reach distinct states (plus the empty one),
    best first, each less the skews it stays legal without (``base.without_needless_skews``)."""
    rng = random.Random(seed)
    drawn: dict[tuple, tuple[Schedule, ProgramState]] = {state.key: (Schedule(), state)}
    for _ in range(3 * samples):
        if len(drawn) > samples:
            break
        sched, st = random_schedule(state, rng, opts)
        drawn.setdefault(st.key, (sched, st))
    items = list(drawn.values())
    scores = evaluator.score([st for _, st in items], [str(s) for s, _ in items])
    ranked = sorted((Scored(float(sc), s, st) for (s, st), sc in zip(items, scores, strict=True)),
                    key=lambda c: -c.score)
    return without_needless_skews(ranked[:keep], state, evaluator, {c.state.key: c for c in ranked})
