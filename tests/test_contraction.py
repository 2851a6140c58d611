"""Temporaries printed as local scalars where the loops around all their accesses name one element per
iteration (``codegen.contraction``)."""

import re

from loopcost.codegen.c_source import CODEGEN_VERSION, VERSION_WITHOUT_TEMPS, codegen_version, kernel_c
from loopcost.codegen.contraction import scalar_temps
from loopcost.ir.dsl import ProgramBuilder
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.transforms.schedule import Schedule

from .programs import measure_one


def rowsum(n: int = 24, m: int = 20):
    """``s[i] = 0; s[i] += A[i][j]; y[i] = 2 * s[i]``: a C scalar ``s`` expanded by its loop."""
    p = ProgramBuilder("rowsum")
    A, y, s = p.input("A", (n, m)), p.output("y", (n,)), p.temp("s", (n,))
    with p.loop("i", 0, n) as i:
        p.assign(s[i], 0.0)
        with p.loop("j", 0, m) as j:
            s[i] = s[i] + A[i, j]
        p.assign(y[i], 2.0 * s[i])
    return p.build()


def test_a_temporary_of_one_element_per_iteration_of_its_loops_is_a_local_scalar():
    p = rowsum()
    for schedule in ("", "P(i)", "U(i,2)", "U(j,4)"):
        state = Schedule.parse(schedule).apply(p)
        code = kernel_c(state)
        assert "double lc_s_s;" in code and not re.search(r"\bs\[[^r]", code), (schedule, code)  # s[restrict..
        m = measure_one(state)
        assert m.verified, (schedule, m.error)


def test_a_temporary_whose_element_outlives_an_iteration_stays_an_array():
    p = rowsum()
    b = ProgramBuilder("carried")
    A, y, t = b.input("A", (16,)), b.output("y", (16,)), b.temp("t", (16,))
    with b.loop("i", 0, 16) as i:
        b.assign(t[i], A[i] * 2.0)
    with b.loop("k", 1, 16) as k:
        b.assign(y[k], t[k] + t[k - 1])  # read in another nest, and one iteration later
    carried = ProgramState.initial(b.build())
    assert scalar_temps(carried) == {} and "t[" in kernel_c(carried)
    assert scalar_temps(ProgramState.initial(p)) == {"s": 1}


def test_labels_of_programs_without_temporaries_keep_their_code_generator_version():
    assert codegen_version(rowsum()) == CODEGEN_VERSION != VERSION_WITHOUT_TEMPS
    assert codegen_version(KERNELS["gemm"].program("small")) == VERSION_WITHOUT_TEMPS


def test_a_parallel_loop_inside_reads_the_scalar_as_a_parameter_of_its_helper():
    p = ProgramBuilder("normalize")
    A, B, s = p.input("A", (12, 16)), p.output("B", (12, 16)), p.temp("s", (12,))
    with p.loop("i", 0, 12) as i:
        p.assign(s[i], 0.0)
        with p.loop("j", 0, 16) as j:
            s[i] = s[i] + A[i, j]
        with p.loop("j", 0, 16) as j:
            p.assign(B[i, j], A[i, j] / s[i])
    program = p.build()
    for schedule in ("P(j_1)", "R(i) P(j_1)"):
        state = Schedule.parse(schedule).apply(program)
        code = kernel_c(state)
        assert "const double lc_s_s)" in code and ", lc_s_s);" in code, code
        m = measure_one(state)
        assert m.verified, (schedule, m.error)
