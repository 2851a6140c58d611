"""Write the user's function back with its region replaced by a call to the optimized kernel.

The emitted file holds a ``static`` optimized kernel and the function with its
original signature. The function runs the optimized kernel when the int
parameters have the values it was specialized for and no array it writes
overlaps another array (the kernel's parameters are ``restrict``), and the
original code otherwise (or when a temporary cannot be allocated), so it is a
drop-in replacement for every input.
"""

from __future__ import annotations

import copy

from pycparser import c_ast, c_generator

from ..codegen.c_source import MACROS, kernel_c
from ..ir.dtypes import DTYPES
from ..ir.state import ProgramState
from .parse import INCLUDE_LINE, CSource, spell_typedefs, walk_nodes
from .translate import RESULT, CKernel

_MARKER = "LC_REGION_MARKER"
_DISJOINT = """static int lc_disjoint(const void *a, size_t na, const void *b, size_t nb)
{
  return (uintptr_t) a + na <= (uintptr_t) b || (uintptr_t) b + nb <= (uintptr_t) a;
}
"""


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def region_replacement(k: CKernel, kernel_name: str) -> str:
    """C statements that run the optimized kernel, or the original region when they cannot."""
    gen = c_generator.CGenerator()
    p = k.program
    lines = ["{", "  int lc_done = 0;"]
    if k.result is not None:  # the kernel writes the returned value here
        lines.append(f"  {DTYPES[p.buffer(k.result).dtype]} {RESULT};")
    checks = [f"{n} == {v}" for n, v in sorted(k.specialized.items())]
    arrays = [b for b in p.buffers if k.arguments[b.name] is not None and not k.arguments[b.name].startswith("&")]
    for i, x in enumerate(arrays):  # the kernel's restrict parameters: a written array may not overlap another
        for y in arrays[i + 1:]:
            if "output" in (x.role, y.role):
                checks.append(f"lc_disjoint({k.arguments[x.name]}, sizeof({DTYPES[x.dtype]}) * {x.size}, "
                              f"{k.arguments[y.name]}, sizeof({DTYPES[y.dtype]}) * {y.size})")
    cond = " && ".join(checks)
    body: list[str] = []
    temps = [b for b in p.buffers if k.arguments[b.name] is None]
    for b in temps:
        body.append(f"{DTYPES[b.dtype]} *lc_t_{b.name} = malloc(sizeof({DTYPES[b.dtype]}) * {b.size});")
    # cast: the kernel's parameters are not const, the user's may be (a const double *A read only)
    args = [f"(void *) {k.arguments[b.name]}" if k.arguments[b.name] else f"(void *) lc_t_{b.name}"
            for b in p.buffers]
    call = [f"{kernel_name}({', '.join(args)});", "lc_done = 1;"]
    if temps:
        body += [f"if ({' && '.join(f'lc_t_{b.name}' for b in temps)}) {{"] + ["  " + c for c in call] + ["}"]
    else:
        body += call
    body += [f"free(lc_t_{b.name});" for b in temps]
    if cond:
        lines.append(f"  if ({cond}) {{")
        lines += ["    " + b for b in body]
        lines.append("  }")
    else:
        lines += ["  " + b for b in body]
    original = gen.visit(c_ast.Compound(k.source.statements))
    if k.result is not None:
        lines.append(f"  if (lc_done)\n    return {RESULT};")
    lines.append("  if (!lc_done)")
    lines.append(_indent(original.rstrip(), "  "))
    lines.append("}")
    return "\n".join(lines)


def emit_function(k: CKernel, state: ProgramState, *, schedule: str = "") -> str:
    """A C file with the optimized kernel and ``k``'s function, same name and signature."""
    src = k.source
    fname = src.name
    kernel_name = f"lc_opt_{fname}"
    items = src.block.block_items
    lo, hi = (src.start - 1, src.stop + 1) if src.scop else (src.start, src.stop) if src.found \
        else (0, len(items or []))
    marker = c_ast.FuncCall(c_ast.ID(_MARKER), None)
    try:
        src.block.block_items = list(items[:lo]) + [marker] + list(items[hi:])
        text = c_generator.CGenerator().visit(src.function)
    finally:
        src.block.block_items = items
    out_lines = []
    replacement = region_replacement(k, kernel_name)
    for line in text.splitlines():
        if line.strip() == f"{_MARKER}();":
            out_lines.append(_indent(replacement, line[:len(line) - len(line.lstrip())]))
        else:
            out_lines.append(line)
    sizes = ", ".join(f"{n}={v}" for n, v in sorted(k.specialized.items()))
    head = (f"/* {fname}, optimized by loopcost from {src.path.name}"
            + (f"\n * schedule: {schedule}" if schedule else "")
            + (f"\n * specialized for {sizes}; other sizes run the original code" if sizes else "")
            + "\n * compile with -O3 -march=native -fopenmp (the kernel may use OpenMP pragmas) */\n")
    return (head + _preamble(k) + global_declarations(k) + MACROS + _DISJOINT + "\n" + _helpers(k)
            + kernel_c(state, name=kernel_name, attributes="static") + "\n" + "\n".join(out_lines) + "\n")


