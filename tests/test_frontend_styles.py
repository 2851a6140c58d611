"""C as real code writes it: arrays that come as pointers (``double *A`` indexed ``A[i * m + j]``, ``double
(*A)[M]``, ``double A[][M]``: the first extent is what the region's accesses reach), sizes and iterators of any
integer type (``size_t`` from a system header, ``unsigned``, ``long``), ``fma``; the optimized function is a drop-in
replacement for the original."""

from pathlib import Path

import pytest

from loopcost.errors import CSourceError
from loopcost.frontend import load_c
from loopcost.frontend.emit import emit_function
from loopcost.frontend.linkcheck import link_check
from loopcost.transforms.schedule import Schedule


def c_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "k.c"
    path.write_text(text)
    return path


MATVEC = """void matvec(int n, int m, const double *A, const double *x, double *y)
{
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < m; j++)
      s += A[i * m + j] * x[j];
    y[i] = s;
  }
}
"""


def assert_refused(tmp_path: Path, text: str, reason: str, **kwargs) -> None:
    """Reading ``text`` (sizes n=4) fails with ``reason``, located at a line and column of the file."""
    with pytest.raises(CSourceError, match=r"k\.c:\d+:\d+: ") as e:
        load_c(c_file(tmp_path, text), params={"n": 4}, **kwargs)
    assert reason in str(e.value), str(e.value)


def shapes(k) -> dict[str, tuple[int, ...]]:
    return {b.name: b.shape for b in k.program.buffers}


def test_a_flattened_matrix_behind_a_pointer_is_read_with_the_extent_its_accesses_reach(tmp_path):
    k = load_c(c_file(tmp_path, MATVEC), params={"n": 30, "m": 20})
    assert shapes(k) | {"s": None} == {"A": (600,), "x": (20,), "y": (30,), "s": None}
    assert {b.name: b.role for b in k.program.buffers if b.name != "s"} == {"A": "input", "x": "input",
                                                                              "y": "output"}
    assert k.param_buffers["A"].shape == (600,) and k.arguments["A"] == "A"


def test_the_extent_is_exact_over_a_triangular_nest_not_its_bounding_box(tmp_path):
    text = """void f(int n, double *x, double *y)
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n - i; j++)
      y[i] += x[i + j];
}
"""
    k = load_c(c_file(tmp_path, text), params={"n": 50})
    assert shapes(k) == {"x": (50,), "y": (50,)}  # i + j < n: the box of i and j would reach 98


def test_rows_behind_a_pointer_and_an_unsized_first_dimension_take_their_extent_from_the_accesses(tmp_path):
    text = """void f(int n, int m, double (*A)[m], double B[][64], double s)
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      B[i][j] = s * A[i][j] + B[i + 1][j];
}
"""
    k = load_c(c_file(tmp_path, text), params={"n": 10, "m": 64})
    assert shapes(k) == {"A": (10, 64), "B": (11, 64), "s": (1,)}


def test_a_dereferenced_pointer_is_its_first_element(tmp_path):
    text = """void dot(int n, const float *x, const float *y, float *out)
{
  *out = 0.0f;
  for (int i = 0; i < n; i++)
    *out += x[i] * y[i];
}
"""
    k = load_c(c_file(tmp_path, text), params={"n": 100})
    assert shapes(k) == {"x": (100,), "y": (100,), "out": (1,)}
    assert [b.name for b in k.program.outputs()] == ["out"]


@pytest.mark.parametrize("text,reason", [
    ("void f(int n, double **A) { for (int i = 0; i < n; i++) A[i][i] = 0; }", "'A' is a pointer to pointers"),
    ("void f(int n, double *A[4]) { for (int i = 0; i < n; i++) A[0][i] = 0; }", "'A' is an array of pointers"),
    ("void f(int n, double *x) { for (int i = 0; i < n; i++) x[i - 1] = 0; }", "reaches index -1"),
    ("void f(int n, double *x) { for (int i = 0; i < n; i++) { double *p; x[i] = 0; } }", "'p': pointers"),
    ("void f(int n, double *x) { for (int i = 0; i < n; i++) *(x + i) = 0; }", "pointer operation"),
    ("void f(int n, double x[4]) { for (int i = 0; i < n; i++) *x = 0; }", "not a pointer to elements"),
], ids=["pointer to pointers", "array of pointers", "negative index", "local pointer", "arithmetic",
        "array dereferenced"])
def test_what_pointers_cannot_express_is_refused_with_the_reason(tmp_path, text, reason):
    assert_refused(tmp_path, text, reason)


def test_the_optimized_function_of_a_pointer_kernel_is_a_drop_in_replacement(tmp_path):
    k = load_c(c_file(tmp_path, MATVEC), params={"n": 60, "m": 40})
    for text in ("", "P(i)", "F(S1,S2,0) T2(i,j,8,8)"):
        emitted = emit_function(k, Schedule.parse(text).apply(k.program), schedule=text)
        assert "(void *) A" in emitted  # the user's const pointer passed to the kernel's parameter
        check = link_check(k, emitted, runs=1)
        assert check.verified, (text, check.error)


