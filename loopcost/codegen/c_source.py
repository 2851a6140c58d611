"""C source of a scheduled program, from isl's AST generator.

The loop structure comes from isl (``AstBuild.node_from_schedule_map``); this
module prints it, puts OpenMP/GCC pragmas on loops whose time dimension is
tagged, and prints each statement with its iterators replaced by the AST's
expressions for them.
"""

from __future__ import annotations

import re

import islpy as isl

from ..ir.expr import BinOp, Call, Const, Expr, Read
from ..ir.functions import c_function
from ..ir.polyhedral import domains
from ..ir.program import DTYPES, RESERVED, Computation, Program
from ..ir.state import ProgramState

MACROS = """\
#ifndef LC_MACROS
#define LC_MACROS
#define lc_floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))
#define lc_min(x, y) ((x) < (y) ? (x) : (y))
#define lc_max(x, y) ((x) > (y) ? (x) : (y))
#endif
"""

# Bumped when the C printed for a schedule changes how fast it runs, so that no dataset build mixes labels
# of two generators. 1: parallel bodies inline; 2: parallel bodies in restrict helpers.
CODEGEN_VERSION = 2
PARALLEL_PRAGMA = "#pragma omp parallel for"
_ISL_MACROS = re.compile(r"\b(floord|min|max)\(")


def c_identifier(name: str) -> str:
    """A C function name for a program name (``jacobi-2d`` -> ``jacobi_2d``, ``main`` -> ``kernel_main``)."""
    out = re.sub(r"\W", "_", name)
    if not (out[:1].isalpha() or out[:1] == "_") or out in RESERVED or out.startswith("lc_"):
        out = "kernel_" + out
    return out


def _isl_c(e: isl.AstExpr) -> str:
    return _ISL_MACROS.sub(lambda m: f"lc_{m.group(1)}(", e.to_C_str())


def expr_c(e: Expr, p: Program, env: dict[str, str], dtype: str) -> str:
    """C text of an expression whose result has ``dtype``."""
    if isinstance(e, Const):
        if dtype == "int32":
            return str(int(e.value))
        text = repr(float(e.value))
        return text + "f" if dtype == "float32" else text
    if isinstance(e, Read):
        return e.buffer + "".join(f"[{a.to_c(env)}]" for a in e.index)
    if isinstance(e, BinOp):
        return f"({expr_c(e.lhs, p, env, dtype)} {e.op} {expr_c(e.rhs, p, env, dtype)})"
    if isinstance(e, Call):
        args = [expr_c(a, p, env, dtype) for a in e.args]
        if e.fn == "neg":
            return f"(-{args[0]})"
        if e.fn in ("min", "max"):
            return f"lc_{e.fn}({args[0]}, {args[1]})"
        return f"{c_function(e.fn, dtype)}({', '.join(args)})"
    raise TypeError(f"not an expression: {e!r}")


def statement_c(c: Computation, p: Program, env: dict[str, str]) -> str:
    dtype = p.buffer(c.target.buffer).dtype
    lhs = expr_c(c.target, p, env, dtype)
    rhs = expr_c(c.rhs, p, env, dtype)
    if c.reduction in ("+", "*"):
        return f"{lhs} {c.reduction}= {rhs};"
    if c.reduction in ("max", "min"):
        return f"{lhs} = lc_{c.reduction}({lhs}, {rhs});"
    return f"{lhs} = {rhs};"


def buffer_params(p: Program) -> str:
    return ", ".join(
        f"{DTYPES[b.dtype]} {b.name}[restrict {b.shape[0]}]" + "".join(f"[{s}]" for s in b.shape[1:])
        for b in p.buffers)


