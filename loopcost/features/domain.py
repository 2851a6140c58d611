"""How a computation's iteration domain differs from a box (layout 8): triangular and other non-rectangular nests.

A level block reads a loop's extent over the whole domain, so ``for k in [i + 1, n)`` reads as a loop of ``n``
iterations, and layout 7 cannot tell trmm from a matrix product of the same extents (``log2_points`` is the
bounding box past 2e5 points). Yet the nests differ where schedules do: jamming or vectorizing a loop whose
bounds move with an outer one leaves remainders at every entry, and a parallel loop over a triangle splits
its work unevenly. Layout 8 ends each computation vector with (``DOMAIN_FIELDS``)

- ``log2_fill``: log2 of the share of its bounding box the domain fills (0 for a box, about -1 for a triangle,
  -2.6 for a tetrahedron): exact up to 2e5 points, else from a fixed sample of the box's points;
- per scheduled level, whether its row of the schedule matrix reads an iterator whose bounds move with another
  iterator (``varying_level``: ``k`` above) and one that bounds another (``bounding_level``: ``i`` above). An
  affine guard over two iterators or more marks each of them both ways.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import islpy as isl
import numpy as np

from ..ir.affine import Affine
from ..ir.polyhedral import bounding_box, points
from ..ir.program import Computation, Loop

#: points of the box drawn to estimate the fill of a domain too large to count
SAMPLES = 4096


@dataclass(frozen=True)
class DomainShape:
    """``log2_fill`` and the positions (among the computation's original iterators) of the iterators whose
    bounds vary (``varying``) and of those that bound another (``bounding``)."""

    log2_fill: float = 0.0
    varying: frozenset[int] = frozenset()
    bounding: frozenset[int] = frozenset()


BOX = DomainShape()


def domain_shape(c: Computation, loops: tuple[Loop, ...], domain: str) -> DomainShape:
    """The shape of ``c``'s domain (``domain``: its isl text, ``polyhedral.domain_str``) within ``loops``."""
    index = {lp.name: k for k, lp in enumerate(loops)}
    varying: set[int] = set()
    bounding: set[int] = set()
    for k, lp in enumerate(loops):
        outer = {index[name] for name, _ in lp.lower.terms + lp.upper.terms if name in index}
        if outer:
            varying.add(k)
            bounding |= outer
    for g in c.guards:
        its = {index[name] for name, _ in g.terms if name in index}
        if len(its) > 1:
            varying |= its
            bounding |= its
    if not varying:
        return BOX
    return DomainShape(_log2_fill(domain, tuple(lp.name for lp in loops),
                                  tuple((lp.lower, lp.upper) for lp in loops), c.guards),
                       frozenset(varying), frozenset(bounding))


def level_flags(shape: DomainShape, coef: tuple[float, ...]) -> tuple[float, float]:
    """(varying, bounding) of a scheduled level whose row over the original iterators is ``coef``."""
    reads = {k for k, x in enumerate(coef) if abs(x) > 1e-12}
    return float(bool(reads & shape.varying)), float(bool(reads & shape.bounding))


@functools.lru_cache(maxsize=1024)
def _log2_fill(domain: str, names: tuple[str, ...], bounds: tuple[tuple[Affine, Affine], ...],
               guards: tuple[Affine, ...]) -> float:
    dom = isl.Set(domain)
    if dom.is_empty():
        return 0.0
    lo, hi = zip(*((int(a), int(b)) for a, b in bounding_box(dom)), strict=True)
    box = math.prod(float(h - low + 1) for low, h in zip(lo, hi, strict=True))
    if box <= 2e5:
        return math.log2(points(domain) / box)
    rng = np.random.default_rng(0)
    x = {name: rng.integers(low, h + 1, SAMPLES) for name, low, h in zip(names, lo, hi, strict=True)}
    inside = np.ones(SAMPLES, bool)
    for name, (lower, upper) in zip(names, bounds, strict=True):
        inside &= (_value(lower, x) <= x[name]) & (x[name] < _value(upper, x))
    for g in guards:
        inside &= _value(g, x) >= 0
    return math.log2(max(int(inside.sum()), 1) / SAMPLES)


def _value(a: Affine, x: dict[str, np.ndarray]) -> np.ndarray:
    out = np.full(SAMPLES, a.const, np.int64)
    for name, coeff in a.terms:
        out += coeff * x[name]
    return out
