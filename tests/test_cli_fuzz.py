"""The command line under fuzzing: argument lists built from the parser itself (valid, boundary and junk
values of every option; files that are empty, truncated, random bytes, of another kind, a SQLite file of
another schema). Every case must exit 0-3 within a time bound, print no traceback, say why in one line
on failure, and leave the machine's store readable. Cases that ever failed are replayed first
(``cli_fuzz_replay.json``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopcost import cli
from loopcost.paths import SHIPPED_MODEL

REPLAY = Path(__file__).with_name("cli_fuzz_replay.json")
#: seconds a case may take (a small kernel compiled, searched and measured takes a few)
BOUND = 60
#: how often each command is drawn: the ones that compile and measure, or read the shipped dataset, less often
WEIGHTS = {"optimize": 3, "dataset build": 2, "train": 3, "evaluate": 3, "dataset stats": 2}
CASES = int(os.environ.get("LOOPCOST_FUZZ_CASES", "1000"))


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> dict[str, str]:
    """Files a user might give: real ones, and ones that are not what they claim."""
    d = tmp_path_factory.mktemp("fuzz")
    rng = random.Random(0)
    (d / "empty").write_bytes(b"")
    (d / "random.bin").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    (d / "truncated.pt").write_bytes(SHIPPED_MODEL.read_bytes()[:3000])
    (d / "text.txt").write_text("hello\n")
    (d / "k.c").write_text("void k(int n, double A[100]) {\n  for (int i = 0; i < n; i++)\n"
                           "    A[i] = A[i] * 2.0;\n}\n")
    (d / "bad.c").write_text("void k(int n) { for (;;) }\n")
    (d / "prog.json").write_text(json.dumps(cli.load_kernel("gemm", "small")[0].to_json()))
    (d / "bad.json").write_text('{"name": 3}')
    (d / "schedule.json").write_text('"P(i)"')
    other = sqlite3.connect(d / "other.sqlite")
    other.execute("CREATE TABLE t (x INTEGER)")
    other.commit()
    other.close()
    (d / "dir").mkdir()
    return {"empty": str(d / "empty"), "random": str(d / "random.bin"), "truncated": str(d / "truncated.pt"),
            "text": str(d / "text.txt"), "model": str(SHIPPED_MODEL), "c": str(d / "k.c"), "badc": str(d / "bad.c"),
            "json": str(d / "prog.json"), "badjson": str(d / "bad.json"), "sqlite": str(d / "other.sqlite"),
            "dir": str(d / "dir"), "missing": str(d / "missing"), "new": str(d / "new"),
            "schedule": str(d / "schedule.json")}


def commands() -> dict[str, object]:
    """Every command's own parser, by its name (``dataset build``)."""
    return {sp.prog.removeprefix("loopcost "): sp for sp in cli._subparsers(cli.parser())}


def _kind(action) -> str:
    t = action.type
    if t is cli.existing_file:
        return "file"
    if t is cli.fraction:
        return "fraction"
    name = getattr(t, "__qualname__", "")
    if name.startswith(("at_least", "above")) or t in (int, float):
        return "number"
    return "text"


TEXT = {"--schedule": ["", "P(i)", "T2(i,j,8,8) P(i_t)", "Q(z)", "U(k,", "@{schedule}", "@{missing}"],
        "--param": ["n=10", "n=-5", "n", "=3", "n=x"], "define": ["N=10", "X", "=", "N=1e3"],
        "--function": ["k", "nosuch"], "--families": ["stencil", "zzz", ""], "--cflags": ["-O2", "--no-such-flag"],
        "--cc": ["cc", "/no/such/cc"], "--cluster": ["none", "tls://127.0.0.1:1"], "--field": ["a=b", "novalue"],
        "--command": ["x"], "--size": ["small", "huge"], "--search": ["beam", "random", "mcts", "adaptive", "zzz"],
        "--store": ["none", "{new}.sqlite", "{sqlite}", "{random}", "{dir}"],
        "--emit-c": ["-", "{new}.c", "{dir}"], "--out": ["{new}.out", "{dir}", "{missing}/x/y"],
        "--plots": ["{new}_plots"], "--db": ["{new}.sqlite", "{sqlite}", "{random}", "{empty}"]}
FILES = ["{empty}", "{random}", "{truncated}", "{text}", "{model}", "{sqlite}", "{dir}", "{missing}", "{json}"]
NUMBERS = {"valid": ["1", "2"], "boundary": ["0", "-1", "1e999", "nan"], "junk": ["x", "", "1.5.2", "inf"]}
KERNELS = ["gemm", "jacobi-1d", "gemmm", "{c}", "{badc}", "{json}", "{badjson}", "{random}", "{dir}", "{missing}"]


