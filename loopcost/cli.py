"""The ``loopcost`` command."""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .codegen.c_source import kernel_file
from .codegen.compiler import Toolchain
from .errors import CompileError, EnvironmentFailure, LoopcostError, first_line
from .features.layout import PREFIX_WIDTHS
from .features.layout import VERSION as FEATURE_VERSION
from .generator.programs import GENERATOR_VERSION, VERSION_FAMILIES
from .generator.schedules import STAGED_SHARE
from .ir.dependence import dependences
from .kernels import KERNELS
from .kernels.loader import load_kernel, parse_pairs
from .paths import card_path, store_path
from .transforms.schedule import Schedule
from .transforms.space import STAGES

if TYPE_CHECKING:
    from .codegen.harness import UserInit
    from .frontend.translate import CKernel
    from .ir.program import Program

EXIT_CODES = """exit codes:
  0  done, and every result reported was verified
  1  it ran, but the result is not verified or nothing was found (stderr says which and why)
  2  the input is wrong: an option, a file, a kernel (stderr says what and how to fix it)
  3  the environment failed: compiler missing or crashing, disk full, database locked, cluster out
     of reach, or an internal error (run with --debug for the traceback)
  130  interrupted (Ctrl-C)"""


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line (exit 2), not the whole usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def at_least(low: float, kind: type = int):
    """An argparse type: a finite ``kind`` (int or float) not below ``low``."""
    def check(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") \
                from None
        if not math.isfinite(value) or value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
        return value
    return check


def above(low: float):
    """An argparse type: a finite number greater than ``low``."""
    def check(text: str) -> float:
        value = at_least(-math.inf, float)(text)
        if value <= low:
            raise argparse.ArgumentTypeError(f"must be greater than {low}, got {text}")
        return value
    return check


def censor_factor(text: str) -> float:
    """An argparse type: 0 (no censoring) or a factor above 1."""
    value = at_least(0.0, float)(text)
    if 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be 0 (time every schedule) or above 1, got {text}")
    return value


def seed_list(text: str) -> list[int]:
    """An argparse type: comma-separated seeds (integers)."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 2,3,5, got {text}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("expected at least one seed")
    return seeds


def existing_file(text: str) -> str:
    """An argparse type: the name of a file that exists."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text} is not a file")
    return text


def output_file(text: str) -> str:
    """An argparse type: a file to write (``-`` for standard output), not a folder."""
    if text != "-" and Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give the name of a file to write")
    return text


def output_dir(text: str) -> str:
    """An argparse type: a folder to write into, not a file."""
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file: give the name of a folder to write into")
    return text


def fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    value = at_least(0.0, float)(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _size(a: argparse.Namespace) -> str | None:
    """The --size that applies: none for C files, whose sizes come from -D and --param."""
    return None if a.kernel.endswith(".c") else a.size


def _load(a: argparse.Namespace) -> tuple[Program, CKernel | None]:
    """The kernel the command names (``load_kernel``); for a C file whose sizes came from the file's own
    call of the function, one line on stderr says which."""
    program, ckernel = load_kernel(a.kernel, a.size, function=a.function, defines=a.define, params=a.param,
                                   include=a.include)
    if ckernel is not None and ckernel.source.picked:
        print(f"loopcost: optimizing {ckernel.source.picked}", file=sys.stderr)
    if ckernel is not None and ckernel.from_file.values:
        taken = ", ".join(f"{n}={v}" for n, v in ckernel.from_file.values.items())
        print(f"loopcost: sizes from {ckernel.from_file.where}: {taken} (--param overrides)", file=sys.stderr)
    return program, ckernel


def _inputs(a: argparse.Namespace, ckernel: CKernel | None) -> UserInit | None:
    """The C file's own inputs (``--init FUNC``, else the init call its ``main`` makes; ``--init none``:
    random), said on stderr; None for random inputs."""
    if ckernel is None or a.init == "none":
        if a.init not in (None, "none"):
            raise LoopcostError(f"--init {a.init}: only a C file (.c) has init functions")
        return None
    from .frontend.inputs import user_init

    init = user_init(ckernel, a.init, parse_pairs(a.define, "-D", False))
    if init is not None:
        print(f"loopcost: inputs from {init.label} of {ckernel.source.path.name} (--init none: random ones)",
              file=sys.stderr)
    return init


def cmd_run(a: argparse.Namespace) -> int:
    from .runner import Timing, open_runner

    program, ckernel = _load(a)
    schedule = Schedule.load(a.schedule)
    with open_runner(toolchain=Toolchain.from_string(a.cc, a.cflags), timeout=a.timeout, store=store_path(a.store),
                     source="run", reuse=not a.remeasure, init=_inputs(a, ckernel)) as runner:
        m = runner.measure([schedule.apply(program)], timing=Timing(a.runs, a.warmup), seed=a.seed,
                           labels=[str(schedule)])[0]
    if m.error and m.error.startswith("build: "):  # the program asked for did not build: the flags, the compiler
        raise CompileError(m.error.removeprefix("build: "))
    report = {"kernel": a.kernel, "program": program.name, "size": _size(a), "schedule": a.schedule, **m.to_json()}
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"kernel     {a.kernel}" + (f" ({a.size})" if _size(a) else ""))
        print(f"schedule   {a.schedule or '(none)'}\n{m.describe()}")
    if not m.verified:
        print(f"loopcost: not verified: {m.error}", file=sys.stderr)
    return 0 if m.verified else 1


