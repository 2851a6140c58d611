"""The program seen by isl: iteration domains, access relations and bounds checks.

Dependences, which also need the original schedule, are in ``loopcost.ir.dependence``.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import TYPE_CHECKING

import islpy as isl

from ..errors import OutOfBoundsError
from .expr import reads

if TYPE_CHECKING:  # programs check their bounds here when they are built: a runtime import would be a cycle
    from .expr import Read
    from .program import Computation, Loop, Program


def _tuple(comp: str, loops: tuple[Loop, ...]) -> str:
    return f"{comp}[{', '.join(lp.name for lp in loops)}]"


def domain_str(comp: Computation, loops: tuple[Loop, ...]) -> str:
    """isl text of one computation's iteration domain (its loops' bounds and its guards)."""
    cons = [f"{lp.lower.to_c()} <= {lp.name} < {lp.upper.to_c()}" for lp in loops]
    cons += [f"{g.to_c()} >= 0" for g in comp.guards]
    return "{ " + _tuple(comp.name, loops) + (" : " + " and ".join(cons) if cons else "") + " }"


def bounding_box(dom: isl.Set) -> tuple[tuple[Fraction, Fraction], ...]:
    """Each dimension's (lowest, highest) value over a bounded set."""
    return tuple((Fraction(dom.dim_min_val(d).to_str()), Fraction(dom.dim_max_val(d).to_str()))
                 for d in range(dom.dim(isl.dim_type.set)))


@functools.lru_cache(maxsize=1024)
def points(domain: str) -> float:
    """Number of points of a domain (isl text): exact when small, else its bounding box."""
    dom = isl.Set(domain)
    box = 1.0
    for lo, hi in bounding_box(dom):
        box *= float(hi - lo + 1)
    return float(dom.count_val().to_python()) if box <= 2e5 else box


@functools.lru_cache(maxsize=256)
def domains(p: Program, only: frozenset[str] | None = None) -> isl.UnionSet:
    """Iteration domains of every computation (or of those named in ``only``)."""
    out = isl.UnionSet("{ }")
    for c, loops in p.walk_computations():
        if only is None or c.name in only:
            out = out.union(isl.UnionSet(domain_str(c, loops)))
    return out


def never_run(p: Program) -> list[str]:
    """The computations of ``p`` whose iteration domain is empty (loops that run zero times, guards that
    never hold)."""
    return [c.name for c, loops in p.walk_computations() if isl.Set(domain_str(c, loops)).is_empty()]


def access_map(comp: Computation, loops: tuple[Loop, ...], r: Read) -> isl.Map:
    dom = isl.Set(domain_str(comp, loops))
    m = isl.Map("{ " + _tuple(comp.name, loops) + f" -> {r.buffer}[{', '.join(a.to_c() for a in r.index)}] }}")
    return m.intersect_domain(dom)


def accesses(p: Program) -> tuple[isl.UnionMap, isl.UnionMap]:
    """(reads, writes) of the whole program, restricted to the domains."""
    rd, wr = isl.UnionMap("{ }"), isl.UnionMap("{ }")
    for c, loops in p.walk_computations():
        for r in c.reads():
            rd = rd.union(isl.UnionMap.from_map(access_map(c, loops, r)))
        wr = wr.union(isl.UnionMap.from_map(access_map(c, loops, c.target)))
    return rd, wr


def check_bounds(p: Program) -> None:
    """Raise OutOfBoundsError if any access can leave its buffer."""
    for c, loops in p.walk_computations():
        for r in [c.target] + reads(c.rhs):
            b = p.buffer(r.buffer)
            box = isl.Set("{ " + f"{b.name}[{', '.join(f'd{k}' for k in range(len(b.shape)))}] : "
                          + " and ".join(f"0 <= d{k} < {s}" for k, s in enumerate(b.shape)) + " }")
            touched = access_map(c, loops, r).range()
            outside = touched.subtract(box)
            if not outside.is_empty():
                pt = outside.sample_point()
                coords = [pt.get_coordinate_val(isl.dim_type.set, k).to_python()
                          for k in range(len(b.shape))]
                idx = ", ".join(a.to_c() for a in r.index)
                raise OutOfBoundsError(
                    f"computation {c.name!r}: access {b.name}[{idx}] reaches {b.name}{coords}, outside "
                    f"shape {list(b.shape)}; fix the loop bounds or the index")
