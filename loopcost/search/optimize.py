"""``optimize``: search with a cost model (or by measuring), then measure the top candidates and keep
the fastest verified one, so the model's mistakes cannot make the result slower than the input. The
unscheduled program always competes, and its own copy's measurement is the reference of every speedup."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..costmodel.model import CostModel
from ..errors import LoopcostError
from ..ir.program import Program
from ..ir.state import ProgramState
from ..runner import LocalRunner, Runner, Timing
from ..runner.process import ABORT
from ..transforms.schedule import Schedule
from ..transforms.space import SpaceOptions
from .adaptive import AdaptiveOptions, adaptive_search
from .base import Evaluator, Scored
from .beam import beam_search
from .evaluator import MEASURE_TIMING, MeasuringEvaluator, ModelEvaluator
from .mcts import mcts
from .random_search import random_search
from .ranking import RANKED, diverse_top

METHODS = ("beam", "mcts", "random", "exec", "adaptive")

#: how ``optimize`` times its final candidates, whose speedup it reports: at least 3 runs or 5 s, so that a
#: program that runs over 1 s (an unscheduled bench gemm: 0.6-2.2 s, one run under ``MEASURE_TIMING``) is not
#: judged on one run; a search's single run of it in the machine's store is not enough to be taken back
FINAL_TIMING = Timing(min_runs=3, warmup=1, max_runs=10, min_time=0.05, max_time=5.0)
#: a final measurement whose runs of one program spread more than this (slowest over fastest) is shown as noisy
NOISY = 1.2


@dataclass(frozen=True)
class OptimizeResult:
    schedule: Schedule
    state: ProgramState
    predicted_speedup: float | None
    measured_speedup: float | None
    verified: bool
    search_time_s: float
    candidates_scored: int
    measured: list[tuple[str, float]]
    #: the unscheduled program's copy timed against the harness's baseline run (1 but for noise); the
    #: measured speedups are divided by it
    self_speedup: float | None = None
    #: how many schedules this search measured, the final candidates included
    measurements: int = 0
    #: how many of those measurements were taken from the machine's store instead of measured again
    reused: int = 0
    #: the fastest and slowest run (s) of the unscheduled program's copy and of the chosen schedule in the final
    #: measurement, and the ratio of their fastest runs: where the runs spread, the median ratio is only one read
    run_spread: dict | None = None

    def to_json(self) -> dict:
        return {"schedule": str(self.schedule), "predicted_speedup": self.predicted_speedup,
                "measured_speedup": self.measured_speedup, "verified": self.verified,
                "search_time_s": self.search_time_s, "candidates_scored": self.candidates_scored,
                "measurements": self.measurements, "reused": self.reused,
                "measured_top_k": [{"schedule": s, "speedup": v} for s, v in self.measured],
                "unscheduled_self_speedup": self.self_speedup, "run_spread": self.run_spread}


def format_result(out: dict) -> str:
    """The lines ``loopcost optimize`` prints for a result's ``to_json`` (and a ``drop_in_check``)."""
    lines = [f"schedule    {out['schedule'] or '(none: the unscheduled program was fastest)'}"]
    if out["predicted_speedup"] is not None:
        lines.append(f"predicted   {out['predicted_speedup']:.2f}x")
    if out["measured_speedup"] is not None:
        lines.append(f"measured    {out['measured_speedup']:.2f}x over the unscheduled program "
                     f"({'verified' if out['verified'] else 'NOT verified'})")
    if (r := out.get("run_spread")) and max(hi / lo for lo, hi in (r["unscheduled_s"], r["chosen_s"])) > NOISY:
        (u_lo, u_hi), (c_lo, c_hi) = r["unscheduled_s"], r["chosen_s"]
        lines.append(f"noise       runs spread: unscheduled {u_lo:.3g}-{u_hi:.3g} s, chosen {c_lo:.3g}-{c_hi:.3g} s; "
                     f"fastest run against fastest run {r['fastest_ratio']:.2f}x (the machine was not quiet)")
    reused = f" ({out['reused']} of them from this machine's store)" if out.get("reused") else ""
    lines.append(f"search      {out['search_time_s']:.1f} s, {out['candidates_scored']} candidates scored, "
                 f"{out['measurements']} measured{reused}")
    if d := out.get("drop_in_check"):
        tried = len(d["tried"])
        linked = f"{tried} emitted functions" if tried > 1 else "the emitted function"
        if d["schedule"] is None:
            lines.append(f"drop-in     wrote the original function unchanged: {d['why']} ({linked} linked beside "
                         f"it, gcc -O3)")
        else:
            err = "" if d["max_rel_error"] is None else f" (max rel. error {d['max_rel_error']:.1e})"
            lines.append(f"drop-in     {linked} vs the original (gcc -O3) linked side by side: wrote "
                         f"{d['schedule'] or '(none)'}: same results{err}, {d['speedup_over_original']:.2f}x faster")
    return "\n".join(lines)


#: how execution-based search times each candidate: one timed run after the verified one (a stage can
#: hold thousands); its top-k are then measured again like any search's
SEARCH_TIMING = Timing(min_runs=1, warmup=0, max_runs=3, min_time=0.05, max_time=0.5, abort=ABORT)


