"""C source of a scheduled program, from isl's AST generator.

The loop structure comes from isl (``AstBuild.node_from_schedule_map``); this
module prints it, puts OpenMP/GCC pragmas on loops whose time dimension is
tagged, and prints each statement with its iterators replaced by the AST's
expressions for them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping

import islpy as isl

from ..ir.affine import Affine
from ..ir.dtypes import DTYPES
from ..ir.expr import INTEGER_OPS, BinOp, Call, Const, Expr, IterValue, Read
from ..ir.functions import CASTS, SELECTS, c_function
from ..ir.packing import Box, pack_scale, read_box, runs, scaled_read, vector_copies
from ..ir.polyhedral import domains
from ..ir.program import RESERVED, Computation, Program
from ..ir.state import ProgramState
from .blocks import Element, affine_ast, condition, copies, element, element_c, registers
from .contraction import scalar_temps

MACROS = """\
#ifndef LC_MACROS
#define LC_MACROS
#define lc_floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))
#define lc_min(x, y) ((x) < (y) ? (x) : (y))
#define lc_max(x, y) ((x) > (y) ? (x) : (y))
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LC_WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define LC_WIDE
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define LC_SLP __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define LC_SLP
#endif
#endif
"""
#: on the functions of a schedule with register blocks: gcc's default for AVX-512 CPUs is 256-bit vectors; a
#: block's accumulators fill 512-bit ones (gemm 8x16 blocks, Xeon, measured as -mprefer-vector-width=512:
#: 58 -> 35 ms; none of 6 blocks slower)
WIDE = "LC_WIDE"
#: on the functions of a schedule whose register blocks run along the last index of what they write, where
#: they read packed copies: there gcc vectorizes the loop around a block (along the reduction, with strided
#: loads) instead of the block's copies side by side (gemm's 8x16 block of the i-j-k order reading a packed
#: B: 0.032 s unpacked, 0.45 s packed without it, 0.031 packed with it; the i-k-j order's 8x4 block, whose
#: vectors run along the loop inside: 0.028 s unpacked, 0.093 s packed with it)
SLP = "LC_SLP"


def slp_blocks(state: ProgramState) -> bool:
    """Whether a register block of ``state`` jams a loop that moves the last index of the buffer its
    computation writes (its copies side by side are then the vectors: ``ir.packing.vector_copies``)."""
    return any(vector_copies(state, cs) for cs in state.comps)

# Bumped when the C printed for a schedule changes how fast it runs, so that no dataset build mixes labels
# of two generators. 1: parallel bodies inline; 2: parallel bodies in restrict helpers; 3: a pack of a buffer
# read only as constant * buffer holds the products; 4: a copy's dimensions in the order its readers move them;
# 5: a block's broadcast operand one element apart in its copy; 6: temporaries as local scalars
# (``contraction``), which changed only programs with temporaries.
CODEGEN_VERSION = 6
#: the version of the C of programs without temporaries (every generated one): 6 changed only the others
VERSION_WITHOUT_TEMPS = 5


def codegen_version(p: Program) -> int:
    """The version of the code generator that labels measurements of ``p``: the last that changed how fast
    the C of a program like it runs (so the labels of programs 6 did not change stay reusable)."""
    return CODEGEN_VERSION if any(b.role == "temp" for b in p.buffers) else VERSION_WITHOUT_TEMPS
PARALLEL_PRAGMA = "#pragma omp parallel for"
_ISL_MACROS = re.compile(r"\b(floord|min|max)\(")
_ITERATOR = re.compile(r"\bc\d+\b")  # isl's names of the AST's loop iterators


def c_identifier(name: str) -> str:
    """A C function name for a program name (``jacobi-2d`` -> ``jacobi_2d``, ``main`` -> ``kernel_main``)."""
    out = re.sub(r"\W", "_", name)
    if not (out[:1].isalpha() or out[:1] == "_") or out in RESERVED or out.startswith("lc_"):
        out = "kernel_" + out
    return out


def _isl_c(e: isl.AstExpr) -> str:
    return _ISL_MACROS.sub(lambda m: f"lc_{m.group(1)}(", e.to_C_str())


#: a packed buffer's copy: its array's name, per dimension the name of its offset, the constant its
#: elements were multiplied by (``ir.packing.pack_scale``; None: copied as they are) and its box (its readers
#: and layout: ``ir.packing.copy_layout``)
Packed = tuple[str, tuple[str, ...], Const | None, Box]


def copy_element(name: str, index: list[str], offsets: tuple[str, ...], box: Box) -> str:
    """The copy's element at the buffer's ``index`` (C texts): each index less its offset, in the copy's
    order of dimensions, the last times its gap."""
    last = box.order[-1]
    return name + "".join(f"[{index[d]} - {offsets[d]}]" if d != last or box.gap == 1
                          else f"[{box.gap} * ({index[d]} - {offsets[d]})]" for d in box.order)


def expr_c(e: Expr, p: Program, env: dict[str, str], dtype: str,
           local: Mapping[Element, str] | None = None, aenv: Mapping[str, Affine | None] | None = None,
           packs: Mapping[str, Packed] | None = None, scalars: Mapping[str, str] | None = None) -> str:
    """C text of an expression whose result has ``dtype``; elements that ``local`` names (their index
    read through ``aenv``) are printed as those local variables, and reads of a buffer in ``packs`` read
    its copy (a product of a scaled copy's constant and a read of it: the copy's element); a temporary
    in ``scalars`` is its local scalar."""
    if isinstance(e, Const):  # an int is C's int (1 / y[i] divides as C does), a float a floating constant
        if isinstance(e.value, int):
            return str(e.value)
        return repr(e.value) + ("f" if dtype == "float32" or e.single else "")
    if isinstance(e, Read):
        if scalars and e.buffer in scalars:
            return scalars[e.buffer]
        if local and aenv is not None and element(e, aenv) in local:
            return local[element(e, aenv)]
        if packs and e.buffer in packs:
            name, offsets, _, box = packs[e.buffer]
            return copy_element(name, [a.to_c(env) for a in e.index], offsets, box)
        return e.buffer + "".join(f"[{a.to_c(env)}]" for a in e.index)
    if isinstance(e, IterValue):  # an int, as in C: converted where it meets a floating operand
        return f"({e.value.to_c(env)})"
    if isinstance(e, BinOp):
        if packs and (scaled := scaled_read(e)) is not None and scaled[0].buffer in packs \
                and packs[scaled[0].buffer][2] == scaled[1]:
            return expr_c(scaled[0], p, env, dtype, local, aenv, packs, scalars)  # the copy holds the product
        operands = "int64" if e.op in INTEGER_OPS else dtype  # integers: abs(x[i]) % 3 is labs there, not fabs
        lhs, rhs = (expr_c(x, p, env, operands, local, aenv, packs, scalars) for x in (e.lhs, e.rhs))
        return f"({lhs} {e.op} {rhs})"
    if isinstance(e, Call):
        args = [expr_c(a, p, env, dtype, local, aenv, packs, scalars) for a in e.args]
        if e.fn == "neg":
            return f"(-{args[0]})"
        if e.fn in ("min", "max"):
            return f"lc_{e.fn}({args[0]}, {args[1]})"
        if e.fn in CASTS:
            return f"(({CASTS[e.fn]})({args[0]}))"
        if e.fn in SELECTS:
            return f"(({args[0]} {SELECTS[e.fn]} {args[1]}) ? {args[2]} : {args[3]})"
        return f"{c_function(e.fn, dtype)}({', '.join(args)})"
    raise TypeError(f"not an expression: {e!r}")


def statement_c(c: Computation, p: Program, env: dict[str, str], local: Mapping[Element, str] | None = None,
                aenv: Mapping[str, Affine | None] | None = None, packs: Mapping[str, Packed] | None = None,
                scalars: Mapping[str, str] | None = None) -> str:
    dtype = p.buffer(c.target.buffer).dtype
    lhs = expr_c(c.target, p, env, dtype, local, aenv, scalars=scalars)
    rhs = expr_c(c.rhs, p, env, dtype, local, aenv, packs, scalars)
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

    def __init__(self, state: ProgramState, fname: str, helpers: list[str] | None = None,
                 contracted: dict[str, int] | None = None) -> None:
        self.state = state
        self.p = state.program
        self.fname = fname
        self.loops = {c.name: loops for c, loops in self.p.walk_computations()}
        self.comps = {c.name: c for c in self.p.computations()}
        self.lines: list[str] = []
        self.scope: list[str] = []  # iterators bound around the node being printed
        self.helpers = [] if helpers is None else helpers  # shared with nested printers, callees first
        #: computations inside a jam loop (their copies sit side by side in the innermost loop body)
        self.jammed = {cs.comp for cs in state.comps if any(state.tag_of(n, "jam") for n in cs.real_loops)}
        self.slp = slp_blocks(state)
        self.known: frozenset[str] = frozenset()  # guards known to hold where the node is printed
        self.local: dict[Element, str] = {}  # elements kept in local variables in the loop being printed
        self.values: dict[str, Affine | None] = {}  # iterators of the jam copies being printed: their values
        self.tests: dict[str, tuple] = {}  # each jam copy's guard: its tests (value, bound)
        #: buffers read from their copies where the node is printed, and the statements that read them so
        self.packs: dict[str, Packed] = {}
        self.copies = 0  # packs printed
        self.packed: set[tuple[str, str]] = set()  # (loop, buffer) packs whose loop is being printed
        #: temporaries printable as local scalars (``contraction``): the loops around their declaration
        self.contracted = scalar_temps(state) if contracted is None else contracted
        self.scalars: dict[str, str] = {}  # those declared where the node is printed: their local names

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
        # a jam loop printed as a loop: a later step moved its block around another loop (see blocks.copies)
        unroll = self.state.tag_of(loop, "unroll") or self.state.tag_of(loop, "jam")
        if unroll:
            out.append(f"#pragma GCC unroll {unroll.factor}")
        return out

    def children(self, node: isl.AstNode) -> list[isl.AstNode]:
        """The nodes right inside a block, a guard whose condition is known (its then-branch) or a mark."""
        t = node.get_type()
        if t == isl.ast_node_type.block:
            kids = node.block_get_children()
            return [kids.get_at(k) for k in range(kids.n_ast_node())]
        if t == isl.ast_node_type.mark:
            return [node.mark_get_node()]
        if t == isl.ast_node_type.if_ and _isl_c(node.if_get_cond()) in self.known:
            return [node.if_get_then_node()]
        return []

    def loop_of(self, node: isl.AstNode) -> str | None:
        """The loop that for node ``node`` runs, if the statements under it name one at its level."""
        level = (int(node.for_get_iterator().get_id().get_name()[1:]) - 1) // 2
        names = {self.state.comp(c).loops[level] for c in self.statements_under(node)} - {None}
        return names.pop() if len(names) == 1 else None

    def reads_under(self, node: isl.AstNode, buffer: str) -> bool:
        return any(r.buffer == buffer for c in self.statements_under(node) for r in self.comps[c].reads())

    def copy_c(self, node: isl.AstNode, loop: str, buffer: str) -> tuple[Box, list[str], list[str], str | None]:
        """The copy of ``buffer`` that ``node`` (a run of ``loop``) reads: its box, the C text of its low
        and high ends, the condition on the runs in which the statements under the node read it (None:
        in every run of the loops around; a loop fused with a longer one, inside the node or beside it, makes
        them run where the statements do not, and the box is not there). The box's readers are the statements
        that read the copy (those inside ``loop``: isl may print another one under the node, where a loop it
        shares with them runs once, and that one reads the buffer)."""
        under = frozenset(self.statements_under(node))
        box = read_box(self.state, loop, buffer, under)
        build = isl.AstBuild.from_context(box.context)
        low = [_isl_c(build.expr_from_pw_aff(pa)) for pa in box.low]
        high = [_isl_c(build.expr_from_pw_aff(pa)) for pa in box.high]
        # a statement that reads the copy (another under the node may sit at that level without the loop: an
        # initialization fused into the node's scope, as syrk's blocks had it)
        inside = self.state.comp(min(box.readers))
        every = runs(self.state, inside.betas[:inside.level_of(loop) + 1])
        reading = box.context.gist(every)
        guard = None if reading.plain_is_universe() else \
            _isl_c(isl.AstBuild.from_context(every).expr_from_set(reading))
        return box, low, high, guard

    def copies_in_scope(self, node: isl.AstNode, loop: str) -> dict[str, tuple]:
        """``copy_c`` of each buffer that ``loop`` packs and the statements under ``node`` read, where it is a
        function of the iterators in scope. Where isl knows that a loop around runs once, it may leave the
        loop out and its iterator with it (a loop fused with a longer one: the copy's offsets would name an
        undeclared ``c5``); the node then reads that buffer itself, as it may: the pack only moves data."""
        out = {}
        for b in self.state.packs(loop):
            if (loop, b) in self.packed or not self.reads_under(node, b):
                continue
            copy = self.copy_c(node, loop, b)
            _, low, high, guard = copy
            if set(_ITERATOR.findall(" ".join(low + high + [guard or ""]))) <= set(self.scope):
                out[b] = copy
        return out

    def pack(self, node: isl.AstNode, depth: int, loop: str, copies: dict[str, tuple]) -> None:
        """Loop ``loop``'s node, after copying what it reads of each buffer of ``copies`` (``copy_c``) into a
        local array (its box in this run of the loop, offsets computed once), the reads inside it reading
        the copies."""
        self.emit(depth, "{")
        outer = dict(self.packs)
        for buf, (box, low, high, guard) in copies.items():
            extents = box.extents
            name = f"lc_pack{len(self.packed)}"
            self.copies += 1
            offsets = tuple(f"{name}_o{d}" for d in range(len(extents)))
            for o, lo in zip(offsets, low, strict=True):
                self.emit(depth + 1, f"const int {o} = ({lo});")
            # aligned explicitly: gcc 12 may align a local array for its vector loads without aligning the
            # stack slot it shares with another block's array (vmovaps on a 16-byte boundary: SIGSEGV)
            shape = "".join(f"[{e}]" for e in box.copy_shape)
            self.emit(depth + 1, f"{DTYPES[self.p.buffer(buf).dtype]} {name}{shape} __attribute__((aligned(64)));")
            at = depth + 1 if guard is None else depth + 2
            if guard is not None:  # the offsets are those of a run that reads: computed, not used, in the others
                self.emit(depth + 1, f"if ({guard})")
            its = [f"{name}_i{d}" for d in range(len(extents))]
            # clamped to the buffer and to the copy: in a run where isl prints the node but the loop does not
            # run (a loop fused with a longer one), the box's ends are not its and must not reach outside them
            for d, (it, hi) in enumerate(zip(its, high, strict=True)):
                self.emit(at + d, f"for (int {it} = lc_max({offsets[d]}, 0); {it} <= lc_min(({hi}), "
                                  f"lc_min({self.p.buffer(buf).shape[d] - 1}, {offsets[d]} + {extents[d] - 1})); "
                                  f"{it}++)")
            scale = pack_scale([self.comps[c] for c in box.readers], buf)
            element = buf + "".join(f"[{it}]" for it in its)
            if scale is not None:
                element = f"({expr_c(scale, self.p, {}, self.p.buffer(buf).dtype)} * {element})"
            self.emit(at + len(its), copy_element(name, its, offsets, box) + f" = {element};")
            self.packs[buf] = (name, offsets, scale, box)
            self.packed.add((loop, buf))
        self.node(node, depth + 1)
        self.packs = outer
        self.packed -= {(loop, buf) for buf in copies}
        self.emit(depth, "}")

    def jam_factor(self, node: isl.AstNode) -> int | None:
        """The factor of the jam loop that for node ``node`` is, if it is one."""
        if node.for_is_degenerate():
            return None
        level = (int(node.for_get_iterator().get_id().get_name()[1:]) - 1) // 2
        names = {self.state.comp(c).loops[level] for c in self.statements_under(node)} - {None}
        tag = self.state.tag_of(names.pop(), "jam") if len(names) == 1 else None
        return tag.factor if tag else None

    def aenv(self, call: isl.AstExpr) -> dict[str, Affine | None]:
        """Each loop of a statement's computation, as an affine expression of the iterators in scope."""
        name = call.get_op_arg(0).get_id().get_name()
        return {lp.name: affine_ast(call.get_op_arg(k + 1), self.values) for k, lp in enumerate(self.loops[name])}

    def leaves(self, body: isl.AstNode) -> tuple[list[tuple[Computation, dict]], list[str], bool]:
        """The statements in a loop body, each jam copy apart (with its loops' affine values), the conditions
        of the guards around them, and whether every loop inside but the jam loops runs over constant
        bounds (then each statement runs in every iteration of the loop)."""
        stmts: list[tuple[Computation, dict]] = []
        guards: list[str] = []
        fixed = self._leaves(body, stmts, guards)
        return stmts, guards, fixed

    def _leaves(self, node: isl.AstNode, stmts: list, guards: list[str]) -> bool:
        t = node.get_type()
        if t == isl.ast_node_type.for_:
            it = node.for_get_iterator().get_id().get_name()
            factor = self.jam_factor(node)
            block = copies(node, factor, self.values) if factor else None
            if block is None:
                if node.for_is_degenerate():  # one value: known, as a jam copy's is
                    with self.bound(it, affine_ast(node.for_get_init(), self.values)):
                        return self._leaves(node.for_get_body(), stmts, guards)
                bounds = _isl_c(node.for_get_init()) + " " + _isl_c(node.for_get_cond())
                return self._leaves(node.for_get_body(), stmts, guards) and set(_ITERATOR.findall(bounds)) <= {it}
            fixed = True
            for c in block:
                if c.guard is not None and c.guard not in self.known:
                    guards.append(c.guard)
                    self.tests[c.guard] = c.tests
                with self.bound(it, c.value):
                    fixed &= self._leaves(node.for_get_body(), stmts, guards)
            return fixed
        if t == isl.ast_node_type.user:
            call = node.user_get_expr()
            stmts.append((self.comps[call.get_op_arg(0).get_id().get_name()], self.aenv(call)))
            return True
        if t == isl.ast_node_type.if_ and _isl_c(node.if_get_cond()) not in self.known:
            guards.append(_isl_c(node.if_get_cond()))
            fixed = self._leaves(node.if_get_then_node(), stmts, guards)
            return self._leaves(node.if_get_else_node(), stmts, guards) and fixed if node.if_has_else_node() else fixed
        return all([self._leaves(kid, stmts, guards) for kid in self.children(node)])

    @contextlib.contextmanager
    def bound(self, it: str, value: Affine | None) -> Iterator[None]:
        """While printing a copy of a jam loop (or a degenerate loop): ``it`` has ``value``."""
        self.values[it] = value
        try:
            yield
        finally:
            del self.values[it]

    def scoped(self, it: str, body: isl.AstNode, depth: int) -> None:
        self.scope.append(it)
        self.node(body, depth)
        self.scope.pop()

    def helper_call(self, body: isl.AstNode, iterators: list[str]) -> str:
        """Print ``body`` as a helper function of ``iterators``; return the call."""
        sub = _Printer(self.state, self.fname, self.helpers, self.contracted)
        sub.scope = list(iterators)
        sub.scalars = dict(self.scalars)
        sub.declare_scalars(body, _level(iterators[-1]) + 1, 1)
        sub.node(body, 1)
        name = f"{self.fname}_par{len(self.helpers)}"
        # the scalars declared around the loop are read in it (a write would be carried: not parallel)
        outer = [(self.scalars[b], DTYPES[self.p.buffer(b).dtype]) for b in sorted(self.scalars)]
        params = ", ".join([buffer_params(self.p)] + [f"const int {it}" for it in iterators]
                           + [f"const {t} {s}" for s, t in outer])
        head = "".join(f"{a} " for a in sub.attributes())
        self.helpers.append(f"{head}static inline void {name}({params})\n{{\n" + "\n".join(sub.lines) + "\n}\n")
        return f"{name}({', '.join([b.name for b in self.p.buffers] + iterators + [s for s, _ in outer])});"

    def declare_scalars(self, body: isl.AstNode, loops: int, depth: int) -> None:
        """Declare, at the top of ``body`` (inside ``loops`` loops), the local scalars of the temporaries whose
        accesses all lie in it."""
        under = None
        for name, n in self.contracted.items():
            if n != loops or name in self.scalars:
                continue
            under = self.statements_under(body) if under is None else under
            users = {c.name for c in self.p.computations()
                     if any(r.buffer == name for r in [c.target, *c.reads()])}
            if users <= under:
                self.scalars[name] = f"lc_s_{name}"
                self.emit(depth, f"{DTYPES[self.p.buffer(name).dtype]} lc_s_{name};")

    def attributes(self) -> list[str]:
        """The attributes of the function printed: wide vectors for register blocks, and no loop
        vectorization where they read packed copies."""
        return [WIDE] + ([SLP] if self.copies and self.slp else []) if self.jammed else []

    def loop(self, node: isl.AstNode, depth: int, pragmas: list[str],
             found: tuple[list[tuple[Computation, dict]], list[str], bool] | None) -> None:
        """Print a (non-degenerate) for loop; ``found``: what ``leaves`` finds in it, when it holds jammed
        statements.

        Where every statement inside is a jammed copy that runs in every iteration (no guard left, inner
        loops of constant bounds), the elements they keep updating in place are loaded into local variables
        before the loop and stored after it (not again in a loop inside).
        """
        it = node.for_get_iterator().get_id().get_name()
        init = _isl_c(node.for_get_init())
        cond, inc = _isl_c(node.for_get_cond()), _isl_c(node.for_get_inc())
        ready = found is not None and not found[1] and found[2] and not self.local \
            and all(p.startswith("#pragma GCC unroll") for p in pragmas)  # not a parallel or vector loop
        local = registers(found[0], set(self.scope)) if ready and all(c.name in self.jammed for c, _ in found[0]) \
            else {}
        if local:  # the elements exist only if the loop runs: guarded by its first test
            first = re.sub(rf"\b{it}\b", f"({init})", cond)
            self.emit(depth, f"if ({first}) {{")
            depth += 1
            for el, name in local.items():
                self.emit(depth, f"{DTYPES[self.p.buffer(el[0]).dtype]} {name} = {element_c(el)};")
        for pragma in pragmas:
            self.emit(depth, pragma)
        step = f"{it}++" if inc == "1" else f"{it} += {inc}"
        self.emit(depth, f"for (int {it} = {init}; {cond}; {step}) {{")
        if PARALLEL_PRAGMA in pragmas:
            self.emit(depth + 1, self.helper_call(node.for_get_body(), self.scope + [it]))
        else:
            outer, self.local, scalars = self.local, local or self.local, dict(self.scalars)
            self.declare_scalars(node.for_get_body(), _level(it) + 1, depth + 1)
            self.scoped(it, node.for_get_body(), depth + 1)
            self.local, self.scalars = outer, scalars
        self.emit(depth, "}")
        if local:
            for el, name in local.items():
                self.emit(depth, f"{element_c(el)} = {name};")
            self.emit(depth - 1, "}")

    def unrolled(self, node: isl.AstNode, depth: int, block: list) -> None:
        """The copies of a jam loop, side by side, each under its guard unless known to hold; a copy whose
        text still names the iterator (in a guard of isl's inside) gets it as a constant."""
        it = node.for_get_iterator().get_id().get_name()
        for c in block:
            guarded = c.guard is not None and c.guard not in self.known
            if guarded:
                self.emit(depth, f"if ({c.guard}) {{")
            at = depth + guarded
            mark = len(self.lines)
            with self.bound(it, c.value):
                self.scoped(it, node.for_get_body(), at + 1)
            if any(re.search(rf"\b{it}\b", line) for line in self.lines[mark:]):
                self.lines[mark:mark] = ["  " * at + "{", "  " * (at + 1) + f"const int {it} = {c.value.to_c()};"]
                self.emit(at, "}")
            else:
                self.lines[mark:] = [line[2:] for line in self.lines[mark:]]
            if guarded:
                self.emit(depth, "}")

    def node(self, node: isl.AstNode, depth: int) -> None:
        t = node.get_type()
        if t == isl.ast_node_type.block:
            kids = node.block_get_children()
            for k in range(kids.n_ast_node()):
                self.node(kids.get_at(k), depth)
        elif t == isl.ast_node_type.for_:
            loop = self.loop_of(node)
            packed = self.copies_in_scope(node, loop) if loop else {}
            if packed:
                self.pack(node, depth, loop, packed)
                return
            it = node.for_get_iterator().get_id().get_name()
            init = _isl_c(node.for_get_init())
            if node.for_is_degenerate():
                self.emit(depth, "{")
                self.emit(depth + 1, f"const int {it} = {init};")
                with self.bound(it, affine_ast(node.for_get_init(), self.values)) if self.jammed else \
                        contextlib.nullcontext():
                    self.scoped(it, node.for_get_body(), depth + 1)
                self.emit(depth, "}")
                return
            factor = self.jam_factor(node) if self.jammed else None
            block = copies(node, factor, self.values) if factor else None
            if block is not None:
                self.unrolled(node, depth, block)
                return
            pragmas = self.pragmas(node, int(it[1:]))
            found = self.leaves(node.for_get_body()) if self.jammed and PARALLEL_PRAGMA not in pragmas else None
            jammed = found is not None and any(c.name in self.jammed for c, _ in found[0])
            guards = [g for g in found[1] if set(_ITERATOR.findall(g)) <= set(self.scope)] if jammed else []
            if guards:  # guards of partial blocks that hold in the whole loop: a version of it without them
                self.emit(depth, f"if ({condition(guards, self.tests)}) {{")
                outer, self.known = self.known, self.known | set(guards)
                self.loop(node, depth + 1, pragmas, self.leaves(node.for_get_body()))
                self.known = outer
                self.emit(depth, "} else {")
                self.loop(node, depth + 1, pragmas, None)
                self.emit(depth, "}")
            else:
                self.loop(node, depth, pragmas, found if jammed else None)
        elif t == isl.ast_node_type.if_:
            if _isl_c(node.if_get_cond()) in self.known:
                self.node(node.if_get_then_node(), depth)
                return
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
            aenv = self.aenv(call) if self.values else {}
            env = {lp.name: aenv[lp.name].to_c() if aenv.get(lp.name) is not None else a
                   for lp, a in zip(self.loops[name], args, strict=True)}
            packs = {b: packed for b, packed in self.packs.items() if name in packed[3].readers}
            self.emit(depth, statement_c(self.comps[name], self.p, env, self.local, (aenv or self.aenv(call))
                                         if self.local else None, packs, self.scalars))
        elif t == isl.ast_node_type.mark:
            self.node(node.mark_get_node(), depth)
        else:
            raise NotImplementedError(f"isl AST node type {t}")


