"""Translate the region of a C function into a loopcost ``Program``.

The subset: ``for`` loops with affine bounds and constant steps (``loops``; counting ``while`` loops are read as
``for`` loops), affine ``if`` conditions (``if``s on data are selects), assignments and compound assignments to
arrays and scalars, arithmetic, conversions and math calls on values, loop iterators as values. Arrays come from
parameters (fixed-size, variable-length or pointers), the file's variables or locals; integer parameters are
sizes; a pointer given once into an array is that array's elements. Floating-point scalars declared outside the
region are passed to the optimized kernel by address; scalars declared inside it are temporaries (an integer
one initialized with an affine expression of iterators is a name for it), expanded over the loops they live in
when no value flows between iterations. Anything else is refused with the line and the reason.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from pycparser import c_ast

from ..errors import CSourceError, NotAffineError, ProgramError
from ..ir.affine import Affine
from ..ir.dtypes import DTYPES, INT_DTYPES
from ..ir.expr import BinOp, Call, Const, Expr, IterValue, Read, reads
from ..ir.functions import FROM_C
from ..ir.names import unique_name
from ..ir.packing import ELEMENT_BYTES
from ..ir.program import Buffer, Computation, Loop, Node, Program, reduction_of, reserved
from .declared import (
    FOLDED,
    INDEX,
    SUPPORTED,
    UNSIZED,
    base_type,
    element_type,
    fold,
    int_literal,
    record_pointer,
    return_type,
    returns_void,
    text,
)
from .extents import PROVISIONAL, sized_by_accesses
from .intvars import STEPS, IntVariables, NotIndex, index_candidates, region_entry, used_outside
from .loops import LoopReader
from .parse import CSource, walk_nodes
from .rewrite import allocation, continues_as_elses, free_names, select_of, substituted, whiles_as_fors
from .sizes import FileSizes, changed_names, file_sizes

_UNSUPPORTED = {
    c_ast.While: "while loops", c_ast.DoWhile: "do-while loops", c_ast.Switch: "switch statements",
    c_ast.Goto: "goto", c_ast.Break: "break", c_ast.Continue: "continue", c_ast.Label: "labels",
    c_ast.FuncCall: "function calls as statements",
}


class _Taken:
    """The names a new IR name may not take: those ``taken`` and those reserved in generated C."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def __contains__(self, name: object) -> bool:
        return name in self.taken or (isinstance(name, str) and reserved(name))


#: C's comparisons as the IR's selects: (function, operands swapped)
_COMPARE = {"<": ("select_lt", False), "<=": ("select_le", False), ">": ("select_lt", True),
            ">=": ("select_le", True), "==": ("select_eq", False), "!=": ("select_ne", False)}


@dataclass
class CKernel:
    """A C function region read into the IR, with what emitting a drop-in replacement needs."""

    source: CSource
    program: Program
    #: buffer name -> C argument that passes it to the optimized kernel (None: a temporary to allocate)
    arguments: dict[str, str | None]
    #: int parameters the program depends on, with the value it was built for
    specialized: dict[str, int]
    #: every int parameter's value (those without one are absent)
    params: dict[str, int]
    #: every array or floating-point parameter, used or not, as a buffer (scalars have shape (1,))
    param_buffers: dict[str, Buffer]
    #: the sizes taken from the file itself (no ``--param`` for them), and where
    from_file: FileSizes = FileSizes({})
    #: the file's functions that the region calls, inlined (``return EXPR;`` bodies): the original code in the
    #: emitted file calls them
    helpers: tuple[str, ...] = ()
    #: the one-element buffer of the value the function returns (``return EXPR;`` at its end), or None
    result: str | None = None
    #: the file's variables the region uses (C names), and the buffer of each that is one
    globals: dict[str, str | None] = field(default_factory=dict)


@dataclass
class _Temp:
    """A scalar declared inside the region: every access, in order, with its scope path."""

    dtype: str
    events: list[tuple[tuple, str, c_ast.Node]] = field(default_factory=list)


#: fused multiply-adds, read as ``a * b + c``
_FMA = ("fma", "fmaf")
#: the local variable of the emitted function that the optimized kernel writes the returned value into
RESULT = "lc_result"


