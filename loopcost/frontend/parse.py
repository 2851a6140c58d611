"""Read a C file: preprocess it with the system compiler, parse it with pycparser, find the region.

The region is the statements between ``#pragma scop`` and ``#pragma endscop``,
or, without those pragmas, the whole body of the chosen function.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pycparser import c_ast, c_parser
from pycparser.c_parser import ParseError

from ..errors import CSourceError

_INCLUDE = re.compile(r"^\s*#\s*include\b.*$", re.MULTILINE)


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

    @property
    def name(self) -> str:
        return self.function.decl.name

    @property
    def int_params(self) -> list[str]:
        """Names of the function's ``int`` parameters (the sizes ``--param`` sets)."""
        args = self.function.decl.type.args
        return [p.name for p in (args.params if args else []) if isinstance(p, c_ast.Decl)
                and isinstance(p.type, c_ast.TypeDecl) and isinstance(p.type.type, c_ast.IdentifierType)
                and p.type.type.names == ["int"]]

    @property
    def statements(self) -> list[c_ast.Node]:
        return list(self.block.block_items[self.start:self.stop])

    def error(self, node: c_ast.Node | None, reason: str) -> CSourceError:
        """A CSourceError located at ``node``'s line."""
        line = getattr(getattr(node, "coord", None), "line", None)
        where = f"{self.path}:{line}" if line else str(self.path)
        return CSourceError(f"{where}: {reason}")


def define_flags(defines: dict[str, str] | None) -> list[str]:
    """``-DNAME`` / ``-DNAME=VALUE`` compiler flags."""
    return [f"-D{k}" if v is None or v == "" else f"-D{k}={v}" for k, v in (defines or {}).items()]


def preprocess(path: Path, defines: dict[str, str] | None = None, cc: str | None = None) -> str:
    """The file after the C preprocessor, with ``#include`` lines blanked and line numbers kept.

    Includes are dropped because the frontend needs no declarations from them
    (math functions are known by name) and system headers are not plain C99.
    """
    try:
        text = path.read_text()
    except OSError as e:
        raise CSourceError(f"cannot read {path}: {e.strerror or e}") from None
    text = _INCLUDE.sub("", text)
    cmd = shlex.split(cc or os.environ.get("CC", "cc")) + ["-E", "-xc", "-"]
    cmd += define_flags(defines)
    try:
        proc = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CSourceError(f"cannot run the C preprocessor ({' '.join(cmd)}): {e}") from None
    if proc.returncode != 0:
        msg = proc.stderr.strip().replace("<stdin>", str(path))
        raise CSourceError(f"{path}: the C preprocessor failed:\n{msg}")
    return proc.stdout


def _compiler_diagnostic(path: Path, defines: dict[str, str] | None, cc: str | None) -> str:
    """The compiler's own first error for the file (with its line), or "" if it has none."""
    text = _INCLUDE.sub("", path.read_text())
    cmd = shlex.split(cc or os.environ.get("CC", "cc")) + ["-fsyntax-only", "-w", "-xc", "-"]
    cmd += define_flags(defines)
    try:
        proc = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    return errors[0].replace("<stdin>", str(path)) if errors else ""


def parse_c(path: str | Path, *, function: str | None = None, defines: dict[str, str] | None = None,
            cc: str | None = None) -> CSource:
    """Parse ``path`` and find the region to optimize (see the module docstring)."""
    path = Path(path)
    text = preprocess(path, defines, cc)
    try:
        ast = c_parser.CParser().parse(text, filename=str(path))
    except ParseError as e:
        msg = str(e).replace("<stdin>", str(path))
        located = _compiler_diagnostic(path, defines, cc)
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
        return CSource(path, ast, f, block, start, stop, True)
    if len(candidates) > 1:
        raise CSourceError(f"{path}: no #pragma scop region; name the function to optimize with --function "
                           f"(the file defines {', '.join(f.decl.name for f in funcs)})")
    f = candidates[0]
    items = f.body.block_items or []
    return CSource(path, ast, f, f.body, 0, len(items), False)


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
