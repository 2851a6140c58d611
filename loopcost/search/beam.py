"""Beam search over the transformation stages, as in the paper.

Stages are transformation kinds in a fixed order. At each stage every state
of the beam is expanded with every candidate of that kind; the candidates and
their unchanged parents compete, scored in one batch, and the ``beam_size``
best legal ones survive.

With a cost model, scoring is cheap and legality checks are not: candidates
are scored first and checked for legality only when they would enter the beam
or the returned list (``lazy``). Nothing unchecked is ever kept or returned.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import STAGES, Move, SpaceOptions, moves
from .base import Evaluator, Scored, without_needless_skews


@dataclass
class _Entry:
    scored: Scored
    #: the last move and the legal state before it, while the legality of ``scored.state`` is unknown
    pending: tuple[Move, ProgramState] | None = None
    illegal: bool = False


def _legal(e: _Entry) -> bool:
    """Whether the entry's state is legal, checked once, when it is about to be kept."""
    if e.pending is not None and not e.illegal:
        move, before = e.pending
        try:
            move.step.checked(before, e.scored.state)
            e.pending = None
        except ScheduleError:
            e.illegal = True
    return not e.illegal


def _best(entries: list[_Entry], n: int) -> list[_Entry]:
    """The ``n`` best legal entries, best first (ties keep their order)."""
    out = []
    for e in sorted(entries, key=lambda e: -e.scored.score):
        if len(out) == n:
            break
        if _legal(e):
            out.append(e)
    return out


def beam_search(state: ProgramState, evaluator: Evaluator, *, beam_size: int = 4, stages: tuple[str, ...] = STAGES,
                opts: SpaceOptions = SpaceOptions(), keep: int = 20, lazy: bool = True) -> list[Scored]:
    """The ``keep`` best distinct legal schedules seen, best first (the empty schedule among them), each less
    the skews it stays legal without (rescored; so a few may merge). Two schedules that reach the same state
    (``ProgramState.key``) count once: the first one found is kept.

    ``lazy=False`` checks every candidate before scoring it: for evaluators that measure, where
    scoring an illegal candidate costs more than checking it.
    """
    root = _Entry(Scored(float(evaluator.score([state], [""])[0]), Schedule(), state))
    seen = {state.key: root}
    beam = [root]
    for kind in stages:
        children: list[_Entry] = []
        for parent in beam:
            before = parent.scored.state
            for m in moves(before, replace(opts, kinds=(kind,))):
                if m.state.key in seen:
                    continue
                e = _Entry(Scored(0.0, parent.scored.schedule + m.step, m.state), None if m.proven else (m, before))
                seen[m.state.key] = e
                if lazy or _legal(e):
                    children.append(e)
        if children:
            scores = evaluator.score([c.scored.state for c in children], [str(c.scored.schedule) for c in children])
            for c, s in zip(children, scores, strict=True):
                c.scored = replace(c.scored, score=float(s))
        beam = _best(beam + children, beam_size)
    best = [e.scored for e in _best(list(seen.values()), keep)]
    known = {k: e.scored for k, e in seen.items() if e.pending is None and not e.illegal}
    return without_needless_skews(best, state, evaluator, known)

