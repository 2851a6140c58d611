"""The harness's timing policy: the checked run timed, censoring of far slower schedules, stopping when steady;
and what a censored label is downstream (store, export, loss, evaluation)."""

import numpy as np
import pytest
import torch

from loopcost.costmodel.data import Dataset, load
from loopcost.costmodel.train import _loss, rank_loss
from loopcost.database.store import Row, Store
from loopcost.errors import LoopcostError
from loopcost.runner import LocalRunner, Timing
from loopcost.transforms.schedule import Schedule

from .programs import matvec

#: on a tiny matvec, the parallel schedules pay for starting threads: their first run is far slower
TEXTS = ["", "U(j,2)", "P(i)", "P(i) U(j,2)", "I(i,j)", "P(j)"]


def _measure(timing: Timing):
    p = matvec(48, 40)
    states = []
    for t in TEXTS:
        try:
            states.append(Schedule.parse(t).apply(p))
        except LoopcostError:  # an illegal one is simply not in the harness
            continue
    ms = LocalRunner().measure(states, timing=timing)
    assert all(m.verified for m in ms), [m.error for m in ms]
    return ms


def test_a_variant_is_censored_exactly_when_its_first_two_runs_are_that_much_slower_than_the_reference():
    factor = 1.01
    ms = _measure(Timing(min_runs=3, warmup=0, max_runs=3, timed_check=True, censor=factor))
    for m in ms:  # three runs unless the first two were both that much slower
        assert m.censored == (min(m.times[:2]) > factor * min(m.reference_times)), (m.times, m.reference_times)
        assert len(m.times) == (2 if m.censored else 3)
    assert any(m.censored for m in ms), [(m.times, m.reference_times) for m in ms]
    assert all(m.speedup is not None for m in ms)  # a censored speedup is a bound, still a number
    loose = _measure(Timing(min_runs=3, warmup=0, max_runs=3, timed_check=True, censor=1e6))
    assert not any(m.censored for m in loose) and all(len(m.times) == 3 for m in loose)


def _settled(times, steady: float, min_time: float) -> bool:
    return len(times) >= 2 and sum(times) >= min_time and max(times) - min(times) <= steady * min(times)


def test_timing_stops_at_the_first_run_where_the_runs_agree():
    steady, min_time = 0.5, 1e-6
    ms = _measure(Timing(min_runs=6, warmup=0, max_runs=6, min_time=min_time, timed_check=True, steady=steady))
    for m in ms:
        n = len(m.times)
        assert not any(_settled(m.times[:k], steady, min_time) for k in range(2, n)), m.times
        assert n == 6 or _settled(m.times, steady, min_time), m.times
    assert any(len(m.times) < 6 for m in ms)
    assert all(len(m.times) == 6 for m in _measure(Timing(min_runs=6, warmup=0, max_runs=6, timed_check=True)))


def test_timing_settings_that_contradict_each_other_are_refused():
    with pytest.raises(LoopcostError, match="no warm-up"):
        Timing(warmup=1, timed_check=True)
    with pytest.raises(LoopcostError, match="censoring"):
        Timing(warmup=0, censor=3.0)
    with pytest.raises(LoopcostError, match="censoring"):
        Timing(warmup=0, timed_check=True, censor=0.5)


