"""Reading C ``for`` loops into the IR's loops: the iterator, its start, step and bounds (a max or min of them: the
first bounds the loop, the others guard its body), companions stepped beside it (``j`` of ``for (i = 0, j = n - 1;
...; i++, j--)``), and loops of any constant step counted in steps."""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from ..errors import CSourceError
from ..ir.affine import Affine
from ..ir.program import Loop
from .declared import INDEX, base_type, text
from .parse import walk_nodes
from .sizes import constant


@dataclass(frozen=True)
class Header:
    """A for loop's header: the loop of its first iterator ``var`` (``others``: companions, with their starts
    and steps), the scope its declaration opens, its constant ``step``, its start(s) (a max of them up, a min
    down) and bound(s) (a min up, a max down), and ``shift`` 1 for an inclusive bound (<=, >=)."""

    node: c_ast.For
    others: list[tuple[str, c_ast.Node, c_ast.Node]]
    var: str
    decl_scope: dict
    step: int
    starts: list[Affine]
    bounds: list[Affine]
    shift: int

    def span(self) -> Affine:
        """How far the iterator goes from its (first) start to its (first) bound, in its direction."""
        return self.bounds[0] + self.shift - self.starts[0] if self.step > 0 else \
            self.starts[0] - self.bounds[0] + self.shift


