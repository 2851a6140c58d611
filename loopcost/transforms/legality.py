"""Legality of a schedule, by exact dependence analysis with isl.

A schedule is legal when every dependence of the original program still goes
forward in time (lexicographically). A loop may be parallel or vector only if
it carries no dependence: no two dependent instances run in the same
iteration of its outer loops but in different iterations of it. Reductions
are not privatized, so a loop that carries a reduction is refused.
"""

from __future__ import annotations

import functools

import islpy as isl

from ..errors import IllegalScheduleError, ScheduleError
from ..ir.dependence import Dependence, dependences
from ..ir.packing import PACK_BYTES, pack_bytes, printed_inside, read_box
from ..ir.polyhedral import domains
from ..ir.program import Program
from ..ir.state import ProgramState


@functools.lru_cache(maxsize=64)
def program_dependences(p: Program) -> tuple[Dependence, ...]:
    """Dependences of a program, computed once per program."""
    return tuple(dependences(p))


@functools.lru_cache(maxsize=64)
def _all_dependences(p: Program) -> isl.UnionMap:
    out = isl.UnionMap("{ }")
    for dep in program_dependences(p):
        out = out.union(dep.relation)
    return out.coalesce()


@functools.cache
def _lex(n_dims: int, relation: str) -> isl.UnionMap:
    """``lex_ge``/``lex_lt``... on time vectors of ``n_dims`` dimensions."""
    space = isl.Set(f"{{ [{', '.join(f't{k}' for k in range(n_dims))}] }}").get_space()
    return isl.UnionMap.from_map(getattr(isl.Map, relation)(space))


def _example(rel: isl.UnionMap) -> str:
    maps: list[isl.Map] = []
    rel.foreach_map(maps.append)
    pt = maps[0].wrap().sample_point()
    m = maps[0]
    n_in, n_out = m.dim(isl.dim_type.in_), m.dim(isl.dim_type.out)
    coords = [pt.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n_in + n_out)]
    src = f"{m.get_tuple_name(isl.dim_type.in_)}{coords[:n_in]}"
    dst = f"{m.get_tuple_name(isl.dim_type.out)}{coords[n_in:]}"
    return f"{dst} would no longer run after {src}"


def _time_pairs(state: ProgramState, cond) -> isl.UnionMap:
    """The pairs ``t -> u`` of time vectors of ``state`` where ``cond(t, u)`` holds (isl text over the lists of
    the two vectors' dimension names)."""
    n = 2 * state.depth + 1
    t = [f"t{k}" for k in range(n)]
    u = [f"u{k}" for k in range(n)]
    return isl.UnionMap.from_map(isl.Map(f"{{ [{', '.join(t)}] -> [{', '.join(u)}] : {cond(t, u)} }}"))


def _inside(state: ProgramState, loop: str, level: int) -> frozenset[str]:
    """The computations that run inside the generated loop ``loop`` (at ``level``): those whose betas up to its
    level equal those of the computations named inside it (a computation with a dummy level there counts)."""
    keys = {cs.betas[:level + 1] for cs in state.comps_with(loop)}
    return frozenset(cs.comp for cs in state.comps if cs.betas[:level + 1] in keys)


def check_order(state: ProgramState) -> None:
    """Raise IllegalScheduleError naming the first dependence the schedule reverses."""
    why = _reversal(ProgramState(state.program, state.comps))
    if why is not None:
        raise IllegalScheduleError(why)


