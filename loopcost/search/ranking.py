"""Which of a search's candidates to measure: the best of distinct structures, so that near-copies of one
schedule do not share a measurement budget (and the model's mistakes about them)."""

from __future__ import annotations

import re

from ..transforms.schedule import Schedule
from .base import Scored

_NUMBER = re.compile(r"(?<=[(,])\d+(?=[,)])")
_UNROLL_VECTOR = re.compile(r"\s*[UV]\([^)]*\)")

#: how many of a search's best candidates ``diverse_top`` chooses the measured ones from
RANKED = 60


def structure(schedule: Schedule) -> str:
    """The schedule's transformations and loops without their factors: ``T2(i,j,#,#) U(k,#)``."""
    return _NUMBER.sub("#", str(schedule))


def core(schedule: Schedule) -> str:
    """The ``structure`` without its unroll and vector steps: what is fused, reordered, tiled and
    made parallel: ``T2(i,j,#,#) P(i)``."""
    return _UNROLL_VECTOR.sub("", structure(schedule)).strip()


def diverse_top(ranked: list[Scored], k: int) -> list[Scored]:
    """``k`` candidates to measure, best first: the best of each distinct ``core``, then of each distinct
    ``structure``, then the next best of any. Near-copies that differ in an unroll, a vector width or a
    factor share the model's mistakes; other cores hedge against them (19 benchmark kernels: 1.67x to at
    least 1.77x beam geomean in one side-by-side run, 1.67x to 1.72x between two full benchmark runs)."""
    chosen: list[Scored] = []
    for key in (core, structure, str):
        seen = {key(c.schedule) for c in chosen}
        for c in ranked:
            if len(chosen) == k:
                return chosen
            if key(c.schedule) not in seen and all(c is not d for d in chosen):
                chosen.append(c)
                seen.add(key(c.schedule))
    return chosen
