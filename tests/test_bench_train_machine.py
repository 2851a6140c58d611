"""bench/train_machine.py: a CPU kind's recipe, pretrained on another dataset, trained and scored, resumable."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from loopcost.database.store import Store
from loopcost.dataset.build import build
from loopcost.dataset.tasks import BuildConfig

from .test_dataset import TINY

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "train_machine.py"


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_pretraining_trains_a_base_network_first_and_both_members_start_from_it(tmp_path):
    # 10 programs of seed 12 as generator version 2 draws them: 4 train, 4 val, 2 test (version 3's: none in test)
    tiny = replace(TINY, version=2, families=None)  # None: the version's families
    db = tmp_path / "d.db"
    build(str(db), programs=10, cfg=BuildConfig(seed=12, schedules=4, generator=tiny), workers=1, progress=False,
          noise_fraction=0.0)
    heldout = tmp_path / "h.db"  # other programs: the ones the training database also holds are not scored
    for seed, n in ((13, 3), (14, 2)):  # two builds: each is scored apart too
        build(str(heldout), programs=n, cfg=BuildConfig(seed=seed, schedules=4, generator=tiny), workers=1,
              progress=False, noise_fraction=0.0)
    work = tmp_path / "w"
    # a benchmark run of gemm's schedules measured on this database's machine, for the models to rank
    (machine,) = Store(str(db)).machines()
    runs = tmp_path / "MODELS.t.bench.jsonl"
    speedups = {"": 1.0, "P(i)": 1.9, "U(k,4)": 1.1, "T2(i,j,32,32)": 1.4, "P(i) U(k,4)": 2.2}
    runs.write_text(json.dumps({"kernel": "gemm", "machine": machine["fingerprint"], "speedups": speedups}) + "\n")
    # two stages: all of the database, then the builds of seed 12 only (here the same programs)
    args = ["--dataset", db, "--heldout", heldout, "--pretrain", db, "--pretrain", f"{db}@12", "--work", work,
            "--seeds", "0", "--archs", "transformer", "--epoch-scale", "0.03",
            "--pretrain-epochs", "67", "--dropout", "0.2", "--kernel-runs", runs, "--out", tmp_path / "table.md"]
    r = _run(*args)
    assert r.returncode == 0, r.stderr
    assert all(f"training transformer-s0-{n}.pt" in r.stderr for n in ("base", "base1", "mape", "rank"))
    first, base = work / "transformer-s0-base.pt", work / "transformer-s0-base1.pt"
    assert (work / "pretrain.npz").exists() and (work / "pretrain1.npz").exists() and base.exists()
    card = json.loads((work / "transformer-s0-base.pt.card.json").read_text())
    assert card["config"]["init"] == "" and card["config"]["loss"] == "mape"
    assert card["config"]["epochs"] == 2  # --pretrain-epochs 67 x 0.03
    # without --threads, a network training alone takes every core, the pair's two (--jobs 2) share them
    cores = os.cpu_count() or 1
    assert card["config"]["threads"] == cores
    card1 = json.loads((work / "transformer-s0-base1.pt.card.json").read_text())
    assert card1["config"]["init"] == str(first) and card1["data"] == str(work / "pretrain1.npz")
    assert card1["initialized_from"]["data"] == str(work / "pretrain.npz")
    for member, rank in (("mape", 0.0), ("rank", 1.0)):
        tuned = json.loads((work / f"transformer-s0-{member}.pt.card.json").read_text())
        assert tuned["config"]["init"] == str(base) and tuned["config"]["rank_weight"] == rank
        assert tuned["config"]["epochs"] == 1  # the members' epochs are the recipe's (42 and 45 x 0.03)
        assert tuned["config"]["threads"] == max(1, cores // 2)
        assert tuned["config"]["dropout"] == 0.2 and card["config"]["dropout"] == 0.05
        # the card says what the network started from: the last stage's base, and what that one started from
        assert tuned["initialized_from"]["model"] == str(base)
        assert tuned["initialized_from"]["data"] == str(work / "pretrain1.npz") == card1["data"]
        assert tuned["initialized_from"]["initialized_from"]["model"] == str(first)
    pair = json.loads((work / "transformer-s0.pt.card.json").read_text())
    assert all(m["initialized_from"]["model"] == str(base) for m in pair["members"])
    rows = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines()]
    table = (tmp_path / "table.md").read_text()
    assert "| transformer-s0 |" in table and "mean ± sd" not in table  # one seed: no spread row
    assert f"measured on this machine ({machine['fingerprint']})" in table
    assert "| bench | transformer-s0 | 1 (5) |" in table
    scored = {r["name"]: r for r in rows if r["model"] == str(work / "transformer-s0.pt")}
    assert set(scored) == {"val", "test", "unseen", "unseen@13", "unseen@14"}
    assert scored["unseen@13"]["n"] + scored["unseen@14"]["n"] == scored["unseen"]["n"]
    assert "| model | val MAPE % |" in table and "unseen@14 top-1 |" in table
    # a rerun finds every network trained and every evaluation made: it trains and evaluates nothing
    again = _run(*args)
    assert again.returncode == 0 and "training" not in again.stderr
    assert len((work / "results.jsonl").read_text().splitlines()) == len(rows)