@functools.lru_cache(maxsize=4096)
def _reversal(state: ProgramState) -> str | None:
    """What ``check_order`` says of a state without tags (its order is its loop maps' and betas'), or None.
    Cached: a search reaches the same loops by other steps (14-32% of the checks of conv2d's, gemm's and
    jacobi-2d's default searches)."""
    deps = program_dependences(state.program)
    if not deps:
        return None
    # dependence relations only hold domain points, so the schedule needs no domain here
    sched = state.schedule_map()
    ge = _lex(2 * state.depth + 1, "lex_ge")
    if _all_dependences(state.program).apply_domain(sched).apply_range(sched).intersect(ge).is_empty():
        return None
    sched = sched.intersect_domain(domains(state.program))
    not_after = sched.apply_range(ge).apply_range(sched.reverse())
    for dep in deps:
        bad = dep.relation.intersect(not_after)
        if not bad.is_empty():
            return f"violates {Dependence(dep.kind, dep.buffer, bad).describe()}: {_example(bad)}"
    raise AssertionError("dependence violation not attributed")  # unreachable: the union was violated


def loop_level(state: ProgramState, loop: str, *among: str) -> int:
    """The level of ``loop``, which must be the same in every computation it encloses (that ``among``
    loops also enclose, when given: a tile of several loops only touches those computations)."""
    levels = {cs.level_of(loop) for cs in state.comps_with(loop, *among)}
    if len(levels) != 1:
        raise ScheduleError(f"loop {loop!r} sits at different levels in different computations")
    return levels.pop()


def carried(state: ProgramState, loop: str) -> list[Dependence]:
    """The parts of dependences carried by ``loop``: between instances in one iteration of its
    outer loops, in different iterations of it."""
    level = loop_level(state, loop)
    d = 2 * level + 1
    same_outer = _time_pairs(state, lambda t, u: " and ".join([f"{t[k]} = {u[k]}" for k in range(d)]
                                                              + [f"{t[d]} != {u[d]}"]))
    sched = state.schedule_map().intersect_domain(domains(state.program, _inside(state, loop, level)))
    out, pairs = [], None
    for dep in program_dependences(state.program):
        if dep.relation.apply_domain(sched).apply_range(sched).intersect(same_outer).is_empty():
            continue
        if pairs is None:  # instance pairs are costly: built once, and only when something is carried
            pairs = sched.apply_range(same_outer).apply_range(sched.reverse())
        out.append(Dependence(dep.kind, dep.buffer, dep.relation.intersect(pairs)))
    return out


def slanted(state: ProgramState, a: str, b: str) -> bool:
    """True if a dependence between instances in one iteration of ``a``'s outer loops goes forward along
    ``a`` and backward along ``b`` (``a`` encloses ``b``): the only kind a skew of ``b`` by ``a`` can
    straighten, so that ``b`` may move outward (interchange, tiling, a wavefront). Loops at different
    levels in different computations count as slanted (nothing is known)."""
    try:
        p, q = loop_level(state, a, b), loop_level(state, b, a)
    except ScheduleError:
        return True
    slant = _time_pairs(state, lambda t, u: " and ".join([f"{t[k]} = {u[k]}" for k in range(2 * p + 1)] + [
        f"{u[2 * p + 1]} > {t[2 * p + 1]}", f"{u[2 * q + 1]} < {t[2 * q + 1]}"]))
    inside = _inside(state, a, p)
    sched = isl.UnionMap("{ }")
    for cs in state.comps:
        if cs.comp in inside:
            sched = sched.union(isl.UnionMap.from_map(cs.time_map()))
    return not _all_dependences(state.program).apply_domain(sched).apply_range(sched).intersect(slant).is_empty()


def check_parallel(state: ProgramState, loop: str, kind: str = "parallel") -> None:
    """Raise IllegalScheduleError if ``loop`` carries a dependence (or a reduction)."""
    deps = carried(state, loop)
    if not deps:
        return
    reductions = [c for c in state.program.computations()
                  if c.reduction and any(dep.buffer == c.target.buffer and (c.name, c.name) in dep.pairs()
                                         for dep in deps)]
    if reductions:
        c = reductions[0]
        raise IllegalScheduleError(
            f"cannot make loop {loop!r} {kind}: it carries the {c.reduction} reduction of {c.name} into "
            f"{c.target.buffer} ({deps[0].describe()}); loopcost does not privatize reductions")
    raise IllegalScheduleError(f"cannot make loop {loop!r} {kind}: it carries {deps[0].describe()}")


