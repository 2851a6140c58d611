"""Exact dependences of a program under its original order, from isl's dataflow analysis.

This module sits above ``polyhedral`` (domains and accesses) and ``state`` (the original schedule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import islpy as isl

from .polyhedral import accesses, domains
from .state import ProgramState

if TYPE_CHECKING:
    from .program import Program

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
