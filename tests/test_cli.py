import json
import os
import subprocess
import sys

import pytest

from loopcost.cli import main


def loopcost(*args, env=None):
    """Run the real command in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "loopcost.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_run_gemm_small_json():
    r = loopcost("run", "gemm", "--size", "small", "--json", "--runs", "3")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verified"] is True and out["kernel"] == "gemm" and out["schedule"] == ""
    assert len(out["times_s"]) == 3 and all(t > 0 for t in out["times_s"])
    assert out["median_s"] == sorted(out["times_s"])[1]
    assert out["baseline_median_s"] > 0 and out["speedup"] == pytest.approx(
        out["baseline_median_s"] / out["median_s"])


def test_kernels_lists_library(capsys):
    assert main(["kernels"]) == 0
    assert "gemm" in capsys.readouterr().out


def test_show_prints_c_and_json(capsys):
    assert main(["show", "gemm"]) == 0
    assert "void gemm(" in capsys.readouterr().out
    assert main(["show", "gemm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "gemm"


DSL_OK = """
from loopcost import ProgramBuilder
def build(size):
    n = 8 if size == "small" else 64
    p = ProgramBuilder("scale")
    A, B = p.input("A", (n,)), p.output("B", (n,))
    with p.loop("i", 0, n) as i:
        B[i] = A[i] * 3.0
    return p.build()
"""

NON_AFFINE = """
from loopcost import ProgramBuilder
p = ProgramBuilder("bad")
A, B = p.input("A", (64,)), p.output("B", (8,))
with p.loop("i", 0, 8) as i:
    B[i] = A[i * i]
program = p.build()
"""

OOB = DSL_OK.replace("A[i] * 3.0", "A[i + 1] * 3.0")


def test_dsl_file_and_json_file_run(tmp_path):
    f = tmp_path / "scale.py"
    f.write_text(DSL_OK)
    r = loopcost("run", str(f), "--json", "--runs", "1")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verified"]
    j = tmp_path / "scale.json"
    j.write_text(loopcost("show", str(f), "--json").stdout)
    r = loopcost("run", str(j), "--json", "--runs", "1")
    assert r.returncode == 0 and json.loads(r.stdout)["program"] == "scale"


@pytest.mark.parametrize("name, content, message", [
    ("bad.py", NON_AFFINE, "bad.py:6: (i) * (i) multiplies two iterators"),
    ("oob.py", OOB, "outside shape"),
    ("syntax.py", "x = 1\ndef build(:\n", "syntax.py:2: SyntaxError"),
    ("nothing.py", "x = 1\n", "defines neither build"),
    ("broken.json", '{"name": "x", ', "broken.json:1:"),
    ("wrong.json", '{"name": "x", "buffers": [], "body": []}', "no computation"),
])
def test_bad_kernel_files_give_one_clear_error(tmp_path, name, content, message):
    f = tmp_path / name
    f.write_text(content)
    r = loopcost("run", str(f))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("loopcost: error:") and message.split(":")[-1].strip() in r.stderr, r.stderr
    if name == "bad.py":
        assert "bad.py:6:" in r.stderr


def test_unknown_kernel_missing_compiler_and_compile_error():
    r = loopcost("run", "gemmm")
    assert r.returncode == 2 and "did you mean 'gemm'" in r.stderr
    r = loopcost("run", "gemm", "--cc", "/no/such/cc")  # the machine lacks a compiler: the environment, exit 3
    assert r.returncode == 3 and "not found" in r.stderr and "Traceback" not in r.stderr
    r = loopcost("run", "gemm", "--cflags", "-O3 --no-such-flag")
    assert r.returncode == 2 and "no-such-flag" in r.stderr and "Traceback" not in r.stderr


def test_generate_draws_only_the_families_asked_for():
    r = loopcost("generate", "--programs", "2", "--seed", "3", "--families", "iterated")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("computations") == 2
    r = loopcost("generate", "--programs", "1", "--families", "iterated,stensil")
    assert r.returncode == 2 and "['stensil']" in r.stderr and "Traceback" not in r.stderr


def test_run_and_show_with_a_schedule(tmp_path):
    r = loopcost("run", "gemm", "--schedule", "T2(i,j,8,16) P(i_t)", "--json", "--runs", "1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verified"] and out["schedule"] == "T2(i,j,8,16) P(i_t)"
    r = loopcost("show", "gemm", "--schedule", "T2(i,j,8,16) P(i_t)")
    assert "#pragma omp parallel for" in r.stdout and "lc_min" in r.stdout
    r = loopcost("show", "gemm", "--schedule", "F(S0,S1,1) T3(i,j_1,k,8,16,8) U(k,4)", "--loops")
    assert "S0: i > j\nS1: i_t > j_1_t > k_t > i > j_1 > k [unroll(4)]" in r.stdout, r.stdout
    f = tmp_path / "s.json"
    f.write_text(json.dumps([{"transform": "parallelize", "loop": "i"}]))
    r = loopcost("show", "gemm", "--schedule", f"@{f}")
    assert r.returncode == 0 and "#pragma omp parallel for" in r.stdout


def test_illegal_or_malformed_schedules_are_refused_clearly():
    r = loopcost("run", "gemm", "--schedule", "P(k)")
    assert r.returncode == 2 and "reduction of S1" in r.stderr and "Traceback" not in r.stderr
    r = loopcost("run", "gemm", "--schedule", "Q(i)")
    assert r.returncode == 2 and "unknown transformation 'Q'" in r.stderr
    r = loopcost("run", "gemm", "--schedule", "I(i,zz)")
    assert r.returncode == 2 and "no loop 'zz'" in r.stderr


def test_optimize_by_measuring_and_emit_c(tmp_path):
    f = tmp_path / "scale.py"
    f.write_text(DSL_OK)
    out_c = tmp_path / "opt.c"
    r = loopcost("optimize", str(f), "--search", "exec", "--budget", "1", "--json", "--emit-c", str(out_c))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("kernel", "schedule", "predicted_speedup", "measured_speedup", "verified", "search_time_s",
                "candidates_scored"):
        assert key in out
    assert out["verified"] and out["measured_speedup"] > 0 and out["candidates_scored"] > 1
    assert "void scale(" in out_c.read_text()
    r = loopcost("optimize", str(f), "--model", str(tmp_path / "none.pt"))
    assert r.returncode == 2 and "no such file" in r.stderr and "--model" in r.stderr


def test_the_cached_export_of_a_database_follows_the_feature_layout_and_its_contents(tmp_path, monkeypatch):
    from pathlib import Path

    import loopcost.costmodel.data as data
    from loopcost.dataset.shipped import cached_export
    from loopcost.features import layout

    exports = []
    monkeypatch.setenv("LOOPCOST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(data, "export", lambda db, out, bar: (exports.append(out), Path(out).write_bytes(b"x")))
    db, other = tmp_path / "shipped.sqlite", tmp_path / "other" / "shipped.sqlite"
    db.write_bytes(b"programs")
    first = cached_export(db)
    assert cached_export(db) == first and len(exports) == 1  # exported once
    Path(f"{db}-wal").write_bytes(b"more programs")  # a build grew it (its log not yet checkpointed): again
    second = cached_export(db)
    assert second != first and len(exports) == 2
    other.parent.mkdir()
    other.write_bytes(b"other programs")  # another database of the same name is not taken for it
    assert cached_export(other) not in (first, second) and len(exports) == 3
    monkeypatch.setattr(layout, "VERSION", layout.VERSION + 1)
    assert cached_export(db) != second and len(exports) == 4  # a new layout: again