class LoopReader:
    """The loop-reading part of the translator (``translate._Translator``), which gives it ``src``, ``affine``,
    ``lookup``, ``bind``, ``fresh``, ``statement`` and the state of the region being read."""

    def bounds(self, node: c_ast.Node, kind: str) -> list[Affine]:
        """An affine loop bound, or the bounds of a min (``kind`` "min") or max ("max") of them written with
        ``?:`` (``MIN(a, b)`` macros)."""
        if isinstance(node, c_ast.TernaryOp) and isinstance(node.cond, c_ast.BinaryOp) \
                and node.cond.op in ("<", "<=", ">", ">="):
            first, second = text(node.cond.left), text(node.cond.right)
            picked = (text(node.iftrue), text(node.iffalse))
            smaller = (first, second) if node.cond.op in ("<", "<=") else (second, first)
            if picked == (smaller if kind == "min" else smaller[::-1]):
                out = self.bounds(node.iftrue, kind) + self.bounds(node.iffalse, kind)
                consts = [b.const for b in out if not b.terms]  # constants fold into one
                return [b for b in out if b.terms] + ([Affine.of((min if kind == "min" else max)(consts))]
                                                       if consts else [])
            raise self.src.error(node, f"loop bound '{text(node)}': a loop runs up to a min of bounds, or down to "
                                       f"a max, and from a max (up) or a min (down); this is not a {kind} of two")
        return [self.affine(node)]

    def header(self, node: c_ast.For) -> Header:
        """A for loop's header read: its iterator, step, start(s) and bound(s)."""
        node, others = self.companions(node)
        var, init, decl_scope = self.loop_init(node)
        step = self.loop_step(node, var)
        starts = self.bounds(init, "max" if step > 0 else "min")
        if len(starts) > 1 and step != 1:
            raise self.src.error(node, f"a loop that starts at a {'max' if step > 0 else 'min'} of bounds must step "
                                       "by +1")
        cond = node.cond
        if not isinstance(cond, c_ast.BinaryOp) or cond.op not in ("<", "<=", ">", ">="):
            raise self.src.error(node, "the loop condition must compare the iterator with an affine bound "
                                       "(< <= > >=)")
        op, left, right = cond.op, cond.left, cond.right
        if isinstance(right, c_ast.ID) and right.name == var and not (isinstance(left, c_ast.ID)
                                                                      and left.name == var):
            op, left, right = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op], right, left
        if not (isinstance(left, c_ast.ID) and left.name == var):
            raise self.src.error(cond, f"the loop condition must compare the iterator {var!r} with a bound")
        bounds = self.bounds(right, "min" if op in ("<", "<=") else "max")
        if any(var in b.variables for b in bounds):
            raise self.src.error(cond, "the loop bound depends on its own iterator")
        if step > 0 and op not in ("<", "<="):
            raise self.src.error(cond, f"an increasing loop needs {var} < or <= its bound")
        if step < 0 and op not in (">", ">="):
            raise self.src.error(cond, f"a decreasing loop needs {var} > or >= its bound")
        return Header(node, others, var, decl_scope, step, starts, bounds, 1 if op in ("<=", ">=") else 0)

    def trip_count(self, h: Header) -> Affine | None:
        """How many times the loop runs, where that is affine in the iterators of the loops around it and
        never negative (None elsewhere: a min or max of bounds, a step other than 1 over a span that varies)."""
        if len(h.starts) > 1 or len(h.bounds) > 1:
            return None
        span = h.span()
        if abs(h.step) != 1:
            if span.terms:
                return None
            span = Affine.of(-(-span.const // abs(h.step)))
        if not span.terms:
            return Affine.of(max(0, span.const))
        if any(v not in self.ranges for v in span.variables) or self.interval(span)[0] < 0:
            return None
        return span

    def for_loop(self, node: c_ast.For) -> None:
        h = self.header(node)
        d = self.divisor(h)
        loops, value, guards, count = self.split(h, d) if d else self.counted(h)
        for name, lower, upper in loops:
            self.ranges[name] = (self.interval(lower)[0], self.interval(upper)[1] - 1)
        starts_of = [(other, self.affine(first), self.loop_step(h.node, other, nxt)) for other, first, nxt in h.others]
        changes = self.loop_changes(h)
        self.scopes.append(dict(h.decl_scope))
        self.bind(h.var, ("iter", value))
        for other, first, other_step in starts_of:  # j of for (i = 0, j = n - 1; ...; i++, j--)
            self.bind(other, ("alias", first + count * other_step))
        start = h.starts[0]
        entry = self.enter_loop(changes, count, value - h.step, start - h.step if len(h.starts) == 1 else None)
        self.path.extend(("loop", name) for name, _, _ in loops)
        self.stack.append([])
        self.guards.extend(guards)
        self.statement(h.node.stmt)
        del self.guards[len(self.guards) - len(guards):]
        body = self.stack.pop()
        del self.path[len(self.path) - len(loops):]
        self.scopes.pop()
        self.leave_loop(changes, entry, self.trip_count(h), h.var)
        for name, lower, upper in reversed(loops):
            body = [Loop(name, lower, upper, tuple(body))] if body else []
        self.stack[-1].extend(body)

    def counted(self, h: Header) -> tuple[list[tuple[str, Affine, Affine]], Affine, list[Affine], Affine]:
        """The loop as one loop of the IR: its name and bounds, the iterator's value, the guards of its body
        and the iterations run before the current one. A loop of step +-1 runs over the iterator's values (down:
        counted up from 0); one of another step counts its steps."""
        start, s = h.starts[0], abs(h.step)
        name = self.fresh(h.var)
        it = Affine.var(name)
        guarded = h.bounds[1:]  # a min (max) of bounds: the loop runs to the first, the others guard its body
        if s == 1 and h.step > 0:
            lower, upper, value = start, h.bounds[0] + h.shift, it
        elif s == 1:
            lower, upper, value = Affine.of(0), start - h.bounds[0] + h.shift, start - it
        else:  # the loop counts the steps: as many as fit in the span (each guarded if the span is not constant)
            span = h.span()
            lower, value = Affine.of(0), start + it * s if h.step > 0 else start - it * s
            upper = Affine.of(max(0, -(-max(self.interval(span)[1], 0) // s)))
            if span.terms:
                guarded = h.bounds
        guards = [b + h.shift - value - 1 if h.step > 0 else value - b + h.shift - 1 for b in guarded]
        guards += [value - a for a in h.starts[1:]]
        return [(name, lower, upper)], value, guards, it - start if s == 1 and h.step > 0 else it

    def divisor(self, h: Header) -> int | None:
        """The one constant ``d`` > 1 the loop's body divides its iterator by (``/`` or ``%``) in subscripts
        and conditions, if the loop counts up by 1 from a constant >= 0 to one bound (else None)."""
        if h.step != 1 or len(h.starts) > 1 or len(h.bounds) > 1 or h.others or h.starts[0].terms \
                or h.starts[0].const < 0:
            return None
        found = set()
        for n in walk_nodes(h.node.stmt):
            part = n.subscript if isinstance(n, c_ast.ArrayRef) else n.cond if isinstance(n, c_ast.If) else None
            for m in walk_nodes(part) if part is not None else ():
                if isinstance(m, c_ast.BinaryOp) and m.op in ("/", "%") and isinstance(m.left, c_ast.ID) \
                        and m.left.name == h.var:
                    d = constant(m.right, self.params)
                    if d is not None and d > 1:
                        found.add(d)
        return found.pop() if len(found) == 1 else None

    def split(self, h: Header, d: int) -> tuple[list[tuple[str, Affine, Affine]], Affine, list[Affine], Affine]:
        """``for (y = a; y < b; y++)`` whose body divides ``y`` by ``d`` (``in[y / 2]``, ``y % 4 == 0``) as two
        loops of the IR (see ``counted``): ``y = d * q + r``, ``r`` in [0, d), so that ``y / d`` is ``q`` and
        ``y % d`` is ``r``, affine (``quotient``); guards keep ``y`` in [a, b)."""
        start, end = h.starts[0].const, h.bounds[0] + h.shift
        q, r = self.fresh(h.var), self.fresh(f"{h.var}_mod")
        value = Affine.var(q) * d + Affine.var(r)
        top = -(-self.interval(end)[1] // d)
        loops = [(q, Affine.of(start // d), Affine.of(max(start // d, top))), (r, Affine.of(0), Affine.of(d))]
        guards = [value - start] if start % d else []
        if end.terms or end.const % d:
            guards.append(end - value - 1)
        return loops, value, guards, value - start

    def quotient(self, a: Affine, d: int) -> tuple[Affine, Affine] | None:
        """``a / d`` and ``a % d`` as C computes them (d > 0), where they are affine: ``a`` is never negative
        and its part that ``d`` does not divide stays in [0, d) over the loops' ranges (``2 * q + r``, ``r`` in
        [0, 2): ``q`` and ``r``)."""
        if d <= 0 or any(v not in self.ranges for v in a.variables) or self.interval(a)[0] < 0:
            return None
        whole = Affine.of(a.const // d)
        for name, c in a.terms:
            whole = whole + Affine.var(name) * (c // d)
        rest = a - whole * d
        lo, hi = self.interval(rest)
        return (whole, rest) if lo >= 0 and hi < d else None

    def loop_init(self, node: c_ast.For) -> tuple[str, c_ast.Node, dict]:
        """The iterator, its start (an expression) and the scope its declaration opens."""
        init = node.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 and init.decls[0].init is not None:
            d = init.decls[0]
            dtype, dims = base_type(self.src, d)
            if dtype != INDEX or dims:
                raise self.src.error(node, f"loop iterator {d.name!r} must be an int")
            return d.name, d.init, {d.name: ("int", None)}
        if isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(init.lvalue, c_ast.ID):
            kind, _ = self.lookup(init.lvalue)
            if kind == "alias":
                raise self.src.error(node, f"{init.lvalue.name!r} names a value given where it is declared; "
                                           "a loop cannot reuse it as its iterator")
            if kind not in ("int", "iter", "var"):
                raise self.src.error(node, f"loop iterator {init.lvalue.name!r} must be an int variable")
            return init.lvalue.name, init.rvalue, {}
        raise self.src.error(node, "the loop must start with 'i = START' or 'int i = START'")

    def companions(self, node: c_ast.For) -> tuple[c_ast.For, list[tuple[str, c_ast.Node, c_ast.Node]]]:
        """``for (i = 0, j = n - 1; ...; i++, j--)``: the loop of its first iterator, and each other one's name,
        start and step (it is that start plus its step times the iterations run)."""
        init, nxt = node.init, node.next
        if isinstance(init, c_ast.DeclList) and len(init.decls) > 1:
            firsts = [(d.name, d.init) for d in init.decls]
            for d in init.decls:
                if base_type(self.src, d) != (INDEX, []) or d.init is None:
                    raise self.src.error(node, f"loop variable {d.name!r} must be an int with a start")
            init = c_ast.DeclList(init.decls[:1], init.coord)
        elif isinstance(init, c_ast.ExprList) and len(init.exprs) > 1:
            if not all(isinstance(e, c_ast.Assignment) and e.op == "=" and isinstance(e.lvalue, c_ast.ID)
                       for e in init.exprs):
                raise self.src.error(node, "the loop must start each of its variables with 'i = START'")
            firsts = [(e.lvalue.name, e.rvalue) for e in init.exprs]
            init = init.exprs[0]
        else:
            return node, []
        steps = {}
        for e in nxt.exprs if isinstance(nxt, c_ast.ExprList) else [nxt]:
            target = e.expr if isinstance(e, c_ast.UnaryOp) else getattr(e, "lvalue", None)
            steps[getattr(target, "name", None)] = e
        if set(steps) != {name for name, _ in firsts}:
            raise self.src.error(node, "the loop must step each variable it starts, and only those")
        first = firsts[0][0]
        main = c_ast.For(init, node.cond, steps[first], node.stmt, node.coord)
        return main, [(name, start, steps[name]) for name, start in firsts[1:]]

    def loop_step(self, node: c_ast.For, var: str, n: c_ast.Node | None = None) -> int:
        """The constant the loop adds to its iterator (or to ``var`` by ``n``) each time (i++, i -= 2,
        i = i + 4, ...; a size or a constant macro may give it)."""
        n = node.next if n is None else n
        if isinstance(n, c_ast.UnaryOp) and isinstance(n.expr, c_ast.ID) and n.expr.name == var:
            if n.op in ("++", "p++"):
                return 1
            if n.op in ("--", "p--"):
                return -1
        step = None
        if isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID) and n.lvalue.name == var:
            if n.op in ("+=", "-="):
                step = (n.rvalue, 1 if n.op == "+=" else -1)
            elif n.op == "=" and isinstance(n.rvalue, c_ast.BinaryOp) and n.rvalue.op in ("+", "-") \
                    and isinstance(n.rvalue.left, c_ast.ID) and n.rvalue.left.name == var:
                step = (n.rvalue.right, 1 if n.rvalue.op == "+" else -1)
        if step is not None:
            try:
                size = self.affine(step[0])
            except CSourceError:  # not a constant: said below
                size = Affine.var(var)
            if not size.terms and size.const > 0:
                return step[1] * size.const
        raise self.src.error(node, f"the loop must step its iterator {var!r} by a positive constant (i++, i--, "
                                   "i += 4, i = i - 2)")

    def interval(self, a: Affine) -> tuple[int, int]:
        """Bounds of an affine expression over the ranges of the loops it uses."""
        lo = hi = a.const
        for name, c in a.terms:
            rlo, rhi = self.ranges[name]
            lo += min(c * rlo, c * rhi)
            hi += max(c * rlo, c * rhi)
        return lo, hi