def cmd_show(a: argparse.Namespace) -> int:
    program, _ = _load(a)
    if a.json:
        print(json.dumps(program.to_json(), indent=2))
    elif a.loops:
        print(Schedule.load(a.schedule).apply(program).loops_text())
    elif a.deps:
        for dep in dependences(program):
            print(f"{dep.describe()}: {dep.relation}")
    else:
        print(kernel_file(Schedule.load(a.schedule).apply(program)), end="")
    return 0


def cmd_kernels(a: argparse.Namespace) -> int:
    width = max(len(n) for n in KERNELS)
    for name in sorted(KERNELS):
        print(f"{name:<{width}}  {KERNELS[name].description}")
    return 0


def cmd_generate(a: argparse.Namespace) -> int:
    from .generator.programs import GeneratorOptions, generate_programs, parse_families

    programs = generate_programs(a.programs, a.seed, GeneratorOptions(families=parse_families(a.families),
                                                                      version=a.generator_version))
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


def cmd_dataset_build(a: argparse.Namespace) -> int:
    from .database.store import Store
    from .dataset.build import build, format_build
    from .dataset.tasks import DATASET_TIMING, LEGACY_TIMING, BuildConfig
    from .generator.programs import GeneratorOptions, parse_families

    if a.legacy_timing and (a.censor is not None or a.steady is not None or a.abort is not None):
        raise LoopcostError("--legacy-timing neither censors, stops when steady nor stops slow runs: drop "
                            "--censor/--steady/--abort")
    timing = LEGACY_TIMING if a.legacy_timing else replace(
        DATASET_TIMING, censor=DATASET_TIMING.censor if a.censor is None else a.censor,
        steady=DATASET_TIMING.steady if a.steady is None else a.steady,
        abort=DATASET_TIMING.abort if a.abort is None else a.abort)
    gen = GeneratorOptions(min_work=a.min_work, max_work=a.max_work, families=parse_families(a.families),
                           version=a.generator_version)
    exclude = frozenset()
    if a.exclude_programs_of:
        with Store(a.exclude_programs_of) as other:
            exclude = frozenset(other.program_hashes().values())
    cfg = BuildConfig(seed=a.seed, schedules=a.schedules, toolchain=Toolchain.from_string(a.cc, a.cflags),
                      generator=gen, staged_share=a.staged_share, timing=timing, compile_timeout=a.compile_timeout,
                      exclude=exclude)
    cluster = None if a.cluster in (None, "none") else a.cluster
    stats = build(a.db, programs=a.programs, cfg=cfg, workers=a.workers, cluster=cluster,
                  allow_mixed=a.allow_mixed_machines, progress=not a.no_progress, security=a.security)
    print(json.dumps(stats, indent=2) if a.json else format_build(stats))
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


def cmd_store_stats(a: argparse.Namespace) -> int:
    from .database.stats import format_run_stats
    from .database.store import Store

    path = store_path(a.store)
    if path is None or not path.exists():
        raise LoopcostError(f"no store at {path}: nothing was measured yet (loopcost run / optimize keep "
                            "every measurement there)")
    with Store(path) as store:
        s = store.run_stats()
    print(json.dumps(s, indent=2) if a.json else format_run_stats(s, str(path)))
    return 0


