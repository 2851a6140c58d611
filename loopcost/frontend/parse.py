"""Read a C file: preprocess it with the system compiler, parse it with pycparser, find the region.

Preprocessing is a compiler's, except for headers: an ``#include`` found in the including file's folder
(the quoted form) or in an ``-I`` folder is expanded in place, once per file, with line markers that
keep each line's file and number; one found in neither is a system header and is left out (its usual
names, ``sqrt``, ``exp``, ``fabs``, ``fmin``..., are known by name), except in the quoted form, where a
missing header is an error. The region is the statements between ``#pragma scop`` and ``#pragma
endscop``, or, without those pragmas, the whole body of the chosen function.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pycparser import c_ast, c_parser
from pycparser.c_parser import ParseError

from ..errors import CSourceError

#: the integer types of the system headers that loopcost leaves out (``stddef.h``, ``stdint.h``, ...), as glibc
#: defines them on x86-64 and aarch64 Linux: declared before a file that includes a system header
STANDARD_TYPES = {"size_t": "unsigned long", "ssize_t": "long", "ptrdiff_t": "long", "intptr_t": "long",
                  "uintptr_t": "unsigned long", "int8_t": "char", "int16_t": "short", "int32_t": "int",
                  "int64_t": "long", "uint8_t": "unsigned char", "uint16_t": "unsigned short",
                  "uint32_t": "unsigned int", "uint64_t": "unsigned long"}
_STANDARD_PRELUDE = ('# 1 "<standard types>"\n'
                     + "".join(f"typedef {v} {n};\n" for n, v in STANDARD_TYPES.items()))
#: GNU spellings pycparser does not parse, as C99 spells them (attributes dropped: the parse needs none of them;
#: the user's own compile, and the drop-in check's, read the file as written)
_GNU_PRELUDE = "".join(f"#define {k} {v}\n" for k, v in {
    "__restrict__": "restrict", "__restrict": "restrict", "__inline__": "inline", "__inline": "inline",
    "__attribute__(x)": "", "__extension__": "", "__volatile__": "volatile", "__const": "const"}.items())
_INTEGER_WORDS = {"int", "long", "short", "char", "unsigned"}
#: an ``#include`` line
INCLUDE_LINE = re.compile(r"^\s*#\s*include\b.*$", re.MULTILINE)
_INCLUDE_NAME = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')


@dataclass
class CSource:
    """A parsed C file and the region of one of its functions."""

    path: Path
    ast: c_ast.FileAST
    function: c_ast.FuncDef
    block: c_ast.Compound  #: the compound statement that holds the region
    start: int  #: index in ``block.block_items`` of the region's first statement
    stop: int  #: one past its last statement
    scop: bool  #: the region is a ``#pragma scop`` region (else the whole body)
    include_dirs: tuple[Path, ...] = ()  #: the ``-I`` folders it was read with
    headers: tuple[Path, ...] = ()  #: the headers it includes (found in its folder or those), in order read
    #: why this function was chosen when the file has several and none was named ("": named, or the only one)
    picked: str = ""
    #: the region is loops loopcost chose in a function whose whole body it cannot read (``frontend.region``)
    found: bool = False

    @property
    def name(self) -> str:
        return self.function.decl.name

    @functools.cached_property
    def typedefs(self) -> dict[str, str]:
        """The file's typedefs of plain types (``typedef char base;`` gives ``{"base": "char"}``), and the
        standard ones its system headers would give (``STANDARD_TYPES``)."""
        return {n.name: " ".join(x for x in n.type.type.names if x != "signed") for n in self.ast.ext
                if isinstance(n, c_ast.Typedef) and isinstance(n.type, c_ast.TypeDecl)
                and isinstance(n.type.type, c_ast.IdentifierType)}

    @property
    def own_typedefs(self) -> dict[str, str]:
        """``typedefs`` less the standard ones (a file that includes the system headers has those)."""
        return {n: v for n, v in self.typedefs.items() if STANDARD_TYPES.get(n) != v}

    def resolve(self, names: list[str]) -> str:
        """A type's words with the file's typedefs (and the standard ones) spelled out: ``size_t`` is
        ``unsigned long``; ``signed`` is left out."""
        name = " ".join(n for n in names if n != "signed")
        seen = set()
        while name in self.typedefs and name not in seen:  # typedef char base; base seq[N]
            seen.add(name)
            name = self.typedefs[name]
        return name

    def is_index(self, names: list[str]) -> bool:
        """Whether a scalar of this type counts: a size or a loop iterator (``int``, ``long``, ``short``,
        ``unsigned``, ``size_t``...; not ``char``)."""
        words = self.resolve(names).split()
        return bool(words) and set(words) <= _INTEGER_WORDS and "char" not in words

    @property
    def int_params(self) -> list[str]:
        """Names of the function's integer parameters (the sizes ``--param`` sets)."""
        args = self.function.decl.type.args
        return [p.name for p in (args.params if args else []) if isinstance(p, c_ast.Decl)
                and isinstance(p.type, c_ast.TypeDecl) and isinstance(p.type.type, c_ast.IdentifierType)
                and self.is_index(p.type.type.names)]

    @property
    def statements(self) -> list[c_ast.Node]:
        return list(self.block.block_items[self.start:self.stop])

    def error(self, node: c_ast.Node | None, reason: str) -> CSourceError:
        """A CSourceError located at ``node``'s line."""
        coord = getattr(node, "coord", None)
        line, column = getattr(coord, "line", None), getattr(coord, "column", None)
        where = f"{getattr(coord, 'file', None) or self.path}:{line}" + (f":{column}" if column else "") \
            if line else str(self.path)
        return CSourceError(f"{where}: {reason}")


