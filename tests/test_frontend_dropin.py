"""What `loopcost optimize` writes for a C file: the candidates linked beside the original function, the first
that computes the same arrays and runs at least as fast, else the original function unchanged."""

import json
import re
from pathlib import Path

import pytest

from loopcost.cli import main
from loopcost.frontend import load_c
from loopcost.frontend.dropin import choose_drop_in
from loopcost.frontend.emit import emit_function, emit_original
from loopcost.frontend.linkcheck import link_check, link_checks
from loopcost.runner import Measurement
from loopcost.transforms.schedule import Schedule

C_DIR = Path(__file__).parent / "c"


def mvt():
    return load_c(C_DIR / "mvt.c", params={"n": 60})


def test_candidates_linked_in_one_harness_are_each_checked_against_the_original():
    k = mvt()
    good = [emit_function(k, Schedule.parse(s).apply(k.program), schedule=s) for s in ("", "P(i)", "I(i,j)")]
    wrong = good[0].replace("+=", "-=", 1) if "+=" in good[0] else good[0].replace(" + ", " - ", 1)
    assert wrong != good[0]
    checks = link_checks(k, [*good, wrong], runs=1)
    assert [m.verified for m in checks] == [True, True, True, False], [m.error for m in checks]
    assert all(len(m.times) == 1 and len(m.reference_times) == 1 for m in checks[:3])
    assert "differs from the original function" in checks[3].error


def test_the_original_function_written_back_unchanged_compiles_and_computes_the_same():
    k = mvt()
    text = emit_original(k, "no candidate ran faster than it")
    assert text.startswith("/* kernel_mvt, from mvt.c: the original function, unchanged by loopcost: no candidate")
    assert "lc_opt_" not in text and "void kernel_mvt(int n" in text
    check = link_check(k, text, runs=1)
    assert check.verified, check.error


class Stub:
    """A runner that times each emitted candidate of a harness as ``times`` says (by the schedule in its head
    comment; the original takes 1 s), and records which schedules each harness held."""

    def __init__(self, times: dict[str, float], wrong: tuple[str, ...] = ()):
        self.times, self.wrong, self.harnesses = times, wrong, []

    def measure_harness(self, harness, **_):
        schedules = [_schedule_of(u.source) for u in harness.units[2:2 + len(harness.labels) - 1]]
        self.harnesses.append(schedules)
        return [Measurement(label, (self.times[s],), (1.0,), s not in self.wrong,
                            "differs from the original function" if s in self.wrong else None)
                for label, s in zip(harness.labels[1:], schedules, strict=True)]


def _schedule_of(source: str) -> str:
    found = re.search(r"\* schedule: (.*)", source)
    return found.group(1).strip() if found else ""


MEASURED = [("P(i)", 3.0), ("I(i,j)", 2.0), ("", 1.0), ("U(j,2)", 0.0)]  # the last did not measure


def test_the_best_candidate_is_written_when_it_beats_the_original():
    stub = Stub({"P(i)": 0.5, "I(i,j)": 0.4, "": 0.9})
    code, report = choose_drop_in(mvt(), MEASURED, None, runner=stub)
    assert stub.harnesses == [["P(i)"]]  # one harness: nothing else needed checking
    assert report["schedule"] == "P(i)" and report["speedup_over_original"] == pytest.approx(2.0)
    assert "schedule: P(i)" in code and report["verified"]


def test_a_candidate_slower_than_the_original_is_passed_over_for_the_fastest_one_that_is_not():
    stub = Stub({"P(i)": 1.25, "I(i,j)": 0.8, "": 0.95})
    code, report = choose_drop_in(mvt(), MEASURED, None, runner=stub)
    assert stub.harnesses == [["P(i)"], ["I(i,j)", ""]]  # the unmeasured U(j,2) is not tried
    assert report["schedule"] == "I(i,j)" and report["speedup_over_original"] == pytest.approx(1.25)
    assert "schedule: I(i,j)" in code
    assert [t["schedule"] for t in report["tried"]] == ["P(i)", "I(i,j)", ""]


def test_the_original_is_written_when_every_candidate_is_slower_or_wrong():
    stub = Stub({"P(i)": 1.25, "I(i,j)": 1.1, "": 2.0}, wrong=("I(i,j)",))
    code, report = choose_drop_in(mvt(), MEASURED, None, runner=stub)
    assert report["schedule"] is None and report["verified"] and report["speedup_over_original"] is None
    assert report["original_median_s"] == report["emitted_median_s"] == 1.0  # the original, as timed beside them
    assert "the best, P(i), at 0.80x" in report["why"] and "unchanged by loopcost" in code
    assert "lc_opt_" not in code
    stub = Stub({"P(i)": 0.5, "I(i,j)": 0.5, "": 0.5}, wrong=("P(i)", "I(i,j)", ""))
    code, report = choose_drop_in(mvt(), MEASURED, None, runner=stub)
    assert report["schedule"] is None and not report["verified"] and "differs" in report["why"]
    assert "lc_opt_" not in code


def test_limit_bounds_the_candidates_linked():
    stub = Stub({"P(i)": 2.0, "I(i,j)": 2.0, "": 2.0})
    _, report = choose_drop_in(mvt(), MEASURED, None, runner=stub, limit=2)
    assert stub.harnesses == [["P(i)"], ["I(i,j)"]] and report["schedule"] is None


@pytest.mark.slow
def test_cli_writes_a_function_no_slower_than_the_original_it_was_timed_beside(tmp_path, capsys):
    out = tmp_path / "mvt_opt.c"
    assert main(["optimize", str(C_DIR / "mvt.c"), "--param", "n=200", "--search", "exec", "--budget", "1",
                 "--top-k", "2", "--emit-c", str(out), "--json"]) == 0
    check = json.loads(capsys.readouterr().out)["drop_in_check"]
    text = out.read_text()
    assert check["tried"] and check["verified"]
    if check["schedule"] is None:
        assert "unchanged by loopcost" in text and "lc_opt_" not in text
    else:
        assert check["speedup_over_original"] >= 1.0 and "lc_opt_kernel_mvt" in text
    first = check["tried"][0]  # the search's best; passed over only when it lost to the original or differed
    if check["schedule"] != first["schedule"]:
        assert not first["verified"] or first["speedup_over_original"] < 1.0
