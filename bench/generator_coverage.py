"""How much of the kernels' feature space each generator version's programs cover: no measuring.

    python bench/generator_coverage.py [--versions 1,2,3] [--programs 400] [--schedules 4] [--seed 7]

For each version, draws ``--programs`` programs at the AMD EPYC dataset's scale (``--min-work 2e8 --max-work
3e9``), each with its empty schedule and ``--schedules`` random legal ones (the dataset's sampler), featurizes
them and takes every computation field's range (and mean and standard deviation) over the sample. Then every
schedule that a committed benchmark run measured of a library or selection kernel (the runs
``kernel_ranking.py`` scores, any machine) is featurized, and its computation vectors are checked against each
version's ranges: the share of the kernels' computations with a field outside the sample's range, the fields
outside per computation, the share with a field beyond 30 standard deviations from the sample's mean, and the
share outside by kernel. A model cannot be asked to extrapolate where its data never went: this says where a
version's programs leave the kernels' features uncovered, before any of them is measured.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from compare_models import kernel_name, kernel_specs
from kernel_ranking import BENCH, featurized, runs_of

from loopcost.features.extract import FeatureTree, featurize
from loopcost.features.layout import FeatureLimitError
from loopcost.generator.programs import GENERATOR_VERSION, GeneratorOptions, generate_programs
from loopcost.generator.schedules import random_schedules
from loopcost.ir.state import ProgramState
from loopcost.kernels.loader import load_program

#: a field this many standard deviations from the sample's mean is far outside it
FAR = 30.0


def sample_vectors(version: int, programs: int, schedules: int, seed: int) -> np.ndarray:
    """The computation vectors of ``programs`` bench-scale programs of generator ``version``, each unscheduled
    and under up to ``schedules`` random legal schedules."""
    opts = GeneratorOptions(min_work=2e8, max_work=3e9, version=version)
    rng = random.Random(seed)
    vecs = []
    for p in generate_programs(programs, seed, opts):
        states = [ProgramState.initial(p)] + [st for _, st in random_schedules(p, schedules, rng)]
        for state in states:
            try:
                vecs.append(featurize(state).comps)
            except FeatureLimitError:  # as a dataset export, which leaves such a schedule out
                continue
    return np.concatenate(vecs)


def kernel_vectors(files: list[Path]) -> dict[str, np.ndarray]:
    """Every measured schedule's computation vectors of each kernel of the committed runs ``files``."""
    rows = [(f.name, json.loads(line)) for f in files for line in f.read_text().splitlines() if line.strip()]
    specs = {kernel_name(s): s for s in kernel_specs(["selection"]) + kernel_specs(["bench"])}
    programs: dict[str, ProgramState] = {}
    seen: dict[tuple[str, str], FeatureTree | None] = {}
    for run in runs_of(rows, None):
        if run["kernel"] not in specs:
            continue
        if run["kernel"] not in programs:
            programs[run["kernel"]] = ProgramState.initial(load_program(specs[run["kernel"]], "bench"))
        featurized(run, programs, seen)
    out: dict[str, list[np.ndarray]] = {}
    for (kernel, _), tree in seen.items():
        if tree is not None:
            out.setdefault(kernel, []).append(tree.comps)
    return {k: np.concatenate(v) for k, v in sorted(out.items())}


def coverage(sample: np.ndarray, kernels: dict[str, np.ndarray]) -> dict:
    """The kernels' computation vectors against the range of ``sample``'s (see the module docstring)."""
    lo, hi = sample.min(axis=0), sample.max(axis=0)
    mean, sd = sample.mean(axis=0), sample.std(axis=0)
    every = np.concatenate(list(kernels.values()))

    def outside(v: np.ndarray) -> np.ndarray:
        return (v < lo) | (v > hi)

    far = np.abs(every - mean) > FAR * np.where(sd > 0, sd, np.inf)
    far |= (sd == 0) & (every != mean)
    return {"computations": len(every), "sample": len(sample),
            "outside": float(outside(every).any(axis=1).mean()),
            "fields_outside": float(outside(every).sum(axis=1).mean()),
            "far": float(far.any(axis=1).mean()),
            "by_kernel": {k: float(outside(v).any(axis=1).mean()) for k, v in kernels.items()}}


def table(results: dict[int, dict]) -> str:
    """Markdown: one row a version, then the share outside by kernel."""
    lines = ["| generator | kernel computations with a field outside the sample's range | fields outside, per "
             f"computation | with a field over {FAR:g} standard deviations |", "|---|---:|---:|---:|"]
    for v, r in results.items():
        lines.append(f"| version {v} | {r['outside']:.2f} | {r['fields_outside']:.1f} | {r['far']:.2f} |")
    kernels = list(next(iter(results.values()))["by_kernel"])
    lines += ["", "| kernel | " + " | ".join(f"version {v}" for v in results) + " |",
              "|---|" + "---:|" * len(results)]
    for k in kernels:
        lines.append(f"| {k} | " + " | ".join(f"{r['by_kernel'][k]:.2f}" for r in results.values()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--versions", default=",".join(map(str, range(1, GENERATOR_VERSION + 1))))
    ap.add_argument("--programs", type=int, default=400)
    ap.add_argument("--schedules", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--files", nargs="+", type=Path, default=sorted(BENCH.glob("*.jsonl")))
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    a = ap.parse_args(argv)
    kernels = kernel_vectors(a.files)
    if not kernels:
        raise SystemExit(f"no measured schedule of a known kernel in {len(a.files)} files")
    results = {v: coverage(sample_vectors(v, a.programs, a.schedules, a.seed), kernels)
               for v in map(int, a.versions.split(","))}
    print(f"{sum(len(v) for v in kernels.values())} computation vectors of {len(kernels)} kernels' measured "
          f"schedules; {a.programs} programs a version, each with up to {a.schedules} random schedules")
    print(table(results))
    if a.json:
        a.json.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
