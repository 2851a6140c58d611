"""The program seen by isl: iteration domains, access relations, the original
schedule, bounds checks and exact dependences."""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..errors import OutOfBoundsError
from .expr import Read, reads
from .program import Loop, Program


def _tuple(comp: str, loops: tuple[Loop, ...]) -> str:
    return f"{comp}[{', '.join(lp.name for lp in loops)}]"


def domain_str(comp: str, loops: tuple[Loop, ...]) -> str:
    """isl text of one computation's iteration domain."""
    cons = [f"{lp.lower.to_c()} <= {lp.name} < {lp.upper.to_c()}" for lp in loops]
    return "{ " + _tuple(comp, loops) + (" : " + " and ".join(cons) if cons else "") + " }"


def domains(p: Program) -> isl.UnionSet:
    out = isl.UnionSet("{ }")
    for c, loops in p.walk_computations():
        out = out.union(isl.UnionSet(domain_str(c.name, loops)))
    return out


def access_map(comp: str, loops: tuple[Loop, ...], r: Read) -> isl.Map:
    dom = isl.Set(domain_str(comp, loops))
    m = isl.Map("{ " + _tuple(comp, loops) + f" -> {r.buffer}[{', '.join(a.to_c() for a in r.index)}] }}")
    return m.intersect_domain(dom)


def accesses(p: Program) -> tuple[isl.UnionMap, isl.UnionMap]:
    """(reads, writes) of the whole program, restricted to the domains."""
    rd, wr = isl.UnionMap("{ }"), isl.UnionMap("{ }")
    for c, loops in p.walk_computations():
        for r in c.reads():
            rd = rd.union(isl.UnionMap.from_map(access_map(c.name, loops, r)))
        wr = wr.union(isl.UnionMap.from_map(access_map(c.name, loops, c.target)))
    return rd, wr


def max_depth(p: Program) -> int:
    return max(len(loops) for _, loops in p.walk_computations())


def original_schedules(p: Program) -> dict[str, str]:
    """The 2d+1 schedule of each computation: ``[b0, i0, b1, i1, ..., bd]``.

    ``b_k`` is the position of the subtree at depth k among its siblings; all
    schedules are padded with zeros to ``2 * max_depth + 1`` dimensions.
    """
    width = 2 * max_depth(p) + 1
    out: dict[str, str] = {}

    def rec(nodes, loops: tuple[Loop, ...], prefix: list[str]):
        for pos, n in enumerate(nodes):
            if isinstance(n, Loop):
                rec(n.body, loops + (n,), prefix + [str(pos), n.name])
            else:
                dims = prefix + [str(pos)]
                dims += ["0"] * (width - len(dims))
                out[n.name] = "{ " + _tuple(n.name, loops) + f" -> [{', '.join(dims)}] }}"

    rec(p.body, (), [])
    return out


def check_bounds(p: Program) -> None:
    """Raise OutOfBoundsError if any access can leave its buffer."""
    for c, loops in p.walk_computations():
        for r in [c.target] + reads(c.rhs):
            b = p.buffer(r.buffer)
            box = isl.Set("{ " + f"{b.name}[{', '.join(f'd{k}' for k in range(len(b.shape)))}] : "
                          + " and ".join(f"0 <= d{k} < {s}" for k, s in enumerate(b.shape)) + " }")
            touched = access_map(c.name, loops, r).range()
            outside = touched.subtract(box)
            if not outside.is_empty():
                pt = outside.sample_point()
                coords = [pt.get_coordinate_val(isl.dim_type.set, k).to_python()
                          for k in range(len(b.shape))]
                idx = ", ".join(a.to_c() for a in r.index)
                raise OutOfBoundsError(
                    f"computation {c.name!r}: access {b.name}[{idx}] reaches {b.name}{coords}, outside "
                    f"shape {list(b.shape)}; fix the loop bounds or the index")


@dataclass(frozen=True)
class Dependences:
    """Dependences between statement instances, under the original schedule.

    ``raw`` is exact dataflow (last writer, from isl's compute_flow);
    ``war`` and ``waw`` are memory-based (every earlier access to the same element).
    """

    raw: isl.UnionMap
    war: isl.UnionMap
    waw: isl.UnionMap

    def all(self) -> isl.UnionMap:
        return self.raw.union(self.war).union(self.waw)


def schedule_map(schedules: dict[str, str], dom: isl.UnionSet) -> isl.UnionMap:
    sched = isl.UnionMap("{ }")
    for text in schedules.values():
        sched = sched.union(isl.UnionMap(text))
    return sched.intersect_domain(dom)


def dependences(p: Program) -> Dependences:
    dom = domains(p)
    rd, wr = accesses(p)
    sched = schedule_map(original_schedules(p), dom)
    raw = (isl.UnionAccessInfo.from_sink(rd).set_must_source(wr).set_schedule_map(sched)
           .compute_flow().get_must_dependence())
    before = sched.lex_lt_union_map(sched)
    war = rd.apply_range(wr.reverse()).intersect(before)
    waw = wr.apply_range(wr.reverse()).intersect(before)
    return Dependences(raw.coalesce(), war.coalesce(), waw.coalesce())

