"""Rewrites of the C syntax tree before it is read: a call of the file's own function inlined, an ``if`` on data
as a select, a counting ``while`` as a ``for``, what an initializer allocates."""

from __future__ import annotations

import copy

from pycparser import c_ast

from .parse import walk_nodes
from .sizes import changed_names


def free_names(expr: c_ast.Node) -> set[str]:
    """The variables ``expr`` reads (the names of the functions it calls left out)."""
    called = {id(c.name) for c in walk_nodes(expr) if isinstance(c, c_ast.FuncCall)}
    return {n.name for n in walk_nodes(expr) if isinstance(n, c_ast.ID) and id(n) not in called}


def substituted(expr: c_ast.Node, by_name: dict[str, c_ast.Node]) -> c_ast.Node:
    """A copy of ``expr`` with each variable of ``by_name`` replaced by its expression (a call's arguments for
    the parameters of the function it calls)."""

    class Substitute(c_ast.NodeVisitor):
        def generic_visit(self, n: c_ast.Node) -> None:
            for attr in n.__slots__:
                child = getattr(n, attr, None)
                if isinstance(child, c_ast.ID) and child.name in by_name:
                    setattr(n, attr, by_name[child.name])
                elif isinstance(child, c_ast.Node):
                    self.visit(child)
                elif isinstance(child, list):
                    setattr(n, attr, [by_name[c.name] if isinstance(c, c_ast.ID) and c.name in by_name else c
                                      for c in child])
                    for c in child:
                        if isinstance(c, c_ast.Node) and not isinstance(c, c_ast.ID):
                            self.visit(c)

    body = c_ast.Compound([copy.deepcopy(expr)])
    Substitute().visit(body)
    return body.block_items[0]


def _name(call: c_ast.FuncCall) -> str | None:
    return call.name.name if isinstance(call.name, c_ast.ID) else None


def allocation(init: c_ast.Node | None) -> str | None:
    """``malloc`` or ``calloc`` if an initializer calls one (cast or not), else None."""
    while isinstance(init, c_ast.Cast):
        init = init.expr
    if isinstance(init, c_ast.FuncCall) and _name(init) in ("malloc", "calloc"):
        return _name(init)
    return None


def select_of(cond: c_ast.Node, a: c_ast.Node, b: c_ast.Node) -> c_ast.Node:
    """``cond ? a : b`` with ``&&``, ``||`` and ``!`` in ``cond`` as nested selects on single comparisons."""
    if isinstance(cond, c_ast.BinaryOp) and cond.op == "&&":
        return select_of(cond.left, select_of(cond.right, a, b), b)
    if isinstance(cond, c_ast.BinaryOp) and cond.op == "||":
        return select_of(cond.left, a, select_of(cond.right, a, b))
    if isinstance(cond, c_ast.UnaryOp) and cond.op == "!":
        return select_of(cond.expr, b, a)
    return c_ast.TernaryOp(cond, a, b, cond.coord)


def _steps(stmt: c_ast.Node, name: str) -> bool:
    """Whether ``stmt`` adds a constant to ``name`` (``i++``, ``i += 2``, ``i = i + 2``, ``i--``...)."""
    if isinstance(stmt, c_ast.UnaryOp) and stmt.op in ("++", "p++", "--", "p--"):
        return isinstance(stmt.expr, c_ast.ID) and stmt.expr.name == name
    if not isinstance(stmt, c_ast.Assignment) or not isinstance(stmt.lvalue, c_ast.ID) or stmt.lvalue.name != name:
        return False
    step = stmt.rvalue
    if stmt.op == "=" and isinstance(step, c_ast.BinaryOp) and step.op in ("+", "-") \
            and isinstance(step.left, c_ast.ID) and step.left.name == name:
        step = step.right
    elif stmt.op not in ("+=", "-="):
        return False
    return name not in free_names(step)


def whiles_as_fors(body: c_ast.Node) -> None:
    """Rewrite, in place, each ``i = START; while (COND) { ...; i += STEP; }`` whose body changes ``i`` only at
    its end as ``for (i = START; COND; i += STEP) { ... }`` (the start, a declaration's initializer or the
    assignment just before, moves into the header; every block keeps its number of statements)."""
    for node in walk_nodes(body):
        items = node.block_items if isinstance(node, c_ast.Compound) else None
        for k, loop in enumerate(items or []):
            if not isinstance(loop, c_ast.While) or k == 0 or not isinstance(loop.stmt, c_ast.Compound):
                continue
            before, stmts = items[k - 1], loop.stmt.block_items or []
            if isinstance(before, c_ast.Decl) and before.init is not None:
                name, start = before.name, before.init
            elif isinstance(before, c_ast.Assignment) and before.op == "=" and isinstance(before.lvalue, c_ast.ID):
                name, start = before.lvalue.name, before.rvalue
            else:
                continue
            if not stmts or not _steps(stmts[-1], name) or name in changed_names(c_ast.Compound(stmts[:-1])) \
                    or name not in free_names(loop.cond):
                continue
            if isinstance(before, c_ast.Decl):
                before.init = None
            else:
                items[k - 1] = c_ast.EmptyStatement(before.coord)
            init = c_ast.Assignment("=", c_ast.ID(name, loop.coord), start, loop.coord)
            items[k] = c_ast.For(init, loop.cond, stmts[-1], c_ast.Compound(stmts[:-1], loop.stmt.coord), loop.coord)


def continues_as_elses(body: c_ast.Node) -> None:
    """Rewrite, in place, each ``if (C) continue;`` among the statements of a loop's body as ``if (C) {} else {
    REST }``, REST the statements after it (their places left as empty statements: every block keeps its number
    of statements)."""
    for loop in [n for n in walk_nodes(body) if isinstance(n, c_ast.For | c_ast.While | c_ast.DoWhile)]:
        if isinstance(loop.stmt, c_ast.Compound):
            loop.stmt.block_items = _skipped(loop.stmt.block_items or [])


def _skipped(items: list[c_ast.Node]) -> list[c_ast.Node]:
    for k, item in enumerate(items):
        then = item.iftrue if isinstance(item, c_ast.If) and item.iffalse is None else None
        while isinstance(then, c_ast.Compound) and len(then.block_items or []) == 1:
            then = then.block_items[0]
        if isinstance(then, c_ast.Continue):
            rest = _skipped(items[k + 1:])
            return [*items[:k], c_ast.If(item.cond, c_ast.Compound([], item.coord), c_ast.Compound(rest, item.coord),
                                         item.coord), *(c_ast.EmptyStatement(item.coord) for _ in rest)]
    return items
