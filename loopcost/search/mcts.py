"""Monte Carlo tree search with UCT over schedules, rollouts scored by the evaluator.

A node is a schedule prefix. Selection follows UCT (mean reward + c * sqrt(ln N / n));
expansion adds one untried legal transformation; a rollout draws random steps up
to ``max_depth`` and stops at the first illegal one (one legality check per step,
where redrawing an illegal step would cost a check per draw); rollouts are scored
in batches; the reward (the log of the predicted speedup, floored at 0, so only
improvements count) is propagated back.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from ..errors import ScheduleError
from ..ir.state import ProgramState
from ..transforms.schedule import Schedule
from ..transforms.space import Move, SpaceOptions, proposals, random_step
from .base import Evaluator, Scored, without_needless_skews


@dataclass
class _Node:
    schedule: Schedule
    state: ProgramState
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    untried: list | None = None
    visits: int = 0
    total: float = 0.0

    def uct(self, c: float) -> float:
        if self.visits == 0:
            return math.inf
        return self.total / self.visits + c * math.sqrt(math.log(self.parent.visits) / self.visits)


def _legal_prefix(path: list[Move], start: ProgramState) -> int:
    """How many moves of ``path`` (unchecked) are legal, one after the other from the legal ``start``:
    a rollout stops at its first illegal step."""
    before = start
    for k, m in enumerate(path):
        try:
            m.step.checked(before, m.state)
        except ScheduleError:
            return k
        before = m.state
    return len(path)


def mcts(state: ProgramState, evaluator: Evaluator, *, iterations: int = 200, max_depth: int = 6, rollouts: int = 4,
         c: float = 0.7, seed: int = 0, opts: SpaceOptions = SpaceOptions(), keep: int = 20) -> list[Scored]:
    """The ``keep`` best distinct schedules scored during the search, best first (two that reach the same
    state count once), each less the skews it stays legal without (``base.without_needless_skews``)."""
    rng = random.Random(seed)
    root = _Node(Schedule(), state)
    seen: dict[tuple, Scored] = {state.key: Scored(float(evaluator.score([state], [""])[0]), Schedule(), state)}
    for _ in range(iterations):
        node = root
        while node.untried is not None and not node.untried and node.children:  # selection
            node = max(node.children, key=lambda n: n.uct(c))
        if node.untried is None and len(node.schedule.steps) < max_depth:  # expansion
            node.untried = proposals(node.state, opts)
            rng.shuffle(node.untried)
        while node.untried:  # legality is checked lazily, when a proposal is first tried
            t = node.untried.pop()
            try:
                new = t.apply(node.state)
            except ScheduleError:
                continue
            child = _Node(node.schedule + t, new, node)
            node.children.append(child)
            node = child
            break
        ends = []  # rollouts from the new node
        for _ in range(rollouts):
            path, st = [], node.state
            for _ in range(rng.randint(0, max(0, max_depth - len(node.schedule.steps)))):
                step = random_step(st, rng, opts, check=False)
                if step is None:
                    break
                path.append(step)
                st = step.state
            path = path[:_legal_prefix(path, node.state)]
            ends.append((node.schedule + Schedule(tuple(m.step for m in path)), path[-1].state if path else node.state))
        scores = evaluator.score([st for _, st in ends], [str(s) for s, _ in ends])
        for (sched, st), s in zip(ends, scores, strict=True):
            seen.setdefault(st.key, Scored(float(s), sched, st))
        reward = max(0.0, math.log(max(float(max(scores)), 1e-9)))
        while node is not None:  # backpropagation
            node.visits += 1
            node.total += reward
            node = node.parent
    return without_needless_skews(sorted(seen.values(), key=lambda s: -s.score)[:keep], state, evaluator, seen)