class _Translator(LoopReader, IntVariables):
    def __init__(self, src: CSource, params: dict[str, int], data: set[str] = frozenset()) -> None:
        self.src = src
        self.params = dict(params)
        #: integer scalars changed outside for headers by integer arithmetic: int variables (j = i + 1; k++)
        self.index_ints = index_candidates(src.function.body) - set(data)
        #: the others changed outside for headers: data (int s = 0; s += x[i]), not iterators
        self.data_ints = changed_names(src.function.body, headers=False) - self.index_ints
        self.changed = changed_names(src.function.body)
        self.used_sizes: dict[str, int] = {}
        self.buffers: dict[str, Buffer] = {}  # every array or scalar buffer that may be used
        self.arguments: dict[str, str | None] = {}
        self.written: set[str] = set()
        self.read: set[str] = set()
        self.scopes: list[dict[str, tuple]] = [{}]
        self.taken: set[str] = set()
        self.temps: dict[str, _Temp] = {}
        self.path: list[tuple] = []
        self.guards: list[Affine] = []
        self.ranges: dict[str, tuple[int, int]] = {}
        self.stack: list[list[Node]] = [[]]
        self.n_comps = 0
        self.n_ifs = 0
        self.n_flattened = 0  # ifs on data read as straight-line selects
        self.n_inlined = 0  # calls read in place (the file's void functions, memset, memcpy)
        self.size_params: set[str] = set()
        self.unsized: set[str] = set()  # buffers whose first extent the accesses give
        self.inlining: set[str] = set()  # the file's functions being inlined (a call of one again recurses)
        self.helpers: list[str] = []  # the file's functions inlined, in the order first called
        self.result: str | None = None  # the buffer of the value the function returns
        ext = src.ast.ext
        self.file_globals = {d.name: d for d in ext[:ext.index(src.function)] if isinstance(d, c_ast.Decl)
                             and d.name and not isinstance(d.type, c_ast.FuncDecl)}  # the file's variables
        self.globals: list[str] = []  # those the region uses, in the order first used

    # ---- names and scopes ---------------------------------------------
    def fresh(self, name: str) -> str:
        """A new IR name for C name ``name``: itself unless taken or reserved in generated C (``c1``; ``lc_x``
        is ``x``: no suffix frees a name of generated C's prefix)."""
        unique = unique_name(name.removeprefix("lc_") or "v", _Taken(self.taken))
        self.taken.add(unique)
        return unique

    def bind(self, name: str, meaning: tuple) -> None:
        self.scopes[-1][name] = meaning

    def lookup(self, node: c_ast.ID) -> tuple:
        for scope in reversed(self.scopes):
            if node.name in scope:
                if scope[node.name][0] == "opaque":
                    raise self.src.error(node, scope[node.name][1])
                return scope[node.name]
        if node.name in self.file_globals:
            self.declare_global(self.file_globals[node.name])
            return self.scopes[0][node.name]
        raise self.src.error(node, f"{node.name!r} is not declared")

    def declare_global(self, decl: c_ast.Decl) -> None:
        """A variable of the file, declared on its first use: an array or a floating-point scalar is passed to
        the kernel as a parameter's would be; an int is a size (its initializer the value, unless ``--param``
        gives one); a ``const`` one with a constant initializer is that constant."""
        if {"static", "extern"} & set(decl.storage) and not ("const" in decl.quals and decl.init is not None):
            why = ("a static variable of the file: the emitted function, another file linked beside yours, cannot "
                   "reach it (drop static, or pass it as a parameter)" if "static" in decl.storage else
                   "an extern variable: its definition is in another file (pass it as a parameter)")
            raise self.src.error(decl, f"{decl.name!r} is {why}")
        self.globals.append(decl.name)
        dtype, dims = base_type(self.src, decl)
        scopes, self.scopes = self.scopes, self.scopes[:1]  # bound with the parameters
        try:
            if not dims and "const" in decl.quals and decl.init is not None:
                v = self.value(decl.init)
                if isinstance(v, int | Const):
                    self.bind(decl.name, ("const", Const(v) if isinstance(v, int) else v))
                    return
            if not dims and dtype == INDEX and decl.init is not None and decl.name not in self.params:
                v = self.value(decl.init)
                if isinstance(v, int):
                    self.params[decl.name] = v
            self.declare_outside(decl, is_param=True)
        finally:
            self.scopes = scopes

    def size(self, node: c_ast.ID, name: str) -> int:
        if name not in self.params:
            raise self.src.error(node, f"size parameter {name!r} has no value: give it with --param "
                                       f"{name}=VALUE (or call {self.src.name}() in the file with a "
                                       "constant there)")
        self.used_sizes[name] = self.params[name]
        return self.params[name]

    # ---- declarations outside the region ------------------------------
    def declare_outside(self, decl: c_ast.Decl, is_param: bool, changed: set[str] = frozenset()) -> None:
        """A parameter, or a local declared before the region. A local scalar initialized with a constant
        and never changed is that constant; other scalars are passed to the kernel by address."""
        if not isinstance(decl, c_ast.Decl) or decl.name is None:
            return
        if isinstance(decl.type, c_ast.FuncDecl):
            return
        dtype, dims = base_type(self.src, decl)
        if not is_param and not dims and decl.init is not None and decl.name not in changed:
            try:
                v = self.value(decl.init)
                if dtype == INDEX and not isinstance(v, int):  # int arithmetic on constants (int k = m + 1)
                    a = self.affine(decl.init)
                    v = None if a.terms else a.const
            except (CSourceError, NotIndex):  # computed by code loopcost does not read (t0 = now();): no constant
                v = None
            if isinstance(v, int | Const):
                self.bind(decl.name, ("const", Const(v) if isinstance(v, int) else v))
                return
        if dims:
            name = self.fresh(decl.name)
            self.buffers[name] = Buffer(name, self.shape(decl, dims), dtype, "input")
            self.arguments[name] = decl.name
            self.bind(decl.name, ("array", name))
            if dims[0] is UNSIZED:
                self.unsized.add(name)
        elif dtype == INDEX and not is_param and decl.name in self.index_ints:
            self.declare_var_outside(decl)
        elif dtype == INDEX and (is_param or decl.name not in self.data_ints):
            self.bind(decl.name, ("size", decl.name) if is_param else ("int", None))
            if is_param:
                self.size_params.add(decl.name)
        else:  # a floating-point scalar, or an int the region computes (an argmax's index): by address
            if dtype == INDEX:
                dtype = element_type(self.src, decl, decl.type.type.names, repr(decl.name))
            name = self.fresh(decl.name)
            self.buffers[name] = Buffer(name, (1,), dtype, "input")
            self.arguments[name] = f"&{decl.name}"
            self.bind(decl.name, ("outer", name))

    def declare_var_outside(self, decl: c_ast.Decl) -> None:
        """An int variable declared before the region: its initializer's value there, if nothing else can
        have changed it; refused if the region changes it and the function uses it elsewhere (loopcost does
        not write its value back)."""
        if decl.name in changed_names(c_ast.Compound(self.src.statements)) and used_outside(self.src, decl.name):
            raise NotIndex(decl.name, self.src.error(decl, f"int {decl.name!r} is changed by the loops and used "
                                                           "outside them"))  # data, passed by address
        if region_entry(self.src, decl.name) is None:
            self.declare_var(decl)
        else:
            self.bind(decl.name, ("var", None))

    def shape(self, decl: c_ast.Decl, dims: list[c_ast.Node | None]) -> tuple[int, ...]:
        out = []
        for d in dims:
            if d is UNSIZED:
                out.append(PROVISIONAL)
                continue
            if d is None:
                raise self.src.error(decl, f"array {decl.name!r} needs every dimension, e.g. double "
                                           f"{decl.name}[N][M], not {decl.name}[][M]")
            a = self.affine(d)
            if a.terms or a.const < 1:
                raise self.src.error(d, f"dimension of {decl.name!r} must be a positive size, got {text(d)}")
            out.append(a.const)
        return tuple(out)

    # ---- affine expressions -------------------------------------------
    def affine(self, node: c_ast.Node) -> Affine:
        """Affine form of an index, bound or condition operand, in IR loop names."""
        if isinstance(node, c_ast.Constant) and node.type == "int":
            return Affine.of(int_literal(node.value))
        if isinstance(node, c_ast.ID):
            kind, what = self.lookup(node)
            if kind in ("iter", "alias"):
                return what
            if kind == "var":
                return self.var_read(node, what)
            if kind == "size":
                return Affine.of(self.size(node, what))
            if kind == "const" and isinstance(what.value, int):
                return Affine.of(what.value)
            if kind == "int":
                raise self.src.error(node, f"{node.name!r} is used outside a loop that it is the iterator of")
            raise self.src.error(node, f"{node.name!r} is data, not a loop iterator or size: "
                                       f"'{text(node)}' is not affine")
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            a = self.affine(node.expr)
            return -a if node.op == "-" else a
        if isinstance(node, c_ast.UnaryOp) and node.op in STEPS and isinstance(node.expr, c_ast.ID) \
                and self.is_var(node.expr.name):
            return self.stepped(node)
        if isinstance(node, c_ast.Cast) and text(node.to_type).strip() in ("int", "long"):
            return self.affine(node.expr)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/", "%"):
            a, b = self.affine(node.left), self.affine(node.right)
            if node.op == "+":
                return a + b
            if node.op == "-":
                return a - b
            if node.op == "*":
                try:
                    return a * b
                except NotAffineError:
                    raise self.src.error(node, f"'{text(node)}' multiplies two iterators: not affine") from None
            if not b.terms and b.const == 0:
                raise self.src.error(node, f"division by zero in '{text(node)}'")
            if a.terms and not b.terms and (qr := self.quotient(a, b.const)) is not None:
                return qr[0] if node.op == "/" else qr[1]
            if a.terms or b.terms:
                raise self.src.error(node, f"'{text(node)}' divides an iterator: not affine (a loop's iterator "
                                           "divided by one constant, i / 2 or i % 4, is)")
            return Affine.of(fold(node.op, a.const, b.const))
        raise self.src.error(node, f"'{text(node)}' is not an affine expression of loop iterators and sizes")

    def conditions(self, node: c_ast.Node) -> list[Affine]:
        """An ``if`` condition as affine constraints ``g >= 0`` (a conjunction)."""
        if isinstance(node, c_ast.BinaryOp) and node.op == "&&":
            return self.conditions(node.left) + self.conditions(node.right)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("<", "<=", ">", ">=", "=="):
            a, b = self.affine(node.left), self.affine(node.right)
            return {"<": [b - a - 1], "<=": [b - a], ">": [a - b - 1], ">=": [a - b],
                    "==": [a - b, b - a]}[node.op]
        raise self.src.error(node, f"condition '{text(node)}' is not supported: use comparisons of affine "
                                   "expressions (< <= > >= ==) joined by &&")

    # ---- values ---------------------------------------------------------
    def value(self, node: c_ast.Node) -> Expr | int | Affine:
        """A right-hand side: an Expr, an int for integer constant arithmetic (folded as C does), or an
        Affine for integer arithmetic on loop iterators (an ``IterValue`` where it meets data)."""
        if isinstance(node, c_ast.Constant):
            if node.type == "int":
                return int_literal(node.value)
            if node.type in ("double", "float"):
                return Const(float(node.value.rstrip("fFlL")), node.type == "float")
            raise self.src.error(node, f"constant {node.value} of type {node.type} is not supported")
        if isinstance(node, c_ast.ID):
            kind, what = self.lookup(node)
            if kind == "size":
                return self.size(node, what)
            if kind in ("iter", "alias"):
                return what
            if kind == "var":
                return self.var_read(node, what)
            if kind == "int":
                raise self.src.error(node, f"{node.name!r} is used outside a loop that it is the iterator of")
            if kind == "array":
                raise self.src.error(node, f"array {node.name!r} is used without subscripts")
            if kind == "const":
                return what
            return self.scalar(node, kind, what, "r")
        if isinstance(node, c_ast.ArrayRef):
            r = self.array_ref(node)
            self.read.add(r.buffer)
            return r
        if isinstance(node, c_ast.UnaryOp) and node.op in STEPS and isinstance(node.expr, c_ast.ID) \
                and self.is_var(node.expr.name):
            return self.stepped(node)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            v = self.value(node.expr)
            if node.op == "+":
                return v
            return -v if isinstance(v, int | Affine) else Call("neg", (v,))
        if isinstance(node, c_ast.Cast):
            return self.cast(node)
        if isinstance(node, c_ast.BinaryOp) and node.op in FOLDED:
            a, b = self.value(node.left), self.value(node.right)
            if isinstance(a, int) and isinstance(b, int):
                return self._int_op(node, a, b)
            if isinstance(a, int | Affine) and isinstance(b, int | Affine):
                return self._iterator_op(node, Affine.of(a), Affine.of(b))
            return BinOp(node.op, self.expr_of(a), self.expr_of(b))  # % >> & ...: on integers, as C allows
        if isinstance(node, c_ast.FuncCall):
            return self.call(node)
        if isinstance(node, c_ast.TernaryOp):
            return self.select(node)
        if isinstance(node, c_ast.BinaryOp) and node.op in _COMPARE:  # a comparison's value: 1 or 0
            return self.select(c_ast.TernaryOp(node, c_ast.Constant("int", "1"), c_ast.Constant("int", "0"),
                                               node.coord))
        if isinstance(node, c_ast.UnaryOp) and node.op == "*" and isinstance(node.expr, c_ast.ID):
            r = self.dereference(node)
            self.read.add(r.buffer)
            return r
        if isinstance(node, c_ast.UnaryOp) and node.op in ("*", "&"):
            raise self.src.error(node, f"pointer operation '{text(node)}' is not supported")
        if isinstance(node, c_ast.Assignment):
            raise self.src.error(node, "assignments inside expressions are not supported")
        raise self.src.error(node, f"expression '{text(node)}' is not supported")

    def select(self, node: c_ast.TernaryOp) -> Expr:
        """``a OP b ? x : y`` on values: a select of the IR (both arms are values, computed as C does)."""
        cond = node.cond
        if not isinstance(cond, c_ast.BinaryOp) or cond.op not in _COMPARE:
            raise self.src.error(node, f"the condition of '?:' must compare two values (< <= > >= == !=), "
                                       f"not '{text(cond)}'")
        a, b = self.expr(cond.left), self.expr(cond.right)
        fn, swap = _COMPARE[cond.op]
        return Call(fn, ((b, a) if swap else (a, b)) + (self.expr(node.iftrue), self.expr(node.iffalse)))

    def cast(self, node: c_ast.Cast) -> Expr | int | Affine:
        """``(T) x``: constants and iterator values converted here, data by a conversion of the IR."""
        t = node.to_type.type
        if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, c_ast.IdentifierType):
            raise self.src.error(node, f"cast to '{text(node.to_type)}' is not supported")
        to = element_type(self.src, node, t.type.names, "the cast")
        v = self.value(node.expr)
        if to in INT_DTYPES:
            if isinstance(v, Const):
                return int(v.value)  # toward zero, as C converts
            return v if isinstance(v, int | Affine) else Call(f"to_{to}", (v,))
        if isinstance(v, int | Const):
            return Const(float(v if isinstance(v, int) else v.value), to == "float32")
        return Call(f"to_{to}", (IterValue(v) if isinstance(v, Affine) else v,))

    def _int_op(self, node: c_ast.BinaryOp, a: int, b: int) -> int:
        if (v := fold(node.op, a, b)) is None:
            raise self.src.error(node, f"division by zero in '{text(node)}'" if node.op in ("/", "%") else
                                 f"shift out of range in '{text(node)}'")
        return v

    def _iterator_op(self, node: c_ast.BinaryOp, a: Affine, b: Affine) -> Affine | Expr:
        """Integer arithmetic on loop iterators, as C computes it: affine where it is (``i + 1``, ``2 * i``),
        else an integer operation of their values (``i / 2``, ``i % 3``, ``i * j``, ``i & 1``)."""
        if node.op in ("+", "-"):
            return a + b if node.op == "+" else a - b
        if node.op == "*":
            try:
                return a * b
            except NotAffineError:
                pass
        if node.op in ("/", "%") and not b.terms and b.const == 0:
            raise self.src.error(node, f"division by zero in '{text(node)}'")
        if node.op in ("/", "%") and not b.terms and (qr := self.quotient(a, b.const)) is not None:
            return qr[0] if node.op == "/" else qr[1]
        return BinOp(node.op, IterValue(a), IterValue(b))

    @staticmethod
    def expr_of(v: Expr | int | Affine) -> Expr:
        """A value as an expression: an int a constant, iterator arithmetic its value."""
        if isinstance(v, int):
            return Const(v)
        return IterValue(v) if isinstance(v, Affine) else v

    def expr(self, node: c_ast.Node) -> Expr:
        return self.expr_of(self.value(node))

    def call(self, node: c_ast.FuncCall) -> Expr:
        name = node.name.name if isinstance(node.name, c_ast.ID) else text(node.name)
        if (inlined := self.inlined(node, name)) is not None:
            if name in self.inlining:
                raise self.src.error(node, f"{name} calls itself: recursion is not supported")
            self.inlining.add(name)
            if name not in self.helpers:
                self.helpers.append(name)
            try:
                return self.expr(inlined)
            finally:
                self.inlining.discard(name)
        if name not in FROM_C and name not in _FMA:
            raise self.src.error(node, f"call to unknown function {name!r}; loopcost knows "
                                       f"{', '.join(sorted([*FROM_C, *_FMA]))}")
        args = [self.expr(a) for a in (node.args.exprs if node.args else [])]
        if name in _FMA:  # a * b + c: gcc contracts it back into one fused multiply-add (-ffp-contract=fast)
            if len(args) != 3:
                raise self.src.error(node, f"{name} takes 3 arguments, not {len(args)}")
            return BinOp("+", BinOp("*", args[0], args[1]), args[2])
        try:
            return Call(FROM_C[name], tuple(args))
        except ProgramError as e:
            raise self.src.error(node, str(e)) from None

    def block_write(self, node: c_ast.FuncCall) -> None:
        """``memset(p, 0, n * sizeof(T))`` and ``memcpy(d, s, n * sizeof(T))`` of whole elements, ``p``, ``d``
        and ``s`` pointing into arrays (``x``, ``x + e``, ``&x[e]``, a row ``A[i]``): the loop that does it."""
        fn = text(node.name)
        dst, second, size = node.args.exprs
        self.n_inlined += 1
        k = f"lc_{fn}{self.n_inlined}"
        pointers = {"d": dst} if fn == "memset" else {"d": dst, "s": second}
        self.scopes.append({})
        try:
            dtypes = []
            for role, arg in pointers.items():
                try:
                    view = self.pointer_view(f"{k}{role}", arg, arg)
                except CSourceError:
                    raise self.src.error(arg, f"{fn} of '{text(arg)}': loopcost reads {fn} into an array (x, x + e, "
                                              "&x[e], a row A[i])") from None
                self.bind(f"{k}{role}", ("view", view))
                dtypes.append(self.buffers[view[0]].dtype)
            dtype = dtypes[0]
            if dtypes[-1] != dtype:
                raise self.src.error(node, "memcpy between arrays of different types is not read")
            count = self.element_count(size, dtype, fn)
            if fn == "memset":
                byte = self.affine(second)
                if byte.terms or (byte.const != 0 and dtype not in ("int8", "uint8")):
                    raise self.src.error(second, "memset of elements of more than a byte is read with 0 only")
                value: c_ast.Node = c_ast.Constant("int", str(byte.const))
            else:
                value = c_ast.ArrayRef(c_ast.ID(f"{k}s"), c_ast.ID(k))
            it = c_ast.ID(k)
            self.for_loop(c_ast.For(
                c_ast.DeclList([c_ast.Decl(k, [], [], [], [], c_ast.TypeDecl(k, [], None, c_ast.IdentifierType(
                    ["int"])), c_ast.Constant("int", "0"), None)]),
                c_ast.BinaryOp("<", it, count), c_ast.UnaryOp("p++", it),
                c_ast.Assignment("=", c_ast.ArrayRef(c_ast.ID(f"{k}d"), it), value, node.coord), node.coord))
        finally:
            self.scopes.pop()

    def element_count(self, size: c_ast.Node, dtype: str, fn: str) -> c_ast.Node:
        """The number of elements of ``dtype`` in the byte count ``size`` (``n * sizeof(double)``), as C."""
        factors, todo = [], [size]
        while todo:
            f = todo.pop()
            if isinstance(f, c_ast.BinaryOp) and f.op == "*":
                todo += [f.right, f.left]
            else:
                factors.append(f)
        sizes = [f for f in factors if isinstance(f, c_ast.UnaryOp) and f.op == "sizeof"]
        t = sizes[0].expr if len(sizes) == 1 else None
        named = element_type(self.src, t, t.type.type.names, "sizeof") \
            if isinstance(t, c_ast.Typename) and isinstance(t.type, c_ast.TypeDecl) \
            and isinstance(t.type.type, c_ast.IdentifierType) else None
        if named is None or ELEMENT_BYTES[named] != ELEMENT_BYTES[dtype]:
            raise self.src.error(size, f"the size '{text(size)}' of a {fn} is read as a count of its elements times "
                                       f"sizeof(T), T of the size of its elements ({DTYPES[dtype]})")
        rest = [f for f in factors if f is not sizes[0]]
        count = rest[0] if rest else c_ast.Constant("int", "1")
        for f in rest[1:]:
            count = c_ast.BinaryOp("*", count, f)
        return count

    def file_function(self, node: c_ast.FuncCall) -> c_ast.FuncDef | None:
        """The function of the file ``node`` calls, if it is one (a definition, not a prototype)."""
        name = node.name.name if isinstance(node.name, c_ast.ID) else None
        return next((f for f in self.src.ast.ext if isinstance(f, c_ast.FuncDef) and f.decl.name == name), None)

    def inline_call(self, node: c_ast.FuncCall, f: c_ast.FuncDef) -> None:
        """A call, as a statement, of a ``void`` function of the file (``axpy(n, a[j], &X[j * n], y);``): its
        body read in a block of its own where each parameter, under a name of its own, is its argument as C
        passes it: an array parameter names the argument's array, a pointer points where the argument does
        (``&X[j * n]``), a scalar is a local given the argument's value."""
        name = f.decl.name
        if not returns_void(f):
            raise self.src.error(node, f"{name} returns a value: a call as a statement is read for void functions "
                                       "of the file (use its value, or make it void)")
        if name in self.inlining:
            raise self.src.error(node, f"{name} calls itself: recursion is not supported")
        params = [p for p in (f.decl.type.args.params if f.decl.type.args else []) if isinstance(p, c_ast.Decl)]
        args = node.args.exprs if node.args else []
        if len(args) != len(params):
            raise self.src.error(node, f"{name} takes {len(params)} arguments, not {len(args)}")
        self.n_inlined += 1
        renamed = {p.name: f"{p.name}__{self.n_inlined}" for p in params}  # no capture of the caller's names
        body = substituted(f.body, {old: c_ast.ID(new, node.coord) for old, new in renamed.items()})
        items = list(body.block_items or [])
        if items and isinstance(items[-1], c_ast.Return) and items[-1].expr is None:
            items.pop()
        self.inlining.add(name)
        if name not in self.helpers:  # the original code, which the emitted function keeps, calls it
            self.helpers.append(name)
        self.scopes.append({})
        try:
            for p, arg in zip(params, args, strict=True):
                decl = copy.deepcopy(p)
                decl.name, decl.init, decl.storage = renamed[p.name], arg, []
                inner = decl.type
                while not isinstance(inner, c_ast.TypeDecl):
                    inner = inner.type
                inner.declname = decl.name
                if isinstance(decl.type, c_ast.ArrayDecl) and base_type(self.src, decl)[1][0] is not UNSIZED:
                    self.bind(decl.name, self.array_argument(decl, arg, p.name))
                else:
                    self.declaration(decl)
            self.statements(items)
        finally:
            self.scopes.pop()
            self.inlining.discard(name)

    def array_argument(self, decl: c_ast.Decl, arg: c_ast.Node, param: str) -> tuple:
        """What array parameter ``param`` with sizes (``double A[n][m]``, declared by ``decl``) names: the array
        its argument names, of the same shape."""
        kind, what = self.lookup(arg) if isinstance(arg, c_ast.ID) else (None, None)
        if kind != "array" or self.buffers[what].shape != self.shape(decl, base_type(self.src, decl)[1]):
            raise self.src.error(arg, f"argument '{text(arg)}' of array parameter {param!r} is "
                                      "not an array of its shape")
        return kind, what

    def inlined(self, node: c_ast.FuncCall, name: str) -> c_ast.Node | None:
        """A call of a function of the file whose body is ``return EXPR;`` and whose parameters are scalars:
        ``EXPR`` with each parameter replaced by its argument (None for any other function)."""
        f = self.file_function(node)
        if f is None:
            return None
        items = f.body.block_items or []
        if len(items) != 1 or not isinstance(items[0], c_ast.Return) or items[0].expr is None:
            raise self.src.error(node, f"{name} is a function of the file: loopcost inlines those whose body is "
                                       "one return statement (return EXPR;), and no other")
        params = [p for p in (f.decl.type.args.params if f.decl.type.args else []) if isinstance(p, c_ast.Decl)]
        args = node.args.exprs if node.args else []
        if len(args) != len(params):
            raise self.src.error(node, f"{name} takes {len(params)} arguments, not {len(args)}")
        if any(not isinstance(p.type, c_ast.TypeDecl) for p in params):
            raise self.src.error(node, f"{name} is inlined only if its parameters are scalars")
        by_name = {p.name: a for p, a in zip(params, args, strict=True)}
        other = free_names(items[0].expr) - set(by_name)
        if other:
            raise self.src.error(node, f"{name} is inlined only if its return expression reads its parameters "
                                       f"alone (it reads {', '.join(sorted(other))})")
        return substituted(items[0].expr, by_name)

    def array_ref(self, node: c_ast.ArrayRef) -> Read:
        subs = []
        base = node
        while isinstance(base, c_ast.ArrayRef):
            subs.append(base.subscript)
            base = base.name
        if not isinstance(base, c_ast.ID):
            raise self.src.error(node, f"'{text(node)}' is not an access to a named array")
        kind, what = self.lookup(base)
        if kind == "view" and len(subs) == 1:  # p[k], p = x + e: x[e + k]
            buffer, at = what
            return Read(buffer, at[:-1] + (at[-1] + self.affine(subs[0]),))
        if kind != "array":
            raise self.src.error(node, f"{base.name!r} is subscripted but is not an array (pointer arithmetic "
                                       "and subscripted scalars are not supported)")
        index = tuple(self.affine(s) for s in reversed(subs))
        if len(index) != len(self.buffers[what].shape):
            raise self.src.error(node, f"{base.name!r} has {len(self.buffers[what].shape)} dimension(s) but "
                                       f"'{text(node)}' uses {len(index)}")
        return Read(what, index)

    def dereference(self, node: c_ast.UnaryOp) -> Read:
        """``*p``, ``p`` a pointer to elements: ``p[0]``."""
        kind, what = self.lookup(node.expr)
        if kind == "view":
            return Read(what[0], what[1])
        if kind != "array" or what not in self.unsized or len(self.buffers[what].shape) != 1:
            raise self.src.error(node, f"pointer operation '{text(node)}' is not supported ({node.expr.name!r} is "
                                       "not a pointer to elements)")
        return Read(what, (Affine.of(0),))

    def scalar(self, node: c_ast.Node, kind: str, name: str, event: str) -> Read:
        """A scalar access: outer scalars are one-element buffers; temps are resolved at the end."""
        if kind == "outer":
            (self.written if event == "w" else self.read).add(name)
            return Read(name, (Affine.of(0),))
        self.temps[name].events.append((tuple(self.path), event, node))
        return Read(name, ())

    # ---- statements -----------------------------------------------------
    def statements(self, items: list[c_ast.Node], allow_return: bool = False) -> None:
        for k, item in enumerate(items):
            if isinstance(item, c_ast.Return) and allow_return and k == len(items) - 1:
                if item.expr is not None:
                    self.returned(item)
                continue
            self.statement(item)

    def returned(self, node: c_ast.Return) -> None:
        """``return EXPR;`` ending the function: an assignment of a one-element output (``result``)."""
        dtype = return_type(self.src)
        if dtype is None:
            raise self.src.error(node, f"{self.src.name} returns a value of a type loopcost does not read "
                                       f"(it reads {SUPPORTED})")
        name = self.fresh("result")
        self.buffers[name] = Buffer(name, (1,), dtype, "output")
        self.arguments[name] = f"&{RESULT}"
        self.result = name
        self.add(Read(name, (Affine.of(0),)), node.expr, "=", node)

    def statement(self, node: c_ast.Node) -> None:
        if isinstance(node, c_ast.Compound):
            self.scopes.append({})
            self.statements(node.block_items or [])
            self.scopes.pop()
        elif isinstance(node, c_ast.For):
            self.for_loop(node)
        elif isinstance(node, c_ast.If):
            self.if_statement(node)
        elif isinstance(node, c_ast.Assignment) and isinstance(node.rvalue, c_ast.Assignment):
            if node.op != "=":
                raise self.src.error(node, f"'{node.op}' with an assignment as its value is not supported")
            self.statement(node.rvalue)  # a = b = e: b = e, then a = b
            self.assignment(c_ast.Assignment("=", node.lvalue, node.rvalue.lvalue, node.coord))
        elif isinstance(node, c_ast.Assignment):
            self.assignment(node)
        elif isinstance(node, c_ast.Decl):
            self.declaration(node)
        elif isinstance(node, c_ast.DeclList):
            for d in node.decls:
                self.declaration(d)
        elif isinstance(node, (c_ast.EmptyStatement, c_ast.Pragma)):
            pass
        elif isinstance(node, c_ast.UnaryOp) and node.op in STEPS:
            if isinstance(node.expr, c_ast.ID) and self.is_var(node.expr.name):
                self.change(node, node.expr.name, "+=", STEPS[node.op])
            else:
                self.assignment(_incremented(node))
        elif isinstance(node, c_ast.FuncCall) and text(node.name) == "free" and node.args is not None \
                and len(node.args.exprs) == 1 and isinstance(node.args.exprs[0], c_ast.ID) \
                and self.malloced(node.args.exprs[0]):
            pass  # a malloc'd temporary's end
        elif isinstance(node, c_ast.FuncCall) and text(node.name) in ("memset", "memcpy") and node.args is not None \
                and len(node.args.exprs) == 3:
            self.block_write(node)
        elif isinstance(node, c_ast.FuncCall) and (f := self.file_function(node)) is not None:
            self.inline_call(node, f)
        elif type(node) in _UNSUPPORTED:
            raise self.src.error(node, f"{_UNSUPPORTED[type(node)]} are not supported in the region (only for "
                                       "loops with affine bounds, affine ifs and assignments)")
        elif isinstance(node, c_ast.Return):
            raise self.src.error(node, "return inside the region is not supported")
        else:
            raise self.src.error(node, f"statement '{text(node)}' is not supported")

    def pointer_view(self, name: str, init: c_ast.Node, decl: c_ast.Node) -> tuple[str, tuple[Affine, ...]]:
        """``T *p = x + e`` (``&x[e]``, ``A[i]``, ``&A[i][j]``, another such pointer), never changed: the array
        ``p`` (``name``, given ``init`` where ``decl`` declares it) points into and the index of ``p[0]``."""
        if name in self.changed:
            raise self.src.error(decl, f"pointer {name!r} is changed in the function: pointer arithmetic is "
                                       "not supported (a pointer given once, T *p = x + e, is)")
        offset = Affine.of(0)
        if isinstance(init, c_ast.BinaryOp) and init.op in ("+", "-"):
            named, other = (init.left, init.right) if init.op == "-" or not isinstance(init.right, c_ast.ID) \
                or self.lookup(init.right)[0] not in ("array", "view") else (init.right, init.left)
            offset = self.affine(other) * (-1 if init.op == "-" else 1)
            init = named
        if isinstance(init, c_ast.UnaryOp) and init.op == "&" and isinstance(init.expr, c_ast.ArrayRef):
            r = self.array_ref(init.expr)
            return r.buffer, r.index[:-1] + (r.index[-1] + offset,)
        subs = []
        while isinstance(init, c_ast.ArrayRef):
            subs.append(self.affine(init.subscript))
            init = init.name
        kind, what = self.lookup(init) if isinstance(init, c_ast.ID) else (None, None)
        if kind == "view" and not subs:
            return what[0], what[1][:-1] + (what[1][-1] + offset,)
        if kind == "array" and len(subs) < len(self.buffers[what].shape):  # A[i]: row i of A
            rank = len(self.buffers[what].shape)
            index = tuple(reversed(subs)) + (Affine.of(0),) * (rank - len(subs))
            if rank - len(subs) == 1:
                return what, index[:-1] + (index[-1] + offset,)
        raise self.src.error(decl, f"pointer {name!r} = '{text(init)}' is not supported: a pointer in "
                                   "the region points into an array (x + e, &x[e], A[i]) or is malloc'd")

    def malloced(self, node: c_ast.ID) -> bool:
        """Whether ``node`` names an array the region allocates (``T *p = malloc(...)``)."""
        kind, what = self.lookup(node)
        return kind == "array" and what in self.unsized and self.buffers[what].role == "temp"

    def declaration(self, decl: c_ast.Decl) -> None:
        if decl.storage:
            raise self.src.error(decl, f"{' '.join(decl.storage)} declarations are not supported in the region")
        dtype, dims = base_type(self.src, decl)
        if dims == [UNSIZED] and decl.init is not None and allocation(decl.init) is None:
            self.bind(decl.name, ("view", self.pointer_view(decl.name, decl.init, decl)))
            return
        if dims and dims[0] is UNSIZED and allocation(decl.init) != "malloc":
            raise self.src.error(decl, f"{decl.name!r}: pointers and arrays without a size declared in the region "
                                       "are not supported, but for T *p = malloc(...)"
                                 + (" (calloc's zeros would be data: malloc, then assign)"
                                    if allocation(decl.init) == "calloc" else ""))
        if dims and dims[0] is UNSIZED:  # malloc'd: a temporary whose extent its accesses give; free() goes
            name = self.fresh(decl.name)
            self.buffers[name] = Buffer(name, self.shape(decl, dims), dtype, "temp")
            self.arguments[name] = None
            self.unsized.add(name)
            self.bind(decl.name, ("array", name))
            return
        if dims:
            if decl.init is not None:
                raise self.src.error(decl, f"array initializers are not supported ({decl.name!r})")
            name = self.fresh(decl.name)
            self.buffers[name] = Buffer(name, self.shape(decl, dims), dtype, "temp")
            self.arguments[name] = None
            self.bind(decl.name, ("array", name))
            return
        if dtype == INDEX and decl.name in self.index_ints:
            self.declare_var(decl)
            return
        if dtype == INDEX and decl.name not in self.data_ints:
            if decl.init is None:  # an iterator declared apart
                self.bind(decl.name, ("int", None))
                return
            try:  # a name for an affine value (int idx = i * m + j)
                self.bind(decl.name, ("alias", self.affine(decl.init)))
                return
            except CSourceError:
                pass  # a value of data (int v = x[i] / 2): an integer scalar the computations compute
        if dtype == INDEX:
            dtype = element_type(self.src, decl, decl.type.type.names, repr(decl.name))
        name = self.fresh(decl.name)
        self.temps[name] = _Temp(dtype)
        self.bind(decl.name, ("temp", name))
        if decl.init is not None:
            if isinstance(decl.init, c_ast.InitList):
                raise self.src.error(decl, "initializer lists are not supported")
            self.add(Read(name, ()), decl.init, "=", decl)

    def assignment(self, node: c_ast.Assignment) -> None:
        lv = node.lvalue
        if isinstance(lv, c_ast.ArrayRef):
            target = self.array_ref(lv)
        elif isinstance(lv, c_ast.UnaryOp) and lv.op == "*" and isinstance(lv.expr, c_ast.ID):
            target = self.dereference(lv)
        elif isinstance(lv, c_ast.ID):
            kind, what = self.lookup(lv)
            if kind == "var":
                self.change(node, lv.name, node.op, node.rvalue)
                return
            if kind in ("iter", "int", "size", "const", "alias"):
                raise self.src.error(node, f"assignment to integer variable {lv.name!r}: integer variables may "
                                           "only be loop iterators changed by their for header, names of one "
                                           "value given where they are declared, or data")
            if kind == "array":
                raise self.src.error(node, f"assignment to array {lv.name!r} without subscripts")
            target = Read(what, (Affine.of(0),) if kind == "outer" else ())
        else:
            raise self.src.error(node, f"assignment to '{text(lv)}' is not supported (pointer operations are "
                                       "not)")
        self.add(target, node.rvalue, node.op, node)

    def add(self, target: Read, rvalue: c_ast.Node, op: str, node: c_ast.Node) -> None:
        """One computation ``target op rvalue``."""
        if op not in ("=", "+=", "-=", "*=", "/="):
            raise self.src.error(node, f"operator {op} is not supported (use = += -= *= /=)")
        rhs = self.expr(rvalue)
        is_temp = target.buffer in self.temps
        if op != "=":
            self.note_read(target, is_temp, node)
        reduction = None
        if op in ("+=", "-="):
            reduction, rhs = "+", (rhs if op == "+=" else Call("neg", (rhs,)))
        elif op == "*=":
            reduction = "*"
        elif op == "/=":
            rhs = BinOp("/", target, rhs)
        else:
            reduction, rhs = reduction_of(target, rhs)
        if is_temp:
            self.temps[target.buffer].events.append((tuple(self.path), "w", node))
        else:
            self.written.add(target.buffer)
        name = self.fresh(f"S{self.n_comps}")
        self.n_comps += 1
        self.stack[-1].append(Computation(name, target, rhs, reduction, tuple(self.guards)))

    def note_read(self, target: Read, is_temp: bool, node: c_ast.Node) -> None:
        if is_temp:
            self.temps[target.buffer].events.append((tuple(self.path), "r", node))
        else:
            self.read.add(target.buffer)

    def if_statement(self, node: c_ast.If) -> None:
        if self.reads_data(node.cond):
            for n in changed_names(node):
                if self.is_var(n):
                    raise NotIndex(n, self.src.error(node, f"int variable {n!r} is changed under an if on data"))
            try:
                converted = self.if_converted(node)
            except CSourceError:  # branches of several statements: each a select on the condition, computed once
                for item in self.flattened(node):
                    self.statement(item)
                return
            self.assignment(converted)
            return
        cond = node.cond
        compared = isinstance(cond, c_ast.BinaryOp) and cond.op in ("==", "!=")
        if compared:  # a == b: a >= b and b >= a; a != b: a > b, or a < b (two branches of one body)
            a, b = self.affine(cond.left), self.affine(cond.right)
            equal, unequal = [[a - b, b - a]], [[a - b - 1], [b - a - 1]]
        then = (unequal if cond.op == "!=" else equal) if compared else [self.conditions(cond)]
        branches = [(conds, node.iftrue) for conds in then]
        if node.iffalse is not None:
            if compared:
                branches += [(conds, node.iffalse) for conds in (equal if cond.op == "!=" else unequal)]
            elif len(then[0]) == 1:
                branches.append(([-then[0][0] - 1], node.iffalse))
            else:
                raise self.src.error(node, "else is supported only after a single comparison")
        for cs, body in branches:
            if any(self.interval(g)[1] < 0 for g in cs):
                continue  # statically false: the branch never runs
            live = [g for g in cs if self.interval(g)[0] < 0]  # the others always hold
            self.n_ifs += 1
            self.path.append(("if", self.n_ifs))
            self.guards.extend(live)
            self.statement(body)
            del self.guards[len(self.guards) - len(live):]
            self.path.pop()
        self.forget(node)

    def reads_data(self, node: c_ast.Node) -> bool:
        """Whether an expression reads an array, a pointer or a floating-point scalar (not only iterators and
        sizes)."""
        if isinstance(node, c_ast.ArrayRef) or isinstance(node, c_ast.UnaryOp) and node.op == "*":
            return True
        if isinstance(node, c_ast.ID):
            known = any(node.name in scope for scope in self.scopes) or node.name in self.file_globals
            return known and self.lookup(node)[0] in ("temp", "outer", "array")
        return any(self.reads_data(c) for _, c in node.children())

    def if_converted(self, node: c_ast.If) -> c_ast.Assignment:
        """An ``if`` on data as one assignment of a select (if-conversion): ``if (c) t = a; else t = b;`` is
        ``t = c ? a : b``, without ``else`` ``t = c ? a : t``; ``if (c) s += a;`` is ``s += c ? a : 0``; an
        ``else if`` nests; ``&&``, ``||`` and ``!`` in ``c`` nest selects. Each branch must assign the same
        target once."""
        then = self._branch(node.iftrue, node)
        other = self._branch(node.iffalse, node) if node.iffalse is not None else None
        if other is not None and (text(other.lvalue) != text(then.lvalue) or other.op != then.op):
            raise self.src.error(node, f"an if on data is read as a select: both branches must assign the same "
                                       f"target with the same operator ('{text(then.lvalue)} {then.op}' and "
                                       f"'{text(other.lvalue)} {other.op}')")
        if other is not None:
            rest = other.rvalue
        elif then.op == "=":
            rest = then.lvalue
        else:
            rest = c_ast.Constant("int", "1" if then.op in ("*=", "/=") else "0")
        return c_ast.Assignment(then.op, then.lvalue, select_of(node.cond, then.rvalue, rest), node.coord)

    def flattened(self, node: c_ast.If, outer: c_ast.Node | None = None) -> list[c_ast.Node]:
        """An ``if`` on data whose branches do more than one assignment (inside an ``if`` on ``outer``, if
        given) as straight-line code: its condition computed once, into an int (a branch may change what it
        reads), then each assignment and declaration of its branches a select on that int (``t = c ? e : t``,
        ``s += c ? e : 0``, ``double v = c ? e : 0``), an ``if`` inside them flattened in turn."""
        self.n_flattened += 1
        name = f"lc_if{self.n_flattened}"
        cond = node.cond if outer is None else c_ast.BinaryOp("&&", outer, node.cond, node.coord)
        zero, one = c_ast.Constant("int", "0"), c_ast.Constant("int", "1")
        out: list[c_ast.Node] = [c_ast.Decl(name, [], [], [], [], c_ast.TypeDecl(name, [], None, c_ast.IdentifierType(
            ["int"])), select_of(cond, one, zero), None, node.coord)]
        for stmt, holds in ((node.iftrue, "!="), (node.iffalse, "==")):
            if stmt is None:
                continue
            guard = c_ast.BinaryOp(holds, c_ast.ID(name), zero, node.coord)
            if outer is not None and holds == "==":  # else: the outer if's condition holds, this one's not
                guard = c_ast.BinaryOp("&&", outer, guard, node.coord)
            for item in stmt.block_items or [] if isinstance(stmt, c_ast.Compound) else [stmt]:
                if isinstance(item, c_ast.UnaryOp) and item.op in STEPS:
                    item = _incremented(item)
                if isinstance(item, c_ast.Assignment) and not isinstance(item.rvalue, c_ast.Assignment):
                    rest = (zero if self.set_before_read(item, stmt) else item.lvalue) if item.op == "=" \
                        else one if item.op in ("*=", "/=") else zero
                    out.append(c_ast.Assignment(item.op, item.lvalue, select_of(guard, item.rvalue, rest), item.coord))
                elif isinstance(item, c_ast.Decl) and not isinstance(item.type, c_ast.ArrayDecl | c_ast.PtrDecl):
                    decl = copy.copy(item)
                    decl.init = None if item.init is None else select_of(guard, item.init, zero)
                    out.append(decl)
                elif isinstance(item, c_ast.If):
                    out += self.flattened(item, guard)
                elif not isinstance(item, c_ast.EmptyStatement):
                    raise self.src.error(item, f"condition '{text(node.cond)}' reads data: an if on data is read "
                                               "as selects, and its branches may hold assignments, declarations of "
                                               f"scalars and ifs, not '{text(item)}'")
        return out

    def set_before_read(self, item: c_ast.Assignment, branch: c_ast.Node) -> bool:
        """Whether ``item`` assigns a scalar temporary that the branch ``branch`` assigns (with ``=``,
        from other values) before anything reads it, and that nothing outside the branch uses: its value where
        the branch does not run is never read (``s = c ? e : 0``, not ``: s``, which would read it unset)."""
        if not isinstance(item.lvalue, c_ast.ID) or self.lookup(item.lvalue)[0] != "temp":
            return False
        name = item.lvalue.name
        inside = {id(n) for n in walk_nodes(branch)}
        if any(isinstance(n, c_ast.ID) and n.name == name and id(n) not in inside
               for n in walk_nodes(self.src.function.body)):
            return False
        for stmt in branch.block_items or [] if isinstance(branch, c_ast.Compound) else [branch]:
            if name in free_names(stmt):
                return isinstance(stmt, c_ast.Assignment) and stmt.op == "=" and isinstance(stmt.lvalue, c_ast.ID) \
                    and stmt.lvalue.name == name and name not in free_names(stmt.rvalue)
        return False

    def _branch(self, stmt: c_ast.Node, node: c_ast.If) -> c_ast.Assignment:
        """The one assignment a branch of an if on data makes (an ``else if``: converted)."""
        while isinstance(stmt, c_ast.Compound) and len(stmt.block_items or []) == 1:
            stmt = stmt.block_items[0]
        if isinstance(stmt, c_ast.If):
            return self.if_converted(stmt)
        if isinstance(stmt, c_ast.Assignment) and not isinstance(stmt.rvalue, c_ast.Assignment):
            return stmt
        raise self.src.error(stmt if getattr(stmt, "coord", None) else node,
                             f"condition '{text(node.cond)}' reads data: an if on data is read as a select, "
                             "and each of its branches must be one assignment (of the same target)")

    # ---- scalar temporaries --------------------------------------------
    def forward_temps(self) -> dict[str, Expr]:
        """The scalar temporaries assigned once (``=``) and read only after that, in the same block or loops
        inside it, while nothing that their value reads is written there: each read becomes the value's
        expression (``double t = a[i] * s; b[i][j] += t;`` is ``b[i][j] += a[i] * s``), as gcc keeps such a
        scalar in a register, and the assignment goes. The others get a buffer (``place_temps``)."""
        once = {n for n, t in self.temps.items() if [k for _, k, _ in t.events].count("w") == 1}
        out: dict[str, Expr] = {}

        def scan(nodes: list[Node]) -> list[Node]:
            kept: list[Node] = []
            for k, n in enumerate(nodes):
                if isinstance(n, Loop):
                    kept.append(Loop(n.name, n.lower, n.upper, tuple(scan(list(n.body)))))
                    continue
                t = n.target.buffer
                if t in once and not n.target.index and n.reduction is None and t not in out:
                    value = _substitute(n.rhs, out)
                    if _first_event(self.temps[t]) == "w" and not _writes(nodes[k + 1:], {r.buffer for r in
                                                                                          reads(value)}):
                        out[t] = value
                        continue
                kept.append(n)
            return kept

        self.stack[0] = scan(self.stack[0])
        for name in out:
            del self.temps[name]
        return out

    def place_temps(self) -> dict[str, Read]:
        """A buffer and an index for every scalar temporary (see ``_expansion``)."""
        out = {}
        for name, t in self.temps.items():
            if not t.events:
                continue
            loops = self._expansion(name, t)
            if loops:
                shape = tuple(self.ranges[lp][1] - min(self.ranges[lp][0], 0) + 1 for lp in loops)
                index = tuple(Affine.var(lp) - min(self.ranges[lp][0], 0) for lp in loops)
            else:
                shape, index = (1,), (Affine.of(0),)
            self.buffers[name] = Buffer(name, shape, t.dtype, "temp")
            self.arguments[name] = None
            out[name] = Read(name, index)
        return out

    def _expansion(self, name: str, t: _Temp) -> list[str]:
        """Loops to expand a temporary over: those around all its accesses, if each iteration of them
        starts by writing it unconditionally (no value flows between iterations); else none."""
        paths = [p for p, _, _ in t.events]
        common: list[tuple] = []
        for level in zip(*paths, strict=False):
            if all(x == level[0] for x in level):
                common.append(level[0])
            else:
                break
        first_path, first_kind, node = t.events[0]
        if first_kind == "r":
            raise self.src.error(node, f"scalar {name!r} is read before it is assigned")
        if first_path != tuple(common):
            return []
        return [n for kind, n in common if kind == "loop"]


