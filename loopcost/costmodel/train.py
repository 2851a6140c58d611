"""Training: AdamW with a one-cycle schedule, MAPE (or log-MSE) loss, resumable checkpoints."""

from __future__ import annotations

import copy
import json
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from ..errors import LoopcostError, first_line
from .batch import collate
from .card import training_card
from .data import Dataset, load
from .metrics import metrics
from .model import ARCHS, CostModel, make_net
from .network import Standardized

LOSSES = ("mape", "log_mse")


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 30
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.01
    loss: str = "mape"
    dropout: float = 0.05
    seed: int = 0
    threads: int = 2
    #: network architecture: "lstm" (the paper's) or "transformer" (attention among computations)
    arch: str = "lstm"
    #: weight of the pairwise ranking term (0: pure regression); batches then group schedules by program
    rank_weight: float = 0.0
    #: fine-tune: start from network ``init_member`` of this saved model (and keep its input statistics)
    #: instead of from random weights, e.g. to adapt the shipped model to another machine's measurements
    init: str = ""
    init_member: int = 0
    #: where the network trains: "cpu", "cuda" (a GPU) or "auto" (a GPU where torch sees one); where a
    #: network trained is not part of its recipe (``WHERE``): a checkpoint resumes on another device
    device: str = "cpu"


