"""The program seen by isl: iteration domains, access relations, the original
schedule, bounds checks and exact dependences."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import islpy as isl

from ..errors import OutOfBoundsError
from .expr import Read, reads
from .program import Computation, Loop, Program


def _tuple(comp: str, loops: tuple[Loop, ...]) -> str:
    return f"{comp}[{', '.join(lp.name for lp in loops)}]"


def domain_str(comp: Computation, loops: tuple[Loop, ...]) -> str:
    """isl text of one computation's iteration domain (its loops' bounds and its guards)."""
    cons = [f"{lp.lower.to_c()} <= {lp.name} < {lp.upper.to_c()}" for lp in loops]
    cons += [f"{g.to_c()} >= 0" for g in comp.guards]
    return "{ " + _tuple(comp.name, loops) + (" : " + " and ".join(cons) if cons else "") + " }"


@functools.lru_cache(maxsize=256)
def domains(p: Program, only: frozenset[str] | None = None) -> isl.UnionSet:
    """Iteration domains of every computation (or of those named in ``only``)."""
    out = isl.UnionSet("{ }")
    for c, loops in p.walk_computations():
        if only is None or c.name in only:
            out = out.union(isl.UnionSet(domain_str(c, loops)))
    return out


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


DEP_KINDS = ("raw", "war", "waw")


@dataclass(frozen=True)
class Dependence:
    """Statement instances of ``relation`` (source -> sink) that touch ``buffer``.

    ``raw`` is exact dataflow (the last writer, from isl's compute_flow);
    ``war`` and ``waw`` are memory-based (every earlier access to the element).
    """

    kind: str
    buffer: str
    relation: isl.UnionMap

    def pairs(self) -> list[tuple[str, str]]:
        """(source, sink) computation names of this dependence."""
        return sorted({(m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out))
                       for m in _maps(self.relation)})

    def describe(self) -> str:
        return f"{self.kind.upper()} on {self.buffer} ({', '.join(f'{a}->{b}' for a, b in self.pairs())})"


def _maps(um: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    um.foreach_map(out.append)
    return out


def dependences(p: Program) -> list[Dependence]:
    """Every non-empty dependence of the program, by kind and buffer, under its original order."""
    from .state import ProgramState  # state builds on this module's view of programs

    dom = domains(p)
    sched = ProgramState.initial(p).schedule_map().intersect_domain(dom)
    before = sched.lex_lt_union_map(sched)
    rd_all, wr_all = accesses(p)
    out: list[Dependence] = []
    for b in p.buffers:
        only = isl.UnionSet(f"{{ {b.name}[{', '.join(f'd{k}' for k in range(len(b.shape)))}] }}")
        rd, wr = rd_all.intersect_range(only), wr_all.intersect_range(only)
        if wr.is_empty():
            continue
        raw = (isl.UnionAccessInfo.from_sink(rd).set_must_source(wr).set_schedule_map(sched)
               .compute_flow().get_must_dependence())
        war = rd.apply_range(wr.reverse()).intersect(before)
        waw = wr.apply_range(wr.reverse()).intersect(before)
        for kind, rel in zip(DEP_KINDS, (raw, war, waw), strict=True):
            if not rel.is_empty():
                out.append(Dependence(kind, b.name, rel.coalesce()))
    return out
