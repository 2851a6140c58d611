"""Compile C with the system compiler, caching binaries by content hash."""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CompileError, CompilerNotFoundError, CompileTimeout, EnvironmentFailure
from ..paths import cache_root

DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp")
#: seconds one compiler call may take before the compiler counts as hung (the environment's failure)
COMPILE_TIMEOUT = 600.0


@functools.cache
def compiler_version(cc: str) -> str:
    """First line of ``cc --version``; raises CompilerNotFoundError if cc is missing."""
    if shutil.which(cc) is None:
        raise CompilerNotFoundError(
            f"C compiler {cc!r} not found on PATH; install gcc or set CC / --cc to a compiler")
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False, timeout=60)
    except subprocess.TimeoutExpired:
        raise EnvironmentFailure(f"C compiler {cc!r} did not answer `{cc} --version` within 60 s") from None
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


def _cached(key: str, cache_dir: Path | None, build) -> Path:
    """The executable cached under ``key``, made by ``build(tmp_dir) -> path`` when missing, and moved
    into place atomically, so concurrent callers never see half a file."""
    root = (cache_dir or cache_root()) / "build" / key[:2]
    exe = root / key
    if exe.exists():
        return exe
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        os.replace(build(Path(tmp)), exe)
    return exe


def _run(cmd: list[str], what: str, timeout: float | None = None) -> None:
    """Run the compiler: code it rejects is a ``CompileError``; a compiler that crashes (killed by a
    signal) is the environment's failure, one that runs past ``timeout`` (default ``COMPILE_TIMEOUT``) a
    ``CompileTimeout``."""
    timeout = COMPILE_TIMEOUT if timeout is None else timeout
    # in a session of its own: past the timeout the whole group goes (gcc's driver, and cc1 under it, which
    # killing the driver alone leaves running)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except BaseException as e:  # the timeout, or an interrupt (which a session of its own does not get)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            if isinstance(e, subprocess.TimeoutExpired):
                raise CompileTimeout(f"{what}: the compiler ran for more than {timeout:g} s: "
                                     f"{shlex.join(cmd)}") from None
            raise
    if proc.returncode < 0:
        raise EnvironmentFailure(f"{what}: the compiler crashed (signal {-proc.returncode}): {shlex.join(cmd)}\n"
                                 f"{stderr.strip()[:2000]}")
    if proc.returncode != 0:
        raise CompileError(f"{what}: {shlex.join(cmd)} failed (exit {proc.returncode}):\n{stderr.strip()[:4000]}")


def compile_c(source: str, toolchain: Toolchain | None = None, *, cache_dir: Path | None = None,
              timeout: float | None = None) -> Path:
    """Compile a whole C program to an executable (each compiler call within ``timeout`` seconds); returns
    its path.

    The binary is cached under a hash of the source, compiler version and flags.
    """
    toolchain = toolchain or Toolchain()
    version = compiler_version(toolchain.cc)
    key = hashlib.sha256("\0".join([source, toolchain.cc, version, *toolchain.flags]).encode()).hexdigest()

    def build(tmp: Path) -> Path:
        (tmp / "prog.c").write_text(source)
        _run([toolchain.cc, *toolchain.flags, str(tmp / "prog.c"), "-o", str(tmp / "prog"), "-lm"], "compiling",
             timeout)
        return tmp / "prog"

    return _cached(key, cache_dir, build)


@dataclass(frozen=True)
class Unit:
    """One C translation unit of a program linked from several, and how to compile it: its toolchain's
    flags, then ``flags`` (defines, include folders)."""

    source: str
    toolchain: Toolchain = field(default_factory=Toolchain)
    flags: tuple[str, ...] = ()


def compile_units(units: tuple[Unit, ...], *, cache: bool = True, cache_dir: Path | None = None,
                  timeout: float | None = None) -> Path:
    """Compile each unit to an object with its own compiler and flags and link them with the first unit's
    compiler (OpenMP and libm linked in, unreferenced sections dropped; each call within ``timeout``
    seconds); returns the executable.
    ``cache=False`` builds again every time (units that include the user's files, which the key cannot
    see)."""
    if len(units) == 1 and not units[0].flags and cache:
        return compile_c(units[0].source, units[0].toolchain, cache_dir=cache_dir, timeout=timeout)
    parts = [x for u in units for x in (u.source, u.toolchain.cc, compiler_version(u.toolchain.cc),
                                        *u.toolchain.flags, "\1", *u.flags, "\2")]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest() + ("" if cache else f"-{uuid.uuid4().hex}")

    def build(tmp: Path) -> Path:
        objs = []
        for k, u in enumerate(units):
            (tmp / f"unit{k}.c").write_text(u.source)
            objs.append(str(tmp / f"unit{k}.o"))
            _run([u.toolchain.cc, *u.toolchain.flags, *u.flags, "-c", str(tmp / f"unit{k}.c"), "-o", objs[-1]],
                 f"compiling unit {k}", timeout)
        # sections nothing calls are dropped, with what they call: the user's file may hold a main that calls
        # a library (PolyBench's timers) the harness does not link
        _run([units[0].toolchain.cc, "-fopenmp", *objs, "-Wl,--gc-sections", "-o", str(tmp / "prog"), "-lm"],
             "linking", timeout)
        return tmp / "prog"

    return _cached(key, cache_dir, build)
