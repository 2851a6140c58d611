"""The C frontend: PolyBench-style C files read into programs equivalent to the library's DSL kernels,
optimized, and written back as drop-in functions that compute what the originals compute."""

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from loopcost.cli import main
from loopcost.codegen.compiler import compile_c
from loopcost.codegen.harness import harness_c
from loopcost.errors import CSourceError
from loopcost.frontend import load_c
from loopcost.frontend.emit import emit_function
from loopcost.frontend.linkcheck import Build, drop_in_harness, link_check, original
from loopcost.frontend.parse import parse_c
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner.verify import RTOL, read_dump
from loopcost.search.optimize import optimize
from loopcost.transforms.schedule import Schedule

from .programs import run_once

C_DIR = Path(__file__).parent / "c"
LIBRARY_FILES = sorted(p for p in C_DIR.glob("*.c") if p.stem in KERNELS)


def small(path: Path):
    """The file read at its library kernel's small size: -D NAME for every size, --param for int parameters."""
    sizes = KERNELS[path.stem].sizes["small"]
    defines = {name.rstrip("_").upper(): str(v) for name, v in sizes.items()}
    int_params = parse_c(path, defines=defines).int_params
    params = {n: int(defines[n.upper()]) for n in int_params}
    return load_c(path, defines=defines, params=params), defines


def test_at_least_fifteen_library_kernels_have_a_c_file():
    assert len(LIBRARY_FILES) >= 15, [p.name for p in LIBRARY_FILES]


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: p.stem)
def test_c_file_computes_what_the_dsl_kernel_computes(path, tmp_path):
    k, _ = small(path)
    kernel = KERNELS[path.stem]
    dsl = kernel.program("small")
    p = k.program
    exe = compile_c(harness_c(ProgramState.initial(p)))
    res = run_once(exe, runs=1, warmup=0, seed=3, dump_prefix=str(tmp_path / "d"))
    assert res.ok, res.error
    arrays = {n: a.astype(np.float64) for n, a in read_dump(p, tmp_path / "d.in").items()}
    for b in dsl.buffers:  # the DSL's own temporaries may not exist in the C version
        arrays.setdefault(b.name, np.zeros(b.shape))
        assert arrays[b.name].shape == b.shape, b.name
    got = read_dump(p, tmp_path / "d.out")
    kernel.reference(arrays, **kernel.sizes["small"])
    compared = [b for b in p.outputs() if b.name in {d.name for d in dsl.buffers}]
    assert {b.name for b in dsl.outputs()} <= {b.name for b in compared}
    for b in compared:
        want = arrays[b.name]
        rtol = max(RTOL[b.dtype], 1e-10)
        np.testing.assert_allclose(got[b.name], want, rtol=rtol, atol=rtol * np.abs(want).max(),
                                   err_msg=f"{path.name}: output {b.name}")


class Toy:
    """Rewards parallel loops and tiling: a stand-in for the cost model with a known optimum."""

    def __init__(self):
        self.scored = 0

    def score(self, states, labels=None):
        self.scored += len(states)
        return np.array([1.0 + 2.0 * any(t.kind == "parallel" for t in s.tags)
                         + any(t.kind == "tile" for t in s.tags) for s in states])


@pytest.mark.parametrize("path", sorted(C_DIR.glob("*.c")), ids=lambda p: p.stem)
def test_c_file_optimizes_to_a_verified_schedule_and_a_drop_in_function(path):
    if path.stem in KERNELS:
        k, defines = small(path)
    else:
        defines = {"NI": "40", "NJ": "50", "NK": "30"}
        k = load_c(path, defines=defines, params={"ni": 40, "nj": 50, "nk": 30})
    r = optimize(k.program, method="beam", evaluator=Toy(), budget=1, top_k=2)
    assert r.verified and r.measured_speedup > 0
    emitted = emit_function(k, r.state, schedule=str(r.schedule))
    assert f"void {k.source.name}(" in emitted
    check = link_check(k, emitted, defines=defines, runs=1)
    assert check.verified, check.error
    compared = drop_in_harness(k, Build(emitted), original(k), defines).outputs
    assert {b.name for b in compared} == {b.name for b in k.program.outputs()} & set(k.param_buffers)


def test_scalar_temporaries_are_expanded_only_when_no_value_crosses_iterations():
    k, _ = small(C_DIR / "atax.c")
    assert k.program.buffer("t").shape == (38,) and k.program.buffer("t").role == "temp"
    k, _ = small(C_DIR / "conv2d.c")
    assert k.program.buffer("acc").shape == (2, 4, 10, 12)
    assert "unused" not in {b.name for b in k.program.buffers}


