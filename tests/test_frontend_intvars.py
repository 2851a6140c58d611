"""Int variables that the code gives values as it runs (``j = i + 1;``, ``k++``, ``out[idx++] = ...``, ``off += n``,
``last = i``): read as the affine expressions of the loop iterators they are, so that the accesses through them
are affine; those that are not (a count under an if, a triangle's running index) are data or refused with the
reason; a loop iterator divided by a constant (``in[y / 2]``, ``i % 3 == 0``) is read by splitting its loop, so
that the quotient and the remainder are iterators; the optimized function computes what the original does."""

import pytest

from loopcost.errors import CSourceError
from loopcost.frontend import load_c

from .test_frontend_styles import assert_drop_in, c_file

INDUCTIONS = """
void flatten(int n, int m, const float *x, float *out) {
  int idx = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      out[idx++] = 2.0f * x[i * m + j] + 1.0f;
}
void s125(int n, int m, double *flat, const double *a, const double *b) {
  int k;
  k = -1;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      k++;
      flat[k] = a[i * m + j] + b[i * m + j];
    }
}
void s126(int n, int m, double *bb, const double *flat, const double *cc) {
  int k = 1;
  for (int i = 0; i < n; i++) {
    for (int j = 1; j < m; j++) {
      bb[j * n + i] = bb[(j - 1) * n + i] + flat[k - 1] * cc[j * n + i];
      ++k;
    }
    ++k;
  }
}
void segments(int n, int m, const double *x, double *out) {
  int off = 0;
  for (int s = 0; s < n; s++) {
    for (int i = 0; i < m; i++)
      out[off + i] = x[off + i] * (s + 1);
    off += m;
  }
}
void s121(int n, double *a, const double *b) {
  int j;
  for (int i = 0; i < n - 1; i++) {
    j = i + 1;
    a[i] = a[j] + b[i];
  }
}
void two_ends(int n, const double *x, double *y) {
  int a = 0, b = n - 1;
  for (int i = 0; i < n / 2; i++) {
    y[a] = x[b];
    y[b] = x[a];
    a++;
    b--;
  }
}
void prefix(int n, const double *x, double *y) {
  int last = 0;
  y[0] = x[0];
  for (int i = 1; i < n; i++) {
    y[i] = y[last] + x[i];
    last = i;
  }
}
void down(int n, const double *x, double *y) {
  int k = n;
  for (int i = n - 1; i >= 0; i -= 1) {
    k -= 1;
    y[k] = x[i] + 1.0;
  }
}
double after(int n, const double *x, double *y) {
  int k = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) {
      y[k] = x[i] * j;
      k = k + 1;
    }
  y[k - 1] += 1.0;
  return k;
}
"""

#: each function's sizes, the index of its first computation's target, and a schedule to check it under
CASES = [
    ("flatten", {"n": 12, "m": 10}, ["10 * i + j"], "I(i,j) P(j)"),
    ("s125", {"n": 12, "m": 10}, ["10 * i + j"], "T2(i,j,4,4)"),
    ("s126", {"n": 12, "m": 10}, ["i + 12 * j"], "U(j,4)"),
    ("segments", {"n": 6, "m": 10}, ["i + 10 * s"], "I(s,i)"),
    ("s121", {"n": 40}, ["i"], "U(i,4)"),
    ("two_ends", {"n": 41}, ["i"], "P(i)"),
    ("prefix", {"n": 40}, ["0"], ""),
    ("down", {"n": 40}, ["-i + 39"], "U(i,4)"),
    ("after", {"n": 10}, ["4 * i + j"], "I(i,j)"),
]


@pytest.mark.parametrize("function,sizes,index,schedule", CASES, ids=[c[0] for c in CASES])
def test_int_variables_are_the_affine_values_they_take_and_the_function_computes_as_the_original(
        tmp_path, function, sizes, index, schedule):
    k = load_c(c_file(tmp_path, INDUCTIONS), function=function, params=sizes)
    assert [str(ix) for ix in k.program.computations()[0].target.index] == index
    assert not [b.name for b in k.program.buffers if b.role == "temp"], "an int variable became data"
    assert_drop_in(k)
    if schedule:
        assert_drop_in(k, schedule)