@st.composite
def argv(draw) -> list[str]:
    """One command line: a weighted command, then each of its options present or not, valid or not."""
    table = commands()
    names = sorted(table)
    name = draw(st.sampled_from([n for n in names for _ in range(WEIGHTS.get(n, 4))]))
    out = name.split()
    sub = table[name]
    small = name in ("run", "optimize", "show")
    for action in sub._actions:
        if isinstance(action, cli.argparse._HelpAction) or action.dest == "debug":
            continue
        if not action.option_strings:  # positional: the kernel, or the models of an ensemble
            if action.dest == "kernel":
                out.append(draw(st.sampled_from(KERNELS)))
            else:
                out += draw(st.lists(st.sampled_from(FILES), min_size=1, max_size=2))
            continue
        option = max(action.option_strings, key=len)
        if not (action.required or draw(st.integers(0, 2)) == 0):
            continue
        if action.nargs == 0:  # a flag
            out.append(option if not isinstance(action, cli.argparse.BooleanOptionalAction) else
                       draw(st.sampled_from(action.option_strings)))
            continue
        kind = _kind(action)
        if option in TEXT or action.dest in TEXT:
            value = draw(st.sampled_from(TEXT.get(option) or TEXT[action.dest]))
        elif action.choices:
            value = draw(st.sampled_from([*map(str, action.choices), "zzz"]))
        elif kind == "file":
            value = draw(st.sampled_from(FILES))
        elif kind == "number":
            value = draw(st.sampled_from(NUMBERS[draw(st.sampled_from(["valid", "valid", "boundary", "junk"]))]))
        elif kind == "fraction":
            value = draw(st.sampled_from(["0", "0.5", "1", "1.5", "-0.1", "x"]))
        else:
            value = draw(st.sampled_from(["x", "", "1"]))
        if action.nargs == "?" and draw(st.booleans()):
            out.append(option)
        else:
            out += [option, value]
    if name in ("train", "evaluate") and "--data" not in out and "--store" not in out:
        out += ["--data", draw(st.sampled_from(FILES))]  # the shipped dataset: minutes of work, out of bound
    if small and "--size" not in out:
        out += ["--size", "small"]  # a benchmark-size search or run takes minutes: valid, but out of bound
    if name == "optimize" and "--search" in out and out[out.index("--search") + 1] == "exec":
        out[out.index("--search") + 1] = "beam"
    if name == "optimize" and "--measure-budget" not in out:
        out += ["--measure-budget", "2"]  # the default search measures 48 schedules: valid, but slow
    return out


class _Hang(Exception):
    pass


def run_case(args: list[str], pool: dict[str, str]) -> tuple[int, str]:
    """(exit code, stderr) of one command line run in this process, within ``BOUND`` seconds."""
    args = [a.format(**pool) for a in args]
    err, out = io.StringIO(), io.StringIO()

    def hang(*_):
        raise _Hang()

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(BOUND)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = cli.main(args)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except _Hang:
        pytest.fail(f"no exit within {BOUND} s: loopcost {' '.join(args)}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, err.getvalue()


def check(args: list[str], pool: dict[str, str]) -> None:
    code, err = run_case(args, pool)
    where = f"loopcost {' '.join(a.format(**pool) for a in args)}"
    assert code in (0, 1, 2, 3), f"exit {code}: {where}\n{err}"
    assert "Traceback" not in err, f"{where}\n{err}"
    if code in (2, 3):
        said = [line for line in err.splitlines() if line.startswith("loopcost")]
        assert said and ("error" in said[-1]) and len(said[-1]) < 2000, f"{where}\n{err}"
    if code == 3:  # the environment, or a bug: only the environments the pool builds are allowed
        assert "internal error" not in err, f"{where}\n{err}"


def package_data() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in SHIPPED_MODEL.parent.iterdir() if p.is_file()}


def store_is_whole() -> None:
    store = Path(os.environ["LOOPCOST_CACHE_DIR"]) / "measurements.sqlite"
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_cases_that_failed_once_pass(pool):
    for args in json.loads(REPLAY.read_text()):
        check(args, pool)


@pytest.mark.slow
def test_the_command_line_under_fuzzing(pool):
    @settings(max_examples=CASES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(argv())
    def case(args):
        check(args, pool)

    shipped = package_data()
    case()
    store_is_whole()
    assert package_data() == shipped  # the shipped model and dataset are never written


def test_every_command_is_fuzzed():
    assert len(commands()) >= 13 and {"run", "optimize", "dataset build", "store stats"} <= set(commands())