def training_device(name: str) -> torch.device:
    """The device ``name`` ("cpu", "cuda", "cuda:N" or "auto") names, checked to be usable here."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise LoopcostError(f"unknown training device {name!r}; use cpu, cuda, cuda:N or auto") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise LoopcostError(f"training on {name} needs a GPU that torch can use; this torch "
                            f"({torch.__version__}) sees none: train with --device cpu (or auto)")
    if device.type not in ("cpu", "cuda"):
        raise LoopcostError(f"training runs on cpu or cuda, not {name!r}")
    return device


#: what says where a network trained, not how: a checkpoint resumes on another device or thread count
WHERE = ("device", "threads")


def _recipe(config: dict) -> dict:
    """A configuration less where it ran: what a checkpoint must match to resume."""
    return {k: v for k, v in config.items() if k not in WHERE}


def _loss(out: torch.Tensor, target: torch.Tensor, kind: str, censored: torch.Tensor | None = None) -> torch.Tensor:
    """MAPE (or squared log error) of the predicted log-speedups ``out``; a ``censored`` target is an upper
    bound of the speedup: only a prediction above it costs."""
    if kind == "mape":
        err = (torch.exp(out) - target) / target
    else:
        err = out - torch.log(target)
    if censored is not None:
        err = torch.where(censored, torch.clamp(err, min=0.0), err)
    return (err.abs() if kind == "mape" else err ** 2).mean()


def rank_loss(out: torch.Tensor, target: torch.Tensor, program: torch.Tensor, margin: float = 0.02,
              censored: torch.Tensor | None = None) -> torch.Tensor:
    """Pairwise logistic loss over schedules of the same program whose measured log-speedups differ by
    more than ``margin`` (closer pairs are within the noise): softplus(-(o_faster - o_slower)). A censored
    speedup is an upper bound: it is never the faster of a pair (its true value may be lower still)."""
    lt = torch.log(target)
    same = program[:, None] == program[None, :]
    faster = (lt[:, None] - lt[None, :]) > margin
    if censored is not None:
        faster = faster & ~censored[:, None]
    mask = same & faster
    if not mask.any():
        return out.sum() * 0.0
    diff = out[:, None] - out[None, :]
    return torch.nn.functional.softplus(-diff[mask]).mean()


def batches(programs: np.ndarray, batch_size: int, rng: random.Random, grouped: bool) -> list[list[int]]:
    """Index batches of one epoch: shuffled records, or, ``grouped``, whole programs in shuffled order
    (their schedules shuffled) cut into batches, so that most pairs of a program share a batch."""
    if grouped:
        by_prog: dict[int, list[int]] = {}
        for i, pr in enumerate(programs.tolist()):
            by_prog.setdefault(pr, []).append(i)
        keys = list(by_prog)
        rng.shuffle(keys)
        order = []
        for key in keys:
            idx = by_prog[key]
            rng.shuffle(idx)
            order += idx
    else:
        order = list(range(len(programs)))
        rng.shuffle(order)
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


def predict(net: Standardized, data: Dataset, batch_size: int = 512) -> np.ndarray:
    return CostModel(net).predict_trees(data.trees, batch_size)


def initial_net(cfg: TrainConfig) -> Standardized:
    """A copy of network ``cfg.init_member`` of the model at ``cfg.init``, checked against ``cfg.arch``, with
    ``cfg.dropout``."""
    nets = CostModel.load(cfg.init).nets
    if not 0 <= cfg.init_member < len(nets):
        raise LoopcostError(f"{cfg.init} has {len(nets)} network(s); there is no member {cfg.init_member}")
    net = copy.deepcopy(nets[cfg.init_member])
    if net.config["arch"] != cfg.arch:
        raise LoopcostError(f"member {cfg.init_member} of {cfg.init} is a {net.config['arch']} network, "
                            f"not {cfg.arch}: pass --arch {net.config['arch']}")
    net.set_dropout(cfg.dropout)
    return net


def _plain(doc):
    """``doc`` as JSON reads it back: lists for tuples, floats for numpy scalars."""
    return json.loads(json.dumps(doc, default=float))


def _write_checkpoint(ckpt: Path, cfg: TrainConfig, n_train: int, net, opt, sched, state: dict) -> None:
    """Tensors and one JSON string (configuration, epoch, history), nothing else: a checkpoint loads with
    ``weights_only=True`` and cannot run code. Written beside and renamed, so a stop leaves a whole one."""
    meta = {"config": asdict(cfg), "n_train": n_train, "state": {k: v for k, v in state.items() if k != "best_state"}}
    part = ckpt.with_name(ckpt.name + ".part")
    torch.save({"meta": json.dumps(meta, default=float), "net": net.state_dict(), "opt": opt.state_dict(),
                "sched": sched.state_dict(), "best_state": state["best_state"], "torch_rng": torch.get_rng_state()},
               part)
    part.replace(ckpt)


def _read_checkpoint(ckpt: Path) -> dict:
    """A checkpoint written by ``_write_checkpoint`` (its ``meta`` read back from JSON), loaded without
    running anything it holds."""
    try:
        blob = torch.load(ckpt, map_location="cpu", weights_only=True)
        blob = {**blob, "meta": json.loads(blob["meta"])}
    except Exception as e:  # noqa: BLE001 - whatever torch trips on, the file is not a checkpoint it can read
        raise LoopcostError(f"{ckpt} is not a loopcost training checkpoint (or it is damaged or from an older "
                            f"version): {first_line(e)}; delete it "
                            f"or train with --restart") from None
    return blob


def train(data: Dataset, out: str | Path, cfg: TrainConfig = TrainConfig(), *, resume: bool = True,
          progress=print) -> dict:
    """Train on ``data``'s train split, keep the weights with the best validation MAPE at ``out``.

    A checkpoint ``out.ckpt`` is written after every epoch; with ``resume`` a
    run with the same configuration continues from it.
    """
    if cfg.loss not in LOSSES:
        raise LoopcostError(f"unknown loss {cfg.loss!r}; use one of {LOSSES}")
    if cfg.arch not in ARCHS:
        raise LoopcostError(f"unknown network architecture {cfg.arch!r}; use one of {sorted(ARCHS)}")
    torch.set_num_threads(cfg.threads)
    device = training_device(cfg.device)
    cfg = replace(cfg, device=str(device))
    out = Path(out)
    ckpt = Path(str(out) + ".ckpt")
    tr, va = data.subset("train"), data.subset("val").timed()
    if len(tr) == 0 or len(va) == 0:
        raise LoopcostError("training needs programs in both the train and the val split")
    torch.manual_seed(cfg.seed)
    sample = tr.trees[::max(1, len(tr) // 20000)]  # enough trees for the statistics, bounded memory
    comps = torch.from_numpy(np.concatenate([t.comps for t in sample]))
    if cfg.init:
        net = initial_net(cfg)
        net.widen(comps)  # a network of an older layout learns the fields a newer one appends
    else:
        # as wide as the data's vectors: an export of an older layout trains a network of its width
        net = make_net(cfg.arch, dropout=cfg.dropout, comp_size=comps.shape[1])
        net.fit_inputs(comps, torch.from_numpy(np.concatenate([t.loops for t in sample])))
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = (len(tr) + cfg.batch_size - 1) // cfg.batch_size
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=cfg.epochs * steps)
    state = {"epoch": 0, "history": [], "best": None, "best_state": None}
    if resume and ckpt.exists():
        blob = _read_checkpoint(ckpt)
        meta = blob["meta"]
        if _recipe(meta["config"]) == _recipe(_plain(asdict(cfg))) and meta["n_train"] == len(tr):
            net.load_state_dict(blob["net"])
            opt.load_state_dict(blob["opt"])
            sched.load_state_dict(blob["sched"])
            state = {**meta["state"], "best_state": blob["best_state"]}
            torch.set_rng_state(blob["torch_rng"])
            progress(f"resuming from {ckpt} after epoch {state['epoch']}")
        else:
            progress(f"{ckpt} is of another configuration or data: training from the start")
    rng = random.Random(cfg.seed + state["epoch"])
    targets = torch.tensor(tr.speedup, dtype=torch.float32, device=device)
    bounds = torch.tensor(tr.censored, dtype=torch.bool, device=device)
    progs = torch.tensor(tr.program, device=device)
    for epoch in range(state["epoch"], cfg.epochs):
        t0 = time.time()
        net.train()
        total = 0.0
        for idx in batches(tr.program, cfg.batch_size, rng, grouped=cfg.rank_weight > 0):
            out = net(collate([tr.trees[i] for i in idx]).to(device))
            loss = _loss(out, targets[idx], cfg.loss, bounds[idx])
            if cfg.rank_weight > 0:
                loss = loss + cfg.rank_weight * rank_loss(out, targets[idx], progs[idx], censored=bounds[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        net.eval()
        m = metrics(predict(net, va), va.speedup, va.program)
        row = {"epoch": epoch + 1, "train_loss": total / len(tr), "val_mape": m["mape"],
               "val_spearman_pp": m["spearman_per_program_mean"], "seconds": time.time() - t0}
        state["history"].append(row)
        if state["best"] is None or m["mape"] < state["best"]["mape"]:
            state["best"] = m
            state["best_state"] = copy.deepcopy(net.state_dict())
        state["epoch"] = epoch + 1
        _write_checkpoint(ckpt, cfg, len(tr), net, opt, sched, state)
        progress(f"epoch {epoch + 1}/{cfg.epochs}: train loss {row['train_loss']:.4f}, val MAPE {m['mape']:.1f}%, "
                 f"val Spearman/program {m['spearman_per_program_mean']:.3f} ({row['seconds']:.0f} s)")
    net.load_state_dict(state["best_state"])
    net.to("cpu")
    return {"net": net, "history": state["history"], "best_val": state["best"], "config": asdict(cfg),
            "n_train": len(tr), "n_val": len(va)}


def train_ensemble(data_path: str | Path, out: str | Path, cfg: TrainConfig = TrainConfig(), *, ensemble: int = 1,
                   restart: bool = False, db: str | Path | None = None) -> tuple[CostModel, dict]:
    """Train ``ensemble`` networks on the export ``data_path`` and save them as one model at ``out``, with its
    card (the machines of the database ``db``, if given); returns the model and its validation metrics.

    Member k trains from seed ``cfg.seed + k`` (fine-tuning member ``cfg.init_member + k``), with its own
    checkpoint ``out.memberK.ckpt``; each resumes from its checkpoint unless ``restart``.
    """
    data = load(data_path)
    if ensemble < 1:
        raise LoopcostError("--ensemble must be at least 1")
    runs = []
    for k in range(ensemble):
        member_out = out if ensemble == 1 else f"{out}.member{k}"
        member = replace(cfg, seed=cfg.seed + k, init_member=cfg.init_member + k)
        runs.append(train(data, member_out, member, resume=not restart))
    model = CostModel([r["net"] for r in runs])
    val = data.subset("val").timed()
    best = metrics(model.predict_trees(val.trees), val.speedup, val.program)
    model.save(out, training_card(data_path, runs, best, db))
    return model, best