def define_flags(defines: dict[str, str] | None) -> list[str]:
    """``-DNAME`` / ``-DNAME=VALUE`` compiler flags."""
    return [f"-D{k}" if v is None or v == "" else f"-D{k}={v}" for k, v in (defines or {}).items()]


def _marker(line: int, path: Path) -> str:
    return f'# {line} "{path}"\n'


def expand_includes(path: Path, include_dirs: Sequence[Path] = (), seen: dict[Path, None] | None = None,
                    system: list[str] | None = None) -> str:
    """``path``'s text with its headers expanded (see the module docstring), each line's file and number
    kept by line markers; ``seen`` gets every file read, in order, and ``system`` the system headers left out."""
    seen = {} if seen is None else seen
    system = [] if system is None else system
    seen[path.resolve()] = None
    try:
        lines = path.read_text().splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as e:
        raise CSourceError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    out = [_marker(1, path)]
    for number, line in enumerate(lines, start=1):
        m = _INCLUDE_NAME.match(line)
        if not m:
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        name = m.group(1) or m.group(2)
        folders = ([path.parent] if m.group(1) else []) + list(include_dirs)
        found = next((d / name for d in folders if (d / name).is_file()), None)
        if found is None and m.group(1):
            raise CSourceError(f"{path}:{number}: cannot find \"{name}\" (looked in "
                               f"{', '.join(str(d) for d in folders)}); give its folder with -I DIR")
        if found is None:
            system.append(name)
        elif found.resolve() not in seen:
            out.append(expand_includes(found, include_dirs, seen, system))
        out.append(_marker(number + 1, path))
    return "".join(out)


_MACRO = re.compile(r"^#define ([A-Za-z][A-Za-z0-9_]*) ", re.MULTILINE)
_NUMERIC = re.compile(r"^[\d\s().xXa-fA-FuUlLeEpP+\-*/]*\d[\d\s().xXa-fA-FuUlLeEpP+\-*/]*$")