def _incremented(node: c_ast.UnaryOp) -> c_ast.Assignment:
    """``x[i]++`` (``--``, prefix or postfix) as a statement: ``x[i] += 1``."""
    return c_ast.Assignment("+=" if STEPS[node.op] > 0 else "-=", node.expr, c_ast.Constant("int", "1"), node.coord)


def _first_event(t: _Temp) -> str:
    return t.events[0][1] if t.events else ""


def _writes(nodes: list[Node] | tuple[Node, ...], buffers: set[str]) -> bool:
    """Whether a computation in ``nodes`` (or loops inside them) writes one of ``buffers``."""
    return any(_writes(n.body, buffers) if isinstance(n, Loop) else n.target.buffer in buffers for n in nodes)


def _substitute(e: Expr, temps: dict[str, Expr]) -> Expr:
    """``e`` with each read of a scalar temporary (no index) replaced by what ``temps`` maps it to."""
    if isinstance(e, Read):
        return _substitute(temps[e.buffer], temps) if not e.index and e.buffer in temps else e
    if isinstance(e, BinOp):
        return BinOp(e.op, _substitute(e.lhs, temps), _substitute(e.rhs, temps))
    if isinstance(e, Call):
        return Call(e.fn, tuple(_substitute(a, temps) for a in e.args))
    return e


