"""bench/peers.py: loopcost's path and every installed peer compute the outputs of the unscheduled program
on the same inputs (tiny sizes); a wrong output is caught."""

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import peers  # noqa: E402

from loopcost.kernels import KERNELS  # noqa: E402


def systems() -> list[str]:
    out = ["loopcost", "numpy"] + [p for p in peers.PEERS if peers.installed(p)]
    return out + (["polly"] if shutil.which(peers.CLANG) else [])


def options(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"budgets": [3], "trials": [4], "runs": 1, "rtol": 1e-9} | kw)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm", "jacobi-2d", "depthwise-conv"])
def test_every_system_computes_the_unscheduled_programs_outputs(name):
    row = peers.bench_kernel(name, "small", [s for s in systems() if s != "tvm"], options())
    cols = row["columns"]
    assert {"loopcost unscheduled", "loopcost adaptive-3"} <= set(cols)
    assert ("NumPy (OpenBLAS)" in cols) == (name in peers.BLAS)
    if peers.installed("halide"):
        assert {f"Halide {s}" for s in ("Adams2019", "Mullapudi2016", "Li2018")} <= set(cols)
    for label, c in cols.items():
        assert not c.get("error") and c["verified"], (label, c)
        assert len(c["times"]) == 1 and c["seconds"] > 0


@pytest.mark.slow
def test_tvm_metaschedule_tunes_and_computes_the_unscheduled_programs_outputs():
    pytest.importorskip("tvm")
    pytest.importorskip("xgboost")
    row = peers.bench_kernel("gemm", "small", ["tvm"], options())
    c = row["columns"]["TVM MetaSchedule-4"]
    assert c["verified"] and 0 < c["measurements"] <= 4, c


def test_a_wrong_output_is_caught_and_a_missing_peer_is_skipped(tmp_path):
    program = KERNELS["gemm"].program("small")
    ref = peers.Reference(program, tmp_path)
    assert ref.check(ref.outputs) == 0.0
    wrong = {"C": ref.outputs["C"].copy()}
    wrong["C"][3, 4] += 1e-6 * np.abs(wrong["C"]).max()
    assert 0.5e-6 < ref.check(wrong) < 2e-6
    assert ref.check({"C": ref.outputs["C"][:-1]}) == np.inf
    peers.PEERS["nothing"] = ("no_such_module_anywhere",)
    try:
        assert not peers.installed("nothing")
    finally:
        del peers.PEERS["nothing"]
