"""Features, batching, the network, metrics and the training format."""

import json
import shutil
import sqlite3

import numpy as np
import pytest
import torch

from loopcost.costmodel.batch import collate
from loopcost.costmodel.data import export, load
from loopcost.costmodel.metrics import error_by_speedup, error_by_transformation, metrics, spearman
from loopcost.costmodel.model import ARCHS, CostModel, make_net
from loopcost.costmodel.network import RecursiveLSTM
from loopcost.costmodel.train import TrainConfig, initial_net, train, training_device
from loopcost.dataset.build import build
from loopcost.dataset.tasks import BuildConfig
from loopcost.errors import LoopcostError
from loopcost.features import layout as L
from loopcost.features.extract import FeatureLimitError, featurize
from loopcost.ir.dsl import ProgramBuilder
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.transforms.schedule import Schedule

from .test_dataset import TINY


def field(vec, name):
    return vec[L.comp_field_names().index(name)]


def test_layout_names_every_entry():
    assert len(L.comp_field_names()) == L.COMP_SIZE
    assert len(set(L.comp_field_names())) == L.COMP_SIZE


def test_features_record_the_schedule():
    p = KERNELS["gemm"].program("small")
    ft = featurize(Schedule.parse("T2(i,j,32,16) P(i_t) U(k,4)").apply(p))
    s1 = ft.comps[1]  # S1: i_t > j_t > i > j > k
    assert field(s1, "level0.parallel") == 1 and field(s1, "level0.tile_loop") == 1
    assert field(s1, "level0.log2_tile_size") == 5 and field(s1, "level0.coef_iter0") == pytest.approx(1 / 32)
    assert field(s1, "level2.tiled") == 1 and field(s1, "level2.coef_iter0") == 1
    assert field(s1, "level4.unroll") == 1 and field(s1, "level4.log2_unroll_factor") == 2
    assert field(s1, "level5.present") == 0
    assert field(s1, "reduction_add") == 1 and field(s1, "n_mul") == 2
    # access 0 is the write C[i, j]: row 0 has coefficient 1 on iterator 0
    assert field(s1, "access0.is_write") == 1 and field(s1, "access0.m0_0") == 1 and field(s1, "access0.m1_1") == 1
    plain = featurize(ProgramState.initial(p))
    assert plain.key != ft.key and len(plain.loops) == 3 and len(ft.loops) == 5


def test_access_strides_along_the_innermost_loop_follow_the_schedule():
    p = KERNELS["gemm"].program("small")  # S1: C[i, j] += A[i, k] * B[k, j]; B is 30 x 50

    def strides(schedule):
        c = featurize(Schedule.parse(schedule).apply(p)).comps[1]
        assert all(field(c, f"access{a}.inner_stride_known") == 1 for a in range(3))
        return [round(2 ** float(field(c, f"access{a}.log2_inner_stride")) - 1, 3) for a in range(3)]

    assert strides("") == [0, 1, 50]                           # C, A, B along k
    assert strides("F(S0,S1,1) I(j_1,k)") == [1, 0, 1]         # along j
    assert strides("F(S0,S1,1) I(j_1,k) V(j_1,8)") == [1, 0, 1]  # the vector strip steps j too
    assert strides("T2(i,j,32,32) S(j,k,1)") == [0, 1, 50]     # tile loops and skews keep k innermost
    c = featurize(Schedule.parse("F(S0,S1,1) I(j_1,k)").apply(p)).comps[1]
    assert field(c, "access0.inner_stride_one") == 1 and field(c, "access1.inner_stride_zero") == 1


def test_interchange_and_skew_show_in_the_schedule_matrix():
    p = KERNELS["seidel-2d"].program("small")
    ft = featurize(Schedule.parse("S(t,i,1) I(t,i)").apply(p))
    c = ft.comps[0]  # levels: i (skewed: i + t), t, j
    assert field(c, "level0.skewed") == 1 and field(c, "level0.interchanged") == 1
    assert field(c, "level0.coef_iter0") == 1 and field(c, "level0.coef_iter1") == 1
    assert field(c, "level1.coef_iter0") == 1 and field(c, "level1.coef_iter1") == 0


