"""Random legal schedules, drawn through the candidate space."""

from __future__ import annotations

import random

from ..ir.program import Program
from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions, random_step

#: weights of schedule lengths 1..5
LENGTH_WEIGHTS = (2, 3, 3, 2, 1)


def random_schedule(state: ProgramState, rng: random.Random,
                    opts: SpaceOptions = SpaceOptions()) -> tuple[Schedule, ProgramState]:
    """A random legal schedule of 1 to 5 steps (fewer if the space runs dry)."""
    length = rng.choices(range(1, len(LENGTH_WEIGHTS) + 1), LENGTH_WEIGHTS)[0]
    steps = []
    for _ in range(length):
        step = random_step(state, rng, opts)
        if step is None:
            break
        steps.append(step[0])
        state = step[1]
    return Schedule(tuple(steps)), state


def random_schedules(program: Program, k: int, rng: random.Random, opts: SpaceOptions = SpaceOptions(),
                     max_tries: int | None = None) -> list[tuple[Schedule, ProgramState]]:
    """Up to ``k`` distinct, non-empty random legal schedules of ``program``."""
    initial = ProgramState.initial(program)
    seen: set[str] = set()
    out = []
    for _ in range(max_tries or 3 * k):
        if len(out) == k:
            break
        sched, state = random_schedule(initial, rng, opts)
        text = str(sched)
        if sched.steps and text not in seen:
            seen.add(text)
            out.append((sched, state))
    return out
