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


def neighbors(root: ProgramState, schedule: Schedule, space: SpaceOptions = SpaceOptions()) -> list[Neighbor]:
    """Every schedule one change away from ``schedule`` (see the module's doc), each state once, ``schedule``
    itself left out; empty if ``schedule`` does not apply to ``root``."""
    steps = schedule.steps
    try:
        states = [root]
        for step in steps:
            states.append(step.transformed(states[-1]))
    except ScheduleError:
        return []
    seen = {states[-1].key}
    out: list[Neighbor] = []

    def add(head: _Steps, state: ProgramState, tail: _Steps, change: str) -> None:
        state, kept = Schedule(tail).replay(state, check=False)
        if state.key not in seen:
            seen.add(state.key)
            out.append(Neighbor(Schedule(head) + kept, state, change))

    for p, step in enumerate(steps):
        for m in moves(states[p], replace(space, kinds=(step.kind,))):
            if m.step != step:
                add(steps[:p] + (m.step,), m.state, steps[p + 1:], f"replace {p}")
        add(steps[:p], states[p], steps[p + 1:], f"drop {p}")
    for kind in dict.fromkeys(STAGES):
        p = sum(_stage(s) <= STAGES.index(kind) for s in steps)  # after the steps of its stage and earlier ones
        for m in moves(states[p], replace(space, kinds=(kind,))):
            add(steps[:p] + (m.step,), m.state, steps[p:], f"add {kind}")
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