def test_programs_beyond_the_limits_are_refused():
    p = ProgramBuilder("deep")
    n = L.MAX_ITERS + 1
    A = p.output("A", (2,) * 4)
    ctx = [p.loop(f"l{k}", 0, 2) for k in range(n)]
    its = [c.__enter__() for c in ctx]
    A[its[0], its[1], its[2], its[3]] = 1.0
    for c in reversed(ctx):
        c.__exit__(None, None, None)
    with pytest.raises(FeatureLimitError, match="MAX_ITERS"):
        featurize(ProgramState.initial(p.build()))


def trees():
    out = []
    for name in ("gemm", "2mm", "jacobi-2d", "blur", "conv2d"):
        p = KERNELS[name].program("small")
        out.append(featurize(ProgramState.initial(p)))
    p = KERNELS["gemm"].program("small")
    out += [featurize(Schedule.parse(s).apply(p)) for s in ("P(i)", "T2(i,j,8,8)", "F(S0,S1,1) I(j_1,k)")]
    return out


def test_collate_lays_out_computations_with_their_shared_loops():
    p = KERNELS["gemm"].program("small")  # S0 in (i, j), S1 in (i, j, k)
    ts = [featurize(Schedule.parse(s).apply(p)) for s in ("", "F(S0,S1,1)")]
    b = collate(ts)
    assert b.shared.tolist() == [[[2, 2], [2, 3]], [[2, 1], [1, 3]]]  # distributed at depth 1: share only i
    assert np.array_equal(b.comps[b.comp_slots].numpy(), np.stack([t.comps for t in ts])) and b.comp_mask.all()
    # distributing changes the tree and the nest blocks (the loops each shares), nothing else of the vectors
    assert np.array_equal(ts[0].comps[:, :L.NEST_AT], ts[1].comps[:, :L.NEST_AT])
    fused = L.NEST_AT + L.NEST_INDEX["fused_levels"]
    assert ts[0].comps[:, fused].tolist() == [2, 2] and ts[1].comps[:, fused].tolist() == [1, 1]
    assert len(collate([ts[0], ts[0]]).comps) == 2  # equal vectors are embedded once
    b = collate([featurize(ProgramState.initial(KERNELS[n].program("small"))) for n in ("2mm", "gemm")])
    assert b.comp_mask.tolist() == [[True] * 4, [True, True, False, False]]
    assert b.shared[0, 1, 2] == 0 and b.shared[0, 2, 3] == 2  # 2mm's two products share no loop


def test_a_batch_moves_to_a_device_whole():
    b = collate(trees())
    moved = b.to("meta")  # a device without data: a tensor left behind keeps its cpu device
    tensors = [getattr(moved, f) for f in ("comps", "loops", "roots", "comp_slots", "comp_mask", "shared")]
    tensors += [getattr(lv, f) for lv in moved.levels for f in ("nodes", "comp_idx", "comp_len", "child_idx",
                                                                 "child_len")]
    assert len(tensors) == 6 + 5 * len(b.levels) and all(t.device.type == "meta" for t in tensors)
    assert b.to("cpu") is b and b.comps.device.type == "cpu"


def test_the_training_device_is_checked_before_training():
    assert training_device("cpu") == torch.device("cpu")
    assert training_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(LoopcostError, match="unknown training device"):
        training_device("gpu0")
    with pytest.raises(LoopcostError, match="cpu or cuda"):
        training_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(LoopcostError, match="sees none"):
            training_device("cuda")


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_batching_any_shapes_gives_each_trees_own_prediction(arch):
    torch.manual_seed(0)
    net = make_net(arch).eval()
    ts = trees()
    with torch.no_grad():
        together = net(collate(ts))
        alone = torch.stack([net(collate([t]))[0] for t in ts])
    assert torch.allclose(together, alone, atol=1e-5)
    assert len(set(np.round(together.numpy(), 6))) == len(ts)  # the trees are told apart


@pytest.mark.slow
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_training_steps_reduce_the_loss(arch):
    torch.manual_seed(0)
    ts = trees()
    target = torch.tensor([1.0, 0.5, 2.0, 1.5, 0.8, 1.9, 0.7, 3.0])
    net = make_net(arch, dropout=0.0)
    opt = torch.optim.AdamW(net.parameters(), lr=5e-4)  # 1e-3 left the transformer oscillating near 0.1x (layout 8)
    b = collate(ts)
    losses = []
    for _ in range(120):
        loss = ((net(b) - torch.log(target)) ** 2).mean()
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert min(losses[-20:]) < 0.1 * losses[0]


