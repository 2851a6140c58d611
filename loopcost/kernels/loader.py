"""Turn what a user typed (a library name, a DSL ``.py`` file, a JSON file) into a Program."""

from __future__ import annotations

import difflib
import inspect
import json
import runpy
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import KernelLoadError, LoopcostError
from ..ir.polyhedral import never_run
from ..ir.program import Program

if TYPE_CHECKING:
    from ..frontend.translate import CKernel
from .registry import KERNELS


def parse_pairs(items: list[str] | None, what: str, need_value: bool) -> dict[str, str]:
    """``NAME=VALUE`` options (``-D``, ``--param``) as a dict; ``what`` names the option in errors."""
    out = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not name.isidentifier() or (need_value and not eq):
            raise LoopcostError(f"{what} {item!r}: expected NAME{'=VALUE' if need_value else '[=VALUE]'}")
        out[name] = value
    return out


def load_kernel(spec: str, size: str = "small", *, function: str | None = None, defines: list[str] | None = None,
                params: list[str] | None = None, include: list[str] | None = None) -> tuple[Program, CKernel | None]:
    """(program, C kernel or None) for what a user names: a C file (``.c``: read with ``function``, ``-D``
    ``defines``, ``--param`` ``params``, each ``NAME=VALUE``, and ``-I`` folders ``include``), or anything
    ``load_program`` takes."""
    if not spec.endswith(".c"):
        return load_program(spec, size), None
    from ..frontend import load_c

    sizes = {}
    for name, value in parse_pairs(params, "--param", True).items():
        try:
            sizes[name] = int(value)
        except ValueError:
            raise LoopcostError(f"--param {name}={value}: the value must be an integer") from None
    k = load_c(spec, function=function, defines=parse_pairs(defines, "-D", False), params=sizes,
               include_dirs=include or ())
    empty = never_run(k.program)
    if empty:
        given = " ".join(f"--param {n}={v}" for n, v in sizes.items())
        raise LoopcostError(f"{spec}: {', '.join(empty)} would never run{' with ' + given if given else ''} (its "
                            f"loops run zero times): give sizes that make every loop run at least once")
    return k.program, k


def load_program(spec: str, size: str = "small") -> Program:
    """Load a kernel by library name, ``.py`` DSL file or ``.json`` program file.

    A ``.py`` file defines ``build(size)`` (or ``build()``) returning a Program,
    or a module-level ``program``. ``size`` only applies to library kernels and
    to ``build(size)``.
    """
    if spec in KERNELS:
        return KERNELS[spec].program(size)
    path = Path(spec)
    if path.suffix == ".json":
        return _load_json(path)
    if path.suffix == ".py":
        return _load_py(path, size)
    hint = difflib.get_close_matches(spec, KERNELS, n=1)
    raise KernelLoadError(
        f"unknown kernel {spec!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
        + "; give a library kernel (`loopcost kernels` lists them), a .py DSL file or a .json program")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise KernelLoadError(f"cannot read {path}: {e.strerror}") from None


def _load_json(path: Path) -> Program:
    text = _read(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise KernelLoadError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    try:
        return Program.from_json(doc)
    except LoopcostError as e:
        raise KernelLoadError(f"{path}: {e}") from None


def _load_py(path: Path, size: str) -> Program:
    _read(path)
    try:
        ns = runpy.run_path(str(path), run_name="loopcost_kernel")
        if "build" in ns and callable(ns["build"]):
            takes_size = bool(inspect.signature(ns["build"]).parameters)
            prog = ns["build"](size) if takes_size else ns["build"]()
        elif "program" in ns:
            prog = ns["program"]
        else:
            raise KernelLoadError(f"{path}: defines neither build(size) nor a variable `program`")
    except KernelLoadError:
        raise
    except LoopcostError as e:
        raise type(e)(f"{path}:{_user_line(e, path)}: {e}") from None
    except Exception as e:  # noqa: BLE001 - the user's code can raise anything; report where
        raise KernelLoadError(f"{path}:{_user_line(e, path)}: {type(e).__name__}: {e}") from None
    if not isinstance(prog, Program):
        raise KernelLoadError(f"{path}: build() returned {type(prog).__name__}, not a loopcost Program")
    return prog


def _user_line(e: BaseException, path: Path) -> str:
    """The last line of the user's file in the traceback, or '?'."""
    if isinstance(e, SyntaxError) and e.lineno:
        return str(e.lineno)
    target = str(path.resolve())
    lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if str(Path(f.filename).resolve()) == target]
    return str(lines[-1]) if lines else "?"