def test_affine_ifs_become_guards_that_survive_json():
    from loopcost.ir.program import Program

    k, _ = small(C_DIR / "syrk.c")
    guarded = [c for c in k.program.computations() if c.guards]
    assert len(guarded) == 2
    assert Program.from_json(k.program.to_json()) == k.program
    k, _ = small(C_DIR / "trmm.c")  # the downward k loop is a reversed iterator: k = M - 1 - k'
    assert k.program.loops()[2].upper.const == 40 - 1


def test_other_sizes_run_the_original_code(tmp_path):
    """A function specialized for n=60 still computes the right result for n=50 (it falls back)."""
    src = C_DIR / "mvt.c"
    k = load_c(src, params={"n": 60})
    emitted = emit_function(k, ProgramState.initial(k.program))
    assert "n == 60" in emitted
    other = load_c(src, params={"n": 50})
    check = link_check(other, emitted, runs=1)
    assert check.verified, check.error
    assert {b.name for b in drop_in_harness(other, Build(emitted), original(other), None).outputs} == {"x1", "x2"}


def test_parallel_schedule_emits_a_drop_in_function_with_its_helper():
    k = load_c(C_DIR / "mvt.c", params={"n": 60})
    emitted = emit_function(k, Schedule.parse("P(i)").apply(k.program))
    assert "static inline void lc_opt_kernel_mvt_par0(" in emitted
    check = link_check(load_c(C_DIR / "mvt.c", params={"n": 60}), emitted, runs=1)
    assert check.verified and len(check.times) == 1 and len(check.reference_times) == 1, check.error


def test_the_drop_in_check_catches_a_function_that_computes_something_else():
    k = load_c(C_DIR / "mvt.c", params={"n": 60})
    emitted = emit_function(k, ProgramState.initial(k.program))
    wrong = emitted.replace("+=", "-=", 1) if "+=" in emitted else emitted.replace(" + ", " - ", 1)
    assert wrong != emitted
    check = link_check(k, wrong, runs=1)
    assert not check.verified and "differs from the original function" in check.error
    assert check.max_rel_error > 1e-3


def test_overlapping_arrays_run_the_original_code(tmp_path):
    """The kernel's parameters are restrict. ``b[i] = a[i] + 1`` reversed is legal for distinct arrays,
    but called with b = a + 1 the original chains the updates; the emitted function must notice the
    overlap and run the original code."""
    src = tmp_path / "shift.c"
    src.write_text("void shift(double a[20], double b[20])\n{\n  int i;\n#pragma scop\n"
                   "  for (i = 0; i < 20; i++)\n    b[i] = a[i] + 1.0;\n#pragma endscop\n}\n")
    k = load_c(src)
    emitted = emit_function(k, Schedule.parse("R(i)").apply(k.program))
    assert "lc_disjoint(a, sizeof(double) * 20, b, sizeof(double) * 20)" in emitted
    (tmp_path / "emitted.c").write_text(emitted)
    (tmp_path / "main.c").write_text("""#include <stdio.h>
void shift(double a[20], double b[20]);
void lc_ref(double a[20], double b[20]);
int main(void) {
  static double x[21], y[21], u[20], v[20], w[20];
  shift(x, x + 1);                      /* overlapping: must chain like the original */
  lc_ref(y, y + 1);
  for (int i = 0; i < 21; i++) if (x[i] != y[i]) { printf("differ at %d\\n", i); return 1; }
  for (int i = 0; i < 20; i++) u[i] = i;
  shift(u, v);                          /* distinct: the optimized kernel runs */
  lc_ref(u, w);
  for (int i = 0; i < 20; i++) if (v[i] != w[i]) { printf("differ at %d\\n", i); return 1; }
  printf("same %g\\n", x[20]);
  return 0;
}
""")
    for c, extra in (("emitted.c", []), ("shift.c", ["-Dshift=lc_ref"])):
        subprocess.run(["cc", "-O2", "-fopenmp", *extra, "-c", str(tmp_path / c), "-o", str(tmp_path / (c + ".o"))],
                       check=True)
    subprocess.run(["cc", "-fopenmp", str(tmp_path / "main.c"), str(tmp_path / "emitted.c.o"),
                    str(tmp_path / "shift.c.o"), "-o", str(tmp_path / "check"), "-lm"], check=True)
    out = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True)
    assert out.stdout.strip() == "same 20", out.stdout