SAXPY = """#include <stddef.h>
#include <math.h>
static inline void saxpy2d(const size_t n, const size_t m, const float a, const float *restrict X,
                           float *restrict Y)
{
  for (size_t i = 0; i < n; ++i)
    for (unsigned long j = 0; j < m; ++j)
      Y[i * m + j] = fmaf(a, X[i * m + j], Y[i * m + j]);
}
"""


def test_sizes_and_iterators_of_any_integer_type_and_the_standard_types_of_system_headers(tmp_path):
    k = load_c(c_file(tmp_path, SAXPY), params={"n": 16, "m": 8})
    assert k.source.int_params == ["n", "m"] and k.specialized == {"n": 16, "m": 8}
    assert shapes(k) == {"a": (1,), "X": (128,), "Y": (128,)}
    rhs = k.program.computations()[0].rhs  # fmaf(a, X[..], Y[..]) read as a * X[..] + Y[..]
    assert (rhs.op, rhs.lhs.op, rhs.rhs.buffer) == ("+", "*", "Y")
    emitted = emit_function(k, Schedule.parse("P(i)").apply(k.program), schedule="P(i)")
    assert "typedef" not in emitted  # size_t comes from the headers the emitted file includes
    check = link_check(k, emitted, runs=1)
    assert check.verified, check.error
    long_sizes = "void f(long n, unsigned m, double *x) { for (long i = 0; i < n; i++) for (unsigned j = 0; " \
                 "j < m; j++) x[i * m + j] = 1.0; }"
    assert shapes(load_c(c_file(tmp_path, long_sizes), params={"n": 3, "m": 5})) == {"x": (15,)}


def test_without_a_system_header_its_types_are_not_made_up(tmp_path):
    with pytest.raises(CSourceError, match="cannot parse"):
        load_c(c_file(tmp_path, SAXPY.replace("#include <stddef.h>\n#include <math.h>\n", "")),
               params={"n": 16, "m": 8})


BLUR_U8 = """#include <stdint.h>
#include <stdlib.h>
void blur(int h, int w, const uint8_t *in, uint8_t *out, unsigned short *diff)
{
  for (int y = 1; y < h - 1; y++)
    for (int x = 1; x < w - 1; x++) {
      int s = 0;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
          s += in[(y + dy) * w + x + dx];
      out[y * w + x] = s / 9 + 200;
      diff[y * w + x] = abs(in[y * w + x] - out[y * w + x]) * 0.5;
    }
}
"""


def test_unsigned_elements_and_integer_scalars_of_data_compute_as_c_does(tmp_path):
    """Pixels wrap around past 255 (s / 9 + 200), an int accumulator is data, abs() of unsigned bytes
    is C's int abs, and 0.5 in an integer computation is a double: each as the original computes it."""
    k = load_c(c_file(tmp_path, BLUR_U8), params={"h": 20, "w": 24})
    assert {b.name: b.dtype for b in k.program.buffers} == {"in": "uint8", "out": "uint8", "diff": "uint16",
                                                            "s": "int32"}
    assert_drop_in(k)
    assert_drop_in(k, "T2(y,x,4,8) U(dx,3)")


def comps(k) -> list[str]:
    return [f"{c.target.buffer}{c.reduction or ''}=" for c in k.program.computations()]


def assert_drop_in(k, schedule: str = "") -> None:
    check = link_check(k, emit_function(k, Schedule.parse(schedule).apply(k.program), schedule=schedule), runs=1)
    assert check.verified, check.error


FORWARD = [
    # a scalar read in the next statement: its expression, no buffer
    ("void f(int n, int m, float *out, const float *in, const float *bias) { for (int i = 0; i < n; i++) "
     "for (int j = 0; j < m; j++) { float v = in[i*m + j] + bias[j]; out[i*m + j] = v > 0.0f ? v : 0.0f; } }",
     ["out="]),
    # hoisted out of the inner loop (gemm's i-k-j form): one perfect nest
    ("void f(int n, double alpha, double A[n][n], double B[n][n], double C[n][n]) { for (int i = 0; i < n; i++) "
     "for (int k = 0; k < n; k++) { double t = alpha * A[i][k]; for (int j = 0; j < n; j++) "
     "C[i][j] += t * B[k][j]; } }", ["C+="]),
    # chained: b reads a
    ("void f(int n, double *x, double *y) { for (int i = 0; i < n; i++) { double a = x[i] * 2.0; "
     "double b = a + 1.0; y[i] = b * b; } }", ["y="]),
    # what its value reads is written before a read: kept in a buffer
    ("void f(int n, double *x, double *y) { for (int i = 0; i < n; i++) { double t = x[i]; x[i] = 0.0; "
     "y[i] = t; } }", ["t=", "x=", "y="]),
    # accumulated: kept in a buffer
    ("void f(int n, double A[n][n], double *x, double *y) { for (int i = 0; i < n; i++) { double s = 0.0; "
     "for (int j = 0; j < n; j++) s += A[i][j] * x[j]; y[i] = s; } }", ["s=", "s+=", "y="]),
]


@pytest.mark.parametrize("text,expected", FORWARD, ids=["next statement", "hoisted", "chained", "overwritten",
                                                        "accumulated"])