def test_inputs_are_standardized_with_training_statistics():
    ts = trees()
    net = RecursiveLSTM(L.COMP_SIZE, L.LOOP_SIZE, dropout=0.0).eval()
    comps = torch.from_numpy(np.concatenate([t.comps for t in ts]))
    loops = torch.from_numpy(np.concatenate([t.loops for t in ts]))
    net.fit_inputs(comps, loops)
    z = (comps - net.comp_shift) * net.comp_scale
    varying = comps.std(0) > 1e-6
    assert torch.allclose(z[:, varying].mean(0), torch.zeros(int(varying.sum())), atol=1e-4)
    assert torch.allclose(z[:, varying].std(0), torch.ones(int(varying.sum())), atol=1e-3)
    assert torch.all(net.comp_scale[~varying] == 0)
    again = RecursiveLSTM(L.COMP_SIZE, L.LOOP_SIZE, dropout=0.0).eval()
    again.load_state_dict(net.state_dict())  # the statistics travel with the weights
    b = collate(ts)
    assert torch.allclose(again(b), net(b))


def test_rank_loss_counts_only_pairs_of_one_program_beyond_the_noise_margin():
    from loopcost.costmodel.train import batches, rank_loss

    target = torch.tensor([1.0, 2.0, 1.01, 4.0])
    program = torch.tensor([0, 0, 0, 1])
    right = torch.log(target)  # ordered like the targets: small loss
    wrong = -torch.log(target)
    assert rank_loss(right, target, program) < rank_loss(wrong, target, program)
    # pairs: (1 > 0) and (1 > 2) in program 0; (2 vs 0) is within the margin, program 1 has no pair
    manual = torch.nn.functional.softplus(-(wrong[1] - wrong[0])) + torch.nn.functional.softplus(-(wrong[1] - wrong[2]))
    assert torch.isclose(rank_loss(wrong, target, program), manual / 2)
    import random

    progs = np.repeat(np.arange(5), 6)
    bs = batches(progs, 6, random.Random(0), grouped=True)
    assert sorted(sum(bs, [])) == list(range(30)) and all(len(set(progs[b])) == 1 for b in bs)


def test_metrics_on_known_cases():
    true = np.array([1.0, 2.0, 4.0, 0.5, 1.0, 3.0])
    prog = np.array([0, 0, 0, 1, 1, 1])
    perfect = metrics(true, true, prog)
    assert perfect["mape"] == 0 and perfect["pairwise_accuracy"] == 1 and perfect["top1_recovery"] == 1
    assert perfect["spearman_per_program_mean"] == pytest.approx(1)
    rev = metrics(1 / true, true, prog)
    assert rev["pairwise_accuracy"] == 0 and rev["spearman_per_program_mean"] == pytest.approx(-1)
    assert rev["top1_recovery"] == pytest.approx(np.mean([1 / 4, 0.5 / 3]))
    assert metrics(true * 1.1, true, prog)["mape"] == pytest.approx(10)
    assert spearman(np.array([1, 2, 2, 3.0]), np.array([1, 2, 2, 3.0])) == pytest.approx(1)


def test_error_breakdown_shows_which_speedups_rule_the_mape():
    true = np.array([0.01, 0.5, 0.8, 2.0, 2.0])
    pred = np.array([0.11, 0.5, 0.4, 2.2, 1.8])  # APEs 10, 0, 0.5, 0.1, 0.1: the far slowdown rules
    b = error_by_speedup(pred, true)
    assert [(g["low"], g["n"]) for g in b["ranges"]] == [(0.0, 1), (0.3, 1), (0.7, 1), (1.5, 2)]
    assert b["ranges"][0]["error_share"] == pytest.approx(10 / 10.7)
    assert sum(g["error_share"] for g in b["ranges"]) == pytest.approx(1)
    assert b["worst_record_share"] == pytest.approx(10 / 10.7)
    assert b["ranges"][3]["over_predicted"] == 0.5 and b["ranges"][3]["mape"] == pytest.approx(10)
    assert all(g["remeasured_mape"] is None for g in b["ranges"])  # no noise pairs
    # the re-measurements of labels in each range: two far slowdowns off by 20% and 40%, one of 2x off by 5%
    pairs = [(0.05, 0.06), (0.08, 0.048), (2.0, 2.1)]
    noisy = error_by_speedup(pred, true, pairs)["ranges"]
    assert noisy[0]["remeasured_mape"] == pytest.approx(30) and noisy[3]["remeasured_mape"] == pytest.approx(5)
    assert noisy[1]["remeasured_mape"] is None and noisy[0]["mape"] == b["ranges"][0]["mape"]