def write(tmp_path, body: str, params: str = "double A[10][10], double B[10][10], double x[10]") -> Path:
    path = tmp_path / "k.c"
    path.write_text(f"void f({params})\n{{\n  int i, j;\n#pragma scop\n{body}\n#pragma endscop\n}}\n")
    return path


BAD = [
    ("for (i = 0; i < 10; i++) A[i][i * i % 10] = 0;", "not affine"),
    ("for (i = 0; i < 10; i++) for (j = 0; j < 10; j++) A[i][j] = A[i * j % 10][j];", "not affine"),
    ("for (i = 0; i < 10; i++) *(x + i) = 1.0;", "pointer"),
    ("for (i = 0; i < 10; i++) if (x[i] > 0) { A[i][0] = 1.0; break; }", "scalars and ifs, not 'break"),
    ("for (i = 0; i < 10; i++) if (i != 3 && i < 8) x[i] = 0;", "condition 'i != 3' is not supported"),
    ("for (i = 0; i < 10; i++) while (x[i] > 0) x[i] -= 1.0;", "while loops"),
    ("for (i = 0; i < 10; i++) x[i] = foo(x[i]);", "unknown function 'foo'"),
    ("for (i = 0; i < 10; i++) x[i] = x[i] ? x[i] : 0;", "must compare two values"),
    ("for (i = 0; i < 10; i++) x[(i + 1) / 2] = 1.0;", "divides an iterator: not affine"),
    ("for (i = 0; i < 10; i++) x[i] += A[i][0] = 1.0;", "'+=' with an assignment"),
    ("for (i = 0; i < 10; i += i) x[i] = 0;", "step its iterator 'i' by a positive constant"),
    ("for (i = 0; i < 10; i -= 0) x[i] = 0;", "step its iterator 'i' by a positive constant"),
    ("for (i = 0; i < 10; i++) for (j = 0; j < 10; j++) A[i][j] = A[i][i * j % 10];", "multiplies two iterators"),
    ("for (i = 0; i < 10; i++) { int k = i * i; x[i] = x[k]; }", "'k' is data, not a loop iterator"),
    ("for (i = 0; i < 10; i++) x[i] = x[i] + i / 0;", "division by zero in 'i / 0'"),
    ("for (i = 0; i < 10; i++) { int k = i; k = k * k; x[i] = x[k]; }", "'k * k' multiplies two iterators"),
    ("for (i = 0; i < 10; i++) { x[i] = 0; break; }", "break"),
    ("for (i = 0; i < 10; i++) { double s; x[i] = s; }", "read before it is assigned"),
    ("for (i = 0; i < 10; i++) x[i] = A[i];", "dimension"),
]


@pytest.mark.parametrize("body,reason", BAD, ids=[r for _, r in BAD])
def test_unsupported_constructs_are_refused_with_the_line(tmp_path, body, reason):
    with pytest.raises(CSourceError) as e:
        load_c(write(tmp_path, body))
    assert re.search(r"k\.c:5:\d+: ", str(e.value)) and reason in str(e.value), str(e.value)


def test_syntax_errors_give_the_compilers_located_message(tmp_path):
    with pytest.raises(CSourceError, match=r"k.c:5:\d+: error: expected expression"):
        load_c(write(tmp_path, "for (i = 0; i < 10; i++) x[i] = 1.0 +;"))


def test_pointers_to_pointers_and_missing_sizes_are_refused(tmp_path):
    with pytest.raises(CSourceError, match=r"k.c:1:\d+: 'p' is a pointer to pointers; loopcost reads arrays whose "
                                           r"rows lie side by side"):
        load_c(write(tmp_path, "for (i = 0; i < 10; i++) x[i] = p[i][0];", "double **p, double x[10]"))
    with pytest.raises(CSourceError, match=r"size parameter 'n' has no value: give it with --param n="):
        load_c(write(tmp_path, "for (i = 0; i < n; i++) x[i] = 0;", "int n, double x[n]"))
    with pytest.raises(CSourceError, match=r"no such int parameter"):
        load_c(write(tmp_path, "for (i = 0; i < 10; i++) x[i] = 0;", "double x[10]"), params={"m": 3})