def test_scalars_assigned_once_are_their_expression_where_nothing_they_read_changes(tmp_path, text, expected):
    k = load_c(c_file(tmp_path, text), params={"n": 24, "m": 16} if "int m" in text else {"n": 24})
    assert comps(k) == expected
    assert_drop_in(k)


IFS_ON_DATA = [
    ("void f(int n, double *x) { for (int i = 0; i < n; i++) { if (x[i] < 0.8) x[i] = 0.8; "
     "else if (x[i] > 1.2) x[i] = 1.2; } }", ["x="]),  # the harness's inputs lie in [0.5, 1.5)
    ("void f(int n, const double *x, double *out) { double m = x[0]; for (int i = 1; i < n; i++) "
     "if (x[i] > m) m = x[i]; *out = m; }", ["m=", "m=", "out="]),
    ("void f(int n, const double *x, const double *y, double *s) { for (int i = 0; i < n; i++) "
     "if (x[i] > 1.0 && !(y[i] >= 0.75)) *s += x[i] * y[i]; }", ["s+="]),
    ("void f(int n, double A[n][n], double *r) { for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) "
     "{ if (A[i][j] < 0.8 || A[j][i] < 0.7) r[i] *= 0.5; else r[i] *= 2.0; } }", ["r*="]),
    # branches of several statements: the condition once (the branch changes what it reads), then selects
    ("void f(int n, double *x, double *y, int *over) { for (int i = 0; i < n; i++) { if (x[i] > 1.0) { "
     "double t = x[i] - 1.0; x[i] = 1.0; y[i] = t; over[0]++; } else y[i] = 0.0; } }",
     ["if1=", "t=", "x=", "y=", "over+=", "y="]),
    ("int f(int n, const float *x) { float best = x[0]; int at = 0; for (int i = 1; i < n; i++) "
     "if (x[i] > best) { best = x[i]; at = i; } return at; }", ["best=", "at=", "if1=", "best=", "at=", "result="]),
    ("void f(int n, double *a, double *b, double *c, const double *d) { for (int i = 0; i < n; i++) { "
     "if (a[i] > b[i]) { a[i] += b[i] * d[i]; if (c[i] > 1.0) c[i] += d[i]; else c[i] = d[i] + 1.0; } "
     "else { b[i] = a[i] + d[i]; c[i] *= 0.5; } } }", ["if1=", "a+=", "if2=", "c+=", "c=", "b=", "c*="]),
]


@pytest.mark.parametrize("text,expected", IFS_ON_DATA, ids=["clamp", "running max", "and, not", "or, else",
                                                            "several statements", "argmax", "nested, else"])
def test_ifs_on_data_are_selects_that_compute_what_the_branches_do(tmp_path, text, expected):
    k = load_c(c_file(tmp_path, text), params={"n": 24})
    assert comps(k) == expected
    assert_drop_in(k)


@pytest.mark.parametrize("body,reason", [
    ("if (x[i] > 0) { x[i] = 1.0; for (int j = 0; j < 2; j++) y[i] += x[i]; }",
     "its branches may hold assignments, declarations of scalars and ifs, not 'for"),
    ("if (x[i] > 0) { double t[2]; t[0] = 1.0; y[i] = t[0]; }", "declarations of scalars and ifs, not 'double t[2]"),
    ("if (x[i]) x[i] = 1.0;", "must compare two values"),
])
def test_ifs_on_data_that_are_no_select_are_refused_with_the_reason(tmp_path, body, reason):
    assert_refused(tmp_path, f"void f(int n, double *x, double *y) {{ for (int i = 0; i < n; i++) {{ {body} }} }}",
                   reason)


HELPERS = """static inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
static float both(float x) { return sq(relu(x - 1.0f)); }
static inline float sq(float x) { return x * x; }
static float lerp(float a, float b, float t) { return a + t * (b - a); }
void act(int n, float *y, const float *x, const float *z)
{
  for (int i = 0; i < n; i++)
    y[i] = relu(lerp(x[i], z[i], 0.25f)) + both(x[i] - z[i]);
}
"""


def test_the_files_one_return_functions_are_inlined_and_copied_beside_the_original_code(tmp_path):
    text = HELPERS.replace("static float both", "static inline float sq(float x);\nstatic float both")
    k = load_c(c_file(tmp_path, text), function="act", params={"n": 64})
    assert comps(k) == ["y="] and k.helpers == ("relu", "lerp", "both", "sq")
    emitted = emit_function(k, Schedule.parse("U(i,4)").apply(k.program), schedule="U(i,4)")
    assert emitted.count("inline static float sq(float x)") == 2  # declared, then defined: both calls it
    check = link_check(k, emitted, runs=1)
    assert check.verified, check.error


@pytest.mark.parametrize("helper,reason", [
    ("static double g(double x) { return x * scale; }", "reads its parameters alone (it reads scale)"),
    ("static double g(double x) { return x > 1.0 ? g(x / 2.0) : x; }", "g calls itself"),
    ("static double g(double x) { double y = x * 2.0; return y; }", "whose body is one return statement"),
    ("static double g(double *p) { return p[0]; }", "only if its parameters are scalars"),
])
def test_functions_that_cannot_be_inlined_are_refused_with_the_reason(tmp_path, helper, reason):
    assert_refused(tmp_path, f"{helper}\nvoid f(int n, double scale, double *x) {{ for (int i = 0; i < n; i++) "
                             "x[i] = g(x[i]); }", reason, function="f")


