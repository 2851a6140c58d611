from dataclasses import replace

import pytest

from loopcost.codegen.c_source import kernel_file
from loopcost.codegen.compiler import Toolchain, compile_c
from loopcost.codegen.harness import harness_c
from loopcost.errors import CompileError, CompilerNotFoundError
from loopcost.ir.state import LoopTag, ProgramState
from loopcost.paths import cache_root
from loopcost.transforms.schedule import Schedule

from .programs import chain, matvec, measure_one, run_once


def test_triangular_nest_generates_triangular_loop():
    src = kernel_file(ProgramState.initial(chain()))
    assert "c3 <= c1" in src
    assert "double B[restrict 16][16]" in src


def test_tags_become_pragmas_on_the_tagged_dimension():
    st = ProgramState.initial(matvec()).with_tags(LoopTag("i", "parallel"), LoopTag("j", "unroll", 4))
    src = kernel_file(st)
    lines = [ln.strip() for ln in src.splitlines()]
    assert lines[lines.index("#pragma omp parallel for") + 1].startswith("for (int c1 ")
    assert lines[lines.index("#pragma GCC unroll 4") + 1].startswith("for (int c3 ")


def test_parallel_body_is_a_restrict_helper_of_the_enclosing_iterators():
    # gcc stops vectorizing inside an outlined OpenMP body unless the buffers arrive as restrict parameters
    st = Schedule.parse("T2(i,j,8,8) P(i)").apply(matvec(n=64, m=32))
    src = kernel_file(st)
    lines = [ln.strip() for ln in src.splitlines()]
    assert lines[lines.index("#pragma omp parallel for") + 2] == "matvec_par0(A, x, y, c1, c3, c5);"
    helper = src[src.index("static inline void matvec_par0("):src.index("void matvec(")]
    assert "double A[restrict 64][32]" in helper and "const int c5)" in helper
    assert "c7" in helper and "omp" not in helper
    m = measure_one(st, runs=1, warmup=1)
    assert m.verified, m.error


def test_tagged_program_still_verifies():
    st = ProgramState.initial(matvec(n=64, m=32, dtype="float32")).with_tags(
        LoopTag("i", "parallel"), LoopTag("j", "vector", 8))
    m = measure_one(st, runs=2, warmup=1)
    assert m.verified, m.error
    assert len(m.times) == 2 and all(t > 0 for t in m.times)


def test_reordering_dependent_statements_fails_verification():
    p = chain()
    st = ProgramState.initial(p)
    swapped = st.with_comps({"S0": replace(st.comp("S0"), betas=(2, 0, 0))})
    m = measure_one(swapped, runs=1, warmup=1)
    assert not m.verified
    assert "B[" in m.error


def test_compile_cache_reuses_binaries():
    src = harness_c(ProgramState.initial(matvec()))
    a = compile_c(src)
    b = compile_c(src)
    assert a == b and a.is_relative_to(cache_root())


def test_compile_error_and_missing_compiler_are_clear():
    with pytest.raises(CompileError, match="error"):
        compile_c("int main(void) { return undefined_thing; }")
    with pytest.raises(CompilerNotFoundError, match="not found"):
        compile_c("int main(void) { return 0; }", Toolchain("/nonexistent/cc"))


def test_a_compiler_past_its_time_limit_is_stopped_with_everything_it_started():
    import time
    from pathlib import Path

    from loopcost.codegen.compiler import _run
    from loopcost.errors import CompileTimeout

    marker = "61.2345"  # a "compiler" whose child (as gcc's cc1 under its driver) outlives a killed parent
    t0 = time.monotonic()
    with pytest.raises(CompileTimeout, match="more than 0.5 s"):
        _run(["sh", "-c", f"sleep {marker} & sleep {marker}; wait"], "compiling", timeout=0.5)
    assert time.monotonic() - t0 < 10
    time.sleep(0.2)

    def cmdline(path: Path) -> str:
        try:
            return path.read_bytes().decode(errors="replace")
        except OSError:  # a process that ended meanwhile
            return ""

    assert not [c for c in Path("/proc").glob("[0-9]*/cmdline") if marker in cmdline(c)]


def test_crash_and_timeout_come_back_as_data():
    crash = compile_c("int main(void) { *(volatile int *)0 = 1; return 0; }")
    r = run_once(crash)
    assert not r.ok and "SIGSEGV" in r.error and r.times == ()
    spin = compile_c("int main(void) { for (volatile int i = 0;; i++) {} }", Toolchain(flags=("-O0",)))
    r = run_once(spin, timeout=0.5)
    assert not r.ok and r.error.startswith("timeout")
    garbage = compile_c('#include <stdio.h>\nint main(void) { puts("not json"); return 0; }')
    assert "unreadable" in run_once(garbage).error


def test_same_seed_same_output_other_seed_other_output():
    exe = compile_c(harness_c(ProgramState.initial(matvec())))
    a, b, c = run_once(exe, seed=1, runs=1), run_once(exe, seed=1, runs=1), run_once(exe, seed=2, runs=1)
    assert a.checksum == b.checksum != c.checksum


def test_buffer_names_do_not_collide_with_the_harness():
    from loopcost.ir.dsl import ProgramBuilder

    p = ProgramBuilder("r")  # the kernel function is named like a buffer
    r, w, seed = p.input("r", (8,)), p.output("w", (8,)), p.output("seed", (8,))
    with p.loop("i", 0, 8) as i:
        w[i] = r[i] * 2.0
        seed[i] = w[i] + 1.0
    m = measure_one(ProgramState.initial(p.build()), runs=2, warmup=2)
    assert m.verified and len(m.times) == 2, m.error
