"""A C file's own inputs: the function that initializes the kernel's arrays, called in the harness.

With random inputs a Cholesky factorization computes NaN in half of its matrix; PolyBench's ``main`` calls
``init_array(n, A)`` on the same arrays before ``kernel_cholesky(n, A)``. ``user_init`` finds that call (or
takes the function the user names), matches its arguments to the kernel's parameters by the variables
both calls pass (``&alpha`` and ``alpha``, ``*A`` and ``A`` are one variable) and makes a ``UserInit``:
the user's file compiled beside the harness (with the implementation of each header it includes that
has one beside it: PolyBench's ``polybench.c``), its ``main`` and the rest dropped at link time, the
function called on the harness's buffers after the random fill.
"""

from __future__ import annotations

from pycparser import c_ast

from ..codegen.compiler import Toolchain, Unit
from ..codegen.harness import UserInit
from ..errors import CSourceError
from ..ir.dtypes import DTYPES
from .linkcheck import entry, prototype
from .parse import define_flags
from .sizes import calls, constant, local_constants
from .translate import CKernel


def _variable(node: c_ast.Node) -> str | None:
    """The variable an argument passes (through ``&``, ``*`` and casts), or None."""
    while isinstance(node, c_ast.UnaryOp | c_ast.Cast) and (not isinstance(node, c_ast.UnaryOp) or node.op in "&*"):
        node = node.expr
    return node.name if isinstance(node, c_ast.ID) else None


def _functions(k: CKernel) -> dict[str, c_ast.FuncDef]:
    return {n.decl.name: n for n in k.source.ast.ext if isinstance(n, c_ast.FuncDef)}


def _site(k: CKernel) -> tuple[c_ast.FuncDef, list[c_ast.FuncCall], c_ast.FuncCall] | None:
    """(the function that calls the kernel, its calls in order, the kernel's call), or None."""
    for f in _functions(k).values():
        if f is k.source.function:
            continue
        in_f = calls(f.body)
        kernel = next((c for c in in_f if c.name.name == k.source.name), None)
        if kernel is not None:
            return f, in_f, kernel
    return None


def _args(call: c_ast.FuncCall) -> list[c_ast.Node]:
    return list(call.args.exprs) if call.args else []


def _params(f: c_ast.FuncDef) -> list[c_ast.Decl]:
    args = f.decl.type.args
    return [p for p in (args.params if args else []) if isinstance(p, c_ast.Decl)]


def user_init(k: CKernel, name: str | None = None, defines: dict[str, str] | None = None) -> UserInit | None:
    """The inputs of ``k``'s file: the function ``name``, or (``name`` None) the call that the kernel's caller
    makes before calling the kernel, to a function of the file, on at least one of the kernel's arrays;
    None when ``name`` is None and there is no such call."""
    if any(b is not None for b in k.globals.values()):  # its unit would define the file's variables again
        if name is None:
            return None
        raise CSourceError(f"{k.source.path}: --init {name}: the kernel uses variables of the file; its own inputs "
                           "are not supported then (--init none: random ones)")
    functions, site = _functions(k), _site(k)
    if name is not None and name not in functions:
        raise CSourceError(f"{k.source.path}: --init {name}: the file defines no function {name!r} (it defines "
                           f"{', '.join(functions)})")
    if site is None:
        if name is None:
            return None
        raise CSourceError(f"{k.source.path}: --init {name}: the file never calls {k.source.name}(), so which of "
                           f"its arrays {name}() initializes is unknown")
    caller, in_caller, kernel = site
    arrays = {_variable(a) for a, p in zip(_args(kernel), _params(k.source.function), strict=False)
              if p.name in k.param_buffers}
    before = in_caller[:in_caller.index(kernel)]
    found = [c for c in before if c.name.name in functions and c.name.name != k.source.name
             and (c.name.name == name if name else {_variable(a) for a in _args(c)} & arrays - {None})]
    if not found:
        if name is None:
            return None
        raise CSourceError(f"{k.source.path}: --init {name}: {caller.decl.name}() does not call {name}() before "
                           f"{k.source.name}()")
    call = found[-1]
    return _make(k, call, functions[call.name.name], kernel, caller, defines)


def _make(k: CKernel, call: c_ast.FuncCall, init: c_ast.FuncDef, kernel: c_ast.FuncCall, caller: c_ast.FuncDef,
          defines: dict[str, str] | None) -> UserInit:
    """The ``UserInit`` of ``call`` (of ``init``), its arguments matched to the kernel call's."""
    by_variable = {_variable(a): p.name for a, p in zip(_args(kernel), _params(k.source.function), strict=False)}
    env = local_constants(caller)
    used = {b.name for b in k.program.buffers}
    args = []
    for position, arg in enumerate(_args(call)):
        param = by_variable.get(_variable(arg))
        if param in k.params:
            args.append(str(k.params[param]))
        elif param in k.param_buffers:
            b = k.param_buffers[param]
            args.append(f"(void *) lc_g_{b.name}" if b.name in used
                        else f"lc_alloc({b.size}u * sizeof({DTYPES[b.dtype]}))")  # an array the region never uses
        elif (value := constant(arg, env)) is not None:
            args.append(str(value))
        else:
            where = f"{arg.coord.file}:{arg.coord.line}" if arg.coord else str(k.source.path)
            raise CSourceError(f"{where}: argument {position + 1} of {init.decl.name}() is none of the variables "
                               f"{k.source.name}() is called with, nor a constant: loopcost cannot pass it")
    folders = (k.source.path.resolve().parent, *(d.resolve() for d in k.source.include_dirs))
    flags = (*define_flags(defines), *(f"-I{d}" for d in folders))
    wrapper = entry(k.source, f'#include "{k.source.path.resolve()}"', "lc_user_init", init)  # its statics in reach
    libraries = [h.with_suffix(".c") for h in k.source.headers  # polybench.c
                 if h.with_suffix(".c").is_file() and h.with_suffix(".c") != k.source.path.resolve()]
    units = (Unit(wrapper, Toolchain(flags=("-O2",)), (*flags, "-ffunction-sections", "-fdata-sections")),
             *(Unit(c.read_text(), Toolchain(flags=("-O2",)), (*flags, f"-I{c.parent}", "-ffunction-sections",
                                                                "-fdata-sections")) for c in libraries))
    return UserInit(units, prototype(k.source, "lc_user_init", init), tuple(args), f"{init.decl.name}()")