def test_a_censored_label_is_stored_kept_out_of_the_noise_and_exported(tmp_path):
    from loopcost.costmodel.data import export

    from .programs import two_maps

    p = two_maps()
    db = tmp_path / "c.db"
    with Store(db) as store:
        rows = [Row("", [], True, None, (1.0, 1.0), (1.0, 1.0)),
                Row("P(i)", Schedule.parse("P(i)").to_json(), True, None, (5.0,), (1.0, 1.0), censored=True)]
        pid = store.add_batch(program_json=p.to_json(), program_hash=p.content_hash(), seed=0, idx=0, machine=1,
                              baseline_times=(1.0, 1.0), rows=rows, now=0.0, seconds={"compile": 2.0, "timed": 1.0})
        store.add_remeasured(pid, 1, [Row("P(i)", [], True, None, (4.0, 4.0), (1.0,)),
                                      Row("", [], True, None, (1.0,), (1.0,))], 1.0, "noise")
        labels = sorted(store.labels(), key=lambda r: r[2])
        assert [(text, sp, bool(c)) for _, _, text, sp, c in labels] == [("", 1.0, False), ("P(i)", 0.2, True)]
        assert store.noise_pairs() == [(1.0, 1.0)]  # the censored label has no noise pair
        assert store.counts()["censored"] == 1
        assert store.stage_seconds() == ({"compile": 2.0, "timed": 1.0}, 2)
    export(str(db), str(tmp_path / "c.npz"))
    data = load(tmp_path / "c.npz")
    assert list(data.censored) == [False, True] and len(data.timed()) == 1 and data.timed().schedules == [""]
    before = dict(np.load(tmp_path / "c.npz"))  # an export from before censoring has no such array
    before.pop("censored")
    np.savez(tmp_path / "old.npz", **before)
    old = load(tmp_path / "old.npz")
    assert len(old) == 2 and not old.censored.any() and len(old.timed()) == 2


def test_a_censored_target_costs_only_a_prediction_above_its_bound():
    target = torch.tensor([0.2, 0.2])
    cens = torch.tensor([True, False])
    below, above = torch.log(torch.tensor([0.1, 0.1])), torch.log(torch.tensor([0.4, 0.4]))
    for kind in ("mape", "log_mse"):
        lo = [_loss(below[i:i + 1], target[i:i + 1], kind, cens[i:i + 1]).item() for i in range(2)]
        hi = [_loss(above[i:i + 1], target[i:i + 1], kind, cens[i:i + 1]).item() for i in range(2)]
        assert lo[0] == 0.0 and lo[1] > 0 and hi[0] > 0 and hi[0] == pytest.approx(hi[1])


def test_a_censored_speedup_is_never_the_faster_of_a_ranked_pair():
    out = torch.tensor([0.0, 1.0, 2.0])          # predicts the opposite of the measured order
    target = torch.tensor([0.9, 0.5, 0.1])
    prog = torch.tensor([0, 0, 0])
    full = rank_loss(out, target, prog)
    # with record 0 censored, its pairs where it would be faster are dropped: only (1 faster than 2) is left
    partial = rank_loss(out, target, prog, censored=torch.tensor([True, False, False]))
    assert partial.item() == pytest.approx(torch.nn.functional.softplus(torch.tensor(1.0)).item())
    assert full.item() > partial.item()
    assert rank_loss(out, target, prog, censored=torch.tensor([True, True, False])).item() == 0.0


def test_a_dataset_selects_its_timed_records():
    d = Dataset([None] * 3, np.array([1.0, 0.1, 2.0]), np.array([0, 0, 1]), np.array([0, 0, 0]), ["a", "b", "c"],
                [0, 1], np.array([False, True, False]))
    assert d.timed().schedules == ["a", "c"] and d.subset("train").censored.tolist() == [False, True, False]


@pytest.mark.parametrize("flags, message", [
    (["--censor", "0.5"], "must be 0 (time every schedule) or above 1"),
    (["--legacy-timing", "--censor", "3"], "--legacy-timing neither censors"),
    (["--steady", "-1"], "must be at least 0"),
])
def test_contradictory_build_timing_flags_are_refused_before_any_work(tmp_path, capsys, flags, message):
    from loopcost.cli import main

    try:
        code = main(["dataset", "build", "--db", str(tmp_path / "x.db"), "--programs", "1", *flags])
    except SystemExit as e:  # refused by the argument parser
        code = e.code
    assert code == 2
    assert message in capsys.readouterr().err and not (tmp_path / "x.db").exists()
