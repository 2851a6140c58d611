"""clang and Polly for the benchmarks: the compiler name, the flag sets, installing them, and timing them
beside gcc."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from loopcost.codegen.compiler import Toolchain
from loopcost.codegen.harness import compilers_harness
from loopcost.ir.state import ProgramState
from loopcost.runner import LocalRunner, Measurement, Timing

CLANG = "clang-16"
CLANG_O3 = ("-O3", "-march=native")
POLLY = CLANG_O3 + ("-mllvm", "-polly")
POLLY_PAR = POLLY + ("-mllvm", "-polly-parallel", "-fopenmp")
#: clang's configurations on a program's unscheduled C, by the name a table gives them
COMPILERS = {"clang -O3": CLANG_O3, "Polly": POLLY, "Polly parallel": POLLY_PAR}
CROSS_RTOL = 1e-6  # gcc and clang contract floating-point operations differently


def measure_compilers(state: ProgramState, configurations: dict[str, tuple[str, ...]], runs: int) -> list[Measurement]:
    """``state``'s C compiled by clang with each of ``configurations`` (flags by label), every build a variant
    of one harness whose reference is gcc's build, ``runs`` timed runs each; a build whose outputs differ
    from gcc's by more than ``CROSS_RTOL`` is not verified."""
    toolchains = {"gcc": Toolchain()} | {name: Toolchain(CLANG, flags) for name, flags in configurations.items()}
    return LocalRunner(timeout=600).measure_harness(compilers_harness(state, toolchains, rtol=CROSS_RTOL),
                                                    timing=Timing(runs, 1), seed=1)


def ensure_polly() -> None:
    """Install clang-16 with Polly from Debian when it is missing (as root), else say how."""
    if shutil.which(CLANG):
        return
    if os.geteuid() != 0:
        sys.exit(f"{CLANG} not found: apt-get install clang-16 libpolly-16-dev libomp-16-dev")
    subprocess.run(["apt-get", "install", "-y", "clang-16", "libpolly-16-dev", "libomp-16-dev"], check=True,
                   stdout=subprocess.DEVNULL)