VOID_HELPERS = """static void axpy(int n, double a, const double *x, double *y) {
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
}
static void scale_rows(int n, double M[n][n], const double *s) {
  for (int i = 0; i < n; i++) {
    double f = s[i] * 0.5;
    for (int j = 0; j < n; j++)
      M[i][j] *= f;
  }
  return;
}
static void both(int n, double M[n][n], double N[n][n], const double *s) {
  scale_rows(n, M, s);
  for (int i = 0; i < n; i++)
    axpy(n, s[i], M[i], N[i]);
}
void gemv_cols(int n, int m, const double *A, const double *v, double *y) {
  for (int j = 0; j < m; j++)
    axpy(n, v[j], &A[j * n], y);
}
void twice(int n, double A[n][n], double B[n][n], const double *s) {
  both(n, A, B, s);
  scale_rows(n, B, s);
}
"""


@pytest.mark.parametrize("function,sizes,expected,helpers,schedule", [
    ("gemv_cols", {"n": 40, "m": 12}, ["y+="], ("axpy",), "I(j,i) U(j,4)"),
    ("twice", {"n": 24}, ["A*=", "B+=", "B*="], ("both", "scale_rows", "axpy"), "P(i)"),
])
def test_calls_of_the_files_void_functions_are_read_in_place(tmp_path, function, sizes, expected, helpers,
                                                             schedule):
    """Each parameter is its argument as C passes it: a pointer points where the argument does (``&A[j * n]``,
    a row ``M[i]``), an array names the argument's array, a scalar is a local given its value."""
    k = load_c(c_file(tmp_path, VOID_HELPERS), function=function, params=sizes)
    assert comps(k) == expected and k.helpers == helpers
    assert_drop_in(k)
    assert_drop_in(k, schedule)


@pytest.mark.parametrize("helper,call,reason", [
    ("static double g(int n, double *x) { for (int i = 0; i < n; i++) x[i] = 0.0; return 1.0; }",
     "g(n, x);", "g returns a value: a call as a statement is read for void functions"),
    ("static void g(int n, double *x) { for (int i = 0; i < n; i++) x[i] = 0.0; if (n > 2) g(n - 1, x); }",
     "g(n, x);", "g calls itself"),
    ("static void g(int n, double *x) { for (int i = 0; i < n; i++) x[i] = 0.0; }", "g(n);",
     "g takes 2 arguments, not 1"),
    ("static void g(int n, double M[4][4]) { for (int i = 0; i < 4; i++) M[i][i] = 0.0; }", "g(n, x);",
     "argument 'x' of array parameter 'M' is not an array of its shape"),
    ("static void g(int n, double *x) { for (int i = 0; i < n; i++) { x[i] = 0.0; return; } }", "g(n, x);",
     "return inside the region is not supported"),
])
def test_calls_of_void_functions_that_cannot_be_read_are_refused_with_the_reason(tmp_path, helper, call, reason):
    assert_refused(tmp_path, f"{helper}\nvoid f(int n, double *x) {{ {call} }}", reason, function="f")


STEPS = """#define MIN(a,b) ((a) < (b) ? (a) : (b))
#define MAX(a,b) ((a) > (b) ? (a) : (b))
#define B 8
void f(int n, double A[n][n], double T[n][n], double *x)
{
  for (int ii = 0; ii < n; ii += B)
    for (int jj = 0; jj < n; jj += B)
      for (int i = ii; i < MIN(ii + B, n); i++)
        for (int j = MAX(jj, 1); j < MIN(jj + B, n); j++)
          T[j][i] = A[i][j];
  for (int i = n - 1; i >= 0; i -= 3)
    x[i] = 2.0 * x[i];
  for (int i = MAX(1, 0); i <= n - 2; i = i + 2)
    x[i] += x[i - 1];
}
"""


def test_loops_of_any_constant_step_and_min_max_bounds_are_read(tmp_path):
    k = load_c(c_file(tmp_path, STEPS), params={"n": 20})  # 20: the last tile is partial
    loops = [(lp.name, lp.lower.const, lp.upper.const) for lp in k.program.loops() if not lp.lower.terms]
    assert loops[:2] == [("ii", 0, 3), ("jj", 0, 3)]  # 20 / 8: three tiles, the last of 4
    # i = 19, 16, .., 1 and i = 1, 3, .., 17: loops over the steps
    assert [(lp.lower.const, lp.upper.const) for lp in k.program.loops()[-2:]] == [(0, 7), (0, 9)]
    transpose = k.program.computations()[0]
    assert len(transpose.guards) == 3  # i < n, j >= 1, j < n: the bounds the loops do not run to
    for schedule in ("", "I(i,j)"):
        assert_drop_in(k, schedule)


