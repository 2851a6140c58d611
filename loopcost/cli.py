"""The ``loopcost`` command."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from .codegen.c_source import kernel_file
from .codegen.compiler import Toolchain
from .errors import LoopcostError, ScheduleError
from .generator.schedules import STAGED_SHARE
from .ir.polyhedral import dependences
from .ir.state import CODE_TAGS, ProgramState
from .kernels import KERNELS
from .kernels.loader import load_program
from .runner.measure import measure
from .transforms.schedule import Schedule
from .transforms.space import STAGES


def _fmt_time(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def _state(program, schedule: str) -> ProgramState:
    """Apply a schedule given in the notation, or as a JSON file (``@file.json``)."""
    if schedule.startswith("@"):
        try:
            doc = json.loads(Path(schedule[1:]).read_text())
        except (OSError, ValueError) as e:
            raise ScheduleError(f"cannot read schedule file {schedule[1:]}: {e}") from None
        return Schedule.from_json(doc).apply(program)
    return Schedule.parse(schedule).apply(program)


def _loops_text(state: ProgramState) -> str:
    """Each computation with its loops, outermost first, and the tags of each loop."""
    lines = []
    for cs in state.comps:
        parts = []
        for name in cs.real_loops:
            tags = [t.kind + (f"({t.factor})" if t.factor else "") for t in state.tags
                    if t.loop == name and t.kind in CODE_TAGS]
            parts.append(name + (f" [{', '.join(tags)}]" if tags else ""))
        lines.append(f"{cs.comp}: {' > '.join(parts) or '(no loop)'}")
    return "\n".join(lines)


def _pairs(items: list[str] | None, what: str, need_value: bool) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not name.isidentifier() or (need_value and not eq):
            raise LoopcostError(f"{what} {item!r}: expected NAME{'=VALUE' if need_value else '[=VALUE]'}")
        out[name] = value
    return out


def _load(a: argparse.Namespace):
    """(program, C kernel or None) for the KERNEL argument; C files take --function, -D and --param."""
    if not a.kernel.endswith(".c"):
        return load_program(a.kernel, a.size), None
    from .frontend import load_c

    params = {}
    for name, value in _pairs(a.param, "--param", True).items():
        try:
            params[name] = int(value)
        except ValueError:
            raise LoopcostError(f"--param {name}={value}: the value must be an integer") from None
    k = load_c(a.kernel, function=a.function, defines=_pairs(a.define, "-D", False), params=params)
    return k.program, k


def _size(a: argparse.Namespace) -> str | None:
    """The --size that applies: none for C files, whose sizes come from -D and --param."""
    return None if a.kernel.endswith(".c") else a.size


def cmd_run(a: argparse.Namespace) -> int:
    program, _ = _load(a)
    state = _state(program, a.schedule)
    m = measure(state, toolchain=Toolchain.from_string(a.cc, a.cflags), runs=a.runs, warmup=a.warmup,
                seed=a.seed, timeout=a.timeout)
    report = {
        "kernel": a.kernel, "program": program.name, "size": _size(a), "schedule": a.schedule,
        "verified": m.verified, "error": m.detail or None,
        "median_s": m.result.median if m.result.times else None, "min_s": m.result.min if m.result.times else None,
        "times_s": list(m.result.times),
        "baseline_median_s": m.baseline.median if m.baseline.times else None,
        "baseline_times_s": list(m.baseline.times),
        "speedup": m.speedup if m.result.times and m.baseline.times else None,
        "compile_s": m.compile_s,
    }
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"kernel     {a.kernel}" + (f" ({a.size})" if _size(a) else ""))
        print(f"schedule   {a.schedule or '(none)'}")
        print(f"verified   {'yes' if m.verified else 'NO: ' + m.detail}")
        if m.result.times:
            print(f"median     {_fmt_time(m.result.median)}  over {len(m.result.times)} runs "
                  f"(min {_fmt_time(m.result.min)})")
        if m.baseline.times:
            print(f"baseline   {_fmt_time(m.baseline.median)}  (unscheduled)")
        if report["speedup"] is not None:
            print(f"speedup    {report['speedup']:.2f}x")
        print(f"compile    {m.compile_s:.2f} s")
    return 0 if m.verified else 1


def cmd_show(a: argparse.Namespace) -> int:
    program, _ = _load(a)
    if a.json:
        print(json.dumps(program.to_json(), indent=2))
    elif a.loops:
        print(_loops_text(_state(program, a.schedule)))
    elif a.deps:
        for dep in dependences(program):
            print(f"{dep.describe()}: {dep.relation}")
    else:
        print(kernel_file(_state(program, a.schedule)), end="")
    return 0


def cmd_kernels(a: argparse.Namespace) -> int:
    width = max(len(n) for n in KERNELS)
    for name in sorted(KERNELS):
        print(f"{name:<{width}}  {KERNELS[name].description}")
    return 0


def cmd_generate(a: argparse.Namespace) -> int:
    from .generator.programs import GeneratorOptions, generate_programs

    programs = generate_programs(a.programs, a.seed, GeneratorOptions(families=_families(a.families)))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for p in programs:
            (out / f"{p.name}.json").write_text(json.dumps(p.to_json(), indent=1))
    for p in programs:
        comps = p.computations()
        depth = max(len(lp) for _, lp in p.walk_computations())
        print(f"{p.name}: {len(comps)} computations, depth {depth}, "
              f"{', '.join(f'{b.name}{list(b.shape)}' for b in p.buffers)}")
    if a.out:
        print(f"wrote {len(programs)} programs to {a.out}/")
    return 0


def _families(text: str | None) -> tuple[str, ...]:
    """``--families a,b``: program families of the generator, checked; all of them by default."""
    from .generator.programs import FAMILIES

    if text is None:
        return FAMILIES
    names = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = sorted(set(names) - set(FAMILIES))
    if unknown or not names:
        raise LoopcostError(f"unknown program families {unknown}; choose among {', '.join(FAMILIES)}")
    return names


def cmd_dataset_build(a: argparse.Namespace) -> int:
    from .dataset.build import build
    from .dataset.tasks import BuildConfig
    from .generator.programs import GeneratorOptions

    if a.programs < 1 or a.schedules < 1 or a.workers < 1:
        raise LoopcostError("--programs, --schedules and --workers must be at least 1")
    if not 0 < a.min_work < a.max_work:
        raise LoopcostError("--min-work must be positive and below --max-work")
    if not 0 <= a.staged_share <= 1:
        raise LoopcostError("--staged-share must be between 0 and 1")
    gen = GeneratorOptions(min_work=a.min_work, max_work=a.max_work, families=_families(a.families))
    cfg = BuildConfig(seed=a.seed, schedules=a.schedules, toolchain=Toolchain.from_string(a.cc, a.cflags),
                      generator=gen, staged_share=a.staged_share)
    cluster = None if a.cluster in (None, "none") else a.cluster
    stats = build(a.db, programs=a.programs, cfg=cfg, workers=a.workers, cluster=cluster,
                  allow_mixed=a.allow_mixed_machines, progress=not a.no_progress)
    if a.json:
        print(json.dumps(stats, indent=2))
    else:
        secs = ", ".join(f"{k} {v:.0f} s" for k, v in stats["seconds"].items())
        print(f"measured {stats['programs']} programs, {stats['schedules']} verified schedules "
              f"({stats['failures']} failed, {stats['noise']} re-measured for noise) in {stats['wall_s']:.0f} s: "
              f"{stats['schedules_per_hour']:,.0f} schedules/hour (worker time: {secs})")
        for e in stats["errors"][:10]:
            print(f"  {e}")
    return 0


def cmd_dataset_stats(a: argparse.Namespace) -> int:
    from .dataset.shipped import shipped_db
    from .dataset.stats import dataset_stats, format_stats

    db = a.db or str(shipped_db())
    if not Path(db).exists():
        raise LoopcostError(f"no database at {db}")
    s = dataset_stats(db)
    print(json.dumps(s, indent=2) if a.json else format_stats(s))
    return 0


def _export_bar(show: bool):
    """A progress callback ``(done, total)`` for ``costmodel.data.export``."""
    from .dataset.progress import Progress

    bar = Progress(1, "records", show)

    def tick(done: int, total: int) -> None:
        bar.total = total
        bar.advance(done - bar.done)

    return tick


def cmd_dataset_export(a: argparse.Namespace) -> int:
    from .costmodel.data import export

    info = export(a.db, a.out, _export_bar(not a.no_progress))
    skipped = info["skipped_over_limits"]
    print(f"wrote {info['records']} records of {info['programs']} programs to {a.out}"
          + (f" ({skipped} beyond the feature limits skipped)" if skipped else ""))
    return 0


def cmd_train(a: argparse.Namespace) -> int:
    import dataclasses
    import datetime

    from .costmodel.data import load
    from .costmodel.metrics import metrics
    from .costmodel.model import CostModel
    from .costmodel.train import TrainConfig, train
    from .database.store import Store

    data = load(a.data)
    cfg = TrainConfig(epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, loss=a.loss, seed=a.seed,
                      rank_weight=a.rank_weight, threads=a.threads, arch=a.arch, init=a.init or "",
                      init_member=a.init_member)
    if a.ensemble < 1:
        raise LoopcostError("--ensemble must be at least 1")
    runs = []
    for k in range(a.ensemble):  # member k trains from seed + k, with its own checkpoint
        out = a.out if a.ensemble == 1 else f"{a.out}.member{k}"
        member = dataclasses.replace(cfg, seed=cfg.seed + k, init_member=cfg.init_member + k)
        runs.append(train(data, out, member, resume=not a.restart))
    model = CostModel([r["net"] for r in runs])
    val = data.subset("val")
    best = metrics(model.predict_trees(val.trees), val.speedup, val.program)
    name = {"lstm": "recursive LSTM (Baghdadi et al. 2021)",
            "transformer": "self-attention among computations, loop tree as attention bias"}[a.arch]
    card = {"model": name + (f", ensemble of {a.ensemble}" if a.ensemble > 1 else ""),
            "trained": datetime.date.today().isoformat(), "data": str(a.data),
            "records": {"train": runs[0]["n_train"], "val": runs[0]["n_val"]}, "config": runs[0]["config"],
            "validation": best, "history": [r["history"] for r in runs] if a.ensemble > 1 else runs[0]["history"]}
    if a.db:
        store = Store(a.db)
        card["machine"] = store.machines()
        store.close()
    model.card = card
    model.save(a.out)
    print(f"saved {a.out} (validation MAPE {best['mape']:.1f}%, Spearman per program "
          f"{best['spearman_per_program_mean']:.3f}); card: {a.out}.card.json")
    return 0


def cmd_ensemble(a: argparse.Namespace) -> int:
    from .costmodel.model import CostModel

    model = CostModel.combine([CostModel.load(m) for m in a.models])
    model.card["combined_from"] = list(a.models)
    model.save(a.out)
    print(f"saved {a.out}: {len(model.nets)} networks; card: {a.out}.card.json")
    return 0


def _shipped_data(db: Path) -> Path:
    """The training-format export of ``db``, made once into the cache (it takes minutes)."""
    from .codegen.compiler import cache_root
    from .costmodel.data import export
    from .features import layout

    out = cache_root() / "shipped" / f"{db.stem}.layout{layout.VERSION}.npz"  # a new layout exports again
    if not out.exists():
        print(f"exporting {db.name} to the training format (once) ...", file=sys.stderr)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp.npz")
        export(str(db), str(tmp), _export_bar(sys.stderr.isatty()))
        tmp.replace(out)
    return out


def cmd_evaluate(a: argparse.Namespace) -> int:
    import numpy as np

    from .costmodel.data import load
    from .costmodel.metrics import metrics
    from .costmodel.model import CostModel
    from .dataset.shipped import DATA, MANIFEST, shipped_db

    db = Path(a.db) if a.db else (None if a.data else shipped_db())
    data_path = Path(a.data) if a.data else _shipped_data(db)
    everything = load(data_path)
    data = everything.subset(a.split)
    if len(data) == 0:
        raise LoopcostError(f"{data_path} has no record in split {a.split!r}")
    model_path = Path(a.model) if a.model else DATA / "model.pt"
    model = CostModel.load(model_path)
    pred = model.predict_trees(data.trees)
    predictions = {"model": pred}
    baselines = {"speedup_1": metrics(np.ones(len(data)), data.speedup, data.program)}
    if a.gbt:
        from .costmodel.baselines import GradientBoosted

        train = everything.subset("train")
        predictions["gradient_boosted"] = GradientBoosted().fit(train.trees, train.speedup).predict(data.trees)
        baselines["gradient_boosted"] = metrics(predictions["gradient_boosted"], data.speedup, data.program)
    noise = ceiling = None
    if db is not None:
        from .database.store import Store
        from .dataset.stats import noise_ceiling, noise_floor_mape

        store = Store(db)
        pairs = store.noise_pairs(effective=True)
        store.close()
        noise = noise_floor_mape(pairs)
        ceiling = noise_ceiling(pairs, data.speedup, data.program)
    out = {**metrics(pred, data.speedup, data.program), "split": a.split, "model": str(model_path),
           "data": str(data_path), "baselines": baselines, "noise_floor_mape": noise, "remeasurement": ceiling}
    if a.plots:
        out["plots"] = [str(p) for p in save_plots_for(a.plots, data.speedup, predictions, a.split)]
    if a.write_card:
        card = dict(model.card)
        card["evaluation"] = {k: v for k, v in out.items() if k not in ("plots",)}
        if db is not None and not a.db and MANIFEST.exists():
            card["evaluation"]["dataset_manifest"] = json.loads(MANIFEST.read_text())
        Path(str(model_path) + ".card.json").write_text(json.dumps(card, indent=2))
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{a.split}: {out['n']} schedules of {out['programs']} programs")
        for name, r in (("model", out), *baselines.items()):
            print(f"  {name:16} MAPE {r['mape']:.1f}%  median APE {r['median_ape']:.1f}%  Spearman/program "
                  f"{r['spearman_per_program_mean']:.3f}  pairwise {r['pairwise_accuracy']:.3f}  "
                  f"top-1 recovery {r['top1_recovery']:.3f}")
        if noise is not None:
            print(f"  noise floor (re-measured labels) MAPE {noise:.1f}%")
        if ceiling is not None:
            print(f"  a second measurement (simulated from the noise pairs): MAPE {ceiling['mape']:.1f}%  "
                  f"Spearman/program {ceiling['spearman_per_program_mean']:.3f}  pairwise "
                  f"{ceiling['pairwise_accuracy']:.3f}  top-1 recovery {ceiling['top1_recovery']:.3f}")
        for p in out.get("plots", []):
            print(f"  wrote {p}")
        if a.write_card:
            print(f"  wrote the evaluation into {model_path}.card.json")
    return 0


def save_plots_for(out_dir: str, measured, predictions: dict, split: str) -> list[Path]:
    from .costmodel.plots import save_plots

    return save_plots(out_dir, measured, predictions, f"({split} split)")


def cmd_dataset_pack(a: argparse.Namespace) -> int:
    from .dataset.shipped import DATA, pack

    fields = {}
    for f in a.field:
        key, eq, value = f.partition("=")
        if not eq or not key:
            raise LoopcostError(f"--field takes KEY=VALUE, got {f!r}")
        fields[key] = value
    m = pack(a.db, a.out or DATA, a.command, fields)
    print(f"packed {m['programs']} programs, {m['schedules']} schedules into {a.out or DATA}/{m['file']} "
          f"({m['bytes'] / 2**20:.1f} MiB) with dataset.manifest.json")
    return 0


def cmd_optimize(a: argparse.Namespace) -> int:
    from .costmodel.model import CostModel
    from .costmodel.shipped import DEFAULT, machine_warning
    from .search.optimize import optimize

    program, ckernel = _load(a)
    model, path = None, None
    if a.search != "exec":
        path = Path(a.model) if a.model else DEFAULT
        if not path.exists():
            raise LoopcostError(f"no cost model at {path}: train one (`loopcost train`) and pass --model, "
                                "or use --search exec")
        model = CostModel.load(path)
        if warning := machine_warning(path):
            print(warning, file=sys.stderr)
    r = optimize(program, method=a.search, model=model, budget=a.budget, measure=a.measure, top_k=a.top_k,
                 seed=a.seed)
    drop_in = None
    if a.emit_c:
        if ckernel is None:
            code = kernel_file(r.state)
        else:
            from .frontend.emit import emit_function
            from .frontend.linkcheck import link_check

            code = emit_function(ckernel, r.state, schedule=str(r.schedule))
            if a.measure:
                chk = link_check(ckernel, code, defines=_pairs(a.define, "-D", False))
                drop_in = {"verified": chk.ok, "max_rel_error": max(chk.errors.values(), default=0.0),
                           "speedup_over_original": chk.speedup,
                           "original_median_s": statistics.median(chk.times_original),
                           "emitted_median_s": statistics.median(chk.times_optimized)}
        if a.emit_c == "-":
            sys.stdout.write(code)
        else:
            Path(a.emit_c).write_text(code)
    out = {"kernel": a.kernel, "size": _size(a), "search": a.search, "model": str(path) if path else None,
           "schedule": str(r.schedule),
           "predicted_speedup": r.predicted_speedup, "measured_speedup": r.measured_speedup,
           "verified": r.verified, "search_time_s": r.search_time_s, "candidates_scored": r.candidates_scored,
           "measured_top_k": [{"schedule": s, "speedup": v} for s, v in r.measured],
           "unscheduled_self_speedup": r.self_speedup}
    if drop_in is not None:
        out["drop_in_check"] = drop_in
    if a.json:
        print(json.dumps(out, indent=2))
    elif a.emit_c != "-":
        print(f"kernel      {a.kernel}" + (f" ({a.size})" if _size(a) else ""))
        print(f"schedule    {out['schedule'] or '(none: the unscheduled program was fastest)'}")
        if r.predicted_speedup is not None:
            print(f"predicted   {r.predicted_speedup:.2f}x")
        if r.measured_speedup is not None:
            print(f"measured    {r.measured_speedup:.2f}x over the unscheduled program "
                  f"({'verified' if r.verified else 'NOT verified'})")
        print(f"search      {r.search_time_s:.1f} s, {r.candidates_scored} candidates scored")
        if a.emit_c:
            print(f"wrote       {a.emit_c}")
        if drop_in is not None:
            print(f"drop-in     emitted function vs the original (gcc -O3) linked side by side: "
                  f"{'same results' if drop_in['verified'] else 'RESULTS DIFFER'} (max rel. error "
                  f"{drop_in['max_rel_error']:.1e}), {drop_in['speedup_over_original']:.2f}x faster")
    ok = r.verified and (drop_in is None or drop_in["verified"])
    return 0 if ok or not a.measure else 1


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="loopcost", description="Learned cost model and autoscheduler for loop nests.")
    sub = ap.add_subparsers(dest="command", required=True)

    def source_args(sp: argparse.ArgumentParser, size: str = "small") -> None:
        sp.add_argument("kernel", help="library kernel name, DSL .py file, .json program, or C file (.c)")
        sp.add_argument("--size", default=size, choices=["small", "bench"],
                        help=f"library kernel size (default {size})")
        sp.add_argument("--function", default=None,
                        help="C files: the function to optimize (default: the one with #pragma scop)")
        sp.add_argument("-D", dest="define", action="append", metavar="NAME[=VALUE]",
                        help="C files: a preprocessor define, e.g. -D N=2000 (repeatable)")
        sp.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="C files: the value of an int parameter, e.g. --param n=1000 (repeatable)")

    def kernel_args(sp: argparse.ArgumentParser) -> None:
        source_args(sp)
        sp.add_argument("--schedule", default="",
                        help="schedule in the notation, e.g. 'T2(i,j,32,32) P(i_t)', or @FILE.json "
                             "(default: unscheduled)")

    r = sub.add_parser("run", help="compile, run and verify a kernel; report its times")
    kernel_args(r)
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--runs", type=int, default=5, help="timed runs (default 5)")
    r.add_argument("--warmup", type=int, default=1, help="untimed runs after the verified one (default 1)")
    r.add_argument("--seed", type=int, default=0, help="seed of the input data")
    r.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is abandoned")
    r.add_argument("--cc", default=None, help="C compiler (default $CC or cc)")
    r.add_argument("--cflags", default=None, help="compiler flags (default '-O3 -march=native -fopenmp')")
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("show", help="print a kernel's generated C, its JSON, or its dependences")
    kernel_args(s)
    g = s.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="print the program as JSON")
    g.add_argument("--deps", action="store_true", help="print exact dependences (isl)")
    g.add_argument("--loops", action="store_true", help="print each computation's loop names after the schedule")
    s.set_defaults(func=cmd_show)

    o = sub.add_parser("optimize", help="search a schedule, measure the best candidates, keep the fastest")
    source_args(o, size="bench")  # a small kernel runs in microseconds: noise decides its speedups
    o.add_argument("--search", default="beam", choices=["beam", "mcts", "random", "exec"])
    o.add_argument("--budget", type=int, default=4, help="beam width (mcts: x15 iterations; random: x16 samples)")
    o.add_argument("--model", default=None, help="cost model (default: the shipped one)")
    o.add_argument("--measure", action=argparse.BooleanOptionalAction, default=True,
                   help="measure the top candidates and keep the fastest verified one (default)")
    o.add_argument("--top-k", type=int, default=5)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--emit-c", default=None,
                   help="write the optimized kernel as C to FILE (- for stdout); for a C file, the same function "
                        "with the same signature, checked against the original when measuring")
    o.add_argument("--json", action="store_true")
    o.set_defaults(func=cmd_optimize)

    k = sub.add_parser("kernels", help="list the library kernels")
    k.set_defaults(func=cmd_kernels)

    g = sub.add_parser("generate", help="draw random programs (the dataset's generator)")
    g.add_argument("--programs", type=int, default=10)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", default=None, help="write each program as JSON into this folder")
    g.add_argument("--families", default=None, help="comma-separated program families (default: all)")
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("dataset", help="build and inspect measured datasets")
    dsub = d.add_subparsers(dest="dataset_command", required=True)
    b = dsub.add_parser("build", help="measure random programs and schedules into a database (resumable)")
    b.add_argument("--db", required=True, help="SQLite database to create or resume")
    b.add_argument("--programs", type=int, required=True, help="programs 0..N-1 of the seed's stream")
    b.add_argument("--schedules", type=int, default=20, help="random schedules per program (plus the empty one)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--workers", type=int, default=2, help="compile/measure worker processes (default 2)")
    b.add_argument("--cluster", default=None,
                   help="'local' for a Dask LocalCluster, or tcp://HOST:PORT of a running Dask scheduler")
    b.add_argument("--allow-mixed-machines", action="store_true",
                   help="let one database hold measurements of different machines")
    b.add_argument("--min-work", type=float, default=2e6,
                   help="smallest estimated work (points x operations) of a program (default 2e6)")
    b.add_argument("--max-work", type=float, default=1.5e8, help="largest estimated work (default 1.5e8)")
    b.add_argument("--families", default=None,
                   help="comma-separated program families to draw from (default: all; a database built before "
                        "'iterated' existed resumes with the others named)")
    b.add_argument("--staged-share", type=float, default=STAGED_SHARE,
                   help=f"share of schedules drawn as walks through beam search's stage order, up to "
                        f"{len(STAGES)} steps (default {STAGED_SHARE}; 0 draws 1-5 steps in random order only, "
                        "as databases built before this option did)")
    b.add_argument("--cc", default=None)
    b.add_argument("--cflags", default=None)
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_dataset_build)
    ex = dsub.add_parser("export", help="featurize a database into the training format (.npz)")
    ex.add_argument("--db", required=True)
    ex.add_argument("--out", required=True)
    ex.add_argument("--no-progress", action="store_true")
    ex.set_defaults(func=cmd_dataset_export)
    pk = dsub.add_parser("pack", help="compress a database with a manifest (default: as the shipped dataset)")
    pk.add_argument("--db", required=True)
    pk.add_argument("--out", default=None, help="folder (default: loopcost/data)")
    pk.add_argument("--command", default="", help="the build command, recorded in the manifest")
    pk.add_argument("--field", action="append", default=[], metavar="KEY=VALUE",
                    help="a note to record in the manifest (repeatable), e.g. the build rate")
    pk.set_defaults(func=cmd_dataset_pack)
    st = dsub.add_parser("stats", help="counts, speedups, transformation shares, noise and machine")
    st.add_argument("--db", default=None, help="database (default: the shipped dataset)")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_dataset_stats)

    t = sub.add_parser("train", help="train the cost model on an exported dataset (resumes after interruption)")
    t.add_argument("--data", required=True, help=".npz written by `loopcost dataset export`")
    t.add_argument("--out", required=True, help="model file to write (and OUT.ckpt, OUT.card.json)")
    t.add_argument("--db", default=None, help="the database the data came from (for the model card)")
    t.add_argument("--epochs", type=int, default=30)
    t.add_argument("--batch-size", type=int, default=256)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--loss", default="log_mse", choices=["mape", "log_mse"])
    t.add_argument("--arch", default="lstm", choices=["lstm", "transformer"],
                   help="network: the paper's recursive LSTM, or self-attention among computations")
    t.add_argument("--ensemble", type=int, default=1, help="train this many networks (seeds SEED, SEED+1, ...) "
                   "and average them; their spread is an uncertainty estimate")
    t.add_argument("--rank-weight", type=float, default=0.0,
                   help="weight of a pairwise ranking loss among schedules of one program (default 0: none)")
    t.add_argument("--init", default=None, metavar="MODEL",
                   help="fine-tune: start from a trained model's network (and its input statistics), e.g. the "
                   "shipped model, on measurements of your machine; use a lower --lr and fewer --epochs")
    t.add_argument("--init-member", type=int, default=0,
                   help="which network of an --init ensemble to start from (ensemble member k: this + k)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--restart", action="store_true", help="ignore an existing checkpoint")
    t.set_defaults(func=cmd_train)

    en = sub.add_parser("ensemble", help="combine trained models into one that predicts the geometric mean "
                        "of theirs (their spread is an uncertainty estimate)")
    en.add_argument("models", nargs="+", help="model files written by `loopcost train`")
    en.add_argument("--out", required=True)
    en.set_defaults(func=cmd_ensemble)

    e = sub.add_parser("evaluate", help="accuracy of a model on a split, next to baselines and the noise floor")
    e.add_argument("--model", default=None, help="model file (default: the shipped model)")
    e.add_argument("--data", default=None,
                   help=".npz from `loopcost dataset export` (default: the export of --db, made once)")
    e.add_argument("--db", default=None,
                   help="measurement database, for the data and the noise floor (default: the shipped dataset)")
    e.add_argument("--plots", default=None, metavar="DIR", help="write scatter.png and errors.png into DIR")
    e.add_argument("--write-card", action="store_true", help="record this evaluation in the model's card")
    e.add_argument("--split", default="test", choices=["train", "val", "test"])
    e.add_argument("--json", action="store_true")
    e.add_argument("--gbt", action="store_true", help="also train and score the gradient-boosted baseline")
    e.set_defaults(func=cmd_evaluate)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "runs", 1) < 1:
        parser().error("--runs must be at least 1")
    try:
        return args.func(args)
    except LoopcostError as e:
        print(f"loopcost: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("loopcost: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
