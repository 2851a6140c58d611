"""The sizes a C file gives its own kernel: the arguments of the call of the function elsewhere in the file.

PolyBench's ``main`` declares ``int n = N;`` (``N`` a macro of the chosen dataset) and calls
``kernel_x(n, ...)``: with no ``--param``, each ``int`` parameter takes the value passed there, when
the argument is a constant, or a local of the caller initialized with a constant expression and never
changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from .declared import FOLDED, fold, int_literal
from .parse import CSource


def changed_names(body: c_ast.Node, headers: bool = True) -> set[str]:
    """Names that are assigned, incremented or have their address taken anywhere in ``body`` (without
    ``headers``: but in a for loop's start and step)."""
    out: set[str] = set()

    class Visitor(c_ast.NodeVisitor):
        def visit_For(self, node: c_ast.For) -> None:
            for part in (node.init, node.cond, node.next, node.stmt) if headers else (node.cond, node.stmt):
                if part is not None:
                    self.visit(part)

        def visit_Assignment(self, node: c_ast.Assignment) -> None:
            if isinstance(node.lvalue, c_ast.ID):
                out.add(node.lvalue.name)
            self.generic_visit(node)

        def visit_UnaryOp(self, node: c_ast.UnaryOp) -> None:
            if node.op in ("&", "++", "--", "p++", "p--") and isinstance(node.expr, c_ast.ID):
                out.add(node.expr.name)
            self.generic_visit(node)

    Visitor().visit(body)
    return out


def constant(node: c_ast.Node | None, env: dict[str, int]) -> int | None:
    """The value of an integer constant expression (names from ``env``), or None."""
    if isinstance(node, c_ast.Constant) and node.type in ("int", "long int", "unsigned int", "long long int",
                                                          "unsigned long int", "unsigned long long int"):
        try:
            return int_literal(node.value)
        except ValueError:
            return None
    if isinstance(node, c_ast.ID):
        return env.get(node.name)
    if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
        v = constant(node.expr, env)
        return None if v is None else (-v if node.op == "-" else v)
    if isinstance(node, c_ast.Cast):
        return constant(node.expr, env)
    if isinstance(node, c_ast.BinaryOp) and node.op in FOLDED:
        a, b = constant(node.left, env), constant(node.right, env)
        return None if a is None or b is None else fold(node.op, a, b)
    return None


@dataclass(frozen=True)
class FileSizes:
    """The values found for the kernel's ``int`` parameters, and where: ``file:line`` of the call."""

    values: dict[str, int]
    where: str = ""


def calls(node: c_ast.Node, name: str | None = None) -> list[c_ast.FuncCall]:
    """The calls by name in ``node``, in order (of the function ``name`` only, when given)."""
    found: list[c_ast.FuncCall] = []

    class Visitor(c_ast.NodeVisitor):
        def visit_FuncCall(self, call: c_ast.FuncCall) -> None:
            if isinstance(call.name, c_ast.ID) and name in (None, call.name.name):
                found.append(call)
            self.generic_visit(call)

    Visitor().visit(node)
    return found


def local_constants(caller: c_ast.FuncDef) -> dict[str, int]:
    """The locals of ``caller`` initialized with a constant expression and never changed, with their values."""
    changed, env = changed_names(caller.body), {}
    for item in caller.body.block_items or []:
        if isinstance(item, c_ast.Decl) and item.name not in changed and item.init is not None:
            if (value := constant(item.init, env)) is not None:
                env[item.name] = value
    return env


def file_sizes(src: CSource, int_params: list[str]) -> FileSizes:
    """The values the first call of ``src``'s function in another function of the file passes to the
    ``int_params`` (names of its int parameters) that a constant decides."""
    params = src.function.decl.type.args.params if src.function.decl.type.args else []
    position = {p.name: k for k, p in enumerate(params) if isinstance(p, c_ast.Decl)}
    for caller in (n for n in src.ast.ext if isinstance(n, c_ast.FuncDef) and n is not src.function):
        found = calls(caller.body, src.name)
        if not found:
            continue
        env = local_constants(caller)
        args = found[0].args.exprs if found[0].args else []
        values = {n: v for n in int_params if position[n] < len(args)
                  and (v := constant(args[position[n]], env)) is not None}
        coord = found[0].coord
        return FileSizes(values, f"{coord.file}:{coord.line}, the call in {caller.decl.name}()")
    return FileSizes({})