def _rebuild(nodes: list[Node] | tuple[Node, ...], temps: dict[str, Expr]) -> tuple[Node, ...]:
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, Loop):
            out.append(Loop(n.name, n.lower, n.upper, _rebuild(n.body, temps)))
        else:
            target = _substitute(n.target, temps)
            out.append(Computation(n.name, target, _substitute(n.rhs, temps), n.reduction, n.guards))
    return tuple(out)


def declared_before(body: c_ast.Compound, block: c_ast.Compound, start: int) -> list[c_ast.Decl]:
    """The declarations in scope at statement ``start`` of ``block`` (a block of ``body``) that its blocks make
    before it: those of each enclosing block before the statement that holds it, outermost first."""
    if body is block:
        return [d for d in (block.block_items or [])[:start] if isinstance(d, c_ast.Decl)]
    for k, item in enumerate(body.block_items or []):
        inner = [n for n in walk_nodes(item) if isinstance(n, c_ast.Compound)]
        if any(n is block for n in inner):
            own = [d for d in (body.block_items or [])[:k] if isinstance(d, c_ast.Decl)]
            holder = next(n for n in inner if any(m is block for m in walk_nodes(n)))
            return own + declared_before(holder, block, start)
    return []


def translate(src: CSource, params: dict[str, int] | None = None) -> CKernel:
    """Read ``src``'s region into a Program (named after the function)."""
    given = dict(params or {})
    found = file_sizes(src, src.int_params)
    taken = {n: v for n, v in found.values.items() if n not in given}
    whiles_as_fors(src.function.body)
    continues_as_elses(src.function.body)
    why: dict[str, Exception] = {}  # the int variables read as data, and why each is not followed
    while True:  # an int variable loopcost cannot follow as an affine value is read again as data
        try:
            return _translated(src, _Translator(src, {**taken, **given}, set(why)), given, taken, found)
        except NotIndex as e:
            if e.name in why:
                raise e.error from None
            why[e.name] = e.error
        except CSourceError as e:  # refused as data too: where at one of those, why it is not an int variable
            raise next((w for n, w in why.items() if f"'{n}" in str(e)), e) from None


