"""Schedules one change away from a measured one: the neighborhood a measured local search walks.

A model-guided search ranks whole schedules with the model's mistakes, and an adaptive search's
per-kernel correction only fixes them near what was measured. Execution-based beam search finds what
the model misses because it measures every child of its beam: on 2mm (AMD EPYC) it reached 3.34x with
``F(S2,S3,0) I(j_1_1,k_1) I(i_1_1,k_1) I(k_1,i_1_1) T3(i,j,k,32,64,8) J(j_t,2) J(i_1_1,4) P(i_1_1_r)
U(j_1,2)`` where the model's best measured 2.61x, a few single changes away. A neighbor of a schedule
replaces one of its steps by another of the same kind (from the state before it), leaves one out, or
adds one step of a beam stage's kind where that stage sits; the later steps are replayed where they
still apply. Neighbors are built without legality checks: a search checks (``legal``) only the ones it
is about to measure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir.state import ProgramState
from ..transforms.base import Transformation
from ..transforms.schedule import Schedule
from ..transforms.space import STAGES, SpaceOptions, moves


@dataclass(frozen=True)
class Neighbor:
    """A schedule one ``change`` away from its ``base``: ``"replace 3"``, ``"drop 3"`` or ``"add tile"``
    (the step's position or the added step's kind), and the state it reaches, not checked for legality."""

    schedule: Schedule
    state: ProgramState
    change: str


_Steps = tuple[Transformation, ...]


def _stage(step: Transformation) -> int:
    """Where the step's kind sits among beam search's stages (its first place; kinds outside them last)."""
    return STAGES.index(step.kind) if step.kind in STAGES else len(STAGES)


#: the most neighbors built of one schedule: each replays the steps after its change, so a schedule of 30 steps
#: (3mm's three register-tiled products) has thousands, and building them took minutes; beyond this many, a
#: fixed sample of them (seeded: the same every time)
MAX_NEIGHBORS = 400


def neighbors(root: ProgramState, schedule: Schedule, space: SpaceOptions = SpaceOptions(),
              limit: int = MAX_NEIGHBORS) -> list[Neighbor]:
    """The schedules one change away from ``schedule`` (see the module's doc), each state once, ``schedule``
    itself left out, at most ``limit`` of them where there are more (every drop, a seeded sample of the rest);
    empty if ``schedule`` does not apply to ``root``."""
    steps = schedule.steps
    try:
        states = [root]
        for step in steps:
            states.append(step.transformed(states[-1]))
    except ScheduleError:
        return []
    changes: list[tuple[_Steps, ProgramState, _Steps, str]] = []  # head, the state it reaches, tail, change
    for p, step in enumerate(steps):
        for m in moves(states[p], replace(space, kinds=(step.kind,))):
            if m.step != step:
                changes.append((steps[:p] + (m.step,), m.state, steps[p + 1:], f"replace {p}"))
        changes.append((steps[:p], states[p], steps[p + 1:], f"drop {p}"))
    for kind in dict.fromkeys(STAGES):
        p = sum(_stage(s) <= STAGES.index(kind) for s in steps)  # after the steps of its stage and earlier ones
        for m in moves(states[p], replace(space, kinds=(kind,))):
            changes.append((steps[:p] + (m.step,), m.state, steps[p:], f"add {kind}"))
    if len(changes) > limit:  # every drop (one a step), a sample of the rest
        drops = [k for k, c in enumerate(changes) if c[3].startswith("drop")]
        rest = [k for k, c in enumerate(changes) if not c[3].startswith("drop")]
        kept = drops + random.Random(0).sample(rest, max(0, limit - len(drops)))
        changes = [changes[k] for k in sorted(kept)]
    seen = {states[-1].key}
    out: list[Neighbor] = []
    for head, state, tail, change in changes:
        state, kept = Schedule(tail).replay(state, check=False)
        if state.key not in seen:
            seen.add(state.key)
            out.append(Neighbor(Schedule(head) + kept, state, change))
    return out


def legal(root: ProgramState, n: Neighbor) -> bool:
    """Whether the neighbor's schedule applies to ``root`` step by step with every check, as its text will
    be applied again (its final state alone may be legal where a step on the way is not: an interchange
    replayed after another fusion)."""
    try:
        n.schedule.apply(root)
    except ScheduleError:
        return False
    return True
