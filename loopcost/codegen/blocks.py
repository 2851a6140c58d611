"""Register blocks in the generated C: the copies of a jam loop, and the elements kept in local variables.

A jam loop (``J(L,f)``) comes out of isl as a loop of at most ``f`` iterations; the printer writes its
``f`` copies side by side instead (isl's own unrolling took seconds to minutes on bench-size blocks),
each with its iterator's value and, where the loop may run fewer times (a partial block), a guard.
Values and guards are affine expressions of the iterators around the block (a guard that always holds
is left out, and one that depends only on outer loops can be tested once around them). Scalar
replacement: the elements that a loop's copies update in place, at the same place in every iteration,
are loaded into local variables before the loop and stored after it, where no other access in the loop
may touch them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import islpy as isl

from ..ir.affine import Affine
from ..ir.expr import Read, reads
from ..ir.program import Computation

#: an element of a buffer, with its index as affine expressions of the generated loops' iterators
Element = tuple[str, tuple[Affine, ...]]
#: the value of each unrolled iterator, in the iterators around the block (None: not affine)
Values = Mapping[str, Affine | None]


def affine_ast(e: isl.AstExpr, values: Values | None = None) -> Affine | None:
    """An isl AST expression as an Affine of the AST's iterators, unrolled iterators replaced by their
    ``values``; None if it is not affine."""
    t = e.get_type()
    if t == isl.ast_expr_type.int:
        return Affine((), e.get_val().to_python())
    if t == isl.ast_expr_type.id:
        name = e.get_id().get_name()
        return values[name] if values and name in values else Affine.var(name)
    if t != isl.ast_expr_type.op:
        return None
    args = [affine_ast(e.get_op_arg(k), values) for k in range(e.get_op_n_arg())]
    if any(a is None for a in args):
        return None
    op = e.get_op_type()
    if op == isl.ast_expr_op_type.add:
        return args[0] + args[1]
    if op == isl.ast_expr_op_type.sub:
        return args[0] - args[1]
    if op == isl.ast_expr_op_type.minus:
        return -args[0]
    if op == isl.ast_expr_op_type.mul and not (args[0].terms and args[1].terms):
        return args[0] * args[1]
    return None


def element(r: Read, aenv: Mapping[str, Affine | None]) -> Element | None:
    """The element ``r`` reads, its index in the AST's iterators (``aenv``: each loop's value); None where
    a loop's value is not affine."""
    index = []
    for a in r.index:
        out = Affine((), a.const)
        for name, c in a.terms:
            value = aenv.get(name)
            if value is None:
                return None
            out = out + value * c
        index.append(out)
    return r.buffer, tuple(index)


def element_c(e: Element) -> str:
    """C text of an element."""
    return e[0] + "".join(f"[{a.to_c()}]" for a in e[1])


def distinct(a: Element, b: Element) -> bool:
    """True if the two elements differ at every point: some index differs by a nonzero constant."""
    return any(not (x - y).terms and (x - y).const != 0 for x, y in zip(a[1], b[1], strict=True))


@dataclass(frozen=True)
class Copy:
    """One copy of a jam loop's body: the iterator's value, and the tests ``value <= bound`` under which it
    runs (none: always)."""

    value: Affine
    tests: tuple[tuple[Affine, Affine], ...] = ()

    @property
    def guard(self) -> str | None:
        return " && ".join(f"{v.to_c()} <= {b.to_c()}" for v, b in self.tests) or None


def condition(guards: Sequence[str], tests: Mapping[str, tuple[tuple[Affine, Affine], ...]]) -> str:
    """One C condition that holds where all ``guards`` do; of the copies' tests (``tests``: those of each copy
    guard) that differ only by a constant, the strongest."""
    strongest: dict[tuple, tuple[Affine, Affine]] = {}
    rest = []
    for g in dict.fromkeys(guards):
        for v, b in tests.get(g, ()):
            key = (v.terms, b)
            if key not in strongest or v.const > strongest[key][0].const:
                strongest[key] = (v, b)
        if g not in tests:
            rest.append(g)
    parts = [f"{v.to_c()} <= {b.to_c()}" for v, b in strongest.values()] + rest
    return parts[0] if len(parts) == 1 else " && ".join(f"({p})" for p in parts)


def _upper_bounds(cond: isl.AstExpr, it: str, values: Values) -> list[Affine] | None:
    """The affine upper bounds ``it <= b`` of a for loop's condition; None if it has another form."""
    op = cond.get_op_type() if cond.get_type() == isl.ast_expr_type.op else None
    if op not in (isl.ast_expr_op_type.le, isl.ast_expr_op_type.lt):
        return None
    lhs, rhs = cond.get_op_arg(0), cond.get_op_arg(1)
    if lhs.get_type() != isl.ast_expr_type.id or lhs.get_id().get_name() != it:
        return None
    terms = [rhs.get_op_arg(k) for k in range(rhs.get_op_n_arg())] \
        if rhs.get_type() == isl.ast_expr_type.op and rhs.get_op_type() == isl.ast_expr_op_type.min else [rhs]
    bounds = [affine_ast(b, values) for b in terms]
    if any(b is None for b in bounds):
        return None
    return [b - 1 for b in bounds] if op == isl.ast_expr_op_type.lt else bounds


def copies(loop: isl.AstNode, factor: int, values: Values) -> list[Copy] | None:
    """The copies of jam loop ``loop``, each with its guard; copies that never run are left out. None
    unless the loop provably runs at most ``factor`` times from an affine start, by a constant step (a
    later transformation may have moved the block's loop inside it: then it stays a loop)."""
    it = loop.for_get_iterator().get_id().get_name()
    step = affine_ast(loop.for_get_inc())
    init = affine_ast(loop.for_get_init(), values)
    bounds = _upper_bounds(loop.for_get_cond(), it, values) if init is not None else None
    if step is None or step.terms or step.const < 1 or bounds is None:
        return None
    spans = [(b - init).const for b in bounds if not (b - init).terms]
    if not spans or min(spans) >= factor * step.const:
        return None
    out = []
    for r in range(factor):
        value = init + r * step.const
        left = [b - value for b in bounds]
        if any(not d.terms and d.const < 0 for d in left):
            continue  # past the end of the loop at every point
        out.append(Copy(value, tuple((value, b) for b, d in zip(bounds, left, strict=True) if d.terms)))
    return out


def registers(stmts: Sequence[tuple[Computation, Mapping[str, Affine | None]]], outer: set[str]) -> dict[Element, str]:
    """The elements that ``stmts`` (each a computation with its loops' affine values) write, and every
    statement reads, at the same place in every iteration of the loop around them (indices of ``outer``
    iterators only): each named for a local variable. Only buffers whose every access there is such an
    element, distinct from the others at every point."""
    seen: dict[str, list[Element | None]] = {}
    written = set()
    for c, aenv in stmts:
        written.add(c.target.buffer)
        for r in [c.target] + reads(c.rhs):
            seen.setdefault(r.buffer, []).append(element(r, aenv))
    out: dict[Element, str] = {}
    for buf in sorted(written):
        elems = list(dict.fromkeys(seen[buf]))
        if any(e is None or not {v for a in e[1] for v in a.variables} <= outer for e in elems):
            continue
        if all(distinct(a, b) for k, a in enumerate(elems) for b in elems[k + 1:]):
            base = len(out)
            out.update((e, f"lc_r{base + n}") for n, e in enumerate(elems))
    return out