@functools.lru_cache(maxsize=64)
def system_constants(headers: tuple[str, ...], compiler: tuple[str, ...]) -> str:
    """``#define`` lines for the numeric constants of the system headers left out (``M_PI``, ``INT_MAX``,
    ``DBL_EPSILON``...), as this machine's compiler expands them; other macros are not given."""
    includes = "".join(f"#include <{h}>\n" for h in headers)

    def run(text: str, *flags: str) -> str:
        try:
            proc = subprocess.run([*compiler, *flags, "-E", "-xc", "-"], input=text, capture_output=True,
                                  text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return proc.stdout if proc.returncode == 0 else ""

    names = sorted(set(_MACRO.findall(run(includes, "-dM"))) - set(_MACRO.findall(run("", "-dM"))))
    expanded = run(includes + "".join(f"\nlc_macro_{n} = {n}\n" for n in names), "-P")
    values = re.findall(r"^lc_macro_(\w+) = (.*)$", expanded, re.MULTILINE)
    return "".join(f"#define {n} {v.strip()}\n" for n, v in values if _NUMERIC.match(v.strip()))


def preprocess(path: Path, defines: dict[str, str] | None = None, cc: str | None = None,
               include_dirs: Sequence[Path] = (), seen: dict[Path, None] | None = None) -> str:
    """The file after the C preprocessor, its headers expanded (see the module docstring; ``seen`` gets
    the files read), with line markers that keep every line's file and number; after a system header left
    out, the standard integer types (``STANDARD_TYPES``) are declared first, and its numeric constants
    (``system_constants``) are defined."""
    system: list[str] = []
    text = expand_includes(path, include_dirs, seen, system)
    compiler = tuple(shlex.split(cc or os.environ.get("CC", "cc")))
    text = _GNU_PRELUDE + text
    if system:
        text = system_constants(tuple(dict.fromkeys(system)), compiler) + text
    cmd = list(compiler) + ["-E", "-xc", "-"]
    cmd += define_flags(defines)
    try:
        proc = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CSourceError(f"cannot run the C preprocessor ({' '.join(cmd)}): {e}") from None
    if proc.returncode != 0:
        msg = proc.stderr.strip().replace("<stdin>", str(path))
        raise CSourceError(f"{path}: the C preprocessor failed:\n{msg}")
    return (_STANDARD_PRELUDE if system else "") + proc.stdout


def _compiler_diagnostic(path: Path, defines: dict[str, str] | None, cc: str | None,
                         include_dirs: Sequence[Path] = ()) -> str:
    """The compiler's own first error for the file (with its line), or "" if it has none."""
    text = expand_includes(path, include_dirs)
    cmd = shlex.split(cc or os.environ.get("CC", "cc")) + ["-fsyntax-only", "-w", "-xc", "-"]
    cmd += define_flags(defines)
    try:
        proc = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    return errors[0].replace("<stdin>", str(path)) if errors else ""


def parse_c(path: str | Path, *, function: str | None = None, defines: dict[str, str] | None = None,
            cc: str | None = None, include_dirs: Sequence[str | Path] = ()) -> CSource:
    """Parse ``path`` and find the region to optimize (see the module docstring)."""
    path = Path(path)
    folders = tuple(Path(d) for d in include_dirs)
    for d in folders:
        if not d.is_dir():
            raise CSourceError(f"-I {d}: no such folder")
    seen: dict[Path, None] = {}
    text = preprocess(path, defines, cc, folders, seen)
    headers = tuple(h for h in seen if h != path.resolve())
    try:
        ast = c_parser.CParser().parse(text, filename=str(path))
    except ParseError as e:
        msg = str(e).replace("<stdin>", str(path))
        located = _compiler_diagnostic(path, defines, cc, folders)
        raise CSourceError(f"{msg}: cannot parse (loopcost reads C99)" + (f"\n{located}" if located else "")) \
            from None
    funcs = [n for n in ast.ext if isinstance(n, c_ast.FuncDef)]
    if not funcs:
        raise CSourceError(f"{path}: no function definition found")
    if function is not None:
        chosen = [f for f in funcs if f.decl.name == function]
        if not chosen:
            raise CSourceError(f"{path}: no function {function!r}; the file defines "
                               f"{', '.join(f.decl.name for f in funcs)}")
        candidates = chosen
    else:
        candidates = funcs
    with_scop = [(f, _find_scop(f, path)) for f in candidates]
    with_scop = [(f, s) for f, s in with_scop if s is not None]
    if len(with_scop) > 1:
        raise CSourceError(f"{path}: several functions have a #pragma scop region "
                           f"({', '.join(f.decl.name for f, _ in with_scop)}); choose one with --function")
    if with_scop:
        f, (block, start, stop) = with_scop[0]
        return CSource(path, ast, f, block, start, stop, True, folders, headers)
    looping = [f for f in candidates if any(isinstance(n, c_ast.For) for n in walk_nodes(f.body))]
    if len(candidates) > 1 and len(looping) != 1:
        raise CSourceError(f"{path}: no #pragma scop region; name the function to optimize with --function "
                           f"(the file defines {', '.join(f.decl.name for f in funcs)}"
                           + (f"; {', '.join(f.decl.name for f in looping)} have loops)" if looping else ")"))
    f = looping[0] if len(candidates) > 1 else candidates[0]
    items = f.body.block_items or []
    picked = (f"{f.decl.name}, the one function of {path.name} with loops (--function picks another)"
              if len(candidates) > 1 else "")
    return CSource(path, ast, f, f.body, 0, len(items), False, folders, headers, picked)


def spell_typedefs(src: CSource, node: c_ast.Node) -> None:
    """Spell out, in place, the file's typedef names in the types below ``node`` (for a unit that does not
    see the file's typedefs)."""

    class Spell(c_ast.NodeVisitor):
        def visit_IdentifierType(self, n: c_ast.IdentifierType) -> None:
            if " ".join(n.names) in src.typedefs:
                n.names = src.resolve(n.names).split()

    Spell().visit(node)


def walk_nodes(node: c_ast.Node):
    """``node`` and every node below it."""
    yield node
    for _, c in node.children():
        yield from walk_nodes(c)


def _find_scop(func: c_ast.FuncDef, path: Path) -> tuple[c_ast.Compound, int, int] | None:
    """(block, start, stop) of the statements between ``#pragma scop`` and ``#pragma endscop``."""
    found: list[tuple[c_ast.Compound, int, int]] = []

    class Finder(c_ast.NodeVisitor):
        def visit_Compound(self, node: c_ast.Compound) -> None:
            items = node.block_items or []
            start = None
            for k, item in enumerate(items):
                if isinstance(item, c_ast.Pragma) and item.string.strip() == "scop":
                    if start is not None:
                        raise CSourceError(f"{path}:{item.coord.line}: nested #pragma scop")
                    start = k + 1
                elif isinstance(item, c_ast.Pragma) and item.string.strip() == "endscop":
                    if start is None:
                        raise CSourceError(f"{path}:{item.coord.line}: #pragma endscop without #pragma scop")
                    found.append((node, start, k))
                    start = None
            if start is not None:
                raise CSourceError(f"{path}:{items[start - 1].coord.line}: #pragma scop without a "
                                   "#pragma endscop in the same block")
            self.generic_visit(node)

    Finder().visit(func.body)
    if len(found) > 1:
        raise CSourceError(f"{path}: function {func.decl.name!r} has {len(found)} scop regions; "
                           "loopcost optimizes one region per function")
    return found[0] if found else None