def cmd_dataset_export(a: argparse.Namespace) -> int:
    from .costmodel.data import export
    from .dataset.shipped import export_bar

    info = export(a.db, a.out, export_bar(not a.no_progress), a.seeds, a.layout)
    skipped = info["skipped_over_limits"]
    print(f"wrote {info['records']} records of {info['programs']} programs to {a.out}"
          + (f" ({skipped} beyond the feature limits skipped)" if skipped else ""))
    return 0


def cmd_train(a: argparse.Namespace) -> int:
    from .costmodel.train import TrainConfig, train_ensemble

    if (a.data is None) == (a.store is None):
        raise LoopcostError("train needs --data DATA.npz (an exported dataset) or --store (this machine's "
                            "measurements), not both")
    if a.store is not None:
        a = _store_training(a)
    elif a.out is None:
        raise LoopcostError("train --data needs --out MODEL.pt")
    cfg = TrainConfig(epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, loss=a.loss, seed=a.seed,
                      rank_weight=a.rank_weight, threads=a.threads, arch=a.arch, init=a.init or "",
                      init_member=a.init_member, device=a.device)
    _, best = train_ensemble(a.data, a.out, cfg, ensemble=a.ensemble or 1, restart=a.restart, db=a.db)
    print(f"saved {a.out} (validation MAPE {best['mape']:.1f}%, Spearman per program "
          f"{best['spearman_per_program_mean']:.3f}); card: {card_path(a.out)}")
    return 0


def _store_training(a: argparse.Namespace) -> argparse.Namespace:
    """``train --store``: the store's measurements of this machine exported for training, and the defaults
    of fine-tuning (from the model shipped for this CPU, every one of its networks, written where ``optimize``
    finds it)."""
    from .codegen.c_source import codegen_version
    from .costmodel.data import export_store
    from .costmodel.model import CostModel
    from .database.fingerprint import cpu_model
    from .paths import machine_model, shipped_for
    from .runner import LocalRunner

    store = store_path(a.store or None)
    if store is None or not store.exists():
        raise LoopcostError(f"no store at {store}: nothing was measured on this machine yet")
    fp, _ = LocalRunner().machine()
    out = Path(a.out) if a.out else machine_model(fp)
    out.parent.mkdir(parents=True, exist_ok=True)
    init = a.init or str(shipped_for(cpu_model()).model)
    nets = CostModel.load(init).nets
    if a.init_member >= len(nets):
        raise LoopcostError(f"--init-member {a.init_member}: {init} has {len(nets)} network(s), numbered from 0")
    data = out.with_suffix(".store.npz")
    info = export_store(store, data, fingerprint=fp, codegen=codegen_version)
    print(f"fine-tuning {init} ({len(nets)} network(s)) on {info['records']} schedules of {info['programs']} "
          f"programs measured on this machine ({fp})", file=sys.stderr)
    return argparse.Namespace(**{**vars(a), "data": str(data), "out": str(out), "db": str(store), "init": init,
                                 "arch": nets[a.init_member].config["arch"],
                                 "ensemble": a.ensemble or len(nets) - a.init_member})


def cmd_ensemble(a: argparse.Namespace) -> int:
    from .costmodel.card import combine_files

    model = combine_files(a.models, a.out)
    print(f"saved {a.out}: {len(model.nets)} networks; card: {card_path(a.out)}")
    return 0


def cmd_evaluate(a: argparse.Namespace) -> int:
    from .costmodel.evaluate import evaluate, format_evaluation
    from .database.fingerprint import cpu_model
    from .dataset.shipped import cached_export, shipped_db
    from .paths import shipped_for

    if a.store is not None:
        return _evaluate_store(a)
    pair = shipped_for(cpu_model())  # the model and dataset shipped for this CPU
    shipped = not a.db and not a.data  # the shipped dataset, whose manifest goes into the card
    db = shipped_db(pair.dataset) if shipped else a.db or None
    data = a.data or cached_export(Path(db))
    r = evaluate(a.model or pair.model, data, db, split=a.split, gbt=a.gbt, plots=a.plots,
                 write_card=a.write_card, manifest=pair.manifest if shipped else None, unseen_by=a.unseen_by)
    print(json.dumps(r, indent=2) if a.json else format_evaluation(r, a.write_card))
    return 0