def emit_original(k: CKernel, why: str) -> str:
    """A C file with ``k``'s function as the user wrote it (preprocessed), for when nothing loopcost found runs
    faster; ``why`` goes into its head comment."""
    src = k.source
    return (f"/* {src.name}, from {src.path.name}: the original function, unchanged by loopcost: {why} */\n"
            + _preamble(k) + global_declarations(k) + _helpers(k)
            + c_generator.CGenerator().visit(src.function) + "\n")


_INCLUDES = "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n"


def _preamble(k: CKernel) -> str:
    """The includes and types the emitted file starts with: ``_INCLUDES`` and the typedefs of the file and its
    headers; around a region loopcost chose, ``_INCLUDES``, the file's own ``#include`` lines and its own
    structs, unions, enums and typedefs (the code around the loops uses them: printf, clock_gettime, the file's
    structs; the emitted file goes beside the original, where its quoted headers are found)."""
    src = k.source
    if not src.found:
        return _INCLUDES + _typedefs(k)
    own = "".join(line.strip() + "\n" for line in INCLUDE_LINE.findall(src.path.read_text()))
    gen = c_generator.CGenerator()
    types = "".join(gen.visit(d) + ";\n" for d in src.ast.ext
                    if isinstance(d, c_ast.Typedef | c_ast.Decl) and getattr(d.coord, "file", None) == str(src.path)
                    and (isinstance(d, c_ast.Typedef) or d.name is None))
    return _INCLUDES + own + types


def global_declarations(k: CKernel) -> str:
    """The file's variables that the region uses, declared: ``extern`` (the user's file defines them), but a
    ``const`` one with an initializer, copied (``static``)."""
    out = []
    for d in k.source.ast.ext:
        if isinstance(d, c_ast.Decl) and d.name in k.globals:
            d = copy.deepcopy(d)
            spell_typedefs(k.source, d)  # the harness's own unit declares them too, without the typedefs
            if "const" in d.quals and d.init is not None:
                d.storage = ["static"]
            else:
                d.storage, d.init = ["extern"], None
            out.append(c_generator.CGenerator().visit(d) + ";\n")
    return "".join(out)


def called(src: CSource) -> list[str]:
    """The file's functions that ``src``'s function calls, directly or through one another, first called first."""
    defined = {f.decl.name: f for f in src.ast.ext if isinstance(f, c_ast.FuncDef)}
    out: list[str] = []
    todo = [src.function]
    while todo:
        for n in walk_nodes(todo.pop(0)):
            name = n.name.name if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) else None
            if name in defined and name != src.name and name not in out:
                out.append(name)
                todo.append(defined[name])
    return out


def _helpers(k: CKernel) -> str:
    """Static copies of the file's functions that the original code calls (those the kernel inlines; and, around
    a region loopcost chose, its timers and the like), declared first so that they may call one another."""
    names = [*k.helpers, *(n for n in called(k.source) if n not in k.helpers)] if k.source.found else k.helpers
    funcs = [copy.deepcopy(f) for name in names for f in k.source.ast.ext
             if isinstance(f, c_ast.FuncDef) and f.decl.name == name]
    for f in funcs:
        f.decl.storage, f.decl.funcspec = ["static"], ["inline"]
    gen = c_generator.CGenerator()
    return "".join(gen.visit(f.decl) + ";\n" for f in funcs) + "".join(gen.visit(f) + "\n" for f in funcs)


def _typedefs(k: CKernel) -> str:
    """The file's typedefs, which the function's signature may use."""
    return "".join(f"typedef {v} {n};\n" for n, v in k.source.own_typedefs.items())
