"""A program together with its schedule: what code generation and features read.

Each computation's schedule is kept in the classic 2d+1 form of Tiramisu and
CLooG: a *loop map* from its iteration domain to loop values ``[l0 .. l{d-1}]``,
and *betas* ``[b0 .. bd]`` (constants) that order statements sharing loops. Its
time vector is ``[b0, l0, b1, l1, ..., b{d-1}, l{d-1}, bd]``. Every computation
has the same ``d``; a computation that is not inside a loop at some level has a
dummy level there (loop value 0, name ``None``).

Loops are named: at first by the program's loop names; tiling and vector
strip-mining add new names. Loop tags (parallel, vector, unroll) are attached to
loop names, so they survive later changes of the time space. Transformations
(``loopcost.transforms``) return new states; a state never changes.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace

import islpy as isl

from ..errors import ScheduleError
from .program import Program

#: tags that change the generated code (a loop takes at most one of them); a ``jam`` loop is unrolled
#: fully by code generation, its copies side by side (register tiling)
CODE_TAGS = ("parallel", "vector", "unroll", "jam")
#: tags that record what transformations did to a loop, for the features
HISTORY_TAGS = ("tile", "tiled", "interchanged", "skewed", "reversed")
#: tags that change where the generated code reads a buffer (any number a loop, one per buffer): a ``pack``
#: loop copies what it reads of its ``buffer`` into a contiguous local array first
DATA_TAGS = ("pack",)
TAG_KINDS = CODE_TAGS + HISTORY_TAGS + DATA_TAGS
_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class LoopTag:
    """Loop ``loop`` is a ``kind`` loop, with ``factor`` (unroll factor, vector width, tile size,
    skew factor) or ``buffer`` (the buffer a pack copies). Code and data tags change the generated C;
    history tags only record transformations."""

    loop: str
    kind: str
    factor: int = 0
    buffer: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TAG_KINDS:
            raise ScheduleError(f"unknown loop tag {self.kind!r}; use one of {TAG_KINDS}")


@functools.lru_cache(maxsize=4096)
def _time_map(loop_map: str, betas: tuple[int, ...]) -> isl.Map:
    """``[b0, l0, b1, l1, ..., bd]`` from a loop map and its betas (cached: maps are immutable)."""
    d = len(betas) - 1
    ins = ", ".join(f"l{k}" for k in range(d))
    outs = []
    for k in range(d):
        outs += [str(betas[k]), f"l{k}"]
    outs.append(str(betas[d]))
    return isl.Map(loop_map).apply_range(isl.Map(f"{{ [{ins}] -> [{', '.join(outs)}] }}"))


@dataclass(frozen=True)
class CompSchedule:
    """One computation's schedule: loop map text, betas, and the name of each loop level.

    ``levels`` repeats the loop map one level at a time, as isl expressions of the computation's
    original iterators: the features read levels separately, and most levels are shared between
    the candidates of a search, so their extents are computed once (see ``loopcost.features``).
    """

    comp: str
    loop_map: str
    betas: tuple[int, ...]
    loops: tuple[str | None, ...]
    levels: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if len(self.betas) != len(self.loops) + 1:
            raise ScheduleError(f"{self.comp}: {len(self.betas)} betas for {len(self.loops)} loop levels")

    def time_map(self) -> isl.Map:
        """The full 2d+1 schedule map of this computation."""
        return _time_map(self.loop_map, self.betas)


    def level_of(self, loop: str) -> int:
        """Loop level (0 = outermost) of ``loop`` in this computation."""
        return self.loops.index(loop)

    @property
    def real_loops(self) -> list[str]:
        return [name for name in self.loops if name is not None]


@dataclass(frozen=True)
class ProgramState:
    program: Program
    comps: tuple[CompSchedule, ...]
    tags: tuple[LoopTag, ...] = ()

    @staticmethod
    def initial(program: Program) -> ProgramState:
        """The unscheduled program: its source order, no tags."""
        depth = max(len(loops) for _, loops in program.walk_computations())
        comps: list[CompSchedule] = []

        def rec(nodes, loops, betas):
            for pos, n in enumerate(nodes):
                if hasattr(n, "body"):
                    rec(n.body, loops + (n,), betas + (pos,))
                    continue
                names = [lp.name for lp in loops]
                pad = depth - len(loops)
                dom = f"{n.name}[{', '.join(names)}]"
                values = names + ["0"] * pad
                comps.append(CompSchedule(
                    n.name, f"{{ {dom} -> [{', '.join(values)}] }}",
                    betas + (pos,) + (0,) * pad, tuple(names) + (None,) * pad, tuple(values)))

        rec(program.body, (), ())
        return ProgramState(program, tuple(comps))

    @property
    def depth(self) -> int:
        """Number of loop levels of the time space (``d`` in 2d+1)."""
        return len(self.comps[0].loops)

    def comp(self, name: str) -> CompSchedule:
        for c in self.comps:
            if c.comp == name:
                return c
        raise ScheduleError(f"no computation {name!r} in program {self.program.name!r}; "
                            f"it has {[c.comp for c in self.comps]}")

    def loop_names(self) -> list[str]:
        """Every loop name of the current schedule, outer levels first."""
        seen: dict[str, None] = {}
        for level in range(self.depth):
            for c in self.comps:
                if c.loops[level] is not None:
                    seen.setdefault(c.loops[level])
        return list(seen)

    def comps_with(self, *loops: str) -> list[CompSchedule]:
        """The computations inside every one of ``loops``; error if none or a loop is unknown."""
        known = set(self.loop_names())
        for lp in loops:
            if lp not in known:
                raise ScheduleError(f"no loop {lp!r} in the current schedule of {self.program.name!r}; "
                                    f"loops are {sorted(known)}")
        out = [c for c in self.comps if all(lp in c.loops for lp in loops)]
        if not out:
            raise ScheduleError(f"loops {list(loops)} do not enclose a common computation")
        return out

    def tag_of(self, loop: str, kind: str) -> LoopTag | None:
        for t in self.tags:
            if t.loop == loop and t.kind == kind:
                return t
        return None

    def with_comps(self, comps: dict[str, CompSchedule]) -> ProgramState:
        return replace(self, comps=tuple(comps.get(c.comp, c) for c in self.comps))

    def with_tags(self, *tags: LoopTag) -> ProgramState:
        """Add tags; a new tag replaces one of the same loop and kind (and buffer)."""
        new = {(t.loop, t.kind, t.buffer) for t in tags}
        return replace(self, tags=tuple(t for t in self.tags if (t.loop, t.kind, t.buffer) not in new) + tags)

    def moves_with(self, cs: CompSchedule) -> list[set[str]]:
        """For each loop level of ``cs``, the computation's original iterators it moves with."""
        iters = {lp.name for lp in self.program.enclosing_loops(cs.comp)}
        return [set(_NAME.findall(text)) & iters for text in cs.levels]

    def packs(self, loop: str) -> list[str]:
        """The buffers that ``loop`` packs, in the order they were packed."""
        return [t.buffer for t in self.tags if t.loop == loop and t.kind == "pack"]

    def loops_text(self) -> str:
        """Each computation with its loops, outermost first, and the code tags of each loop."""
        lines = []
        for cs in self.comps:
            parts = []
            for name in cs.real_loops:
                tags = [t.kind + (f"({t.factor})" if t.factor else f"({t.buffer})" if t.buffer else "")
                        for t in self.tags if t.loop == name and t.kind in CODE_TAGS + DATA_TAGS]
                parts.append(name + (f" [{', '.join(tags)}]" if tags else ""))
            lines.append(f"{cs.comp}: {' > '.join(parts) or '(no loop)'}")
        return "\n".join(lines)

    @functools.cached_property
    def key(self) -> tuple:
        """A structural key among states of one program: equal for states that print the same code and have
        the same features, however their schedules reached them (tags in any order)."""
        return tuple((c.comp, c.loop_map, c.betas, c.loops) for c in self.comps), frozenset(self.tags)

    def schedule_map(self) -> isl.UnionMap:
        """The union of every computation's time map (not restricted to domains)."""
        out = isl.UnionMap("{ }")
        for c in self.comps:
            out = out.union(isl.UnionMap.from_map(c.time_map()))
        return out
