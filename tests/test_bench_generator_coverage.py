"""bench/generator_coverage.py: the kernels' computation features against a generator version's sample."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import generator_coverage  # noqa: E402


def test_coverage_counts_the_fields_outside_the_samples_range():
    sample = np.array([[0.0, 1.0, 5.0], [2.0, 1.0, 7.0], [1.0, 1.0, 6.0]])
    kernels = {"a": np.array([[1.0, 1.0, 6.0], [3.0, 1.0, 6.0]]),  # the second: field 0 above the range
               "b": np.array([[-1.0, 2.0, 8.0]])}  # every field outside; field 1 never varied in the sample
    r = generator_coverage.coverage(sample, kernels)
    assert r["computations"] == 3 and r["sample"] == 3
    assert r["outside"] == pytest.approx(2 / 3) and r["fields_outside"] == pytest.approx((0 + 1 + 3) / 3)
    assert r["by_kernel"] == {"a": 0.5, "b": 1.0}
    assert r["far"] == pytest.approx(1 / 3)  # only b's field 1 (a constant in the sample) is far
    text = generator_coverage.table({2: r, 3: generator_coverage.coverage(np.vstack([sample, kernels["b"]]),
                                                                            kernels)})
    assert "| version 2 | 0.67 | 1.3 | 0.33 |" in text and "| b | 1.00 | 0.00 |" in text


def test_version_3_covers_what_version_2_left_out_of_doitgens_features(tmp_path):
    """End to end on doitgen's measured schedules: a small sample of version 3 (which draws doitgen's scratch row)
    leaves fewer of doitgen's computations outside than the same sample size of version 2."""
    run = {"kernel": "doitgen", "machine": "m", "speedups": {"": 1.0, "P(p)": 1.5, "U(p,4)": 1.4, "U(s,4)": 1.1,
                                                               "P(p) U(s,4)": 1.6, "P(r)": 1.2}}  # P(r): illegal
    rows = tmp_path / "MODELS.t.bench.jsonl"
    rows.write_text(json.dumps(run) + "\n")
    kernels = generator_coverage.kernel_vectors([rows])
    assert list(kernels) == ["doitgen"] and len(kernels["doitgen"]) >= 5 * 3
    out = {v: generator_coverage.coverage(generator_coverage.sample_vectors(v, 12, 1, seed=3), kernels)
           for v in (2, 3)}
    assert out[3]["by_kernel"]["doitgen"] < out[2]["by_kernel"]["doitgen"]
