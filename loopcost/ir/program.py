"""The program: buffers, and a tree of loops whose leaves are computations.

A ``Program`` is immutable and has concrete sizes. The loop tree says which
loops computations share and in what order they run; schedules (see
``loopcost.ir.state``) say how that order is changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import ProgramError
from .affine import Affine
from .dtypes import DTYPES
from .expr import BinOp, Expr, IterValue, Read, expr_from_json, expr_to_json, reads, walk
from .functions import C_CALLED
from .polyhedral import check_bounds

ROLES = ("input", "output", "temp")
REDUCTIONS = ("+", "*", "max", "min")
JSON_FORMAT = "loopcost-program/1"
#: names that generated C uses: C keywords, libc and libm functions, the harness's ``main``.
RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
main printf fprintf malloc free exit stdin stdout stderr NULL
""".split()) | C_CALLED


def reserved(name: str) -> bool:
    """True for the names generated C already uses (``RESERVED``, ``lc_...``, ``c0``, ``c1``, ...)."""
    return name in RESERVED or name.startswith("lc_") or re.fullmatch(r"c\d+", name) is not None


def check_name(name: str, what: str) -> None:
    """Refuse names that are not C identifiers or that generated C already uses."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ProgramError(f"{what} name {name!r} is not a C identifier")
    if reserved(name):
        raise ProgramError(f"{what} name {name!r} is reserved in generated C (C keywords, libm names, "
                           "'lc_' prefixes and c0, c1, ... are taken); rename it")


@dataclass(frozen=True)
class Buffer:
    """An array: name, shape (concrete extents), dtype and role.

    Roles: ``input`` is only read; ``output`` is the result (it may also be
    read, as in ``C += A*B``); ``temp`` is scratch that verification ignores.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float64"
    role: str = "input"

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class Computation:
    """``target = rhs``, or with ``reduction`` set, ``target = target OP rhs``.

    ``guards`` are affine conditions ``g >= 0`` on the enclosing iterators (a C
    ``if``); the computation runs only where all of them hold.
    """

    name: str
    target: Read
    rhs: Expr
    reduction: str | None = None
    guards: tuple[Affine, ...] = ()

    def reads(self) -> list[Read]:
        """Every read, including the target's own value for a reduction."""
        own = [self.target] if self.reduction else []
        return own + reads(self.rhs)


@dataclass(frozen=True)
class Loop:
    """``for name in [lower, upper)``, bounds affine in enclosing iterators."""

    name: str
    lower: Affine
    upper: Affine
    body: tuple[Node, ...] = field(default=())


Node = Loop | Computation


def reduction_of(target: Read, value: Expr) -> tuple[str | None, Expr]:
    """``target = target + e`` is the ``+`` reduction of ``e``: ``("+", e)``; any other value ``v`` is
    ``(None, v)``, a plain assignment."""
    if isinstance(value, BinOp) and value.op == "+" and value.lhs == target:
        return "+", value.rhs
    return None, value


def walk_computations(body: tuple[Node, ...], stack: tuple[Loop, ...] = ()
                      ) -> Iterator[tuple[Computation, tuple[Loop, ...]]]:
    """Yield (computation, enclosing loops outermost first) of a loop tree."""
    for n in body:
        if isinstance(n, Loop):
            yield from walk_computations(n.body, stack + (n,))
        else:
            yield n, stack


