"""A hardware and toolchain fingerprint, stored with every measurement."""

from __future__ import annotations

import hashlib
import json
import os
import platform


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(toolchain: dict) -> dict:
    """What makes measurements comparable: CPU, cores, OS, compiler and flags, OpenMP threads."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "arch": platform.machine(),
        "os": platform.system() + " " + platform.release().split("-")[0],
        "compiler": toolchain.get("version"),
        "flags": toolchain.get("flags"),
        "omp_threads": os.environ.get("OMP_NUM_THREADS", str(os.cpu_count())),
    }


def fingerprint(info: dict) -> str:
    """Short stable hash of ``machine_info``."""
    return hashlib.sha256(json.dumps(info, sort_keys=True).encode()).hexdigest()[:16]
