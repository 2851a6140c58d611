"""Schedules: sequences of transformations, their notation and their JSON form.

Notation (one transformation after another, separated by spaces)::

    I(i,j) T2(i,k,32,64) T3(i,j,k,32,32,32) U(k,8) P(i_t) V(j,8) S(i,j,1) R(j) F(S0,S1,1) J(i,4) K(B,i)

Loops are named by the program's loop names; tiling adds ``<loop>_t`` tile loops, unroll-and-jam
``<loop>_r`` loops over register blocks and vectorization a ``<loop>_v`` strip loop (see ``loopcost show
KERNEL --loops``). ``F`` names computations, ``K`` a buffer and a loop.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ScheduleError
from ..ir.program import Program
from ..ir.state import ProgramState
from .base import Transformation
from .fusion import Fuse
from .jam import UnrollJam
from .packing import Pack
from .reorder import Interchange, Reverse, Skew
from .tags import Parallelize, Unroll, Vectorize
from .tiling import Tile

_TOKEN = re.compile(r"\s*([A-Z][0-9]?)\(([^()]*)\)\s*")
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def _ints(args: list[str], where: str) -> list[int]:
    try:
        return [int(a) for a in args]
    except ValueError:
        raise ScheduleError(f"{where}: expected integers, got {args}") from None


def _names(args: list[str], where: str) -> list[str]:
    for a in args:
        if not _NAME.match(a):
            raise ScheduleError(f"{where}: {a!r} is not a loop or computation name")
    return args


#: each notation code's transformation and number of arguments
_CODES: dict[str, tuple[type[Transformation], int]] = {
    "I": (Interchange, 2), "R": (Reverse, 1), "S": (Skew, 3), "P": (Parallelize, 1), "U": (Unroll, 2),
    "V": (Vectorize, 2), "F": (Fuse, 3), "T2": (Tile, 4), "T3": (Tile, 6), "J": (UnrollJam, 2), "K": (Pack, 2)}


def parse_transformation(code: str, args: list[str]) -> Transformation:
    cls, arity = _CODES.get(code, (None, 0))
    where = f"{code}({','.join(args)})"
    if cls is None:
        raise ScheduleError(f"unknown transformation {code!r} in {where}; known: {', '.join(_CODES)}")
    if len(args) != arity:
        raise ScheduleError(f"{where} takes {arity} arguments, got {len(args)}")
    if cls is Tile:
        n = arity // 2
        return Tile(tuple(_names(args[:n], where)), tuple(_ints(args[n:], where)))
    if cls in (Interchange, Reverse, Parallelize, Pack):
        return cls(*_names(args, where))
    *names, number = args  # a skew's or fusion's last argument, an unroll's, vectorization's or jam's factor
    return cls(*_names(names, where), _ints([number], where)[0])


def step_kinds(text: str) -> list[str]:
    """The kind of each step of a schedule in the notation, read without building the steps (for counting
    many stored schedules; ``Schedule.parse`` checks the arguments)."""
    try:
        return [_CODES[code][0].kind for code, _ in _TOKEN.findall(text)]
    except KeyError as e:
        raise ScheduleError(f"unknown transformation {e.args[0]!r} in {text!r}; known: {', '.join(_CODES)}") from None


_BY_KIND = {cls.kind: cls for cls in (Interchange, Reverse, Skew, Parallelize, Unroll, Vectorize, Fuse, Tile,
                                      UnrollJam, Pack)}


@dataclass(frozen=True)
class Schedule:
    """An ordered sequence of transformations."""

    steps: tuple[Transformation, ...] = ()

    @staticmethod
    def load(text: str) -> Schedule:
        """A schedule given in the notation, or as a JSON file (``@file.json``, the form of ``to_json``)."""
        if not text.startswith("@"):
            return Schedule.parse(text)
        try:
            doc = json.loads(Path(text[1:]).read_text())
        except (OSError, ValueError) as e:
            raise ScheduleError(f"cannot read schedule file {text[1:]}: {e}") from None
        return Schedule.from_json(doc)

    @staticmethod
    def parse(text: str) -> Schedule:
        """Parse the notation; the inverse of ``str``."""
        steps, pos = [], 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise ScheduleError(f"cannot read schedule at {text[pos:pos + 20]!r} (position {pos}); "
                                    "expected something like I(i,j) or T2(i,j,32,32)")
            args = [a.strip() for a in m.group(2).split(",")] if m.group(2).strip() else []
            steps.append(parse_transformation(m.group(1), args))
            pos = m.end()
        return Schedule(tuple(steps))

    def __str__(self) -> str:
        return " ".join(str(s) for s in self.steps)

    def __add__(self, other: Schedule | Transformation) -> Schedule:
        more = other.steps if isinstance(other, Schedule) else (other,)
        return Schedule(self.steps + more)

    def to_json(self) -> list[dict]:
        return [s.to_json() for s in self.steps]

    @staticmethod
    def from_json(doc: list) -> Schedule:
        if not isinstance(doc, list):
            raise ScheduleError("a schedule in JSON is a list of transformations")
        steps = []
        for d in doc:
            if not isinstance(d, dict) or d.get("transform") not in _BY_KIND:
                raise ScheduleError(f"unknown transformation {d!r}; known: {sorted(_BY_KIND)}")
            cls = _BY_KIND[d["transform"]]
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k != "transform"}
            try:
                steps.append(cls(**kw))
            except TypeError as e:
                raise ScheduleError(f"bad arguments for {d['transform']}: {e}") from None
        return Schedule(tuple(steps))

    def apply(self, program: Program | ProgramState, *, check: bool = True) -> ProgramState:
        """Apply every step in order; errors say which step failed.

        ``check=False`` skips the legality checks, for schedules already known to be
        legal (read back from a dataset); malformed steps are still refused.
        """
        state = program if isinstance(program, ProgramState) else ProgramState.initial(program)
        for k, step in enumerate(self.steps):
            try:
                state = step.apply(state) if check else step.transformed(state)
            except ScheduleError as e:
                raise type(e)(f"step {k + 1}, {step}: {e}") from None
        return state

    def without_needless_skews(self, state: ProgramState) -> Schedule:
        """The schedule less each skew that every later step applies and stays legal without. A skew alone
        keeps the order of execution (it shifts the inner loop by a multiple of the outer one): it serves
        only a later step that is illegal without it (an interchange, a tile); where none is, it only slants
        the loops' bounds (37 of the AMD EPYC model's picks on the benchmark and selection kernels held such
        a skew: predicted 1.21x, measured 0.59x)."""
        steps = list(self.steps)
        for k in reversed(range(len(steps))):
            if steps[k].kind != "skew":
                continue
            trial = Schedule(tuple(steps[:k] + steps[k + 1:]))
            try:
                trial.apply(state)
            except ScheduleError:
                continue
            steps = list(trial.steps)
        return Schedule(tuple(steps))

    def replay(self, state: ProgramState, *, check: bool = True) -> tuple[ProgramState, Schedule]:
        """The steps applied in order from ``state``, each one that no longer applies (or, with ``check``, is
        illegal there) left out: the state reached and the steps kept. For a schedule's tail replayed on top
        of another change (a jam, a replaced step)."""
        kept = []
        for step in self.steps:
            try:
                state = step.apply(state) if check else step.transformed(state)
            except ScheduleError:
                continue
            kept.append(step)
        return state, Schedule(tuple(kept))