@dataclass(frozen=True)
class Program:
    name: str
    buffers: tuple[Buffer, ...]
    body: tuple[Node, ...]

    def __post_init__(self) -> None:
        validate(self)
        check_bounds(self)

    # ---- queries -----------------------------------------------------
    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise ProgramError(f"program {self.name!r} has no buffer {name!r}")

    def computations(self) -> list[Computation]:
        """Computations in textual (original execution) order."""
        return [c for c, _ in self.walk_computations()]

    def computation(self, name: str) -> Computation:
        for c in self.computations():
            if c.name == name:
                return c
        raise ProgramError(f"program {self.name!r} has no computation {name!r}")

    def walk_computations(self) -> Iterator[tuple[Computation, tuple[Loop, ...]]]:
        """Yield (computation, enclosing loops outermost first)."""
        return walk_computations(self.body)

    def loops(self) -> list[Loop]:
        """Loops in preorder (the order of their ``for`` in the source)."""
        out: list[Loop] = []

        def rec(nodes):
            for n in nodes:
                if isinstance(n, Loop):
                    out.append(n)
                    rec(n.body)

        rec(self.body)
        return out

    def enclosing_loops(self, comp: str) -> tuple[Loop, ...]:
        for c, stack in self.walk_computations():
            if c.name == comp:
                return stack
        raise ProgramError(f"program {self.name!r} has no computation {comp!r}")

    def outputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.role == "output"]

    # ---- serialization -----------------------------------------------
    def to_json(self) -> dict:
        def node(n: Node) -> dict:
            if isinstance(n, Loop):
                return {"loop": n.name, "lower": n.lower.to_json(), "upper": n.upper.to_json(),
                        "body": [node(c) for c in n.body]}
            d = {"computation": n.name, "target": expr_to_json(n.target), "rhs": expr_to_json(n.rhs)}
            if n.reduction:
                d["reduction"] = n.reduction
            if n.guards:
                d["guards"] = [g.to_json() for g in n.guards]
            return d

        return {
            "format": JSON_FORMAT,
            "name": self.name,
            "buffers": [{"name": b.name, "shape": list(b.shape), "dtype": b.dtype, "role": b.role}
                        for b in self.buffers],
            "body": [node(n) for n in self.body],
        }

    @staticmethod
    def from_json(d: object) -> Program:
        """Build a program from its JSON form; every mistake is a ProgramError."""
        if not isinstance(d, dict):
            raise ProgramError("a program must be a JSON object")
        if d.get("format", JSON_FORMAT) != JSON_FORMAT:
            raise ProgramError(f"unknown program format {d.get('format')!r}; expected {JSON_FORMAT!r}")
        try:
            bufs = tuple(
                Buffer(str(b["name"]), tuple(int(s) for s in b["shape"]), b.get("dtype", "float64"),
                       b.get("role", "input"))
                for b in d["buffers"])

            def node(n: dict) -> Node:
                if "loop" in n:
                    return Loop(str(n["loop"]), Affine.from_json(n["lower"]), Affine.from_json(n["upper"]),
                                tuple(node(c) for c in n.get("body", [])))
                if "computation" in n:
                    target = expr_from_json(n["target"])
                    if not isinstance(target, Read):
                        raise ProgramError(f"target of {n['computation']!r} must be a buffer read")
                    return Computation(str(n["computation"]), target, expr_from_json(n["rhs"]),
                                       n.get("reduction"), tuple(Affine.from_json(g) for g in n.get("guards", [])))
                raise ProgramError(f"body node must have 'loop' or 'computation': {n!r}")

            return Program(str(d["name"]), bufs, tuple(node(n) for n in d["body"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ProgramError(f"malformed program JSON: {type(e).__name__}: {e}") from None

    def content_hash(self) -> str:
        """sha256 of the normalized program (the name is left out)."""
        d = self.to_json()
        d.pop("name")
        text = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def validate(p: Program) -> None:
    """Check names, references, arity, affine scoping and roles.

    Bounds of accesses are checked with isl in ``loopcost.ir.polyhedral``.
    """
    if not p.name or not isinstance(p.name, str):
        raise ProgramError("a program needs a non-empty name")
    names: set[str] = set()
    for b in p.buffers:
        check_name(b.name, "buffer")
        if b.name in names:
            raise ProgramError(f"buffer {b.name!r} is declared twice")
        names.add(b.name)
        if b.dtype not in DTYPES:
            raise ProgramError(f"buffer {b.name!r}: dtype {b.dtype!r} unknown; use one of {list(DTYPES)}")
        if b.role not in ROLES:
            raise ProgramError(f"buffer {b.name!r}: role {b.role!r} unknown; use one of {ROLES}")
        if not b.shape or any(not isinstance(s, int) or s < 1 for s in b.shape):
            raise ProgramError(f"buffer {b.name!r}: shape {b.shape} must be positive integers")
    bufs = {b.name: b for b in p.buffers}
    seen: set[str] = set()

    def check_affine(a: Affine, scope: tuple[str, ...], where: str) -> None:
        for v in a.variables:
            if v not in scope:
                raise ProgramError(f"{where}: iterator {v!r} is not an enclosing loop (in scope: {list(scope)})")

    def rec(nodes, scope: tuple[str, ...]):
        if not nodes and scope:
            raise ProgramError(f"loop {scope[-1]!r} has an empty body")
        for n in nodes:
            if isinstance(n, Loop):
                check_name(n.name, "loop")
                if n.name in seen or n.name in bufs:
                    raise ProgramError(f"loop name {n.name!r} is used twice")
                seen.add(n.name)
                check_affine(n.lower, scope, f"lower bound of loop {n.name!r}")
                check_affine(n.upper, scope, f"upper bound of loop {n.name!r}")
                rec(n.body, scope + (n.name,))
            elif isinstance(n, Computation):
                check_name(n.name, "computation")
                if n.name in seen or n.name in bufs:
                    raise ProgramError(f"computation name {n.name!r} is used twice")
                seen.add(n.name)
                if n.reduction is not None and n.reduction not in REDUCTIONS:
                    raise ProgramError(f"computation {n.name!r}: reduction {n.reduction!r} unknown; "
                                       f"use one of {REDUCTIONS}")
                for g in n.guards:
                    check_affine(g, scope, f"condition of computation {n.name!r}")
                for r in [n.target] + reads(n.rhs):
                    if r.buffer not in bufs:
                        raise ProgramError(f"computation {n.name!r} uses unknown buffer {r.buffer!r}")
                    b = bufs[r.buffer]
                    if len(r.index) != len(b.shape):
                        raise ProgramError(f"computation {n.name!r}: {r.buffer} has {len(b.shape)} "
                                           f"dimension(s) but is indexed with {len(r.index)}")
                    for a in r.index:
                        check_affine(a, scope, f"computation {n.name!r}, access to {r.buffer}")
                for v in walk(n.rhs):
                    if isinstance(v, IterValue):
                        check_affine(v.value, scope, f"computation {n.name!r}, value {v.value}")
                if bufs[n.target.buffer].role == "input":
                    raise ProgramError(f"computation {n.name!r} writes {n.target.buffer!r}, which is "
                                       "declared an input; declare it as output or temp")
            else:
                raise ProgramError(f"unexpected node in loop tree: {n!r}")

    rec(p.body, ())
    if not seen:
        raise ProgramError(f"program {p.name!r} has no computation")