@pytest.mark.parametrize("text,reason", [
    ("void f(int n, double *x) { for (int i = 0; i < (n > 3 ? n : 3); i++) x[i] = 0; }", "is not a min of two"),
    ("void f(int n, double *x) { for (int i = (n < 3 ? n : 3); i < n; i += 2) x[i] = 0; }", "is not a max of two"),
    ("void f(int n, double *x) { for (int k = 0; k < n; k++) for (int i = (k > 1 ? k : 1); i < n; i += 2) "
     "x[i] = 0; }", "must step by +1"),
    ("void f(int n, double *x) { for (int i = 0; i < n; i += n - 4) x[i] = 0; }", "by a positive constant"),
])
def test_steps_and_bounds_that_are_not_affine_are_refused_with_the_reason(tmp_path, text, reason):
    assert_refused(tmp_path, text, reason)


def test_the_one_function_with_loops_is_the_kernel_when_none_is_named(tmp_path, capsys):
    from loopcost.cli import main

    k = load_c(c_file(tmp_path, HELPERS), params={"n": 64})
    assert k.source.name == "act" and k.source.picked.startswith("act, the one function of k.c with loops")
    assert main(["show", str(tmp_path / "k.c"), "--param", "n=64"]) == 0
    assert "loopcost: optimizing act, the one function of k.c with loops" in capsys.readouterr().err
    two = HELPERS + "void g(int n, float *y) { for (int i = 0; i < n; i++) y[i] = 0.0f; }\n"
    with pytest.raises(CSourceError, match=r"name the function to optimize with --function .*act, g have loops"):
        load_c(c_file(tmp_path, two), params={"n": 64})


def test_a_function_with_openmp_pragmas_is_timed_as_its_author_compiles_it(tmp_path):
    from loopcost.frontend.linkcheck import original

    text = MATVEC.replace("  for (int i", "#pragma omp parallel for\n  for (int i", 1)
    k = load_c(c_file(tmp_path, text), params={"n": 60, "m": 40})
    assert original(k).flags[-1] == "-fopenmp"
    assert "-fopenmp" not in original(load_c(c_file(tmp_path, MATVEC), params={"n": 60, "m": 40})).flags
    assert_drop_in(k, "P(i)")


MALLOC = """#include <stdlib.h>
void two_pass(int n, const double *x, double *y)
{
  double *t = (double *) malloc(n * sizeof(double));
  for (int i = 0; i < n; i++)
    t[i] = x[i] * x[i];
  for (int i = 1; i < n - 1; i++)
    y[i] = t[i - 1] + t[i] + t[i + 1];
  free(t);
}
"""


def test_a_malloced_array_in_the_region_is_a_temporary_sized_by_its_accesses(tmp_path):
    k = load_c(c_file(tmp_path, MALLOC), params={"n": 50})
    assert {b.name: (b.shape, b.role) for b in k.program.buffers} == {
        "x": ((50,), "input"), "y": ((49,), "output"), "t": ((50,), "temp")}
    assert_drop_in(k)
    # calloc's zeros are data, and free(y) is a call: the function is not read whole, its loops are, t an array
    # of the caller's
    for text, why in [(MALLOC.replace("(double *) malloc(n * sizeof(double))", "calloc(n, sizeof(double))"),
                       "calloc's zeros would be data"), (MALLOC.replace("free(t);", "free(y);"),
                                                         "function calls as statements")]:
        k = load_c(c_file(tmp_path, text), params={"n": 50})
        assert "the loops at lines 5-8" in k.source.picked and why in k.source.picked, k.source.picked
        assert {b.name: b.role for b in k.program.buffers} == {"x": "input", "y": "output", "t": "output"}
        assert_drop_in(k)


NORM = """#include <math.h>
double norm2(int n, const double *x)
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  return sqrt(s);
}
"""


def test_a_returned_value_is_an_output_the_drop_in_check_compares(tmp_path):
    k = load_c(c_file(tmp_path, NORM), params={"n": 100})
    assert k.result == "result" and k.program.buffer("result").role == "output"
    assert comps(k)[-1] == "result="
    emitted = emit_function(k, Schedule.parse("U(i,4)").apply(k.program), schedule="U(i,4)")
    assert "return lc_result;" in emitted
    assert link_check(k, emitted, runs=1).verified
    wrong = link_check(k, emitted.replace("return lc_result;", "return 2.0 * lc_result;"), runs=1)
    assert not wrong.verified and "differs from the original function" in wrong.error
    assert_refused(tmp_path, NORM.replace("double norm2", "double *norm2").replace("return sqrt(s);", "return 0;"),
                   "returns a value of a type loopcost does not read")


TSVC = """#define LEN 4000
typedef float real_t;
real_t a[LEN], b[LEN], c[LEN];
const real_t half = 0.5f;
int iterations = 3;
real_t scale;

void s000(void)
{
  for (int nl = 0; nl < iterations; nl++)
    for (int i = 0; i < LEN; i++)
      a[i] = b[i] + half * c[i] + scale;
}
"""