def _level(iterator: str) -> int:
    """The loop level (0: outermost) of an AST iterator: ``c1`` is level 0, ``c3`` level 1 (time dimensions
    alternate betas and loops)."""
    return (int(iterator[1:]) - 1) // 2


def ast_of(state: ProgramState) -> isl.AstNode:
    sched = state.schedule_map().intersect_domain(domains(state.program))
    return isl.AstBuild.from_context(isl.Set("{ : }")).node_from_schedule_map(sched)


def kernel_c(state: ProgramState, *, name: str | None = None, attributes: str = "") -> str:
    """The kernel function ``void NAME(buffers...)`` computing the scheduled program, preceded by the
    ``static inline`` helpers that hold its parallel loops' bodies."""
    fname = name or c_identifier(state.program.name)
    pr = _Printer(state, fname)
    pr.node(ast_of(state), 1)
    head = " ".join(a for a in (attributes, *pr.attributes()) if a)
    head += " " if head else ""
    return ("".join(h + "\n" for h in pr.helpers)
            + f"{head}void {fname}({buffer_params(state.program)})\n{{\n" + "\n".join(pr.lines) + "\n}\n")


def kernel_file(state: ProgramState, *, name: str | None = None) -> str:
    """A self-contained C file with the kernel, for users to compile into their code."""
    return "#include <math.h>\n#include <stdlib.h>\n" + MACROS + "\n" + kernel_c(state, name=name)