def _translated(src: CSource, t: _Translator, given: dict[str, int], taken: dict[str, int],
                found: FileSizes) -> CKernel:
    func_params = src.function.decl.type.args.params if src.function.decl.type.args else []
    for p in func_params:
        if isinstance(p, c_ast.Decl) and record_pointer(p):  # (struct args_t *a): read only if the region uses it
            t.bind(p.name, ("opaque", f"{p.name!r} points to a struct or union: loopcost reads arrays and scalars"))
        elif isinstance(p, c_ast.Decl):
            t.declare_outside(p, is_param=True)
        elif isinstance(p, c_ast.Typename) and text(p).strip() == "void":
            continue
        else:
            raise src.error(p, f"parameter '{text(p)}' is not supported")
    param_buffers = {p.name: t.buffers[t.scopes[0][p.name][1]] for p in func_params
                     if isinstance(p, c_ast.Decl) and t.scopes[0].get(p.name, ("",))[0] in ("array", "outer")}
    if src.scop and src.block is not src.function.body:
        raise src.error(src.block, "the #pragma scop region must be in the function's outermost block")
    if src.scop or src.found:
        for item in declared_before(src.function.body, src.block, src.start):
            t.declare_outside(item, is_param=False, changed=t.changed)
    t.scopes.append({})
    t.statements(src.statements, allow_return=not (src.scop or src.found))
    if not t.stack[0]:
        raise src.error(src.function, f"the region of {src.name!r} computes nothing (no assignment to an array "
                                      "or scalar)")
    forwarded = t.forward_temps()
    temps = t.place_temps()
    used = t.read | t.written | set(temps)
    buffers = []
    for name, b in t.buffers.items():
        if name not in used and b.role != "temp":
            continue
        role = b.role if b.role == "temp" else ("output" if name in t.written else "input")
        buffers.append(Buffer(b.name, b.shape, b.dtype, role))
    try:
        body = _rebuild(t.stack[0], {**temps, **forwarded})
        program = Program(src.name, sized_by_accesses(tuple(buffers), body, t.unsized), body)
    except ProgramError as e:
        raise src.error(src.function, str(e)) from None
    for name, b in param_buffers.items():  # a pointer the region does not use: one element (or row)
        param_buffers[name] = (program.buffer(b.name) if b.name in {x.name for x in program.buffers}
                               else Buffer(b.name, tuple(1 if s == PROVISIONAL else s for s in b.shape), b.dtype))
    arguments = {b.name: t.arguments[b.name] for b in program.buffers}
    unknown = set(given) - t.size_params
    if unknown:
        raise src.error(src.function, f"--param {', '.join(sorted(unknown))}: {src.name!r} has no such int "
                                      f"parameter (it has {', '.join(sorted(t.size_params)) or 'none'})")
    return CKernel(src, program, arguments, dict(t.used_sizes),
                   {n: v for n, v in t.params.items() if n in t.size_params}, param_buffers,
                   FileSizes({n: v for n, v in taken.items() if n in t.used_sizes}, found.where), tuple(t.helpers),
                   t.result, {g: next((b for b, c in arguments.items() if c in (g, f"&{g}")), None) for g in t.globals})