def test_the_files_own_variables_are_read_and_the_emitted_function_reaches_them(tmp_path):
    k = load_c(c_file(tmp_path, TSVC))
    assert shapes(k) == {"a": (4000,), "b": (4000,), "c": (4000,), "scale": (1,)}
    assert k.specialized == {"iterations": 3} and k.globals == {"a": "a", "b": "b", "c": "c", "half": None,
                                                                 "iterations": None, "scale": "scale"}
    assert [lp.upper.const for lp in load_c(c_file(tmp_path, TSVC), params={"iterations": 5}).program.loops()][0] == 5
    emitted = emit_function(k, Schedule.parse("P(i)").apply(k.program), schedule="P(i)")
    assert "extern float a[4000];" in emitted and "static const float half = 0.5f;" in emitted
    assert "iterations == 3" in emitted  # the file may change it: the optimized kernel runs only for 3
    assert_drop_in(k, "P(i)")


def test_static_and_extern_variables_of_the_file_are_refused_with_the_reason(tmp_path):
    assert_refused(tmp_path, TSVC.replace("real_t scale;", "static real_t scale;"), "'scale' is a static variable")
    assert_refused(tmp_path, TSVC.replace("real_t scale;", "extern real_t scale;"), "definition is in another file")


def test_a_kernel_on_the_files_variables_runs_on_random_inputs(tmp_path):
    from loopcost.frontend.inputs import user_init

    text = TSVC + "void init(void) { for (int i = 0; i < LEN; i++) b[i] = 1.0f; }\n" \
                  "int main(void) { init(); s000(); return 0; }\n"
    k = load_c(c_file(tmp_path, text), function="s000")
    assert user_init(k) is None
    with pytest.raises(CSourceError, match="--init init: the kernel uses variables of the file"):
        user_init(k, "init")


def test_libm_functions_beyond_the_basic_ones_are_read_and_emitted(tmp_path):
    text = ("#include <math.h>\nvoid polar(int n, const double *x, const double *y, double *r, float *t) { "
            "for (int i = 0; i < n; i++) { r[i] = hypot(x[i], y[i]) + log1p(fabs(x[i])); "
            "t[i] = atan2f((float) y[i], (float) x[i]) + cbrtf((float) x[i]); } }")
    k = load_c(c_file(tmp_path, text), params={"n": 64})
    assert sorted({c.fn for comp in k.program.computations() for c in walk_calls(comp.rhs)}) == [
        "abs", "atan2", "cbrt", "hypot", "log1p", "to_float32"]  # (float) y[i]: a conversion of the IR
    assert_drop_in(k, "U(i,4)")


def walk_calls(e):
    from loopcost.ir.expr import BinOp, Call

    if isinstance(e, Call):
        yield e
        for a in e.args:
            yield from walk_calls(a)
    elif isinstance(e, BinOp):
        yield from walk_calls(e.lhs)
        yield from walk_calls(e.rhs)


ITERATOR_VALUES = """void weights(int n, int m, double *A, double *y, const double *x)
{
  for (int i = 0; i < n; i++) {
    int row = i * m;
    for (int j = 0; j < m; j++) {
      int at = row + j;
      A[at] = A[at] * 0.5 + (double) (i - j) / m + j * 0.25;
    }
    y[i] = i == 3 ? -1.0 : i * 2.0 + x[i] * (i + 1);
  }
}
"""


def test_iterators_are_read_as_values_and_int_names_of_affine_values_as_what_they_name(tmp_path):
    from loopcost.ir.expr import IterValue, reads, walk

    k = load_c(c_file(tmp_path, ITERATOR_VALUES), params={"n": 12, "m": 20})
    assert shapes(k) == {"A": (240,), "y": (12,), "x": (12,)}
    a, y = k.program.computations()
    assert [str(ix) for ix in a.target.index] == [str(ix) for ix in reads(a.rhs)[0].index] == ["20 * i + j"]
    assert sorted(str(n.value) for n in walk(a.rhs) if isinstance(n, IterValue)) == ["i - j", "j"]
    assert sorted(str(n.value) for n in walk(y.rhs) if isinstance(n, IterValue)) == ["i", "i", "i + 1"]
    assert_drop_in(k)
    assert_drop_in(k, "T2(i,j,4,8) U(j,4)")


def test_integer_arithmetic_on_iterators_in_values_is_computed_as_c_does(tmp_path):
    """``i / 2`` divides as integers, ``(i % 3) * 0.5`` converts after the remainder, ``i * j`` multiplies ints:
    iterator values print as C ints, whatever the computation's type."""
    text = ("void f(int n, double *x, int *q, float *g, const int *y) { for (int i = 0; i < n; i++) {\n"
            "x[i] = i / 2 + (i % 3) * 0.5 + (i & 1) - (i >> 1) / 3.0;\n"
            "q[i] = y[i] * (i - 7) + i * i % 7 + (i / 4) / 2;\n"
            "for (int j = 0; j < 4; j++) g[4 * i + j] = i * j * 0.25f + (i ^ j); } }")
    k = load_c(c_file(tmp_path, text), params={"n": 40})
    assert_drop_in(k)
    assert_drop_in(k, "U(i,8)")


