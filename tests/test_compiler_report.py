"""The compiler block of the features (layout 6): gcc's report on the unscheduled program, read per computation,
and whether a schedule keeps the loops gcc vectorized."""

import pytest

from loopcost.codegen.c_source import kernel_statements
from loopcost.features import layout as L
from loopcost.features.compiler import compiler_fields, program_report, read_report
from loopcost.features.extract import featurize
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.transforms.schedule import Schedule

SOURCE = """\
void f(float a[restrict 8][8], float b[restrict 8])
{
  for (int c0 = 0; c0 <= 7; c0++) {
    b[c0] = 0.0f;
    for (int c1 = 0; c1 <= 7; c1++) {
      b[c0] += a[c0][c1];
    }
  }
  for (int c0 = 0; c0 <= 7; c0++) {
    a[c0][0] = b[c0];
  }
}
"""
STATEMENTS = [(4, "S0"), (6, "S1"), (10, "S2")]


def test_an_outer_loop_vectorized_counts_the_loops_inside_it():
    report = read_report(SOURCE, STATEMENTS, "<stdin>:3:3: optimized: loop vectorized using 32 byte vectors\n")
    assert report == {"S0": (1, 0, 0), "S1": (1, 1, 0), "S2": (0, 0, 0)}


def test_an_inner_loop_vectorized_and_an_interchange_mark_only_what_they_hold():
    messages = ("<stdin>:5:5: optimized: loop vectorized using 16 byte vectors\n"
                "<stdin>:9:3: optimized: loops interchanged in loop nest\n"
                "<stdin>:4:5: optimized: basic block part vectorized using 16 byte vectors\n")
    assert read_report(SOURCE, STATEMENTS, messages) == {"S0": (0, 0, 0), "S1": (1, 0, 0), "S2": (0, 0, 1)}


def test_statement_lines_point_at_their_statements():
    text, statements = kernel_statements(ProgramState.initial(KERNELS["gemm"].program("small")))
    lines = text.splitlines()
    assert [c for _, c in statements] == ["S0", "S1"]
    assert "= " in lines[statements[0][0] - 1] and "+=" in lines[statements[1][0] - 1]


def test_gcc_vectorizes_the_initialization_of_gemm():
    """The init loop of gemm (a row of C scaled by beta) is the plainest loop gcc vectorizes at -O3."""
    report = program_report(KERNELS["gemm"].program("small"))
    assert report["S0"][:2] == (1, 0)


def test_kept_only_while_the_innermost_loops_are_the_original_ones():
    rows = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
    assert compiler_fields((1, 1, 0), rows, 3)["gcc_vector_kept"] == 1
    assert compiler_fields((1, 1, 0), [rows[0], rows[2], rows[1]], 3)["gcc_vector_kept"] == 0
    assert compiler_fields((1, 0, 0), [rows[1], rows[0], rows[2]], 3)["gcc_vector_kept"] == 1
    assert compiler_fields((0, 0, 0), rows, 3) == {}


@pytest.mark.parametrize(("text", "kept"), [("", 1), ("T2(i,j,32,32)", 1), ("T3(i,j,k,32,32,32)", 0)])
def test_tiling_a_loop_inside_the_vectorized_one_clears_kept(monkeypatch, text, kept):
    """Given gcc vectorized gemm's update in its j loop (the k loop inside), tiling i and j keeps that loop
    nest; tiling k puts k's tile loop outside it."""
    import loopcost.features.extract as extract
    p = KERNELS["gemm"].program("small")
    report = {"S0": (1, 0, 0), "S1": (1, 1, 0)}
    monkeypatch.setattr(extract, "program_report", lambda _: report)
    extract.clear_caches()
    extract._PROGRAMS.clear()
    try:
        comps = featurize(Schedule.parse(text).apply(p)).comps
        at = L.NEST_AT + L.NEST_INDEX["gcc_vector_kept"]
        assert comps[:, L.NEST_AT + L.NEST_INDEX["gcc_vector_depth"]].tolist() == [0, 1]
        assert comps[1, at] == kept
    finally:
        extract.clear_caches()
        extract._PROGRAMS.clear()