def permutable(state: ProgramState, loops: tuple[str, ...]) -> bool:
    """True if no dependence goes backwards along any of the consecutive ``loops``.

    Then tiling them is legal for every tile size (floor is monotone), provided
    every computation that shares their outer loops is tiled with them.
    """
    comps = state.comps_with(*loops)
    p = comps[0].level_of(loops[0])
    key = (comps[0].betas[:p + 1], comps[0].loops[:p])
    inside = {cs.comp for cs in comps}
    if any((cs.betas[:p + 1], cs.loops[:p]) == key and cs.comp not in inside for cs in state.comps):
        return False
    backwards = _time_pairs(state, lambda t, u: "{} and ({})".format(
        " and ".join(f"{t[k]} = {u[k]}" for k in range(2 * p + 1)) or "true",
        " or ".join(f"{u[2 * (p + k) + 1]} < {t[2 * (p + k) + 1]}" for k in range(len(loops)))))
    sched = state.schedule_map()
    return _all_dependences(state.program).apply_domain(sched).apply_range(sched).intersect(backwards).is_empty()


def check(state: ProgramState) -> ProgramState:
    """Check dependence order, every parallel and vector tag, and that vector loops are
    innermost; return the state."""
    check_order(state)
    return check_tags(state, state.tags)


def check_tags(state: ProgramState, tags) -> ProgramState:
    """Check that the vector loops among ``tags`` are innermost and that their parallel and vector
    loops carry no dependence; return the state."""
    for tag in tags:
        if tag.kind == "vector":
            for cs in state.comps_with(tag.loop):
                inner = [n for n in cs.loops[cs.level_of(tag.loop) + 1:] if n is not None]
                if inner:
                    raise ScheduleError(f"vector loop {tag.loop!r} must stay innermost, but encloses {inner} "
                                        f"in {cs.comp}")
        if tag.kind in ("parallel", "vector"):
            check_parallel(state, tag.loop, tag.kind)
    if any(t.kind in ("pack", "parallel") for t in tags):
        check_packs(state)
    return state


def check_packs(state: ProgramState) -> None:
    """Raise ScheduleError unless every pack of ``state`` holds: nothing inside its loop writes its buffer
    (``IllegalScheduleError``), no loop at or inside it is parallel, and its copy fits ``PACK_BYTES``."""
    for tag in state.tags:
        if tag.kind != "pack":
            continue
        try:
            level, comps = printed_inside(state, tag.loop)
        except ScheduleError as e:
            raise ScheduleError(f"the pack of {tag.buffer!r} at loop {tag.loop!r}: {e}") from None
        writers = [cs.comp for cs in comps if state.program.computation(cs.comp).target.buffer == tag.buffer]
        if writers:
            raise IllegalScheduleError(f"cannot pack {tag.buffer!r} at loop {tag.loop!r}: {writers[0]} inside it "
                                       f"writes {tag.buffer!r}, and the copy would go stale")
        inside = {name for cs in comps for name in cs.loops[level:] if name is not None}
        parallel = [t.loop for t in state.tags if t.kind == "parallel" and t.loop in inside]
        if parallel:
            raise ScheduleError(f"cannot pack {tag.buffer!r} at loop {tag.loop!r}: loop {parallel[0]!r} at or "
                                f"inside it is parallel, and the threads would share one copy (pack at a loop "
                                f"inside the parallel one: each thread then packs its own)")
        size = pack_bytes(state, read_box(state, tag.loop, tag.buffer), tag.buffer)
        if size > PACK_BYTES:
            raise ScheduleError(f"cannot pack {tag.buffer!r} at loop {tag.loop!r}: its copy would take {size} "
                                f"bytes, more than {PACK_BYTES} (pack at a loop of smaller tiles)")
