"""Rewriting computations' loop levels: the one primitive every transformation uses.

A level rewrite maps a computation's loop values ``[l0 .. l{d-1}]`` to new
values given as affine (or floor-affine) isl expressions of them, and says
which betas and names the new levels get. Computations outside the
transformation get dummy levels where levels are inserted, so that every
computation keeps the same number of levels.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict

import islpy as isl

from ..ir.names import unique_name
from ..ir.state import CompSchedule, ProgramState

_LEVEL = re.compile(r"\bl(\d+)\b")


#: maps that compositions printed, by their text, the newest last: the next composition of a loop map that
#: a composition printed starts from the map itself, not from parsing its text (isl's parser took most of
#: a composition's time). Safe to share: islpy maps are values. The same text: a composed map and its text
#: parsed back compose and print alike (61,096 compositions done both ways, 2026-12-06: those of the search,
#: transformation, feature, frontend and dataset tests and of 20 random schedules of 150 generated programs).
_PRINTED: OrderedDict[str, isl.Map] = OrderedDict()
_PRINTED_SIZE = 16384


@functools.lru_cache(maxsize=4096)
def _level_map(d: int, exprs: tuple[str, ...]) -> isl.Map:
    """``[l0..l{d-1}] -> [exprs]``, parsed once: a rewrite applies the same levels to many loop maps (isl's
    parser takes most of a composition's time)."""
    return isl.Map(f"{{ [{', '.join(f'l{k}' for k in range(d))}] -> [{', '.join(exprs)}] }}")


@functools.lru_cache(maxsize=16384)
def _compose(loop_map: str, d: int, exprs: tuple[str, ...]) -> str:
    """``loop_map`` (``d`` levels) followed by ``[l0..] -> [exprs]``, as text. Cached: the candidates of a
    search share many of these, e.g. the dummy levels that a tiling gives every other computation."""
    before = _PRINTED.get(loop_map)
    composed = (isl.Map(loop_map) if before is None else before).apply_range(_level_map(d, exprs))
    text = composed.to_str()
    _PRINTED[text] = composed
    _PRINTED.move_to_end(text)
    if len(_PRINTED) > _PRINTED_SIZE:
        _PRINTED.popitem(last=False)
    return text


def rewrite(cs: CompSchedule, exprs: list[str], betas: list[int], loops: list[str | None]) -> CompSchedule:
    """Apply ``[l0..] -> [exprs]`` to a computation's loop map, with new betas and names."""
    levels = tuple(_LEVEL.sub(lambda m: f"({cs.levels[int(m.group(1))]})", e) for e in exprs) if cs.levels else ()
    return CompSchedule(cs.comp, _compose(cs.loop_map, len(cs.loops), tuple(exprs)), tuple(betas), tuple(loops),
                        levels)


def identity(cs: CompSchedule) -> list[str]:
    return [f"l{k}" for k in range(len(cs.loops))]


def insert_levels(state: ProgramState, at: int, count: int, changed: dict[str, CompSchedule]) -> ProgramState:
    """Put ``changed`` computations in place and give every other one ``count`` dummy
    levels (value 0, beta 0, no name).

    A computation whose order against the changed ones is decided before level
    ``at`` (its betas up to there differ) gets them innermost, where they
    change nothing; one that runs interleaved with them gets them at ``at``,
    so that the order between them stays what it was.
    """
    keys = {cs.betas[:at + 1] for cs in changed.values()}
    out = {}
    for cs in state.comps:
        if cs.comp in changed:
            out[cs.comp] = changed[cs.comp]
            continue
        where = at if cs.betas[:at + 1] in keys else len(cs.loops)
        exprs = identity(cs)
        exprs[where:where] = ["0"] * count
        betas = list(cs.betas)
        betas[where + 1:where + 1] = [0] * count
        loops = list(cs.loops)
        loops[where:where] = [None] * count
        out[cs.comp] = rewrite(cs, exprs, betas, loops)
    return state.with_comps(out)


def fresh_name(state: ProgramState, base: str) -> str:
    """A loop name not used by the program or the schedule, derived from ``base``."""
    taken = set(state.loop_names()) | {lp.name for lp in state.program.loops()}
    taken |= {c.name for c in state.program.computations()} | {b.name for b in state.program.buffers}
    return unique_name(base, taken)
