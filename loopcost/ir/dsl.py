"""A Python DSL for writing loop-nest programs, in the style of Tiramisu's generators.

Example::

    p = ProgramBuilder("gemm")
    A = p.input("A", (N, K)); B = p.input("B", (K, M)); C = p.output("C", (N, M))
    with p.loop("i", 0, N) as i:
        with p.loop("j", 0, M) as j:
            C[i, j] = C[i, j] * 1.2
            with p.loop("k", 0, K) as k:
                C[i, j] += 1.5 * A[i, k] * B[k, j]
    program = p.build()

``C[i, j] += e`` (or ``C[i, j] = C[i, j] + e``) is a ``+`` reduction;
``p.reduce(C[i, j], "max", e)`` writes the others. Loop names are made unique
(a second ``i`` becomes ``i_1``) so that every loop of a program has its own name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ProgramError
from .affine import Affine, AffineLike
from .expr import Expr, Read, as_expr, call
from .names import unique_name
from .program import Buffer, Computation, Loop, Node, Program, reduction_of


class BufferRef:
    """A buffer handle: index it to read, assign to an index to compute."""

    def __init__(self, builder: ProgramBuilder, buffer: Buffer) -> None:
        self._builder = builder
        self.buffer = buffer

    def __getitem__(self, index) -> Read:
        if not isinstance(index, tuple):
            index = (index,)
        return Read(self.buffer.name, tuple(Affine.of(i) for i in index))

    def __setitem__(self, index, value) -> None:
        target = self[index]
        op, rhs = reduction_of(target, as_expr(value))
        if op is None:
            self._builder.assign(target, rhs)
        else:
            self._builder.reduce(target, op, rhs)


class ProgramBuilder:
    """Builds a ``Program`` from nested ``with loop(...)`` blocks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._buffers: list[Buffer] = []
        self._stack: list[tuple[str, Affine, Affine, list[Node]]] = [("", Affine(), Affine(), [])]
        self._loop_names: set[str] = set()
        self._n_comps = 0

    def buffer(self, name: str, shape: tuple[int, ...], dtype: str = "float64",
               role: str = "input") -> BufferRef:
        b = Buffer(name, tuple(shape), dtype, role)
        self._buffers.append(b)
        return BufferRef(self, b)

    def input(self, name: str, shape: tuple[int, ...], dtype: str = "float64") -> BufferRef:
        return self.buffer(name, shape, dtype, "input")

    def output(self, name: str, shape: tuple[int, ...], dtype: str = "float64") -> BufferRef:
        return self.buffer(name, shape, dtype, "output")

    def temp(self, name: str, shape: tuple[int, ...], dtype: str = "float64") -> BufferRef:
        return self.buffer(name, shape, dtype, "temp")

    @contextmanager
    def loop(self, name: str, lower: AffineLike, upper: AffineLike) -> Iterator[Affine]:
        """``for name in [lower, upper)``; yields the iterator."""
        unique = unique_name(name, self._loop_names)
        self._loop_names.add(unique)
        self._stack.append((unique, Affine.of(lower), Affine.of(upper), []))
        yield Affine.var(unique)
        lname, lo, up, body = self._stack.pop()
        self._stack[-1][3].append(Loop(lname, lo, up, tuple(body)))

    def _comp_name(self, name: str | None) -> str:
        if name is None:
            name = f"S{self._n_comps}"
        self._n_comps += 1
        return name

    def assign(self, target: Read, value: object, name: str | None = None) -> str:
        """``target = value``; returns the computation's name."""
        comp = Computation(self._comp_name(name), target, as_expr(value))
        self._stack[-1][3].append(comp)
        return comp.name

    def reduce(self, target: Read, op: str, value: object, name: str | None = None) -> str:
        """``target = target OP value`` for op in + * max min."""
        comp = Computation(self._comp_name(name), target, as_expr(value), op)
        self._stack[-1][3].append(comp)
        return comp.name

    @property
    def n_computations(self) -> int:
        """How many computations have been added so far."""
        return self._n_comps

    def build(self) -> Program:
        if len(self._stack) != 1:
            raise ProgramError("build() called inside a loop")
        return Program(self.name, tuple(self._buffers), tuple(self._stack[0][3]))


def sqrt(x) -> Expr:
    return call("sqrt", x)


def exp(x) -> Expr:
    return call("exp", x)


def maximum(a, b) -> Expr:
    return call("max", a, b)


def minimum(a, b) -> Expr:
    return call("min", a, b)
