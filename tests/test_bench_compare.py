"""bench/compare_models.py: models side by side on the search, resumable."""

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import compare_models  # noqa: E402

from loopcost.kernels.loader import load_program  # noqa: E402
from loopcost.paths import SHIPPED_MODEL  # noqa: E402


def test_every_selection_kernel_builds_at_both_sizes_and_is_not_a_benchmark_kernel():
    from loopcost.kernels import KERNELS

    specs = compare_models.kernel_specs(["selection"])
    assert len(specs) >= 8
    names = set()
    for spec in specs:
        for size in ("small", "bench"):
            names.add(load_program(spec, size).name)
    assert not names & set(KERNELS)


def test_compare_measures_each_models_picks_in_one_harness_and_resumes(tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    args = [f"a={SHIPPED_MODEL}", f"b={SHIPPED_MODEL}", "--kernels", "gemm", "--size", "small", "--out", str(out)]
    compare_models.main(args)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["kernel"] == "gemm" and set(row["best"]) == {"a", "b"}
    assert row["picks"]["a"] == row["picks"]["b"] and len(row["picks"]["a"]) == 5  # one model, one search
    assert all(v >= 1.0 for v in row["best"].values())
    assert row["best"]["a"] == max([1.0] + [row["speedups"][t] for t, _ in row["picks"]["a"]])
    assert set(row["raw_times"]) == {"baseline", "", *[t for t, _ in row["picks"]["a"]]}
    assert all(len(ts) >= 3 for ts in row["raw_times"].values())
    capsys.readouterr()
    compare_models.main(args)  # resumes: nothing measured again
    assert len(out.read_text().splitlines()) == 1
    assert "geometric mean" in capsys.readouterr().out