def _evaluate_store(a: argparse.Namespace) -> int:
    """``evaluate --store``: the model (default: the one ``optimize`` uses on this machine) on every schedule this
    machine measured into its store: how well it ranks the user's own kernels."""
    import tempfile

    from .codegen.c_source import codegen_version
    from .costmodel.data import export_store
    from .costmodel.evaluate import evaluate, format_evaluation
    from .costmodel.shipped import search_model
    from .paths import machine_model
    from .runner import LocalRunner

    if a.data or a.db or a.unseen_by or a.write_card or a.split != "test":
        raise LoopcostError("--store scores every schedule this machine measured into its store: drop --data, --db, "
                            "--split, --unseen-by and --write-card")
    store = store_path(a.store or None)
    if store is None or not store.exists():
        raise LoopcostError(f"no store at {store}: nothing was measured on this machine yet")
    fp, _ = LocalRunner().machine()
    _, model, _ = search_model(a.model, machine_model(fp))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "store.npz"
        info = export_store(store, data, fingerprint=fp, codegen=codegen_version, for_training=False)
        print(f"scoring {model} on {info['records']} schedules of {info['programs']} programs measured on this "
              f"machine ({fp})", file=sys.stderr)
        r = evaluate(model, data, None, split="all", plots=a.plots)
    print(json.dumps(r, indent=2) if a.json else format_evaluation(r, False))
    return 0


def cmd_dataset_pack(a: argparse.Namespace) -> int:
    from .dataset.shipped import pack

    m = pack(a.db, a.out, a.command, parse_pairs(a.field, "--field", True))
    print(f"packed {m['programs']} programs, {m['schedules']} schedules into {a.out}/{m['file']} "
          f"({m['bytes'] / 2**20:.1f} MiB) with dataset.manifest.json")
    return 0


def cmd_optimize(a: argparse.Namespace) -> int:
    from .costmodel.shipped import search_model
    from .runner import open_runner
    from .search.adaptive import AdaptiveOptions
    from .search.optimize import format_result, optimize

    program, ckernel = _load(a)
    a.search = a.search or ("adaptive" if a.measure else "beam")  # adaptive measures as it searches
    model, path = None, None
    if a.search != "exec":
        from .paths import machine_model
        from .runner import LocalRunner

        model, path, warning = search_model(a.model, machine_model(LocalRunner().machine()[0]))
        if warning:
            print(warning, file=sys.stderr)
    cluster = None if a.cluster in (None, "none") else a.cluster
    init = _inputs(a, ckernel)
    with open_runner(cluster, workers=a.workers, store=store_path(a.store), source=f"optimize:{a.search}",
                     reuse=not a.remeasure, security=a.security, init=init) as runner:
        r = optimize(program, method=a.search, model=model, budget=a.budget, measure=a.measure, top_k=a.top_k,
                     seed=a.seed, runner=runner,
                     adaptive=AdaptiveOptions(measure_budget=a.measure_budget, batch=a.batch, strategy=a.strategy),
                     on_round=None if a.json else _round_progress(a.measure_budget))
    out = {"kernel": a.kernel, "size": _size(a), "search": a.search, "model": str(path) if path else None,
           **r.to_json(), "cluster": cluster}
    if a.emit_c:
        if ckernel is None:
            code = kernel_file(r.state)
        else:
            from .frontend.dropin import choose_drop_in
            from .frontend.emit import emit_function

            if a.measure and r.verified:  # the written function is the fastest of those measured beside the original
                code, out["drop_in_check"] = choose_drop_in(ckernel, r.measured, parse_pairs(a.define, "-D", False),
                                                            init=init)
            else:
                code = emit_function(ckernel, r.state, schedule=str(r.schedule))
        if a.emit_c == "-":
            sys.stdout.write(code)
        else:
            Path(a.emit_c).write_text(code)
    if a.json:
        print(json.dumps(out, indent=2))
    elif a.emit_c != "-":
        print(f"kernel      {a.kernel}" + (f" ({a.size})" if _size(a) else ""))
        print(format_result(out) + (f"\nwrote       {a.emit_c}" if a.emit_c else ""))
    check = out.get("drop_in_check", {})
    if a.measure and not r.verified:
        print("loopcost: not verified: no candidate, not even the unscheduled program, measured and verified",
              file=sys.stderr)
    elif a.measure and not check.get("verified", True):
        print(f"loopcost: not verified: the emitted functions, linked in place of the original, disagree with it: "
              f"{check['why']}; wrote the original function", file=sys.stderr)
    elif check and check["schedule"] is None:
        print(f"loopcost: wrote the original function unchanged: {check['why']}", file=sys.stderr)
    return 0 if (r.verified and check.get("verified", True)) or not a.measure else 1