def search(state: ProgramState, method: str, evaluator: Evaluator, *, budget: int, seed: int,
           space: SpaceOptions = SpaceOptions()) -> list[Scored]:
    """The ranked candidates of one model-guided or execution-based search (``adaptive``: see ``optimize``)."""
    if method in ("beam", "exec"):  # measuring an illegal candidate costs more than checking it first
        return beam_search(state, evaluator, beam_size=budget, lazy=method == "beam", opts=space, keep=RANKED)
    if method == "mcts":
        return mcts(state, evaluator, iterations=15 * budget, seed=seed, opts=space, keep=RANKED)
    if method == "random":
        return random_search(state, evaluator, samples=16 * budget, seed=seed, opts=space, keep=RANKED)
    raise LoopcostError(f"unknown search {method!r}; use one of {METHODS}")


def optimize(program: Program, *, method: str = "beam", model: CostModel | None = None, budget: int = 4,
             measure: bool = True, top_k: int = 5, seed: int = 0, space: SpaceOptions = SpaceOptions(),
             runner: Runner | None = None, evaluator: Evaluator | None = None,
             adaptive: AdaptiveOptions = AdaptiveOptions(),
             on_round: Callable[[list[Scored]], None] | None = None) -> OptimizeResult:
    """Find a schedule for ``program`` in ``space``; with ``measure``, the returned one is measured (through
    ``runner``: this machine by default) and verified.

    The search scores with ``evaluator`` when given, else with ``model``, or by measuring for ``exec``;
    ``adaptive`` measures batches of the model's best and updates the model with them (``adaptive``
    options; its beam width is ``budget``; ``on_round`` sees what it measured after each round).
    """
    state = ProgramState.initial(program)
    runner = runner or LocalRunner()
    measurer = MeasuringEvaluator(runner, SEARCH_TIMING if method == "exec" else MEASURE_TIMING)
    if evaluator is None and method == "exec":
        evaluator = measurer
    elif evaluator is None and model is None:
        raise LoopcostError(f"search {method!r} needs a cost model")
    elif evaluator is None:
        evaluator = ModelEvaluator(model)
    t0 = time.perf_counter()
    if method == "adaptive":
        ranked = adaptive_search(state, evaluator, measurer, opts=replace(adaptive, beam_size=budget), space=space,
                                 on_round=on_round)
    else:
        ranked = search(state, method, evaluator, budget=budget, seed=seed, space=space)
    elapsed = time.perf_counter() - t0
    scored = evaluator.scored
    searched = len(measurer.measurements)
    reused = sum(m.reused for m in measurer.measurements)
    measuring = method in ("exec", "adaptive")  # ranked by measured speedups
    best = ranked[0] if ranked else Scored(1.0, Schedule(), state)
    predicted = None if measuring else best.score
    if not measure:
        return OptimizeResult(best.schedule, best.state, predicted, None, False, elapsed, scored, [],
                              measurements=searched, reused=reused)
    # a model's near-copies share its mistakes, so a model's candidates are measured by distinct core; the
    # searches that ranked by measuring already measure their own best again, side by side
    top = ranked[:top_k] if measuring else diverse_top(ranked, top_k)
    if not any(not c.schedule.steps for c in top):  # the unscheduled program always competes
        top.append(next((c for c in ranked if not c.schedule.steps), None)
                   or Scored(1.0 if measuring else float(evaluator.score([state])[0]), Schedule(), state))
    final = MeasuringEvaluator(runner, FINAL_TIMING).measure([c.state for c in top], [str(c.schedule) for c in top])
    raw = np.array([m.speedup or 0.0 for m in final])
    # the unscheduled program's own copy, timed among the candidates, is the reference: timed against the
    # harness's baseline run it can be off by itself (1.12-1.18x seen on small gemm), and so are the others.
    # Its median over theirs, not a ratio of each harness's speedups: a candidate taken from the store was
    # timed in another harness, beside another baseline run (on a noisy day 1.98 s against 0.88-1.74 s)
    copy = next(i for i, c in enumerate(top) if not c.schedule.steps)
    ref = final[copy].median if raw[copy] > 0 else None
    speedups = np.array([ref / m.median if ref and s > 0 else s for m, s in zip(final, raw, strict=True)])
    measured = [(str(c.schedule), float(s)) for c, s in zip(top, speedups, strict=True)]
    k = max(range(len(top)), key=lambda i: speedups[i])
    chosen = top[k]
    pred = None if measuring else chosen.score
    spread = None
    if final[copy].times and final[k].times:
        u, c = final[copy].times, final[k].times
        spread = {"unscheduled_s": [min(u), max(u)], "chosen_s": [min(c), max(c)], "fastest_ratio": min(u) / min(c)}
    return OptimizeResult(chosen.schedule, chosen.state, pred, float(speedups[k]), bool(speedups[k] > 0),
                          elapsed, scored, measured, float(raw[copy]), searched + len(top),
                          reused + sum(m.reused for m in final), spread)
