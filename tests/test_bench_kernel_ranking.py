"""bench/kernel_ranking.py: models scored on the schedules that benchmark runs measured, without measuring."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import kernel_ranking  # noqa: E402

from loopcost.paths import SHIPPED_MODEL  # noqa: E402

SPEEDUPS = {"": 1.0, "P(i)": 1.9, "U(k,4)": 1.1, "T2(i,j,32,32)": 1.4, "P(i) U(k,4)": 2.2,
            "I(j,k)": 3.0,  # illegal today: left out
            "T2(i,j,32,64)": 0.0}  # failed: no speedup, left out


def test_runs_of_rows_are_filtered_by_machine_and_keep_measured_schedules():
    rows = [("MODELS.x.bench.jsonl", {"kernel": "gemm", "machine": "m1", "speedups": SPEEDUPS}),
            ("ADAPTIVE.jsonl", {"kernel": "gemm", "group": "selection", "machine": "m1",
                                "history": {"rounds-16": [[t, s] for t, s in SPEEDUPS.items() if t]}}),
            ("MODELS.x.bench.jsonl", {"kernel": "gemm", "machine": "m2", "speedups": SPEEDUPS}),
            ("BLAS.jsonl", {"kernel": "gemm", "machine": "m1", "columns": {}})]
    runs = kernel_ranking.runs_of(rows, "m1")
    assert [(r["set"], r["source"]) for r in runs] == [("bench", "MODELS.x.bench.jsonl"),
                                                       ("selection", "ADAPTIVE.jsonl:rounds-16")]
    assert all(set(r["measured"]) == set(SPEEDUPS) - {"T2(i,j,32,64)"} for r in runs)  # "" at 1.0 in both
    assert len(kernel_ranking.runs_of(rows, None)) == 3


def test_scores_of_a_perfect_and_a_reversed_ranking():
    measured = np.array([1.0, 2.0, 4.0, 1.5, 3.0])
    best = kernel_ranking.scores(np.log(measured), measured)
    assert best["spearman"] == pytest.approx(1.0) and best["top1"] == best["top5"] == 1.0
    assert sum(n for _, n in best["pairs"]) == 10 and all(r == n for r, n in best["pairs"])
    worst = kernel_ranking.scores(-np.log(measured), measured)
    assert worst["spearman"] == pytest.approx(-1.0) and worst["top1"] == 0.25
    assert all(r == 0 for r, _ in worst["pairs"])


def test_a_run_timed_twice_in_the_same_order_ranks_itself_perfectly():
    raw = {"a": [1.0, 1.1, 1.0], "b": [2.0, 2.1], "c": [3.0, 3.3], "d": [4.0, 4.2], "e": [5.0, 5.1]}
    assert kernel_ranking.remeasured(raw) == pytest.approx(1.0)
    assert kernel_ranking.remeasured({**raw, "a": [1.0, 6.0]}) < 1.0  # its odd run is the slowest
    assert kernel_ranking.remeasured({k: raw[k] for k in "abcd"}) is None


def test_main_scores_every_model_on_the_runs_of_a_machine(tmp_path, capsys):
    rows = tmp_path / "MODELS.t.bench.jsonl"
    raw = {t: [0.1 / s, 0.1 / s] for t, s in SPEEDUPS.items() if s}
    rows.write_text(json.dumps({"kernel": "gemm", "machine": "m1", "speedups": SPEEDUPS, "raw_times": raw}) + "\n")
    out = tmp_path / "r.json"
    kernel_ranking.main([f"a={SHIPPED_MODEL}", f"b={SHIPPED_MODEL}", "--machine", "m1", "--files", str(rows),
                         "--json", str(out)])
    (run,) = json.loads(out.read_text())
    assert run["kernel"] == "gemm" and run["set"] == "bench" and run["n"] == 5  # the illegal schedule left out
    assert run["scores"]["a"] == run["scores"]["b"] and -1 <= run["scores"]["a"]["spearman"] <= 1
    assert sum(n for _, n in run["scores"]["a"]["pairs"]) == 10
    assert run["remeasured"] == pytest.approx(1.0)  # both runs of every schedule alike
    out = capsys.readouterr().out
    assert "| bench | a | 1 (5) |" in out and "| bench | runs timed again (odd against even runs) | 1 | 1.000 |" in out
    with pytest.raises(SystemExit, match="no run of measured schedules of machine m2"):
        kernel_ranking.main([f"a={SHIPPED_MODEL}", "--machine", "m2", "--files", str(rows)])
