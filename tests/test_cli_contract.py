"""The command line's contract: exit 0-3 (README, ``loopcost --help``), one line of reason, no traceback
without --debug, options checked before any work, files checked for what they are."""

import json
import pickle
import subprocess
import sys

import pytest
import torch

from loopcost import cli
from loopcost.errors import LoopcostError


def run(*args):
    return subprocess.run([sys.executable, "-m", "loopcost.cli", *args], capture_output=True, text=True,
                          timeout=120)


def one_line_error(stderr: str) -> bool:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return len(lines) == 1 and "error" in lines[0] and "Traceback" not in stderr


@pytest.mark.parametrize("args", [
    ["optimize", "gemm", "--budget", "-3"], ["optimize", "gemm", "--budget", "0"],
    ["optimize", "gemm", "--top-k", "-2"], ["optimize", "gemm", "--measure-budget", "0"],
    ["optimize", "gemm", "--batch", "x"], ["run", "gemm", "--runs", "0"], ["run", "gemm", "--timeout", "0"],
    ["run", "gemm", "--timeout", "nan"], ["run", "gemm", "--warmup", "-1"], ["run", "gemm", "--seed", "-1"],
    ["dataset", "build", "--db", "x.db", "--programs", "0"],
    ["dataset", "build", "--db", "x.db", "--programs", "1", "--staged-share", "1.5"],
    ["train", "--data", "missing.npz", "--out", "m.pt"], ["train", "--lr", "-1", "--store"],
    ["evaluate", "--data", "missing.npz"], ["evaluate", "--model", "."],
    ["ensemble", "missing.pt", "--out", "m.pt"], ["optimize", "gemm", "--model", "missing.pt"],
    ["dataset", "pack", "--db", "pyproject.toml"],  # no --out: never the package's own data folder
])
def test_bad_options_are_refused_at_parse_time_in_one_line(args, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "argument" in err, err


def test_help_states_the_exit_codes():
    text = cli.parser().format_help()
    for code in ("0  done", "1  it ran", "2  the input", "3  the environment"):
        assert code in text


@pytest.mark.parametrize("content", [b"", b"not a model at all", b"PK\x03\x04 truncated zip"])
def test_a_model_file_that_is_not_a_model_is_named_in_one_line(tmp_path, content):
    f = tmp_path / "model.pt"
    f.write_bytes(content)
    r = run("optimize", "gemm", "--model", str(f), "--no-measure")
    assert r.returncode == 2 and one_line_error(r.stderr) and str(f) in r.stderr, r.stderr


def test_a_truncated_real_model_is_refused(tmp_path):
    from loopcost.paths import SHIPPED_MODEL

    f = tmp_path / "model.pt"
    f.write_bytes(SHIPPED_MODEL.read_bytes()[:5000])
    r = run("optimize", "gemm", "--model", str(f), "--no-measure")
    assert r.returncode == 2 and one_line_error(r.stderr) and str(f) in r.stderr, r.stderr


def test_internal_errors_exit_3_in_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    def broken(a):
        raise RuntimeError("something deep\nwith detail")

    monkeypatch.setattr(cli, "cmd_kernels", broken)
    assert cli.main(["kernels"]) == 3
    err = capsys.readouterr().err
    assert one_line_error(err) and "internal error: RuntimeError: something deep" in err and "--debug" in err
    with pytest.raises(RuntimeError):
        cli.main(["--debug", "kernels"])
    with pytest.raises(RuntimeError):
        cli.main(["kernels", "--debug"])


@pytest.mark.parametrize("exc, code", [(LoopcostError("bad input"), 2), (FileNotFoundError("no file x"), 2),
                                       (OSError(28, "No space left on device"), 3),
                                       (__import__("sqlite3").OperationalError("database is locked"), 3)])
def test_failures_map_to_exit_codes(exc, code, monkeypatch, capsys):
    def failing(a):
        raise exc

    monkeypatch.setattr(cli, "cmd_kernels", failing)
    assert cli.main(["kernels"]) == code
    assert one_line_error(capsys.readouterr().err)


def test_sizes_that_make_a_loop_empty_are_refused(tmp_path):
    c = tmp_path / "k.c"
    c.write_text("void k(int n, double A[100]) {\n  for (int i = 0; i < n; i++)\n    A[i] = A[i] * 2.0;\n}\n")
    r = run("run", str(c), "--param", "n=-5")
    assert r.returncode == 2 and one_line_error(r.stderr) and "never run" in r.stderr and "n=-5" in r.stderr
    assert run("show", str(c), "--param", "n=10").returncode == 0


def test_fine_tuning_from_a_member_the_model_does_not_have_is_refused(tmp_path):
    from loopcost.ir.state import ProgramState
    from loopcost.kernels import KERNELS
    from loopcost.runner import LocalRunner, Measurement
    from loopcost.runner.recorded import record

    fp, info = LocalRunner().machine()
    db = tmp_path / "m.sqlite"
    record(db, ProgramState.initial(KERNELS["gemm"].program("small")),
           [Measurement("P(i)", (0.1,), (0.2,), True, fingerprint=fp, machine=info)], "test")
    r = run("train", "--store", str(db), "--epochs", "1", "--init-member", "7", "--out", str(tmp_path / "m.pt"))
    assert r.returncode == 2 and "--init-member 7" in r.stderr and "network(s)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "m.pt").exists()


def test_a_checkpoint_that_would_run_code_is_refused_and_runs_nothing(tmp_path):
    from loopcost.costmodel.train import _read_checkpoint

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    ckpt = tmp_path / "m.pt.ckpt"
    with ckpt.open("wb") as f:
        pickle.dump({"meta": json.dumps({}), "net": Payload()}, f, protocol=2)
    with pytest.raises(LoopcostError, match="not a loopcost training checkpoint"):
        _read_checkpoint(ckpt)
    assert not marker.exists()
    torch.save({"meta": json.dumps({"config": {}}), "net": {"w": torch.zeros(2)}}, ckpt)
    assert _read_checkpoint(ckpt)["net"]["w"].shape == (2,)


def test_a_run_that_times_out_exits_1_with_its_reason():
    r = run("run", "gemm", "--size", "small", "--timeout", "0.0001", "--store", "none")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("loopcost: not verified:") and "timeout" in r.stderr, r.stderr


def _fake_cc(path, on_compile: str) -> str:
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "fakecc 1.0"; exit 0; fi\n{on_compile}\n')
    path.chmod(0o755)
    return str(path)


def test_a_compiler_that_crashes_or_hangs_is_the_environments_failure(tmp_path, monkeypatch, capsys):
    from loopcost.codegen import compiler

    crash = _fake_cc(tmp_path / "crash-cc", "echo 'fakecc: about to die' >&2; kill -SEGV $$")
    assert cli.main(["run", "gemm", "--size", "small", "--cc", crash, "--store", "none"]) == 3
    err = capsys.readouterr().err
    assert "compiler crashed" in err and "about to die" in err and "Traceback" not in err, err
    monkeypatch.setattr(compiler, "COMPILE_TIMEOUT", 1.0)
    hang = _fake_cc(tmp_path / "hang-cc", "sleep 30")
    assert cli.main(["run", "gemm", "--size", "small", "--cc", hang, "--store", "none"]) == 3
    err = capsys.readouterr().err
    assert "ran for more than 1 s" in err and one_line_error(err), err