@pytest.mark.slow
def test_cli_optimizes_a_c_file_and_emits_a_checked_function(tmp_path, capsys):
    out = tmp_path / "mvt_opt.c"
    assert main(["optimize", str(C_DIR / "mvt.c"), "--param", "n=30", "--search", "exec", "--budget", "1",
                 "--top-k", "2", "--emit-c", str(out), "--json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["verified"] and report["drop_in_check"]["verified"]
    assert "void kernel_mvt(int n, double x1[n]" in out.read_text()
    assert main(["optimize", str(C_DIR / "mvt.c"), "--param", "n=30", "--search", "exec", "--budget", "1",
                 "--top-k", "1", "--emit-c", "-"]) == 0
    written = capsys.readouterr().out  # the optimized function, or the original if it ran slower beside it
    assert written.startswith("/* kernel_mvt, ") and "void kernel_mvt(int n" in written
    args = [str(C_DIR / "gemm.c"), "-D", "NI=40", "-D", "NJ=50", "-D", "NK=30", "--param", "ni=40",
            "--param", "nj=50", "--param", "nk=30"]
    assert main(["show", *args]) == 0
    assert "C[c1][c3]" in capsys.readouterr().out
    assert main(["show", str(C_DIR / "gemm.c")]) == 2
    assert "--param ni=VALUE" in capsys.readouterr().err


def test_headers_are_expanded_from_the_files_folder_and_the_include_folders(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "sizes.h").write_text("#ifndef SIZES_H\n#define SIZES_H\n#include <stdio.h>\n"
                                              "#define N 12\n#define DATA_TYPE double\n#endif\n")
    (tmp_path / "local.h").write_text('#include "sizes.h"\n#include <sizes.h>\n')  # twice: read once
    src = tmp_path / "k.c"
    src.write_text('#include <math.h>\n#include "local.h"\nvoid f(DATA_TYPE x[N])\n{\n  int i;\n'
                   "  for (i = 0; i < N; i++) x[i] = sqrt(x[i]);\n}\n")
    k = load_c(src, include_dirs=[tmp_path / "inc"])
    assert [b.shape for b in k.program.buffers] == [(12,)] and k.source.include_dirs == (tmp_path / "inc",)
    with pytest.raises(CSourceError, match=r'local\.h:1: cannot find "sizes\.h" .*give its folder with -I DIR'):
        load_c(src)
    with pytest.raises(CSourceError, match=r"-I .*nowhere: no such folder"):
        load_c(src, include_dirs=[tmp_path / "nowhere"])
    # what is wrong in a header is reported at the header's own line and column
    (tmp_path / "inc" / "sizes.h").write_text("#define N 12\n#define DATA_TYPE double\n"
                                              "void g(double **p)\n{\n  p[0][0] = 1.0;\n}\n")
    with pytest.raises(CSourceError, match=r"sizes\.h:3:\d+: 'p' is a pointer to pointers"):
        load_c(src, include_dirs=[tmp_path / "inc"], function="g")


SIZED = """#define N 40
void f(int n, int m, double x[N])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++) x[i] = x[i] * 2.0;
#pragma endscop
}

int main(void) { int n = N - 8; static double x[N]; f(n, 3, x); return 0; }
"""


def test_sizes_come_from_the_files_own_call_of_the_kernel_unless_given(tmp_path, capsys):
    src = tmp_path / "k.c"
    src.write_text(SIZED)
    k = load_c(src)
    assert k.specialized == {"n": 32} and k.from_file.values == {"n": 32}  # m is not used by the region
    assert k.from_file.where.endswith("k.c:10, the call in main()")
    given = load_c(src, params={"n": 10})
    assert given.specialized == {"n": 10} and given.from_file.values == {}
    assert main(["show", str(src), "--json"]) == 0
    assert "loopcost: sizes from" in capsys.readouterr().err
    src.write_text(SIZED.replace("f(n, 3, x)", "f(n + argc, 3, x)").replace("main(void)", "main(int argc)"))
    with pytest.raises(CSourceError, match=r"size parameter 'n' has no value: give it with --param n=VALUE"):
        load_c(src)


MIXED = """typedef char base;
void f(base s[16], short h[16], long g[16], int t[16][16], double x[16], double y[16])
{
  int i, j;
#pragma scop
  for (i = 0; i < 16; i++) {
    x[i] = x[i] <= 0.75 ? 1.0 : x[i];
    y[i] = x[i] = x[i] > y[i] ? x[i] : y[i] * 2.0;
    h[i] = h[i] * 3 + s[i];
    g[i] = g[i] * 1000000000 + h[i];
    for (j = 1; j < 16; j++)
      t[i][j] = t[i][j - 1] + (s[i] + s[j] == 3 ? 1 : 0);
  }
#pragma endscop
}
"""


def test_selects_chained_assignments_and_integer_types_compute_what_the_c_computes(tmp_path):
    from loopcost.ir.expr import Call, walk

    src = tmp_path / "k.c"
    src.write_text(MIXED)
    k = load_c(src)
    assert {b.name: b.dtype for b in k.program.buffers} == {
        "s": "int8", "h": "int16", "g": "int64", "t": "int32", "x": "float64", "y": "float64"}
    comps = k.program.computations()
    selects = [n.fn for c in comps for n in walk(c.rhs) if isinstance(n, Call) and n.fn.startswith("select")]
    assert selects == ["select_le", "select_lt", "select_eq"]
    # y[i] = x[i] = e: x[i] = e, then y[i] = x[i]
    assert [c.target.buffer for c in comps[:3]] == ["x", "x", "y"] and comps[2].rhs == comps[1].target
    for text in ("", "P(i)", "I(i,j)"):
        try:
            state = Schedule.parse(text).apply(k.program)
        except Exception:  # noqa: BLE001 - an illegal interchange is no part of this test
            continue
        check = link_check(k, emit_function(k, state, schedule=text), runs=1)
        assert check.verified and check.max_rel_error == 0.0, (text, check.error)


OWN_INPUTS = """#include "lib.h"
void kernel(int n, double alpha, double A[20][20], double unused[20])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = alpha * sqrt(A[i][j] - 4.0);
#pragma endscop
}

static void fill(int n, double *alpha, double A[20][20], double unused[20])
{
  int i, j;
  *alpha = 0.5;
  for (i = 0; i < n; i++) {
    unused[i] = 0.0;
    for (j = 0; j < n; j++)
      A[i][j] = lib_base() + i + j;
  }
}

int main(void)
{
  int n = 20;
  double alpha;
  static double A[20][20], unused[20];
  fill(n, &alpha, A, unused);
  kernel(n, alpha, A, unused);
  return 0;
}
"""


def test_the_files_own_init_makes_the_inputs_of_every_check(tmp_path, capsys):
    from loopcost.frontend.inputs import user_init
    from loopcost.runner import LocalRunner, Timing

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "lib.h").write_text("double lib_base(void);\n")
    (tmp_path / "lib" / "lib.c").write_text('#include "lib.h"\ndouble lib_base(void) { return 4.0; }\n')
    path = tmp_path / "own.c"
    path.write_text(OWN_INPUTS)
    k = load_c(path, include_dirs=[tmp_path / "lib"])
    init = user_init(k)
    assert init.label == "fill()" and init.args[0] == "20" and "lc_g_alpha" in init.args[1]
    assert "lc_alloc" in init.args[3]  # an array the region never uses: scratch
    state = Schedule.parse("I(i,j)").apply(k.program)
    random = LocalRunner().measure([state], timing=Timing(1, 0))[0]
    assert not random.verified and "NaN/Inf" in random.vacuous  # sqrt of [0.5, 1.5) - 4
    own = LocalRunner(init=init).measure([state], timing=Timing(1, 0))[0]
    assert own.verified and own.vacuous is None, own.error
    check = link_check(k, emit_function(k, state), runs=1, init=init)
    assert check.verified and check.vacuous is None, check.error
    assert not link_check(k, emit_function(k, state), runs=1).verified  # the same check on random inputs
    assert user_init(k, "fill") is not None
    with pytest.raises(CSourceError, match=r"--init nothing: the file defines no function 'nothing'"):
        user_init(k, "nothing")
    args = ["run", str(path), "-I", str(tmp_path / "lib"), "--schedule", "I(i,j)", "--runs", "1", "--store", "none"]
    assert main(args) == 0 and "inputs from fill() of own.c" in capsys.readouterr().err
    assert main([*args, "--init", "none"]) == 1 and "vacuous" in capsys.readouterr().err
    path.write_text(OWN_INPUTS.replace("fill(n, &alpha, A, unused)", "fill(n + 0 * argc, &alpha, A, unused)")
                    .replace("main(void)", "main(int argc)"))
    with pytest.raises(CSourceError, match=r"argument 1 of fill\(\) is none of the variables"):
        user_init(load_c(path, include_dirs=[tmp_path / "lib"], params={"n": 20}))
