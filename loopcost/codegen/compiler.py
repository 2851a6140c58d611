"""Compile C with the system compiler, caching binaries by content hash."""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CompileError, CompilerNotFoundError

DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp")


def cache_root() -> Path:
    """``$LOOPCOST_CACHE_DIR``, else ``~/.cache/loopcost``."""
    return Path(os.environ.get("LOOPCOST_CACHE_DIR", Path.home() / ".cache" / "loopcost"))


@functools.cache
def compiler_version(cc: str) -> str:
    """First line of ``cc --version``; raises CompilerNotFoundError if cc is missing."""
    if shutil.which(cc) is None:
        raise CompilerNotFoundError(
            f"C compiler {cc!r} not found on PATH; install gcc or set CC / --cc to a compiler")
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).splitlines()[0].strip() if (out.stdout or out.stderr) else cc


@dataclass(frozen=True)
class Toolchain:
    """A compiler and its flags; part of every measurement's fingerprint."""

    cc: str = field(default_factory=lambda: os.environ.get("CC", "cc"))
    flags: tuple[str, ...] = DEFAULT_FLAGS

    @staticmethod
    def from_string(cc: str | None = None, flags: str | None = None) -> Toolchain:
        base = Toolchain()
        return Toolchain(cc or base.cc, tuple(shlex.split(flags)) if flags is not None else base.flags)

    def describe(self) -> dict:
        return {"cc": self.cc, "version": compiler_version(self.cc), "flags": list(self.flags)}


def compile_c(source: str, toolchain: Toolchain | None = None, *, cache_dir: Path | None = None) -> Path:
    """Compile a whole C program to an executable; returns its path.

    The binary is cached under a hash of the source, compiler version and
    flags, and written atomically, so concurrent callers never see half a file.
    """
    toolchain = toolchain or Toolchain()
    version = compiler_version(toolchain.cc)
    key = hashlib.sha256("\0".join([source, toolchain.cc, version, *toolchain.flags]).encode()).hexdigest()
    root = (cache_dir or cache_root()) / "build" / key[:2]
    exe = root / key
    if exe.exists():
        return exe
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        src = Path(tmp) / "prog.c"
        src.write_text(source)
        out = Path(tmp) / "prog"
        cmd = [toolchain.cc, *toolchain.flags, str(src), "-o", str(out), "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise CompileError(f"{shlex.join(cmd)} failed (exit {res.returncode}):\n{res.stderr.strip()[:4000]}")
        os.replace(out, exe)
    return exe