def test_the_numeric_constants_of_system_headers_are_the_machines(tmp_path):
    text = ("#include <math.h>\n#include <limits.h>\nvoid dft(int n, const double *x, double *re)\n{\n"
            "  for (int k = 0; k < n; k++) {\n    double s = 0.0;\n    for (int j = 0; j < n; j++)\n"
            "      s += x[j] * cos(2.0 * M_PI * k * j / n);\n    re[k] = s / INT_MAX;\n  }\n}\n")
    k = load_c(c_file(tmp_path, text), params={"n": 32})
    from loopcost.ir.expr import Const, walk

    consts = {n.value for c in k.program.computations() for n in walk(c.rhs) if isinstance(n, Const)}
    assert 3.141592653589793 in consts and 2147483647 in consts
    assert_drop_in(k, "U(j,4)")


QUANTIZE = """#include <math.h>
#include <stdint.h>
void quantize(int n, const float *x, float scale, int8_t *q, uint8_t *bits, long *wide, const int *a)
{
  for (int i = 0; i < n; i++) {
    float v = x[i] * scale;
    v = v > 127.0f ? 127.0f : (v < -128.0f ? -128.0f : v);
    q[i] = (int8_t) lrintf(v);
    bits[i] = ((unsigned) (a[i] * 77) >> 3 & 0xf0) | (a[i] % 7) ^ (i & 0);
    wide[i] = (long) a[i] * 1000000007 + (int) (x[i] * 3.7f);
  }
}
"""


def test_casts_shifts_bit_operations_and_rounding_compute_as_c_does(tmp_path):
    k = load_c(c_file(tmp_path, QUANTIZE), params={"n": 64})
    fns = {c.fn for comp in k.program.computations() for c in walk_calls(comp.rhs)}
    assert {"rint", "to_int8", "to_uint32", "to_int64", "to_int32"} <= fns, fns
    assert_drop_in(k)
    assert_drop_in(k, "U(i,4)")
    k = load_c(c_file(tmp_path, QUANTIZE), params={"n": 64})  # i & 0: an integer operation of its value
    assert_drop_in(k, "V(i,8)")


POINTERS_INTO_ARRAYS = """#include <math.h>
void softmax(int rows, int cols, const float *x, float *y, double A[rows][cols], double *v)
{
  for (int r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = &y[r * cols];
    double *row = A[r], *vr = v + 2 * r;
    float m = xr[0];
    for (int c = 1; c < cols; c++) m = fmaxf(m, xr[c]);
    float s = 0.f;
    for (int c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
    for (int c = 0; c < cols; c++) { yr[c] /= s; row[c] = row[c] * 0.5 + *vr; }
    vr[1] = *vr + row[0];
  }
}
"""


def test_pointers_given_once_into_an_array_are_its_elements(tmp_path):
    k = load_c(c_file(tmp_path, POINTERS_INTO_ARRAYS), params={"rows": 6, "cols": 10})
    assert shapes(k) | {"m": None, "s": None} == {"x": (60,), "y": (60,), "A": (6, 10), "v": (12,), "m": None,
                                                  "s": None}
    writes = {c.target.buffer: [str(ix) for ix in c.target.index] for c in k.program.computations()}
    assert writes["y"] == ["c_2 + 10 * r"] and writes["v"] == ["2 * r + 1"]  # the last writes
    assert_drop_in(k)
    assert_drop_in(k, "U(c_2,2)")


@pytest.mark.parametrize("body,reason", [
    ("double *p = x; p++; y[0] = *p;", "pointer 'p' is changed in the function"),
    ("double *p = x + y[0]; y[0] = *p;", "'y[0]' is not an affine expression"),
])
def test_pointers_that_move_or_point_by_data_are_refused(tmp_path, body, reason):
    assert_refused(tmp_path, f"void f(int n, double *x, double *y) {{ for (int i = 0; i < n; i++) {{ {body} }} }}",
                   reason)


LOOP_FORMS = """void forms(long n, const double *a, double *b, int *gt)
{
  long i = 0;
  while (i < n) {
    b[i] += 2.0 * a[i];
    i += 1;
  }
  for (int k = 0, j = n - 1; k < n; k++, j--)
    b[j] = b[j] + a[k];
  int q;
  q = 2;
  while (q < n) {
    gt[q] = a[q] > b[q - 2];
    q = q + 3;
  }
}
"""


def test_counting_whiles_companion_iterators_and_comparisons_as_values_are_read(tmp_path):
    k = load_c(c_file(tmp_path, LOOP_FORMS), params={"n": 40})
    loops = [(lp.name, str(lp.lower), str(lp.upper)) for lp in k.program.body]
    assert loops == [("i", "0", "40"), ("k", "0", "40"), ("q", "0", "13")], loops
    assert [str(ix) for ix in k.program.computations()[1].target.index] == ["-k + 39"]
    assert_drop_in(k)
    assert_drop_in(k, "U(k,4)")


def test_a_while_that_changes_its_counter_inside_stays_refused(tmp_path):
    text = ("void f(int n, double *x) { int i = 0; while (i < n) { i++; x[i - 1] = 0.0; } }")
    assert_refused(tmp_path, text, "while loops are not supported")


