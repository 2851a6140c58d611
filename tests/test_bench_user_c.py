"""bench/user_c.py: every file of bench/user_c is read with its case's arguments, and one case runs end to end."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopcost.frontend import load_c

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import user_c  # noqa: E402


@pytest.mark.parametrize("case", list(user_c.CASES))
def test_every_case_reads_with_its_arguments(case):
    file, _, args = user_c.CASES[case]
    flags = list(zip(args[::2], args[1::2], strict=True))
    pairs = dict(flags)
    params = {v.split("=")[0]: int(v.split("=")[1]) for f, v in flags if f == "--param"}
    k = load_c(user_c.FILES / file, function=pairs.get("--function"), params=params)
    assert k.program.computations() and k.source.name == pairs.get("--function", k.source.name)


@pytest.mark.slow
def test_a_case_runs_the_command_and_reports_its_drop_in_check(tmp_path):
    out = tmp_path / "u.md"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "user_c.py"), "--files", "dot", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (row,) = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert row["rc"] == 0 and row["verified"] and row["tried"]
    assert row["written"] is None or row["speedup_over_original"] >= 1.0  # never slower than the original
    assert "| dot | *out |" in out.read_text()


def test_the_table_reports_a_kept_original_and_a_check_that_never_ran():
    base = {"exercises": "x", "search_time_s": 3.0, "measurements": 4, "reused": 0, "tried": [{}]}
    rows = [{**base, "case": "kept", "written": None, "verified": True, "speedup_over_original": None,
             "original_median_s": 0.002},
            {**base, "case": "broken", "written": None, "verified": False, "speedup_over_original": None,
             "original_median_s": None}]
    text = user_c.table(rows, "# h")
    assert "| kept | x | the original (no candidate beat it) | not verified | 2 |" in text
    assert "| broken | x | the original (no candidate beat it) | not verified |  |" in text
