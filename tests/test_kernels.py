"""Every library kernel's generated C computes what its NumPy reference computes."""

import math

import numpy as np
import pytest

from loopcost.codegen.compiler import compile_c
from loopcost.codegen.harness import harness_c
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner.verify import RTOL, read_dump

from .programs import run_once

REQUIRED = {"gemm", "2mm", "3mm", "mvt", "atax", "bicg", "gemver", "gesummv", "doitgen", "syrk", "trmm",
            "jacobi-1d", "jacobi-2d", "heat-3d", "seidel-2d", "fdtd-2d", "blur", "conv2d", "matmul-relu"}


def test_library_has_every_required_kernel():
    assert REQUIRED <= set(KERNELS), sorted(REQUIRED - set(KERNELS))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_generated_c_matches_numpy(name, tmp_path):
    k = KERNELS[name]
    p = k.program("small")
    exe = compile_c(harness_c(ProgramState.initial(p)))
    res = run_once(exe, runs=1, warmup=0, seed=7, dump_prefix=str(tmp_path / "d"))
    assert res.ok, res.error
    arrays = {n: a.copy() for n, a in read_dump(p, tmp_path / "d.in").items()}
    got = read_dump(p, tmp_path / "d.out")
    k.reference(arrays, **k.sizes["small"])
    for b in p.outputs():
        want = arrays[b.name].astype(np.float64)
        rtol = max(RTOL[b.dtype], 1e-10)
        np.testing.assert_allclose(got[b.name], want, rtol=rtol, atol=rtol * np.abs(want).max(),
                                   err_msg=f"{name}: output {b.name}")
        if name == "matmul-relu":  # the ReLU must really cut: some outputs zero, some not
            assert 0.2 < np.mean(want == 0) < 0.8


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_bench_size_builds(name):
    small, bench = KERNELS[name].program("small"), KERNELS[name].program("bench")
    assert [c.name for c in bench.computations()] == [c.name for c in small.computations()]  # the same kernel
    assert sum(math.prod(b.shape) for b in bench.buffers) > sum(math.prod(b.shape) for b in small.buffers)  # larger
