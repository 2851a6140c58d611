"""Random legal schedules, drawn through the candidate space.

Two kinds of draws share the dataset: steps of random kinds in random order
(1 to 5 of them), and walks through the search's stage order that take each
stage with some probability (up to ``len(STAGES)`` steps), so that the data
holds the long, ordered schedules that beam search ends with and the model
is not extrapolating when it rates them.
"""

from __future__ import annotations

import random

from ..ir.program import Program
from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import STAGES, SpaceOptions, random_step

#: weights of the lengths 1..5 of a random-order schedule
LENGTH_WEIGHTS = (2, 3, 3, 2, 1)
#: the share of schedules that walk the stage order
STAGED_SHARE = 0.5
#: the probability that a staged walk takes a step at a stage
STAGE_PROB = 0.55


def _walk(state: ProgramState, kinds: list[str | None], rng: random.Random,
          opts: SpaceOptions) -> tuple[Schedule, ProgramState]:
    """One random legal step per entry of ``kinds``: an entry of one kind with no legal step is skipped,
    an entry of any kind (None) with none ends the walk (nothing at all is legal)."""
    steps = []
    for kind in kinds:
        step = random_step(state, rng, opts, kinds=None if kind is None else (kind,))
        if step is None:
            if kind is None:
                break
            continue
        steps.append(step.step)
        state = step.state
    return Schedule(tuple(steps)), state


def random_schedule(state: ProgramState, rng: random.Random, opts: SpaceOptions = SpaceOptions(),
                    staged_share: float = 0.0) -> tuple[Schedule, ProgramState]:
    """A random legal schedule (possibly empty if the space runs dry).

    With probability ``staged_share`` a walk through the stage order, else 1 to 5 steps of
    random kinds.
    """
    if staged_share and rng.random() < staged_share:
        return _walk(state, [k for k in STAGES if rng.random() < STAGE_PROB], rng, opts)
    length = rng.choices(range(1, len(LENGTH_WEIGHTS) + 1), LENGTH_WEIGHTS)[0]
    return _walk(state, [None] * length, rng, opts)


def random_schedules(program: Program, k: int, rng: random.Random, opts: SpaceOptions = SpaceOptions(),
                     max_tries: int | None = None,
                     staged_share: float = STAGED_SHARE) -> list[tuple[Schedule, ProgramState]]:
    """Up to ``k`` distinct, non-empty random legal schedules of ``program`` (the dataset's sampler)."""
    initial = ProgramState.initial(program)
    seen: set[str] = set()
    out = []
    for _ in range(max_tries or 3 * k):
        if len(out) == k:
            break
        sched, state = random_schedule(initial, rng, opts, staged_share)
        text = str(sched)
        if sched.steps and text not in seen:
            seen.add(text)
            out.append((sched, state))
    return out
