"""Expression trees on the right-hand side of a computation.

Nodes are frozen dataclasses and overload Python's arithmetic, so the DSL can
write ``alpha * A[i, k] * B[k, j]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProgramError
from .affine import Affine
from .functions import CALLS

#: C's operators on integers only: their operands are integers whatever the computation's type
INTEGER_OPS = ("%", "<<", ">>", "&", "|", "^")
BINARY_OPS = ("+", "-", "*", "/", *INTEGER_OPS)

Number = int | float


class Expr:
    """Base of expression nodes; gives them Python operators."""

    def _bin(self, op: str, other: object, swap: bool = False) -> Expr:
        rhs = as_expr(other)
        return BinOp(op, rhs, self) if swap else BinOp(op, self, rhs)

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __neg__(self): return Call("neg", (self,))

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True, eq=True)
class Const(Expr):
    """A constant; ``single``: a C ``float`` literal (``0.299f``), which C computes in single precision in any
    computation (an integer one included)."""

    value: Number
    single: bool = False


@dataclass(frozen=True, eq=True)
class Read(Expr):
    """A read of ``buffer[index...]`` with affine indices."""

    buffer: str
    index: tuple[Affine, ...]


@dataclass(frozen=True, eq=True)
class IterValue(Expr):
    """The value of an affine expression of loop iterators (C's ``i * 0.5`` reads ``i`` as a number): a C
    ``int``, so that ``i / 2`` divides as integers and ``i * 0.5`` converts, as C does."""

    value: Affine


@dataclass(frozen=True, eq=True)
class BinOp(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def __post_init__(self) -> None:
        if self.op not in BINARY_OPS:
            raise ProgramError(f"unknown binary operator {self.op!r}; use one of {BINARY_OPS}")

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)


@dataclass(frozen=True, eq=True)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if self.fn not in CALLS:
            raise ProgramError(f"unknown function {self.fn!r}; known: {', '.join(sorted(CALLS))}")
        if len(self.args) != CALLS[self.fn]:
            raise ProgramError(f"{self.fn} takes {CALLS[self.fn]} argument(s), got {len(self.args)}")

    def children(self) -> tuple[Expr, ...]:
        return self.args


def as_expr(value: object) -> Expr:
    """Wrap Python numbers as constants and iterator expressions as their values; refuse other objects."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, Affine):
        return IterValue(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Const(value)
    raise ProgramError(f"{value!r} cannot be used in an expression")


def walk(e: Expr):
    """Yield every node of an expression, parents first."""
    yield e
    for c in e.children():
        yield from walk(c)


def reads(e: Expr) -> list[Read]:
    return [n for n in walk(e) if isinstance(n, Read)]


def call(fn: str, *args: object) -> Expr:
    """``call("sqrt", x)``: a math call in the DSL."""
    return Call(fn, tuple(as_expr(a) for a in args))


def expr_to_json(e: Expr) -> object:
    if isinstance(e, Const):
        return {"const": e.value, "single": True} if e.single else {"const": e.value}
    if isinstance(e, Read):
        return {"read": e.buffer, "index": [a.to_json() for a in e.index]}
    if isinstance(e, IterValue):
        return {"iterators": e.value.to_json()}
    if isinstance(e, BinOp):
        return {"op": e.op, "args": [expr_to_json(e.lhs), expr_to_json(e.rhs)]}
    if isinstance(e, Call):
        return {"call": e.fn, "args": [expr_to_json(a) for a in e.args]}
    raise ProgramError(f"not an expression node: {e!r}")


def expr_from_json(d: object) -> Expr:
    if not isinstance(d, dict):
        raise ProgramError(f"expression must be a JSON object, got {d!r}")
    if "const" in d:
        v = d["const"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ProgramError(f"constant must be a number, got {v!r}")
        return Const(v, bool(d.get("single", False)))
    if "read" in d:
        return Read(str(d["read"]), tuple(Affine.from_json(a) for a in d.get("index", [])))
    if "iterators" in d:
        return IterValue(Affine.from_json(d["iterators"]))
    if "op" in d:
        a = d.get("args", [])
        if len(a) != 2:
            raise ProgramError(f"operator {d['op']!r} needs 2 args, got {len(a)}")
        return BinOp(d["op"], expr_from_json(a[0]), expr_from_json(a[1]))
    if "call" in d:
        return Call(d["call"], tuple(expr_from_json(a) for a in d.get("args", [])))
    raise ProgramError(f"unknown expression node {d!r}; expected const, read, iterators, op or call")
