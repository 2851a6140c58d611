"""How many schedules a second the cost model scores, in batches, on this machine.

    python bench/inference.py [--model loopcost/data/model.pt] [--threads 2] [--batch 512] [--repeats 5]

For each of a few library kernels, it draws random legal schedules and times, separately and
together, featurizing them (``featurize``) and predicting (``CostModel.predict_trees``), as a
search does through ``CostModel.predict``. Reports medians of ``--repeats`` timings.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch
from report import default_model

from loopcost.costmodel.model import CostModel
from loopcost.features import extract
from loopcost.features.extract import FeatureLimitError, featurize
from loopcost.generator.schedules import random_schedules
from loopcost.kernels import KERNELS

KERNEL_NAMES = ("gemm", "2mm", "jacobi-2d", "conv2d", "heat-3d")


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(default_model()), help="cost model (default: the one shipped for this CPU)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--schedules", type=int, default=512, help="random schedules per kernel")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = CostModel.load(args.model)
    print(f"model {Path(args.model).name} ({len(model.nets)} network(s)), {args.threads} threads, batch {args.batch}")
    print("| kernel | schedules | featurize /s | predict /s | both /s |\n|---|---:|---:|---:|---:|")
    totals = {"n": 0, "feat": 0.0, "pred": 0.0}
    for name in KERNEL_NAMES:
        states = [st for _, st in random_schedules(KERNELS[name].program("bench"), args.schedules,
                                                   random.Random(0))]
        trees = []
        for st in states:
            try:
                trees.append(featurize(st))
            except FeatureLimitError:
                pass
        def feat(states=states):
            extract.clear_caches()  # new schedules: only the levels and computations they share hit the caches
            for st in states:
                try:
                    featurize(st)
                except FeatureLimitError:
                    pass

        t_feat = median_time(feat, args.repeats)
        t_pred = median_time(lambda trees=trees: model.predict_trees(trees, args.batch), args.repeats)
        n = len(states)
        totals["n"] += n
        totals["feat"] += t_feat
        totals["pred"] += t_pred * n / max(len(trees), 1)
        print(f"| {name} | {n} | {n / t_feat:,.0f} | {len(trees) / t_pred:,.0f} | {n / (t_feat + t_pred):,.0f} |")
    n = totals["n"]
    print(f"| **all** | {n} | {n / totals['feat']:,.0f} | {n / totals['pred']:,.0f} | "
          f"{n / (totals['feat'] + totals['pred']):,.0f} |")


if __name__ == "__main__":
    main()