def _round_progress(budget: int):
    """Prints, on stderr, what an adaptive search has measured after each of its rounds."""
    def show(measured) -> None:
        best = max(measured, key=lambda c: c.score)
        text = str(best.schedule) or "(none)"
        print(f"adaptive    {len(measured)}/{budget} measured, best {best.score:.2f}x: {text}", file=sys.stderr,
              flush=True)
    return show


INIT_HELP = ("C files: the function of the file that makes the kernel's inputs, called on its arrays after the "
             "random fill (default: the one main calls on them before the kernel; 'none': random inputs only)")


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="loopcost", description="Learned cost model and autoscheduler for loop nests.",
                 epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--debug", action="store_true", help="show the traceback of any failure")
    sub = ap.add_subparsers(dest="command", required=True)

    def source_args(sp: argparse.ArgumentParser, size: str = "small") -> None:
        sp.add_argument("kernel", help="library kernel name, DSL .py file, .json program, or C file (.c)")
        sp.add_argument("--size", default=size, choices=["small", "bench"],
                        help=f"library kernel size (default {size})")
        sp.add_argument("--function", default=None,
                        help="C files: the function to optimize (default: the one with #pragma scop)")
        sp.add_argument("-D", dest="define", action="append", metavar="NAME[=VALUE]",
                        help="C files: a preprocessor define, e.g. -D N=2000 (repeatable)")
        sp.add_argument("-I", dest="include", action="append", metavar="DIR",
                        help="C files: a folder where #include finds headers (repeatable; the file's own "
                             "folder is searched first for #include \"...\")")
        sp.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="C files: the value of an int parameter, e.g. --param n=1000 (repeatable)")

    def generator_version_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--generator-version", type=int, choices=sorted(VERSION_FAMILIES), default=GENERATOR_VERSION,
                        help=f"the program generator's version (default {GENERATOR_VERSION}; to resume a build of "
                             "an older one: 1, before December 2026: no matrix-vector family, extents from pools up "
                             "to 2048, 64 MiB at most; 2, until 2026-12-07: no batched family, convolutions of one "
                             "channel)")

    def store_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--store", default=None, metavar="DB",
                        help="keep every measurement in this SQLite database (default: the machine's, "
                             "$LOOPCOST_CACHE_DIR/measurements.sqlite; 'none': keep nothing)")
        sp.add_argument("--remeasure", action="store_true",
                        help="measure again what this machine's store already holds (default: reuse it)")

    def toolchain_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cc", default=None, help="C compiler (default $CC or cc)")
        sp.add_argument("--cflags", default=None, help="compiler flags (default '-O3 -march=native -fopenmp')")

    def cluster_args(sp: argparse.ArgumentParser, workers: str) -> None:
        sp.add_argument("--cluster", default=None, help="measure on a Dask cluster: 'local' starts one on this "
                        "machine, or tls://HOST:PORT (tcp://HOST:PORT) of a running scheduler (default: this "
                        "machine, no Dask)")
        sp.add_argument("--security", default=None, type=existing_file, metavar="FILE",
                        help="a tls:// cluster's certificates: JSON of tls_ca_file, tls_client_cert, "
                        "tls_client_key (default: Dask's distributed.comm.tls configuration)")
        sp.add_argument("--workers", type=at_least(1), default=2, help=f"{workers} (default 2)")

    def kernel_args(sp: argparse.ArgumentParser) -> None:
        source_args(sp)
        sp.add_argument("--schedule", default="",
                        help="schedule in the notation, e.g. 'T2(i,j,32,32) P(i_t)', or @FILE.json "
                             "(default: unscheduled)")

    r = sub.add_parser("run", help="compile, run and verify a kernel; report its times")
    kernel_args(r)
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--runs", type=at_least(1), default=5, help="timed runs (default 5)")
    r.add_argument("--warmup", type=at_least(0), default=1, help="untimed runs after the verified one (default 1)")
    r.add_argument("--seed", type=at_least(0), default=0, help="seed of the input data")
    r.add_argument("--init", default=None, metavar="FUNC", help=INIT_HELP)
    r.add_argument("--timeout", type=above(0), default=300.0, help="seconds before a run is abandoned")
    toolchain_args(r)
    store_arg(r)
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
    o.add_argument("--search", default=None, choices=["beam", "mcts", "random", "exec", "adaptive"],
                   help="adaptive (the default; beam with --no-measure): measures a few of the model's best "
                        "candidates at a time, and updates the model with every measurement (--measure-budget, "
                        "--strategy); beam: the model alone, then its --top-k measured (seconds)")
    o.add_argument("--measure-budget", type=at_least(1), default=48, help="adaptive: schedules measured at most")
    o.add_argument("--batch", type=at_least(1), default=8, help="adaptive, rounds: schedules measured a round")
    o.add_argument("--strategy", default="rounds", choices=["rounds", "staged"],
                   help="adaptive: rounds of whole model-guided beam searches (default), or measure the model's "
                        "best children at each beam stage and keep the measured best (staged)")
    o.add_argument("--budget", type=at_least(1), default=4,
                   help="beam width (mcts: x15 iterations; random: x16 samples)")
    o.add_argument("--model", default=None, type=existing_file,
                   help="cost model (default: the one shipped for this CPU)")
    o.add_argument("--measure", action=argparse.BooleanOptionalAction, default=True,
                   help="measure the top candidates and keep the fastest verified one (default)")
    o.add_argument("--top-k", type=at_least(1), default=5)
    o.add_argument("--seed", type=at_least(0), default=0)
    o.add_argument("--init", default=None, metavar="FUNC", help=INIT_HELP)
    o.add_argument("--emit-c", default=None, type=output_file,
                   help="write the optimized kernel as C to FILE (- for stdout); for a C file, the same function "
                        "with the same signature, checked against the original when measuring")
    cluster_args(o, "workers of a --cluster local")
    store_arg(o)
    o.add_argument("--json", action="store_true")
    o.set_defaults(func=cmd_optimize)

    k = sub.add_parser("kernels", help="list the library kernels")
    k.set_defaults(func=cmd_kernels)

    g = sub.add_parser("generate", help="draw random programs (the dataset's generator)")
    g.add_argument("--programs", type=at_least(1), default=10)
    g.add_argument("--seed", type=at_least(0), default=0)
    g.add_argument("--out", default=None, type=output_dir, help="write each program as JSON into this folder")
    g.add_argument("--families", default=None, help="comma-separated program families (default: all)")
    generator_version_arg(g)
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("dataset", help="build and inspect measured datasets")
    dsub = d.add_subparsers(dest="dataset_command", required=True)
    b = dsub.add_parser("build", help="measure random programs and schedules into a database (resumable)")
    b.add_argument("--db", required=True, help="SQLite database to create or resume")
    b.add_argument("--programs", type=at_least(1), required=True, help="programs 0..N-1 of the seed's stream")
    b.add_argument("--schedules", type=at_least(0), default=20,
                   help="random schedules per program (plus the empty one)")
    b.add_argument("--seed", type=at_least(0), default=0)
    cluster_args(b, "compile/measure worker processes, here or in a --cluster local")
    b.add_argument("--allow-mixed-machines", action="store_true",
                   help="let one database hold measurements of different machines")
    b.add_argument("--min-work", type=above(0), default=2e6,
                   help="smallest estimated work (points x operations) of a program (default 2e6)")
    b.add_argument("--max-work", type=above(0), default=1.5e8, help="largest estimated work (default 1.5e8)")
    b.add_argument("--families", default=None,
                   help="comma-separated program families to draw from (default: all; a database built before "
                        "'iterated' existed resumes with the others named)")
    generator_version_arg(b)
    b.add_argument("--staged-share", type=fraction, default=STAGED_SHARE,
                   help=f"share of schedules drawn as walks through beam search's stage order, up to "
                        f"{len(STAGES)} steps (default {STAGED_SHARE}; 0 draws 1-5 steps in random order only, "
                        "as databases built before this option did)")
    b.add_argument("--censor", type=censor_factor, default=None,
                   help="stop timing a schedule whose first two runs are both over K times slower than the "
                        "unscheduled program's fastest, and keep it as a censored label (default 3; 0: time every "
                        "schedule)")
    b.add_argument("--steady", type=at_least(0.0, float), default=None,
                   help="stop timing once two runs agree within this relative spread (default 0.02; 0: always "
                        "at least 3 runs)")
    b.add_argument("--abort", type=censor_factor, default=None,
                   help="stop a run of a schedule once it takes this many times the unscheduled program's fastest "
                        "run (at least 1 s): the schedule fails, with no label (default 20; 0: never, as builds "
                        "before December 2026 ran)")
    b.add_argument("--compile-timeout", type=above(0), default=60.0,
                   help="seconds the compiler may take on one program's schedules; past it the program's "
                        "schedules are stored as failures (default 60)")
    b.add_argument("--exclude-programs-of", default=None, type=existing_file, metavar="DB",
                   help="draw again any program that the database DB holds (a set held out from DB's training; "
                        "pass it on every resume too)")
    b.add_argument("--legacy-timing", action="store_true",
                   help="time as builds before December 2026 did (an untimed check, 3-30 runs, no censoring): "
                        "to resume such a build")
    toolchain_args(b)
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_dataset_build)
    ex = dsub.add_parser("export", help="featurize a database into the training format (.npz)")
    ex.add_argument("--db", required=True, type=existing_file)
    ex.add_argument("--out", required=True, type=output_file)
    ex.add_argument("--seeds", type=seed_list, default=None, metavar="S,S,...",
                    help="only the programs of the builds of these seeds (default: all; `dataset stats` gives "
                         "each build's noise)")
    ex.add_argument("--layout", type=int, choices=sorted(PREFIX_WIDTHS), default=FEATURE_VERSION,
                    help=f"the feature layout (default {FEATURE_VERSION}; an older one's vectors are a prefix of "
                         "it: trained on them, the same recipe shows what the newer fields add)")
    ex.add_argument("--no-progress", action="store_true")
    ex.set_defaults(func=cmd_dataset_export)
    pk = dsub.add_parser("pack", help="compress a database with a manifest (the shipped dataset's form)")
    pk.add_argument("--db", required=True, type=existing_file)
    pk.add_argument("--out", required=True, type=output_dir,
                    help="folder to write (the shipped dataset's is the package's loopcost/data: never by default)")
    pk.add_argument("--command", default="", help="the build command, recorded in the manifest")
    pk.add_argument("--field", action="append", default=[], metavar="KEY=VALUE",
                    help="a note to record in the manifest (repeatable), e.g. the build rate")
    pk.set_defaults(func=cmd_dataset_pack)
    st = dsub.add_parser("stats", help="counts, speedups, transformation shares, noise and machine")
    st.add_argument("--db", default=None, type=existing_file, help="database (default: the one shipped for this CPU)")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_dataset_stats)

    sr = sub.add_parser("store", help="the machine's store of every measurement run and optimize made")
    ssub = sr.add_subparsers(dest="store_command", required=True)
    ss = ssub.add_parser("stats", help="what the store holds: measurements by machine, source and program")
    ss.add_argument("--store", default=None, metavar="DB",
                    help="the store (default: $LOOPCOST_CACHE_DIR/measurements.sqlite)")
    ss.add_argument("--json", action="store_true")
    ss.set_defaults(func=cmd_store_stats)

    t = sub.add_parser("train", help="train the cost model on an exported dataset (resumes after interruption)")
    t.add_argument("--data", default=None, type=existing_file, help=".npz written by `loopcost dataset export`")
    t.add_argument("--store", nargs="?", const="", default=None, metavar="DB",
                   help="instead of --data: fine-tune on everything this machine measured into its store (default "
                        "$LOOPCOST_CACHE_DIR/measurements.sqlite), from --init (default: the model shipped for this "
                        "CPU), into the model `optimize` then uses on this machine")
    t.add_argument("--out", default=None, type=output_file, help="model file to write (and OUT.ckpt, OUT.card.json)")
    t.add_argument("--db", default=None, type=existing_file,
                   help="the database the data came from (for the model card)")
    t.add_argument("--epochs", type=at_least(1), default=30)
    t.add_argument("--batch-size", type=at_least(1), default=256)
    t.add_argument("--lr", type=at_least(0.0, float), default=1e-3)
    t.add_argument("--loss", default="log_mse", choices=["mape", "log_mse"])
    t.add_argument("--arch", default="lstm", choices=["lstm", "transformer"],
                   help="network: the paper's recursive LSTM, or self-attention among computations")
    t.add_argument("--ensemble", type=at_least(1), default=None,
                   help="train this many networks (seeds SEED, SEED+1, ...) and average them; their spread is an "
                   "uncertainty estimate (default 1; --store: every "
                   "network of --init)")
    t.add_argument("--rank-weight", type=at_least(0.0, float), default=0.0,
                   help="weight of a pairwise ranking loss among schedules of one program (default 0: none)")
    t.add_argument("--init", default=None, type=existing_file, metavar="MODEL",
                   help="fine-tune: start from a trained model's network (and its input statistics), e.g. the "
                   "shipped model, on measurements of your machine; use a lower --lr and fewer --epochs")
    t.add_argument("--init-member", type=at_least(0), default=0,
                   help="which network of an --init ensemble to start from (ensemble member k: this + k)")
    t.add_argument("--seed", type=at_least(0), default=0)
    t.add_argument("--threads", type=at_least(1), default=2)
    t.add_argument("--device", default="auto",
                   help="where the networks train: cpu, cuda (a GPU), cuda:N, or auto (a GPU where torch sees one; "
                   "default). A checkpoint resumes on another device")
    t.add_argument("--restart", action="store_true", help="ignore an existing checkpoint")
    t.set_defaults(func=cmd_train)

    en = sub.add_parser("ensemble", help="combine trained models into one that predicts the geometric mean "
                        "of theirs (their spread is an uncertainty estimate)")
    en.add_argument("models", nargs="+", type=existing_file, help="model files written by `loopcost train`")
    en.add_argument("--out", required=True, type=output_file)
    en.set_defaults(func=cmd_ensemble)

    e = sub.add_parser("evaluate", help="accuracy of a model on a split, next to baselines and the noise floor")
    e.add_argument("--model", default=None, type=existing_file,
                   help="model file (default: the one shipped for this CPU)")
    e.add_argument("--data", default=None, type=existing_file,
                   help=".npz from `loopcost dataset export` (default: the export of --db, made once)")
    e.add_argument("--db", default=None, type=existing_file,
                   help="measurement database, for the data and the noise floor (default: the one shipped for "
                        "this CPU)")
    e.add_argument("--plots", default=None, type=output_dir, metavar="DIR",
                   help="write scatter.png and errors.png into DIR")
    e.add_argument("--write-card", action="store_true", help="record this evaluation in the model's card")
    e.add_argument("--split", default="test", choices=["train", "val", "test", "all"],
                   help="the records to score (default test; all: every one, for a set held out from training "
                        "altogether, recorded in the card as out_of_sample)")
    e.add_argument("--unseen-by", default=None, type=existing_file, metavar="DB",
                   help="leave out the programs that the database DB (the one the model trained on) also holds: "
                        "a held-out set's generator may draw a training program again")
    e.add_argument("--store", nargs="?", const="", default=None, metavar="DB",
                   help="instead of a dataset: every schedule this machine measured into its store (`run`, "
                        "`optimize`; default $LOOPCOST_CACHE_DIR/measurements.sqlite), per program: how well the "
                        "model (default: the one `optimize` uses here) ranks your own kernels")
    e.add_argument("--json", action="store_true")
    e.add_argument("--gbt", action="store_true", help="also train and score the gradient-boosted baseline")
    e.set_defaults(func=cmd_evaluate)
    for sp in _subparsers(ap):
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of any failure")
    return ap


