"""Turn what a user typed (a library name, a DSL ``.py`` file, a JSON file) into a Program."""

from __future__ import annotations

import difflib
import inspect
import json
import runpy
import traceback
from pathlib import Path

from ..errors import KernelLoadError, LoopcostError
from ..ir.program import Program
from .registry import KERNELS


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
