"""clang and Polly for the benchmarks: the compiler name, the flag sets, and installing them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CLANG = "clang-16"
CLANG_O3 = ("-O3", "-march=native")
POLLY = CLANG_O3 + ("-mllvm", "-polly")
POLLY_PAR = POLLY + ("-mllvm", "-polly-parallel", "-fopenmp")


def ensure_polly() -> None:
    """Install clang-16 with Polly from Debian when it is missing (as root), else say how."""
    if shutil.which(CLANG):
        return
    if os.geteuid() != 0:
        sys.exit(f"{CLANG} not found: apt-get install clang-16 libpolly-16-dev libomp-16-dev")
    subprocess.run(["apt-get", "install", "-y", "clang-16", "libpolly-16-dev", "libomp-16-dev"], check=True,
                   stdout=subprocess.DEVNULL)
