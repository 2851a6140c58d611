"""What the analytical schedules need to know of the CPU: its caches, its vector registers and its cores.

Read from Linux's ``/sys`` and ``/proc`` (the code is compiled with ``-march=native``, so the widest vectors
the CPU has are the ones it runs); a machine that does not say gets the common x86-64 values.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class Hardware:
    """Bytes of the level-1 data cache and of the level-2 cache of one core, bytes of a vector register,
    how many vector registers there are, and the cores that run the threads."""

    l1: int = 32 << 10
    l2: int = 1 << 20
    vector_bytes: int = 32
    registers: int = 16
    cores: int = 1


def _size(text: str) -> int:
    """Bytes of a ``/sys`` cache size (``48K``, ``2048K``, ``1M``)."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _caches(root: Path) -> dict[int, int]:
    """Bytes of each level's data (or unified) cache, by level."""
    out: dict[int, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            out[int((index / "level").read_text())] = _size((index / "size").read_text())
        except (OSError, ValueError):
            continue
    return out


def _flags(cpuinfo: Path) -> set[str]:
    """The CPU's feature flags (x86 ``flags``, Arm ``Features``)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.split(":")[0].strip() in ("flags", "Features"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def read_hardware(caches: Path = _CACHES, cpuinfo: Path = Path("/proc/cpuinfo")) -> Hardware:
    """This machine's ``Hardware``; the defaults where it does not say."""
    default = Hardware()
    sizes = _caches(caches)
    flags = _flags(cpuinfo)
    if "avx512f" in flags:
        vector, registers = 64, 32
    elif "avx2" in flags or "avx" in flags:
        vector, registers = 32, 16
    elif "asimd" in flags:  # AArch64: 32 128-bit registers
        vector, registers = 16, 32
    else:
        vector, registers = default.vector_bytes, default.registers
    return Hardware(sizes.get(1, default.l1), sizes.get(2, default.l2), vector, registers, os.cpu_count() or 1)


@functools.cache
def this_machine() -> Hardware:
    """``read_hardware`` of this machine, read once."""
    return read_hardware()
