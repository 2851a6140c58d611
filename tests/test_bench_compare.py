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


def test_another_runs_picks_are_measured_in_the_same_harness(tmp_path, capsys):
    first = tmp_path / "first.jsonl"
    compare_models.main([f"a={SHIPPED_MODEL}", "--kernels", "gemm", "--size", "small", "--out", str(first)])
    (old,) = [json.loads(line) for line in first.read_text().splitlines()]
    out = tmp_path / "both.jsonl"
    args = [f"b={SHIPPED_MODEL}", "--also", f"before={first}", "--kernels", "gemm", "--size", "small",
            "--out", str(out)]
    compare_models.main(args)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(row["best"]) == {"b", "a@before"} and set(row["search_s"]) == {"b"}  # stored picks: no search
    assert row["picks"]["a@before"] == old["picks"]["a"]
    assert all(t in row["speedups"] and len(row["raw_times"][t]) >= 3 for t, _ in old["picks"]["a"])
    assert row["best"]["a@before"] == max([1.0] + [row["speedups"][t] for t, _ in old["picks"]["a"]])
    capsys.readouterr()
    compare_models.main(args)  # resumes: nothing measured again
    assert len(out.read_text().splitlines()) == 1
    assert "a@before" in capsys.readouterr().out