def test_float_literals_compute_in_single_precision_in_any_computation(tmp_path):
    """``0.299f * r[i]`` in an integer computation is a float product in C: computed in double, a pixel of these
    100,000 rounded differently and failed the exact check."""
    text = ("#include <stdint.h>\nvoid grayf(int n, const uint8_t *r, const uint8_t *g, const uint8_t *b, uint8_t *y, "
            "double *d) { for (int i = 0; i < n; i++) { y[i] = (uint8_t)(0.299f * r[i] + 0.587f * g[i] + "
            "0.114f * b[i]); d[i] = r[i] * 0.1f; } }")
    k = load_c(c_file(tmp_path, text), params={"n": 100000})
    from loopcost.ir.expr import Const, walk
    from loopcost.ir.program import Program

    assert {n.value for c in k.program.computations() for n in walk(c.rhs) if isinstance(n, Const) and n.single} \
        == {0.299, 0.587, 0.114, 0.1}
    assert Program.from_json(k.program.to_json()) == k.program
    assert_drop_in(k)
    assert_drop_in(k, "V(i,16)")


def test_a_name_with_the_prefix_of_generated_c_is_read_under_another(tmp_path):
    text = ("double f(int n, const double *lc_x) { double lc_s = 0.0; for (int i = 0; i < n; i++) lc_s += lc_x[i]; "
            "return lc_s; }")
    k = load_c(c_file(tmp_path, text), params={"n": 30})
    assert {b.name for b in k.program.buffers} == {"x", "s", "result"}
    assert_drop_in(k)


BLOCK_WRITES = """#include <string.h>
#include <stdint.h>
void mm(int n, double *C, const double *A, const double *B) {
  memset(C, 0, n * n * sizeof(double));
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++)
      for (int j = 0; j < n; j++)
        C[i * n + j] += A[i * n + k] * B[k * n + j];
}
void smooth(int n, double *x, double *tmp) {
  memcpy(tmp, x, n * sizeof(double));
  for (int i = 1; i < n - 1; i++)
    x[i] = (tmp[i - 1] + tmp[i] + tmp[i + 1]) / 3.0;
}
void rows(int n, int m, float A[n][m], uint8_t *p) {
  for (int i = 0; i < n; i += 2)
    memset(A[i], 0, sizeof(float) * m);
  memset(p + 4, 7, (n - 4) * sizeof(uint8_t));
}
"""


@pytest.mark.parametrize("function,expected,written", [
    ("mm", ["C=", "C+="], {"C": "output"}),
    ("smooth", ["tmp=", "x="], {"x": "output", "tmp": "output"}),
    ("rows", ["A=", "p="], {"A": "output", "p": "output"}),
])
def test_memset_and_memcpy_of_whole_elements_are_the_loops_that_do_them(tmp_path, function, expected, written):
    k = load_c(c_file(tmp_path, BLOCK_WRITES), function=function, params={"n": 20, "m": 12} if function == "rows"
               else {"n": 20})
    assert comps(k) == expected
    assert {b.name: b.role for b in k.program.buffers if b.name in written} == written
    assert_drop_in(k)
    assert_drop_in(k, "P(i)" if function != "rows" else "")


@pytest.mark.parametrize("call,reason", [
    ("memset(x, 0, n * sizeof(float));", "read as a count of its elements times sizeof(T)"),
    ("memset(x, 1, n * sizeof(double));", "memset of elements of more than a byte is read with 0 only"),
    ("memcpy(x, y, n * sizeof(double));", "memcpy between arrays of different types"),
])
def test_block_writes_that_are_not_whole_elements_are_refused_with_the_reason(tmp_path, call, reason):
    assert_refused(tmp_path, "#include <string.h>\nvoid f(int n, double *x, float *y) { for (int r = 0; r < 2; r++) "
                             f"{{ y[r] = 1.0f; {call} }} }}", reason)


SKIPS = """void skip_neg(int n, const double *x, double *y, double *s) {
  for (int i = 0; i < n; i++) {
    if (x[i] < y[i])
      continue;
    double v = x[i] - y[i];
    y[i] = v * v;
    s[0] += v;
  }
}
void skip_diag(int n, double *A, const double *x) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j) continue;
      A[i * n + j] += x[i] * x[j];
    }
}
void two(int n, double *A) {
  for (int i = 0; i < n; i++) {
    if (i < 2) { continue; }
    A[i] = A[i - 1] + 1.0;
    if (A[i] > 3.0) continue;
    A[i] *= 0.5;
  }
}
"""


@pytest.mark.parametrize("function,expected", [
    ("skip_neg", ["if1=", "v=", "y=", "s+="]),
    ("skip_diag", ["A+=", "A+="]),  # j < i and j > i
    ("two", ["A=", "if1=", "A*="]),
])
def test_a_continue_under_an_if_skips_the_rest_of_the_loops_body(tmp_path, function, expected):
    """``if (C) continue; REST`` is ``if (C) {} else { REST }``: on data, selects; on the counters, guards."""
    k = load_c(c_file(tmp_path, SKIPS), function=function, params={"n": 30})
    assert comps(k) == expected
    assert_drop_in(k)
    assert_drop_in(k, "U(i,2)")


def test_a_continue_elsewhere_stays_refused(tmp_path):
    assert_refused(tmp_path, "void f(int n, double *x) { for (int i = 0; i < n; i++) { if (i > 2) { x[i] = 1.0; "
                             "continue; } x[i] = 2.0; } }", "continue are not supported")