def _subparsers(ap: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser of a command (``dataset build`` included), not the groups that only hold commands."""
    out = []
    for action in ap._subparsers._group_actions if ap._subparsers else []:
        for sp in action.choices.values():
            nested = _subparsers(sp)
            out += nested or [sp]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code follows ``EXIT_CODES``, and no traceback is printed without --debug."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("loopcost: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if args.debug:
            raise
        code, what = _failure(e)
        print(f"loopcost: {what}", file=sys.stderr)
        return code


def _failure(e: Exception) -> tuple[int, str]:
    """The exit code of an exception and its one-line message."""
    first = first_line(e)
    if isinstance(e, EnvironmentFailure):
        return 3, f"error: {e}"
    if isinstance(e, LoopcostError):
        return 2, f"error: {e}"
    if isinstance(e, sqlite3.Error):
        why = ("the disk is full" if "full" in first else "another process holds it" if "locked" in first
               else "its file may be damaged")
        return 3, f"database error: {first} ({why})"
    if isinstance(e, MemoryError):
        return 3, "out of memory"
    if isinstance(e, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)):
        return 2, f"error: {first}"  # a path the user gave: missing, of the wrong kind, or not theirs
    if isinstance(e, OSError):
        return 3, f"system error: {first}"
    return 3, f"internal error: {type(e).__name__}: {first} (run again with --debug for the traceback)"


if __name__ == "__main__":
    sys.exit(main())