def test_error_by_transformation_shows_which_kinds_the_model_overrates():
    schedules = ["", "S(i,j,1) P(i)", "S(i,j,1)", "P(i)", "P(i) P(j)"]
    true = np.array([1.0, 0.5, 0.25, 2.0, 2.0])
    pred = np.array([1.0, 2.0, 1.0, 2.0, 1.0])  # skews predicted 4x too fast, parallel ones 1x, 4x, 0.5x
    rows = {r["kind"]: r for r in error_by_transformation(pred, true, schedules)}
    assert set(rows) == {"none", "skew", "parallelize"}  # a kind counts once a schedule, "P(i) P(j)" too
    assert rows["skew"]["n"] == 2 and rows["skew"]["bias"] == pytest.approx(4)
    assert rows["skew"]["mape"] == pytest.approx(300) and rows["skew"]["over_predicted"] == 1
    assert rows["parallelize"]["n"] == 3 and rows["parallelize"]["bias"] == pytest.approx(2 ** (1 / 3))
    assert rows["none"]["n"] == 1 and rows["none"]["bias"] == pytest.approx(1) and rows["none"]["mape"] == 0
    assert [r["kind"] for r in error_by_transformation(pred, true, schedules)][0] == "skew"  # the most overrated first


@pytest.mark.slow
def test_export_train_resume_and_save(tmp_path, capsys):
    db = tmp_path / "d.db"
    build(str(db), programs=12, cfg=BuildConfig(seed=11, schedules=4, generator=TINY), workers=1, progress=False,
          noise_fraction=0.0)
    info = export(str(db), str(tmp_path / "d.npz"))
    data = load(tmp_path / "d.npz")
    assert info["records"] == len(data) > 0 and len(data.subset("train")) > 0
    if len(data.subset("val")) == 0:  # tiny sets may miss a split: reuse train programs as val for the test
        data.split[: len(data) // 4] = 1
    logs = []
    cfg = TrainConfig(epochs=2, batch_size=16, threads=1, loss="log_mse")
    r = train(data, tmp_path / "m.pt", cfg, progress=logs.append)
    assert len(r["history"]) == 2 and (tmp_path / "m.pt.ckpt").exists()
    ckpt = torch.load(tmp_path / "m.pt.ckpt", weights_only=True)  # as if it had trained on a GPU
    meta = json.loads(ckpt["meta"])
    assert meta["config"]["device"] == "cpu"
    meta["config"]["device"], meta["config"]["threads"] = "cuda:0", 2  # and with 2 threads
    torch.save({**ckpt, "meta": json.dumps(meta)}, tmp_path / "m.pt.ckpt")
    r2 = train(data, tmp_path / "m.pt", cfg, progress=logs.append)  # nothing left to do: resumes at epoch 2
    assert any("resuming" in m for m in logs) and len(r2["history"]) == 2
    meta["config"]["lr"] *= 2  # another recipe: its checkpoint is not resumed, and the log says so
    torch.save({**ckpt, "meta": json.dumps(meta)}, tmp_path / "m2.pt.ckpt")
    other: list[str] = []
    train(data, tmp_path / "m2.pt", cfg, progress=other.append)
    assert not any("resuming" in m for m in other) and any("training from the start" in m for m in other)
    model = CostModel(r["net"], {"data": str(db)})
    model.save(tmp_path / "m.pt")
    again = CostModel.load(tmp_path / "m.pt")
    st = [ProgramState.initial(KERNELS["gemm"].program("small"))]
    assert np.allclose(model.predict(st), again.predict(st)) and again.card["data"] == str(db)

    from loopcost.cli import main

    # an export of layout 7: the same records, each vector less the domain block; a network trained on it reads
    # that prefix of today's vectors
    assert main(["dataset", "export", "--db", str(db), "--out", str(tmp_path / "d7.npz"), "--layout", "7",
                 "--no-progress"]) == 0
    wide, narrow = np.load(tmp_path / "d.npz"), np.load(tmp_path / "d7.npz")
    assert int(narrow["version"]) == 7 and int(wide["version"]) == L.VERSION
    assert np.array_equal(narrow["comps"], wide["comps"][:, :L.DOMAIN_AT])
    assert np.array_equal(narrow["speedup"], wide["speedup"]) and np.array_equal(narrow["loops"], wide["loops"])
    data7 = load(tmp_path / "d7.npz")
    data7.split[:] = data.split
    narrow_model = CostModel(train(data7, tmp_path / "m7.pt", cfg)["net"])
    assert narrow_model.nets[0].config["comp_size"] == L.DOMAIN_AT and np.isfinite(narrow_model.predict(st)).all()
    with pytest.raises(LoopcostError, match="feature layout 5 cannot be exported; use one of 7, 8"):
        export(str(db), str(tmp_path / "d5.npz"), version=5)

    np.savez_compressed(tmp_path / "all.npz", **dict(np.load(tmp_path / "d.npz")) | {"split": data.split})
    assert main(["evaluate", "--model", str(tmp_path / "m.pt"), "--data", str(tmp_path / "all.npz"), "--db", str(db),
                 "--split", "train", "--json", "--plots", str(tmp_path / "plots"), "--write-card"]) == 0
    card = json.loads((tmp_path / "m.pt.card.json").read_text())
    for key in ("mape", "median_ape", "spearman_per_program_mean", "pairwise_accuracy", "top1_recovery",
                "noise_floor_mape"):
        assert key in card["evaluation"], key
    # accuracy is taken on the labels timed in full; a censored one is a bound, counted apart
    assert card["evaluation"]["n"] == int(((data.split == 0) & ~data.censored).sum())
    assert card["evaluation"]["censored"]["n"] == int(((data.split == 0) & data.censored).sum())
    for png in ("scatter.png", "errors.png"):
        assert (tmp_path / "plots" / png).read_bytes()[:4] == b"\x89PNG"
    # a set held out from training altogether: every record scored, kept beside the split's evaluation
    assert main(["evaluate", "--model", str(tmp_path / "m.pt"), "--data", str(tmp_path / "all.npz"), "--split",
                 "all", "--write-card"]) == 0
    again = json.loads((tmp_path / "m.pt.card.json").read_text())
    assert again["evaluation"] == card["evaluation"] and again["out_of_sample"]["split"] == "all"
    assert again["out_of_sample"]["n"] == int((~data.censored).sum())
    # a held-out set's programs that the training database also holds (by hash) are left out and counted
    trained = tmp_path / "trained.db"
    shutil.copy(db, trained)
    with sqlite3.connect(trained) as c:
        ids = [i for (i,) in c.execute("SELECT id FROM programs ORDER BY id")]
        c.execute("DELETE FROM programs WHERE id > ?", (ids[len(ids) // 2 - 1],))
    seen = {data.programs.index(i) for i in ids[: len(ids) // 2] if i in data.programs}
    n_seen = int(np.isin(data.program, list(seen)).sum())
    assert 0 < n_seen < len(data)
    capsys.readouterr()
    assert main(["evaluate", "--model", str(tmp_path / "m.pt"), "--data", str(tmp_path / "all.npz"), "--db", str(db),
                 "--split", "all", "--unseen-by", str(trained), "--json"]) == 0
    unseen = json.loads(capsys.readouterr().out)
    assert unseen["left_out_seen"] == {"database": str(trained), "programs": len(seen), "records": n_seen}
    assert unseen["n"] == int((~data.censored & ~np.isin(data.program, list(seen))).sum())
    assert main(["evaluate", "--model", str(tmp_path / "m.pt"), "--data", str(tmp_path / "all.npz"), "--split",
                 "all", "--unseen-by", str(trained)]) == 2
    assert "--db" in capsys.readouterr().err
    assert main(["evaluate", "--model", str(tmp_path / "m.pt"), "--data", str(tmp_path / "all.npz"), "--split",
                 "all", "--gbt"]) == 2
    assert "--split all" in capsys.readouterr().err
    assert main(["train", "--data", str(tmp_path / "all.npz"), "--out", str(tmp_path / "e.pt"), "--epochs", "1",
                 "--batch-size", "16", "--threads", "1", "--ensemble", "2", "--rank-weight", "0.5",
                 "--arch", "transformer"]) == 0
    ens = CostModel.load(tmp_path / "e.pt")
    assert len(ens.nets) == 2 and "ensemble of 2" in ens.card["model"] and len(ens.card["history"]) == 2
    assert all(n.config["arch"] == "transformer" for n in ens.nets) and "attention" in ens.card["model"]
    assert main(["ensemble", str(tmp_path / "m.pt"), str(tmp_path / "e.pt"), "--out", str(tmp_path / "c.pt")]) == 0
    both = CostModel.load(tmp_path / "c.pt")
    parts = [CostModel.load(tmp_path / f) for f in ("m.pt", "e.pt")]
    logs = np.log(np.stack([p.predict(st) for p in parts]))
    assert len(both.nets) == 3 and np.allclose(both.predict(st), np.exp((logs[0] + 2 * logs[1]) / 3), rtol=1e-5)
    assert len(both.card["members"]) == 2 and both.card["members"][1]["model"] == parts[1].card["model"]
    assert "history" not in both.card["members"][1] and parts[1].card["model"] in both.card["model"]
    # fine-tuning with a zero learning rate keeps the chosen member's weights and input statistics exactly
    assert main(["train", "--data", str(tmp_path / "all.npz"), "--out", str(tmp_path / "f.pt"), "--epochs", "1",
                 "--batch-size", "16", "--threads", "1", "--lr", "0", "--arch", "transformer",
                 "--init", str(tmp_path / "e.pt"), "--init-member", "1"]) == 0
    tuned = CostModel.load(tmp_path / "f.pt")
    assert np.allclose(tuned.predict(st), CostModel(ens.nets[1]).predict(st), rtol=1e-6)
    assert not np.allclose(tuned.predict(st), CostModel(ens.nets[0]).predict(st), rtol=1e-6)
    assert tuned.card["config"]["init"] == str(tmp_path / "e.pt") and tuned.card["config"]["init_member"] == 1
    # a network of layout 7 (trained on an export cut to its width) fine-tunes on layout 8's vectors: widened,
    # with a zero learning rate it predicts exactly as before
    z = dict(np.load(tmp_path / "all.npz"))
    z["comps"], z["version"] = z["comps"][:, :L.DOMAIN_AT], np.array(7)
    np.savez(tmp_path / "l7.npz", **z)
    assert main(["train", "--data", str(tmp_path / "l7.npz"), "--out", str(tmp_path / "n7.pt"), "--epochs", "1",
                 "--batch-size", "16", "--threads", "1", "--arch", "transformer"]) == 0
    assert main(["train", "--data", str(tmp_path / "all.npz"), "--out", str(tmp_path / "w8.pt"), "--epochs", "1",
                 "--batch-size", "16", "--threads", "1", "--lr", "0", "--arch", "transformer",
                 "--init", str(tmp_path / "n7.pt")]) == 0
    narrow, wide = CostModel.load(tmp_path / "n7.pt"), CostModel.load(tmp_path / "w8.pt")
    assert [narrow.nets[0].config["comp_size"], wide.nets[0].config["comp_size"]] == [L.DOMAIN_AT, L.COMP_SIZE]
    assert np.allclose(wide.predict(st), narrow.predict(st), rtol=1e-6)
    # a network fine-tuned with another dropout than its own drops that share, as its configuration says
    other = initial_net(TrainConfig(init=str(tmp_path / "e.pt"), arch="transformer", dropout=0.3))
    shares = [{m.p for m in net.modules() if isinstance(m, torch.nn.Dropout)} for net in (other, ens.nets[0])]
    assert shares == [{0.3}, {0.05}]  # the model it started from keeps its own
    assert other.config["dropout"] == 0.3 and ens.nets[0].config["dropout"] == 0.05
    start = tuned.card["initialized_from"]  # the card of what it started from: its data and machines
    assert start["model"] == str(tmp_path / "e.pt") and start["member"] == 1 and start["data"] == ens.card["data"]
    capsys.readouterr()
    assert main(["train", "--data", str(tmp_path / "all.npz"), "--out", str(tmp_path / "g.pt"), "--epochs", "1",
                 "--threads", "1", "--init", str(tmp_path / "e.pt")]) != 0
    assert "pass --arch transformer" in capsys.readouterr().err and not (tmp_path / "g.pt").exists()


def test_an_ensemble_predicts_the_geometric_mean_and_its_spread(tmp_path):
    torch.manual_seed(0)
    nets = [RecursiveLSTM(L.COMP_SIZE, L.LOOP_SIZE) for _ in range(3)]
    ts = trees()
    singles = np.stack([CostModel(n).predict_trees(ts) for n in nets])
    ens = CostModel(nets, {"members": 3})
    assert np.allclose(ens.predict_trees(ts), np.exp(np.log(singles).mean(0)), rtol=1e-5)
    assert np.allclose(ens.predict_log_std(ts), np.log(singles).std(0), atol=1e-5)
    assert np.all(CostModel(nets[0]).predict_log_std(ts) == 0)
    ens.save(tmp_path / "e.pt")
    again = CostModel.load(tmp_path / "e.pt")
    assert len(again.nets) == 3 and np.allclose(again.predict_trees(ts), ens.predict_trees(ts))
    torch.save({"config": nets[0].config, "state_dict": nets[0].state_dict(),  # the single-network format
                "feature_version": L.VERSION}, tmp_path / "old.pt")
    assert np.allclose(CostModel.load(tmp_path / "old.pt").predict_trees(ts), singles[0], rtol=1e-5)
    # a model of layout 3 (no packs) reads layout 4's vectors, which are its own wherever nothing is packed
    for version in (3, 2, 5):
        torch.save({"config": nets[0].config, "state_dict": nets[0].state_dict(), "feature_version": version},
                   tmp_path / f"v{version}.pt")
    assert np.allclose(CostModel.load(tmp_path / "v3.pt").predict_trees(ts), singles[0], rtol=1e-5)
    # layout 2 lacks the strides, and layout 5's nest block misses the guards that layout 6 counts
    for version in (2, 5):
        with pytest.raises(LoopcostError, match=f"trained on feature layout {version}"):
            CostModel.load(tmp_path / f"v{version}.pt")


def test_gradient_boosted_baseline_fits_flat_features():
    from loopcost.costmodel.baselines import GradientBoosted, flatten

    ts = trees() * 4
    y = np.array([1.0, 0.5, 2.0, 1.5, 0.8, 1.9, 0.7, 3.0] * 4)
    assert flatten(ts[0]).shape == (2 * L.COMP_SIZE + 2,)
    pred = GradientBoosted(rounds=50).fit(ts, y).predict(ts)
    assert pred.shape == y.shape and np.allclose(np.log(pred), np.log(y), atol=0.5)  # speedups, not their logs
    assert spearman(pred, y) > 0.5


def test_levels_are_featurized_alone_like_the_whole_loop_map():
    from dataclasses import replace

    p = KERNELS["gemm"].program("small")
    st = Schedule.parse("T2(i,j,32,32) T2(i_t,j_t,4,4) S(i,j,1) U(k,4)").apply(p)
    per_level = featurize(st)
    whole = featurize(ProgramState(p, tuple(replace(cs, levels=()) for cs in st.comps), st.tags))
    nested = per_level.comps[1][L.LEVEL_SIZE * 0 + len(L.LEVEL_FIELDS)]  # i_t_t: floor(floor(i/32)/4)
    assert nested == pytest.approx(1 / 128)
    level = slice(L.LEVEL_SIZE, L.MAX_DEPTH * L.LEVEL_SIZE)  # the other levels agree exactly
    assert np.array_equal(per_level.comps[:, level], whole.comps[:, level])


def test_a_level_that_isl_splits_into_pieces_is_featurized():
    p = KERNELS["gemm"].program("small")  # level 3 of S1: -(i + 2*floor(j/32) + floor(i/32)); isl splits it
    st = Schedule.parse("P(i) T3(i,j,k,32,32,32) S(j_t,i,2) S(i_t,i,1) R(i)").apply(p)
    c = featurize(st).comps[1]
    assert [field(c, f"level3.coef_iter{k}") for k in range(3)] == pytest.approx([-1 - 1 / 32, -2 / 32, 0])


def test_a_model_of_other_cpus_is_flagged_by_its_card(tmp_path):
    from loopcost.costmodel import shipped
    from loopcost.paths import SHIPPED_MANIFEST, SHIPPED_MODEL, card_path

    model = tmp_path / "model.pt"
    (tmp_path / "model.pt.card.json").write_text('{"members": [{"machine": [{"cpu": "AMD EPYC", "cores": 2}]}]}')
    assert shipped.card_cpus(model) == {"AMD EPYC"}
    assert shipped.machine_warning(model, "AMD EPYC") is None
    assert "not of this Intel(R) Xeon(R) Processor" in shipped.machine_warning(model, "Intel(R) Xeon(R) Processor")
    assert shipped.card_cpus(tmp_path / "none.pt") == set() and shipped.machine_warning(tmp_path / "none.pt") is None
    # the shipped model's card names the machines of its training data: each card (or member card) lists
    # machines with their CPU, and the shipped dataset's machine is among them, whatever CPU it is
    import json

    card = json.loads(card_path(SHIPPED_MODEL).read_text())
    for c in card.get("members") or [card]:
        assert c["machine"] and all(m["cpu"] for m in c["machine"]), c.get("model")
    data_cpus = {m["cpu"] for m in json.loads(SHIPPED_MANIFEST.read_text())["machine"]}
    assert data_cpus and data_cpus <= shipped.card_cpus(SHIPPED_MODEL)


def test_each_cpu_gets_the_model_and_dataset_shipped_for_it(tmp_path, monkeypatch):
    import json
    import shutil

    from loopcost import paths
    from loopcost.costmodel import shipped

    machines = tmp_path / "machines"
    for name, cpu, model in (("fast-cpu", "Fast CPU", True), ("data-only", "Data CPU", False)):
        d = machines / name
        d.mkdir(parents=True)
        (d / "dataset.manifest.json").write_text(json.dumps({"machine": [{"cpu": cpu, "cores": 2}]}))
        if model:
            shutil.copy(paths.SHIPPED_MODEL, d / "model.pt")
            (d / "model.pt.card.json").write_text(json.dumps({"machine": [{"cpu": cpu}]}))
    monkeypatch.setattr(paths, "MACHINES", machines)
    own = paths.shipped_for("Fast CPU")
    assert own == paths.Shipped(machines / "fast-cpu" / "model.pt", machines / "fast-cpu" / "dataset.sqlite.xz",
                                machines / "fast-cpu" / "dataset.manifest.json")
    # a CPU with data but no model yet, and an unknown CPU, get the default pair
    assert paths.shipped_for("Data CPU") == paths.shipped_for("Other CPU") == paths.DEFAULT_SHIPPED
    assert paths.machine_dir("Data CPU") == machines / "data-only" and paths.machine_dir("Other CPU") is None
    # the search's default follows the CPU, and then says nothing of another machine
    monkeypatch.setattr(shipped, "cpu_model", lambda: "Fast CPU")
    _, path, warning = shipped.search_model(None)
    assert path == own.model and warning is None
    monkeypatch.setattr(shipped, "cpu_model", lambda: "Other CPU")
    _, path, warning = shipped.search_model(None)
    assert path == paths.SHIPPED_MODEL and "not of this Other CPU" in warning


def test_every_shipped_machine_folder_is_found_by_its_cpu_and_its_model_learned_that_cpu():
    import json

    from loopcost import paths
    from loopcost.costmodel.shipped import card_cpus

    folders = [d for d in paths.MACHINES.iterdir() if d.is_dir()]
    assert folders  # the AMD EPYC's dataset ships
    for d in folders:
        manifest = json.loads((d / "dataset.manifest.json").read_text())
        cpus = {m["cpu"] for m in manifest["machine"]}
        assert len(cpus) == 1 and (d / manifest["file"]).exists(), d  # one CPU kind a folder
        cpu = cpus.pop()
        assert paths.machine_dir(cpu) == d
        if (d / "model.pt").exists():
            assert cpu in card_cpus(d / "model.pt") and paths.shipped_for(cpu).model == d / "model.pt"
        held = d / "heldout" / "dataset.manifest.json"  # a set never trained on: the same CPU, other programs
        if held.exists():
            assert {m["cpu"] for m in json.loads(held.read_text())["machine"]} == {cpu}
