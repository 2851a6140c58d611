"""bench/search_compute.py: the default search timed without measuring, trees side by side."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_two_trees_search_the_same_schedules_and_the_table_compares_them(tmp_path):
    out = tmp_path / "t.md"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "search_compute.py"), "--kernels", "jacobi-1d",
                        "--size", "small", "--trees", str(ROOT), str(ROOT), "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(row["kernel"] == "jacobi-1d" and row["seconds"] > 0 for row in rows)
    # the stand-in runner answered the default budget of 48, and both runs measured the same schedules
    assert rows[0]["measured"] == rows[1]["measured"] == 48 and rows[0]["explored"] == rows[1]["explored"]
    assert rows[0]["scored"] > rows[0]["measured"]
    table = out.read_text()
    assert "| jacobi-1d |" in table and "| yes |" in table and "| **all** |" in table
