"""bench/gcc_vectorized.py: the loops gcc vectorizes, classed innermost or outer from its own report."""

import sys
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import gcc_vectorized  # noqa: E402

from loopcost.codegen.c_source import kernel_file  # noqa: E402
from loopcost.ir.state import ProgramState  # noqa: E402
from loopcost.kernels import KERNELS  # noqa: E402
from loopcost.transforms.schedule import Schedule  # noqa: E402

ROWS = """\
void f(float a[restrict 64][64], float b[restrict 64])
{
  for (int i = 0; i < 64; i++) {
    b[i] = 0.0f;
    for (int j = 0; j < 64; j++) {
      a[i][j] = 2.0f * a[i][j];
    }
  }
}
"""


def test_an_innermost_loop_is_inner():
    assert gcc_vectorized.vectorized_loops(ROWS) == Counter(inner=1)
    assert gcc_vectorized.program_class(Counter(inner=1)) == "inner only"


def test_gemm_keeps_gccs_vectorization_when_i_is_tiled_and_loses_it_when_k_is():
    """gemm's unscheduled C is vectorized by gcc; a tiling of k puts the init statement under a guard inside
    k's tile loops, and gcc vectorizes a different set of loops."""
    p = KERNELS["gemm"].program("bench")
    base = gcc_vectorized.vectorized_loops(kernel_file(ProgramState.initial(p)))
    assert sum(base.values()) >= 1
    tiled_i = gcc_vectorized.vectorized_loops(kernel_file(Schedule.parse("T2(i,j,32,32)").apply(p)))
    tiled_k = gcc_vectorized.vectorized_loops(kernel_file(Schedule.parse("T3(i,j,k,32,32,32)").apply(p)))
    assert tiled_i == base and tiled_k != base
    assert gcc_vectorized.program_class(Counter(inner=1, outer=2)) == "both"
    assert gcc_vectorized.program_class(Counter()) == "none"