def test_a_value_read_from_the_previous_iteration_and_the_value_after_a_loop(tmp_path):
    from loopcost.ir.expr import IterValue, reads, walk

    k = load_c(c_file(tmp_path, INDUCTIONS), function="prefix", params={"n": 30})
    loop_body = k.program.computations()[1]
    assert [str(ix) for r in reads(loop_body.rhs) if r.buffer == "y" for ix in r.index] == ["i - 1"]
    k = load_c(c_file(tmp_path, INDUCTIONS), function="after", params={"n": 10})
    bump, result = k.program.computations()[1:]
    assert [str(ix) for ix in bump.target.index] == ["39"]
    assert [str(n.value) for n in walk(result.rhs) if isinstance(n, IterValue)] == ["40"]


NOT_AFFINE = [
    # a triangle's running index: quadratic in i
    ("void f(int n, const double *a, double *p) { int idx = 0; for (int i = 0; i < n; i++) "
     "for (int j = 0; j <= i; j++) p[idx++] = a[i * n + j]; }",
     "'idx' is read where its value is not an affine expression of the loop iterators"),
    # a count of elements that pass a test: data, and no index
    ("void f(int n, const double *x, double *y) { int c = 0; for (int i = 0; i < n; i++) { "
     "if (x[i] > 0.0) c = c + 1; y[c] = x[i]; } }", "int variable 'c' is changed under an if on data"),
    # changed under an affine if: not known after it
    ("void f(int n, double *y) { int k = 0; for (int i = 0; i < n; i++) { if (i > 2) k++; y[k] = 1.0; } }",
     "'k' is changed where its value is not an affine expression"),
    # read in the iteration before it is given its value
    ("void f(int n, const double *x, double *y) { int j = 5; for (int i = 0; i < n; i++) { "
     "y[i] = x[j]; j = 2 * i; } }", "'j' is read where its value is not an affine expression"),
]


@pytest.mark.parametrize("text,reason", NOT_AFFINE)
def test_int_variables_that_are_not_affine_are_refused_with_the_reason(tmp_path, text, reason):
    with pytest.raises(CSourceError, match=r"k\.c:\d+:\d+: ") as e:
        load_c(c_file(tmp_path, text), params={"n": 8})
    assert reason in str(e.value), str(e.value)


def test_an_int_accumulated_from_values_stays_data(tmp_path):
    from loopcost.ir.expr import IterValue, walk

    text = ("int f(int n, const int *x) { int s = 0; int t = 0; for (int i = 0; i < n; i++) { s += i; "
            "t += 3; } return s + t + x[0]; }")
    k = load_c(c_file(tmp_path, text), params={"n": 9})
    assert [b.dtype for b in k.program.buffers if b.role == "temp"] == ["int32"]  # s; t is 3 * 9 = 27
    assert "27" in [str(n.value) for n in walk(k.program.computations()[-1].rhs) if isinstance(n, IterValue)]
    assert_drop_in(k)


TIMED = """#include <stdio.h>
void f(int n, const double *x, double *y) {
  int k = 0;
  puts("start");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < 3; j++)
      y[k++] = x[i] + j;
  puts("done");
  USE
}
"""


def test_an_int_declared_before_the_chosen_loops_starts_at_its_initializer_or_is_refused_if_used_after(tmp_path):
    k = load_c(c_file(tmp_path, TIMED.replace("USE", "")), params={"n": 10})
    assert [str(ix) for ix in k.program.computations()[0].target.index] == ["3 * i + j"]
    assert_drop_in(k, "U(j,3)")
    with pytest.raises(CSourceError, match="'k' is changed by the loops and used outside them"):
        load_c(c_file(tmp_path, TIMED.replace("USE", 'printf("%d", k);')), params={"n": 10})
    inside = TIMED.replace('puts("start")', 'for (int r = 0; r < 2; r++) { puts("start")').replace("USE", "}")
    with pytest.raises(CSourceError, match="'k' is read where its value is not an affine expression"):
        load_c(c_file(tmp_path, inside), params={"n": 10})


