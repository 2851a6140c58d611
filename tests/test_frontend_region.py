"""A function that does more than loops (timers, prints, calls around them): loopcost reads the loops with the
most work that it can read, and writes the whole function back with them optimized."""

from pathlib import Path

import pytest

from loopcost.errors import CSourceError
from loopcost.frontend import load_c
from loopcost.frontend.emit import emit_function
from loopcost.frontend.linkcheck import link_check
from loopcost.transforms.schedule import Schedule

TIMED = """#include <stdio.h>
#include <time.h>
#define N 200
double A[N][N], x[N], y[N];

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

void bench(int reps)
{
  for (int i = 0; i < N; i++) {
    x[i] = 1.0;
    for (int j = 0; j < N; j++)
      A[i][j] = 0.5;
  }
  double t0 = now();
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < N; i++) {
      double s = 0.0;
      for (int j = 0; j < N; j++)
        s += A[i][j] * x[j];
      y[i] = s;
    }
    x[0] = y[N - 1] * 1e-9;
  }
  printf("%d reps: %.3f s (y[0] = %f)\\n", reps, now() - t0, y[0]);
}
"""


def c_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "k.c"
    path.write_text(text)
    return path


def test_the_timed_loops_are_read_and_the_function_is_written_back_whole(tmp_path):
    k = load_c(c_file(tmp_path, TIMED), params={"reps": 3})
    assert "the loops at lines 16-23 of k.c" in k.source.picked and "now is a function of the file" in k.source.picked
    assert {b.name: b.role for b in k.program.buffers if b.role != "temp"} == {"A": "input", "x": "output",
                                                                                "y": "output"}
    for schedule in ("", "P(i)"):
        emitted = emit_function(k, Schedule.parse(schedule).apply(k.program), schedule=schedule)
        assert "static double now(void)" in emitted and "#include <time.h>" in emitted and "printf(" in emitted
        check = link_check(k, emitted, runs=1)  # the function prints: its prints do not reach the report
        assert check.verified, check.error


def test_loops_inside_a_loop_that_calls_out_are_read(tmp_path):
    text = """static int sink(float *v) { return v[0] > 1e30f; }
float a[4000], b[4000];
void s000(void)
{
  for (int nl = 0; nl < 10; nl++) {
    for (int i = 0; i < 4000; i++)
      a[i] = b[i] + 1;
    sink(a);
  }
}
"""
    k = load_c(c_file(tmp_path, text))
    assert [c.target.buffer for c in k.program.computations()] == ["a"] and "lines 6-7" in k.source.picked
    check = link_check(k, emit_function(k, Schedule.parse("V(i,8)").apply(k.program), schedule="V(i,8)"), runs=1)
    assert check.verified, check.error


def test_a_call_of_the_files_void_function_beside_other_calls_is_a_region(tmp_path):
    """TSVC's s151: ``s151s(a, b, 1); dummy(...);`` in a repetition loop: the call of the file's function with
    loops is the region, read in place; the function it calls is copied beside the original code."""
    text = """#include <stdio.h>
static void step(int n, double *a, const double *b, int m)
{
  for (int i = 0; i < n - m; i++)
    a[i] = a[i + m] + b[i];
}
void f(int n, double *a, const double *b)
{
  for (int r = 0; r < 3; r++) {
    step(n, a, b, 1);
    puts(".");
  }
}
"""
    k = load_c(c_file(tmp_path, text), function="f", params={"n": 300})
    assert "the loops at lines 10-10 of k.c" in k.source.picked and k.helpers == ("step",)
    assert [(c.target.buffer, str(c.rhs.lhs.index[0])) for c in k.program.computations()] == [("a", "i + 1")]
    emitted = emit_function(k, Schedule.parse("U(i,4)").apply(k.program), schedule="U(i,4)")
    assert "static void step(int n, double *a, const double *b, int m)" in emitted
    check = link_check(k, emitted, runs=1)
    assert check.verified, check.error


def test_an_int_the_loops_compute_and_the_function_uses_after_them_is_passed_by_address(tmp_path):
    """TSVC's s331 and s3110: an argmin's index, declared before the loops, returned after them."""
    text = """#include <stdio.h>
int argmin(int n, const double *x, double *out)
{
  int at;
  double best;
  puts("start");
  best = x[0];
  at = 0;
  for (int i = 1; i < n; i++)
    if (x[i] < best) { best = x[i]; at = i; }
  out[0] = best;
  puts("done");
  return at + 1;
}
"""
    k = load_c(c_file(tmp_path, text), params={"n": 500})
    assert {b.name: (b.dtype, b.role) for b in k.program.buffers if b.shape == (1,) and b.role != "temp"} == {
        "at": ("int32", "output"), "best": ("float64", "output"), "out": ("float64", "output")}
    assert k.arguments["at"] == "&at"
    check = link_check(k, emit_function(k, Schedule.parse("").apply(k.program)), runs=1)
    assert check.verified, check.error


def test_a_function_of_loops_alone_keeps_its_own_refusal(tmp_path):
    text = "void f(int n, double *x) { for (int i = 0; i < n; i++) x[i] = 0; for (int i = 0; i < 8; i++) x[i] = 1; }"
    with pytest.raises(CSourceError, match="size parameter 'n' has no value"):
        load_c(c_file(tmp_path, text))
    with pytest.raises(CSourceError, match="sink returns a value: a call as a statement is read"):  # none readable
        load_c(c_file(tmp_path, "static int sink(void) { return 0; }\nvoid f(double *x) { for (int i = 0; i < 8; "
                                 "i++) { x[i] = 0; sink(); } }"))


def test_gnu_spellings_and_a_struct_parameter_the_loops_do_not_use_are_read(tmp_path):
    """TSVC's style: ``real_t s(struct args_t *a)`` timing its loop through the struct, ``__restrict__`` and
    ``__attribute__``; the drop-in check passes zeroed memory for the struct."""
    text = """#include <stddef.h>
#include <sys/time.h>
struct args_t { struct timeval t1, t2; void * __restrict__ info; };
__attribute__((aligned(64))) float a[1000], b[1000];
float s000(struct args_t *args)
{
  gettimeofday(&args->t1, NULL);
  for (int i = 0; i < 1000; i++)
    a[i] = b[i] + 1;
  gettimeofday(&args->t2, NULL);
  return a[7];
}
"""
    k = load_c(c_file(tmp_path, text))
    assert [b.name for b in k.program.buffers] == ["a", "b"] and "lines 8-9" in k.source.picked
    emitted = emit_function(k, Schedule.parse("V(i,8)").apply(k.program), schedule="V(i,8)")
    assert "#include <sys/time.h>" in emitted
    check = link_check(k, emitted, runs=1)
    assert check.verified, check.error
    with pytest.raises(CSourceError, match=r"nor are its innermost loops: .*k\.c:9:\d+: expression 'args->t1\.tv_sec'"):
        load_c(c_file(tmp_path, text.replace("a[i] = b[i] + 1;", "a[i] = b[i] + args->t1.tv_sec;")))