class _Printer:
    """Prints an isl AST as C; each parallel loop's body goes to a helper function.

    gcc outlines an OpenMP loop into a function that reaches the buffers through
    a shared struct, and there it no longer vectorizes loops it vectorizes in the
    sequential program ("complicated access pattern"; ttm: 3-4x slower on 2
    threads than on one). The body of a parallel loop is therefore printed as a
    ``static inline`` function whose buffer parameters are ``restrict``, called
    with the iterators in scope: inlined, it keeps the aliasing facts.
    """

    def __init__(self, state: ProgramState, fname: str, helpers: list[str] | None = None) -> None:
        self.state = state
        self.p = state.program
        self.fname = fname
        self.loops = {c.name: loops for c, loops in self.p.walk_computations()}
        self.comps = {c.name: c for c in self.p.computations()}
        self.lines: list[str] = []
        self.scope: list[str] = []  # iterators bound around the node being printed
        self.helpers = [] if helpers is None else helpers  # shared with nested printers, callees first

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def statements_under(self, node: isl.AstNode) -> set[str]:
        t = node.get_type()
        if t == isl.ast_node_type.user:
            return {node.user_get_expr().get_op_arg(0).get_id().get_name()}
        if t == isl.ast_node_type.block:
            kids = node.block_get_children()
            return set().union(*(self.statements_under(kids.get_at(k)) for k in range(kids.n_ast_node())))
        if t == isl.ast_node_type.for_:
            return self.statements_under(node.for_get_body())
        if t == isl.ast_node_type.if_:
            out = self.statements_under(node.if_get_then_node())
            if node.if_has_else_node():
                out |= self.statements_under(node.if_get_else_node())
            return out
        if t == isl.ast_node_type.mark:
            return self.statements_under(node.mark_get_node())
        return set()

    def pragmas(self, node: isl.AstNode, dim: int) -> list[str]:
        """Pragmas of the for loop at time dimension ``dim`` (odd: a loop level)."""
        level = (dim - 1) // 2
        # statements with a dummy level here (None) run at one value of the loop
        names = {self.state.comp(c).loops[level] for c in self.statements_under(node)} - {None}
        if dim % 2 == 0 or len(names) != 1:
            return []
        loop = names.pop()
        out = []
        if self.state.tag_of(loop, "parallel"):
            out.append(PARALLEL_PRAGMA)
        if self.state.tag_of(loop, "vector"):
            out.append("#pragma omp simd")
        unroll = self.state.tag_of(loop, "unroll")
        if unroll:
            out.append(f"#pragma GCC unroll {unroll.factor}")
        return out

    def scoped(self, it: str, body: isl.AstNode, depth: int) -> None:
        self.scope.append(it)
        self.node(body, depth)
        self.scope.pop()

    def helper_call(self, body: isl.AstNode, iterators: list[str]) -> str:
        """Print ``body`` as a helper function of ``iterators``; return the call."""
        sub = _Printer(self.state, self.fname, self.helpers)
        sub.scope = list(iterators)
        sub.node(body, 1)
        name = f"{self.fname}_par{len(self.helpers)}"
        params = ", ".join([buffer_params(self.p)] + [f"const int {it}" for it in iterators])
        self.helpers.append(f"static inline void {name}({params})\n{{\n" + "\n".join(sub.lines) + "\n}\n")
        return f"{name}({', '.join([b.name for b in self.p.buffers] + iterators)});"

    def node(self, node: isl.AstNode, depth: int) -> None:
        t = node.get_type()
        if t == isl.ast_node_type.block:
            kids = node.block_get_children()
            for k in range(kids.n_ast_node()):
                self.node(kids.get_at(k), depth)
        elif t == isl.ast_node_type.for_:
            it = node.for_get_iterator().get_id().get_name()
            init = _isl_c(node.for_get_init())
            if node.for_is_degenerate():
                self.emit(depth, "{")
                self.emit(depth + 1, f"const int {it} = {init};")
                self.scoped(it, node.for_get_body(), depth + 1)
                self.emit(depth, "}")
                return
            pragmas = self.pragmas(node, int(it[1:]))
            for pragma in pragmas:
                self.emit(depth, pragma)
            cond, inc = _isl_c(node.for_get_cond()), _isl_c(node.for_get_inc())
            step = f"{it}++" if inc == "1" else f"{it} += {inc}"
            self.emit(depth, f"for (int {it} = {init}; {cond}; {step}) {{")
            if PARALLEL_PRAGMA in pragmas:
                self.emit(depth + 1, self.helper_call(node.for_get_body(), self.scope + [it]))
            else:
                self.scoped(it, node.for_get_body(), depth + 1)
            self.emit(depth, "}")
        elif t == isl.ast_node_type.if_:
            self.emit(depth, f"if ({_isl_c(node.if_get_cond())}) {{")
            self.node(node.if_get_then_node(), depth + 1)
            if node.if_has_else_node():
                self.emit(depth, "} else {")
                self.node(node.if_get_else_node(), depth + 1)
            self.emit(depth, "}")
        elif t == isl.ast_node_type.user:
            call = node.user_get_expr()
            name = call.get_op_arg(0).get_id().get_name()
            args = [_isl_c(call.get_op_arg(k)) for k in range(1, call.get_op_n_arg())]
            env = {lp.name: a for lp, a in zip(self.loops[name], args, strict=True)}
            self.emit(depth, statement_c(self.comps[name], self.p, env))
        elif t == isl.ast_node_type.mark:
            self.node(node.mark_get_node(), depth)
        else:
            raise NotImplementedError(f"isl AST node type {t}")


def ast_of(state: ProgramState) -> isl.AstNode:
    sched = state.schedule_map().intersect_domain(domains(state.program))
    return isl.AstBuild.from_context(isl.Set("{ : }")).node_from_schedule_map(sched)


def kernel_c(state: ProgramState, *, name: str | None = None, attributes: str = "") -> str:
    """The kernel function ``void NAME(buffers...)`` computing the scheduled program, preceded by the
    ``static inline`` helpers that hold its parallel loops' bodies."""
    fname = name or c_identifier(state.program.name)
    pr = _Printer(state, fname)
    pr.node(ast_of(state), 1)
    head = f"{attributes} " if attributes else ""
    return ("".join(h + "\n" for h in pr.helpers)
            + f"{head}void {fname}({buffer_params(state.program)})\n{{\n" + "\n".join(pr.lines) + "\n}\n")


def kernel_file(state: ProgramState, *, name: str | None = None) -> str:
    """A self-contained C file with the kernel, for users to compile into their code."""
    return "#include <math.h>\n#include <stdlib.h>\n" + MACROS + "\n" + kernel_c(state, name=name)
