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
        span = h.bounds[0] + h.shift - h.starts[0] if h.step > 0 else h.starts[0] - h.bounds[0] + h.shift
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
        node, var, step, starts, bounds, shift = h.node, h.var, h.step, h.starts, h.bounds, h.shift
        start = starts[0]
        name = self.fresh(var)
        it = Affine.var(name)
        s = abs(step)
        guarded = bounds[1:]  # a min (max) of bounds: the loop runs to the first, the others guard its body
        if s == 1 and step > 0:
            lower, upper, value = start, bounds[0] + shift, it
        elif s == 1:
            lower, upper, value = Affine.of(0), start - bounds[0] + shift, start - it
        else:  # the loop counts the steps: as many as fit in the span (each guarded if the span is not constant)
            span = bounds[0] + shift - start if step > 0 else start - bounds[0] + shift
            lower, value = Affine.of(0), start + it * s if step > 0 else start - it * s
            upper = Affine.of(max(0, -(-max(self.interval(span)[1], 0) // s)))
            if span.terms:
                guarded = bounds
        guards = [b + shift - value - 1 if step > 0 else value - b + shift - 1 for b in guarded]
        guards += [value - a for a in starts[1:]]
        lo, _ = self.interval(lower)
        _, hi = self.interval(upper)
        self.ranges[name] = (lo, hi - 1)
        count = it - start if s == 1 and step > 0 else it  # the iterations run before this one
        starts_of = [(other, self.affine(first), self.loop_step(node, other, nxt)) for other, first, nxt in h.others]
        changes = self.loop_changes(h)
        self.scopes.append(dict(h.decl_scope))
        self.bind(var, ("iter", value))
        for other, first, other_step in starts_of:  # j of for (i = 0, j = n - 1; ...; i++, j--)
            self.bind(other, ("alias", first + count * other_step))
        entry = self.enter_loop(changes, count, value - step, start - step if len(starts) == 1 else None)
        self.path.append(("loop", name))
        self.stack.append([])
        self.guards.extend(guards)
        self.statement(node.stmt)
        del self.guards[len(self.guards) - len(guards):]
        body = self.stack.pop()
        self.path.pop()
        self.scopes.pop()
        self.leave_loop(changes, entry, self.trip_count(h), var)
        if body:
            self.stack[-1].append(Loop(name, lower, upper, tuple(body)))

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