DIVIDED = """
void upsample(int h, int w, const float *in, float *out) {
  for (int y = 0; y < 2 * h; y++)
    for (int x = 0; x < 2 * w; x++)
      out[y * 2 * w + x] = in[(y / 2) * w + x / 2];
}
void periodic(int n, const double *coef, const double *x, double *y) {
  for (int i = 1; i < n; i++)
    y[i] = coef[i % 4] * x[i];
}
void deinterleave(int n, const float *rgb, float *r, float *g, float *b) {
  for (int i = 0; i < 3 * n; i++) {
    if (i % 3 == 0) r[i / 3] = rgb[i];
    if (i % 3 == 1) g[i / 3] = rgb[i];
    if (i % 3 == 2) b[i / 3] = rgb[i];
  }
}
void halves(int n, const double *x, double *y) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      y[i * n + j] = x[j / 2] + x[i];
}
void not3(int n, const double *x, double *y, int *h) {
  for (int i = 0; i < n; i++) {
    if (i % 3 != 0)
      y[i] = x[i];
    else
      y[i] = 0.0;
    h[i]++;
  }
}
void diagonal(int n, const double *x, double *y) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j) y[i * n + j] = x[j]; else y[i * n + j] = 1.0;
}
"""

#: each function's sizes, its loops (name, bounds), and a schedule to check it under
DIVISIONS = [
    ("upsample", {"h": 5, "w": 7}, "y[0,5) y_mod[0,2) x[0,7) x_mod[0,2)", "I(y_mod,x) U(x_mod,2)"),
    ("periodic", {"n": 41}, "i[0,11) i_mod[0,4)", "U(i_mod,4)"),
    ("deinterleave", {"n": 20}, "i[0,20) i_mod[0,3)", "I(i,i_mod)"),
    ("halves", {"n": 13}, "i[0,13) j[0,6) j_mod[0,2)", ""),
    ("not3", {"n": 31}, "i[0,11) i_mod[0,3)", "P(i)"),
    ("diagonal", {"n": 9}, "i[0,9) j[0,9)", "I(i,j)"),
]


def _loops(nodes) -> list[str]:
    from loopcost.ir.program import Loop

    return [f"{n.name}[{n.lower},{n.upper})" for n in nodes if isinstance(n, Loop)] + \
        [x for n in nodes if isinstance(n, Loop) for x in _loops(n.body)]


@pytest.mark.parametrize("function,sizes,loops,schedule", DIVISIONS, ids=[c[0] for c in DIVISIONS])
def test_an_iterator_divided_by_a_constant_splits_its_loop_and_the_function_computes_as_the_original(
        tmp_path, function, sizes, loops, schedule):
    k = load_c(c_file(tmp_path, DIVIDED), function=function, params=sizes)
    assert " ".join(_loops(k.program.body)) == loops
    assert_drop_in(k)
    if schedule:
        assert_drop_in(k, schedule)


def test_the_branches_of_a_remainders_test_are_guards_of_the_remainder_loop(tmp_path):
    k = load_c(c_file(tmp_path, DIVIDED), function="deinterleave", params={"n": 20})
    assert [(c.target.buffer, [str(ix) for ix in c.target.index], [str(g) for g in c.guards])
            for c in k.program.computations()] == [("r", ["i"], ["-i_mod"]), ("g", ["i"], ["i_mod - 1", "-i_mod + 1"]),
                                                   ("b", ["i"], ["i_mod - 2"])]
    k = load_c(c_file(tmp_path, DIVIDED), function="not3", params={"n": 31})
    assert [[str(g) for g in c.guards] for c in k.program.computations()] == [
        ["-3 * i - i_mod + 30", "i_mod - 1"], ["-3 * i - i_mod + 30", "-i_mod"], ["-3 * i - i_mod + 30"]]


@pytest.mark.parametrize("text,reason", [
    ("void f(int n, const double *x, double *y) { for (int i = 0; i < n; i++) y[i] = x[i / 2] + x[i / 3]; }",
     "'i / 2' divides an iterator: not affine"),
    ("void f(int n, const double *x, double *y) { for (int i = 0; i < n; i++) y[i] = x[(i + 1) / 2]; }",
     "'(i + 1) / 2' divides an iterator"),
    ("void f(int n, const double *x, double *y) { for (int i = -4; i < n; i++) y[i + 4] = x[i / 2 + 2]; }",
     "'i / 2' divides an iterator"),
])
def test_divisions_that_are_not_affine_are_refused_with_the_reason(tmp_path, text, reason):
    with pytest.raises(CSourceError, match=r"k\.c:\d+:\d+: ") as e:
        load_c(c_file(tmp_path, text), params={"n": 8})
    assert reason in str(e.value), str(e.value)
