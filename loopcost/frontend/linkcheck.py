"""Link the original C function and the emitted one into one harness, check that they compute the same
arrays from the same inputs, and time them side by side, through the runner like every measurement."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from pycparser import c_ast, c_generator

from ..codegen.compiler import Toolchain, Unit
from ..codegen.harness import PRELUDE, Harness, UserInit, driver_c
from ..ir.program import Buffer
from ..runner import LocalRunner, Measurement, Runner, Timing
from .declared import INDEX, base_type, record_pointer, return_type
from .emit import global_declarations
from .parse import CSource, define_flags, spell_typedefs, walk_nodes
from .translate import CKernel

ORIGINAL_FLAGS = ("-O3", "-march=native")
EMITTED_FLAGS = ("-O3", "-march=native", "-fopenmp")


def prototype(src: CSource, name: str, function: c_ast.FuncDef | None = None) -> str:
    """The declaration of ``function`` (default: the kernel's) renamed ``name``, its typedef names spelled
    out (the harness that declares it does not see the file's typedefs)."""
    decl = copy.deepcopy((function or src.function).decl)
    decl.storage, decl.funcspec = [], []  # declared here, defined (made visible) in another unit
    spell_typedefs(src, decl)
    t = decl.type.type
    while not isinstance(t, c_ast.TypeDecl):
        t = t.type
    t.declname = name
    decl.name = name
    return c_generator.CGenerator().visit(decl) + ";"


def entry(src: CSource, text: str, name: str, function: c_ast.FuncDef | None = None) -> str:
    """``text`` (a file that defines ``function``, default: ``src``'s kernel) as a unit of a harness: its
    ``main`` renamed (dropped at link time, with what only it calls), and ``name``, an entry point that
    calls the function, which may be static (PolyBench's are) and keeps its name."""
    func = function or src.function
    head = prototype(src, name, func).rstrip(";")
    names = ", ".join(p.name for p in (func.decl.type.args.params if func.decl.type.args else [])
                      if isinstance(p, c_ast.Decl))
    void = c_generator.CGenerator().visit(func.decl.type.type).strip().startswith("void")
    return (f"#define main lc_main_beside_{name}\n{text}\n#undef main\n"
            f"{head}\n{{\n  {'' if void else 'return '}{func.decl.name}({names});\n}}\n")


def drop_in_harness(k: CKernel, candidates: Build | Sequence[Build], reference: Build,
                    defines: dict[str, str] | None, init: UserInit | None = None) -> Harness:
    """The reference (variant 0) and each candidate function (variants 1, 2, ...), each compiled from its
    own file with its own compiler and ``defines``, linked with loopcost's harness ``main``: the same
    inputs (random, then made by ``init`` when given), one checked call of each, then timed runs, in the
    protocol of every harness."""
    candidates = [candidates] if isinstance(candidates, Build) else list(candidates)
    roles = ["original"] + (["optimized"] if len(candidates) == 1 else [f"optimized{i}" for i in
                                                                          range(1, len(candidates) + 1)])
    func = k.source.function
    params = func.decl.type.args.params if func.decl.type.args else []
    outputs = {b.name for b in k.program.outputs()}
    buffers, args = [], []
    scalars = iter([1.5, 1.2, 0.8, 1.1, 0.9, 1.3])
    for p in params:
        if not isinstance(p, c_ast.Decl):
            continue
        if record_pointer(p):  # a struct the region does not use: zeroed memory, for what the function does with it
            args.append("(void *) lc_record")
            continue
        dtype, dims = base_type(k.source, p)
        if not dims and dtype == INDEX:
            args.append(str(k.params.get(p.name, 1)))
        elif not dims and init is None:
            args.append(repr(next(scalars, 1.0)))
        elif not dims:  # a scalar the user's init sets, through its buffer
            b = k.param_buffers[p.name]
            buffers.append(Buffer(b.name, b.shape, b.dtype, "input"))
            args.append(f"lc_g_{b.name}[0]")
        else:  # every array is restored before each run; the outputs are compared
            b = k.param_buffers[p.name]
            buffers.append(Buffer(b.name, b.shape, b.dtype, "output" if b.name in outputs else "temp"))
            args.append(f"(void *) lc_g_{b.name}")
    storage = {}  # the file's variables: the harness's buffers are theirs (the kernel's argument: their address)
    for b in (k.program.buffer(name) for name in k.globals.values() if name is not None):
        buffers.append(Buffer(b.name, b.shape, b.dtype, "output" if b.name in outputs else "temp"))
        storage[b.name] = k.arguments[b.name]
    call = ", ".join(args)
    store = ""
    if (dtype := return_type(k.source)) is not None:  # the returned value: an output like the arrays
        buffers.append(Buffer("lc_returned", (1,), dtype, "output"))
        store = "lc_g_lc_returned[0] = "
    main = (PRELUDE + "static char lc_record[1 << 16] __attribute__((aligned(64)));\n" * ("lc_record" in call)
            + global_declarations(k) + "".join(prototype(k.source, f"lc_{role}") + "\n" for role in roles)
            + driver_c(buffers, [b for b in buffers if b.role == "output"],
                       [f"{store}lc_{role}({call});" for role in roles], init, storage))
    folders = (k.source.path.resolve().parent, *(d.resolve() for d in k.source.include_dirs))
    common = (*define_flags(defines), *(f"-I{d}" for d in folders), "-ffunction-sections", "-fdata-sections")
    units = (Unit(main, Toolchain(flags=("-O2", "-fopenmp"))),
             *(Unit(entry(k.source, b.source, f"lc_{role}"), Toolchain(b.cc, b.flags),
                    (*common, f"-D{k.source.name}=lc_{role}_function"))  # one name per unit, static or not
               for role, b in zip(roles, (reference, *candidates), strict=True)),
             *(init.units if init else ()))
    labels = ["the emitted function"] if len(candidates) == 1 else [f"emitted function {i}" for i in
                                                                    range(1, len(candidates) + 1)]
    return Harness(units, ("the original function", *labels),
                   tuple(b for b in buffers if b.role == "output"), cache=False)


@dataclass(frozen=True)
class Build:
    """One version of the function: a C file's text and how to compile it."""

    source: str
    cc: str = "cc"
    flags: tuple[str, ...] = EMITTED_FLAGS


def original(k: CKernel, cc: str = "cc", flags: tuple[str, ...] = ORIGINAL_FLAGS) -> Build:
    """The user's own file, compiled with ``cc flags`` (gcc -O3 by default), and ``-fopenmp`` if its function
    has OpenMP pragmas (its author compiles it so)."""
    omp = any(isinstance(n, c_ast.Pragma) and n.string.split()[:1] == ["omp"] for n in walk_nodes(k.source.function))
    return Build(k.source.path.read_text(), cc, (*flags, "-fopenmp") if omp and "-fopenmp" not in flags else flags)


def link_checks(k: CKernel, candidates: Sequence[Build | str], *, reference: Build | None = None, runs: int = 3,
                defines: dict[str, str] | None = None, runner: Runner | None = None,
                init: UserInit | None = None) -> list[Measurement]:
    """Link ``reference`` (default: the original file, gcc -O3) and the ``candidates`` (emitted C, or any
    Build) into one harness, compare the arrays each computes from the same inputs with the reference's
    and time them side by side with ``runs`` runs each, through ``runner`` (this machine by default: the
    files may include headers of the user's). ``defines`` apply to every compile, as to the original's
    preprocessing. One measurement per candidate, in order."""
    builds = [Build(c) if isinstance(c, str) else c for c in candidates]
    harness = drop_in_harness(k, builds, reference or original(k), defines, init)
    return (runner or LocalRunner()).measure_harness(harness, timing=Timing(min_runs=runs, warmup=0))


def link_check(k: CKernel, candidate: Build | str, **kwargs) -> Measurement:
    """``link_checks`` of one candidate."""
    return link_checks(k, [candidate], **kwargs)[0]
