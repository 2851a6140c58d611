"""Dataset builds: generator, sampler, store, resumption after SIGKILL, Dask, stats."""

import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from loopcost.codegen.c_source import VERSION_WITHOUT_TEMPS
from loopcost.costmodel.metrics import noise_ceiling
from loopcost.database.store import Store
from loopcost.dataset.build import build
from loopcost.dataset.stats import dataset_stats, format_stats
from loopcost.dataset.tasks import DATASET_TIMING, LEGACY_TIMING, BuildConfig
from loopcost.errors import LoopcostError
from loopcost.generator.programs import FAMILIES, VERSION_FAMILIES, GeneratorOptions, generate_programs
from loopcost.generator.schedules import random_schedules
from loopcost.ir.program import Program
from loopcost.ir.state import ProgramState
from loopcost.transforms.legality import carried
from loopcost.transforms.schedule import Schedule
from loopcost.transforms.space import SPACE_VERSION, STAGES, SpaceOptions, proposals

from .faults import killed_at

TINY = GeneratorOptions(min_work=2e4, max_work=3e5, max_bytes=2**20)


def test_generator_is_deterministic_and_varied():
    a = generate_programs(30, seed=5, opts=TINY)
    b = generate_programs(30, seed=5, opts=TINY)
    assert [p.content_hash() for p in a] == [p.content_hash() for p in b]
    assert generate_programs(1, seed=6, opts=TINY)[0].content_hash() != a[0].content_hash()
    assert generate_programs(3, seed=5, opts=TINY, start=2)[0] == a[2]
    for p in a:
        assert Program.from_json(p.to_json()) == p
    depths = {max(len(lp) for _, lp in p.walk_computations()) for p in generate_programs(200, 1)}
    counts = {len(p.computations()) for p in generate_programs(200, 1)}
    assert {2, 3, 4, 5} <= depths and {1, 2, 3, 4, 5, 6} <= counts
    dtypes = {b.dtype for p in a for b in p.buffers}
    assert dtypes == {"float32", "float64"}


@pytest.mark.parametrize("version, family", [(v, f) for v, fams in VERSION_FAMILIES.items() for f in fams])
def test_every_family_builds(version, family):
    # a batched contraction is three computations of four loops of 16 at least: 16^4 multiply-adds
    opts = GeneratorOptions(min_work=2e4, max_work=3e6 if family == "batched" else 3e5, max_bytes=2**20,
                            families=(family,), max_comps=3, version=version)
    progs = generate_programs(6, seed=3, opts=opts)
    assert len({p.content_hash() for p in progs}) >= 5  # varied (a small family may draw one program twice)
    for p in progs:  # within the options' limits
        assert 1 <= len(p.computations()) <= opts.max_comps
        assert sum(math.prod(b.shape) * (4 if b.dtype == "float32" else 8) for b in p.buffers) <= opts.max_bytes


@pytest.mark.parametrize("packed, seed, version, excluded", [
    ("", 5, 1, None), ("", 6, 1, "heldout"), ("", 7, 1, "heldout"), ("", 8, 2, "heldout"), ("heldout", 1002, 2, ""),
    ("", 9, 3, "heldout"), ("heldout", 1003, 3, ""), ("", 10, 4, "heldout"), ("heldout", 1004, 4, "")])
def test_each_generator_version_still_draws_the_programs_of_the_packed_builds(packed, seed, version, excluded):
    """A version's draws are fixed once a build used them: the packed builds resume (``--generator-version``)
    only if their version draws their programs as it did (seeds 5-7: version 1, stored before versions were;
    seed 8 and the held-out set's seed 1002: version 2; seed 9 and 1003: version 3; seed 10 and 1004: version 4),
    each drawn again past the
    programs of the database it
    was built ``--exclude-programs-of`` (seed 1002's program 2 first drew a program of seed 5)."""
    from loopcost.dataset.shipped import shipped_db
    from loopcost.generator.programs import stream_program
    from loopcost.paths import DATA

    def packed_db(folder: str) -> sqlite3.Connection:
        return sqlite3.connect(shipped_db(DATA / "machines" / "amd-epyc" / folder / "dataset.sqlite.xz"))

    exclude = frozenset()
    if excluded is not None:
        other = packed_db(excluded)
        exclude = frozenset(h for (h,) in other.execute("SELECT hash FROM programs"))
        other.close()
    db = packed_db(packed)
    settings = json.loads(db.execute("SELECT value FROM meta WHERE key = ?", (f"build:{seed}",)).fetchone()[0])
    gen = settings["generator"]
    assert gen.get("version", 1) == version
    opts = GeneratorOptions(**{**gen, "families": tuple(gen["families"]), "dtypes": tuple(gen["dtypes"]),
                               "version": version})
    rows = db.execute("SELECT idx, hash FROM programs WHERE seed = ? ORDER BY idx LIMIT 3", (seed,)).fetchall()
    assert len(rows) == 3
    for idx, digest in rows:
        assert stream_program(seed, idx, opts, exclude).content_hash() == digest
    db.close()


def test_version_2_draws_what_kernels_hold_and_version_1_never_did():
    """Reads that stay put in the innermost loop, reductions as perfect nests, extents over 2048, memory over
    64 MiB (within ``max_bytes``), subtraction and division: in version 2's programs, none in version 1's."""
    from loopcost.features.extract import featurize
    from loopcost.features.layout import ACCESS_FIELDS, ACCESS_SIZE, ACCESSES_AT, COMP_INDEX, FIELDS_AT

    zero = ACCESS_FIELDS.index("inner_stride_zero")

    def traits(opts: GeneratorOptions) -> dict[str, float]:
        out = {"broadcast read": 0, "perfect reduction": 0, "extent over 2048": 0, "over 64 MiB": 0, "sub": 0,
               "div": 0}
        progs = generate_programs(80, seed=3, opts=opts)
        for p in progs:
            mem = sum(math.prod(b.shape) * (4 if b.dtype == "float32" else 8) for b in p.buffers)
            assert mem <= opts.max_bytes
            out["over 64 MiB"] += mem > 64 * 2**20
            out["extent over 2048"] += max(max(b.shape) for b in p.buffers) > 3000
            state = ProgramState.initial(p)
            comps = featurize(state).comps  # each computation's vector
            # a read (access 1 on) whose element does not change along the innermost loop
            out["broadcast read"] += any(v[ACCESSES_AT + k * ACCESS_SIZE + zero] for v in comps for k in range(1, 16))
            out["sub"] += any(v[FIELDS_AT + COMP_INDEX["n_sub"]] for v in comps)
            out["div"] += any(v[FIELDS_AT + COMP_INDEX["n_div"]] for v in comps)
            # a reduction alone in its nest: its initialization sits in a nest of its own
            reductions = {c.name for c in p.computations() if c.reduction is not None}
            outer = Counter(cs.loops[0] for cs in state.comps)
            out["perfect reduction"] += any(cs.comp in reductions and outer[cs.loops[0]] == 1 for cs in state.comps)
        return {k: v / len(progs) for k, v in out.items()}

    old = traits(GeneratorOptions(min_work=2e8, max_work=3e9, version=1))
    new = traits(GeneratorOptions(min_work=2e8, max_work=3e9))
    for trait, share in new.items():
        assert old[trait] <= 0.05 and share >= 0.1, (trait, old[trait], share)


def _self_fed_matvecs(opts: GeneratorOptions, n: int) -> int:
    """How many of ``n`` programs hold a reduction that reads the buffer it accumulates into at another
    element than the one it writes (``y[i] += A[i,j] * y[j]``)."""
    bad = 0
    for p in generate_programs(n, seed=4, opts=opts):
        bad += any(c.reduction is not None and any(
            r.buffer == c.target.buffer and r.index != c.target.index for r in c.reads()) for c in p.computations())
    return bad


def test_version_3_matvec_reads_a_vector_other_than_its_output():
    """Version 2 drew ``y`` before ``x``, so that ``x`` could be ``y`` (7 programs of seed 8 summed past the
    float range); version 3 draws ``x`` first."""
    kw = dict(min_work=2e4, max_work=3e5, max_bytes=2**22, families=("matvec",), max_comps=3)
    assert _self_fed_matvecs(GeneratorOptions(**kw, version=2), 60) > 0
    assert _self_fed_matvecs(GeneratorOptions(**kw, version=3), 60) == 0


def test_version_3_draws_what_version_2_left_outside_the_data():
    """A scratch row written inside two outer loops (doitgen), 4-D tensors of convolutions, depthwise
    convolutions (a read and a write indexed by the same channel) and time loops past 40000 sweeps
    (jacobi-1d): in version 3's programs, none in version 2's."""

    def traits(version: int) -> dict[str, int]:
        out = {"scratch row": 0, "4-D tensor": 0, "depthwise": 0, "sweeps over 40000": 0}
        families = ("conv", "iterated") + (("batched",) if version >= 3 else ())
        opts = GeneratorOptions(min_work=2e8, max_work=3e9, families=families, version=version)
        for p in generate_programs(60, seed=5, opts=opts):
            temps = {b.name for b in p.buffers if b.role == "temp"}
            nests = list(p.walk_computations())
            out["scratch row"] += any(c.target.buffer in temps and len(nest) > len(c.target.index)
                                      for c, nest in nests)
            out["4-D tensor"] += any(len(b.shape) == 4 for b in p.buffers)
            # in[c, y + u, x + v] read for out[c, y, x]
            out["depthwise"] += any(r.buffer != c.target.buffer and len(r.index) == 3
                                    and r.index[0] == c.target.index[0] and len(r.index[1].terms) > 1
                                    for c, _ in nests for r in c.reads())
            out["sweeps over 40000"] += any(lp.name == "t" and lp.upper.const > 40000 for _, nest in nests
                                            for lp in nest)
        return out

    old, new = traits(2), traits(3)
    for trait, count in new.items():
        assert old[trait] == 0 and count >= 2, (trait, old[trait], count)


def _moving(nest) -> list:
    """The loops of ``nest`` whose bounds move with an outer iterator."""
    return [lp for lp in nest if lp.lower.terms or lp.upper.terms]


def _triangle_traits(version: int, programs: int = 40) -> dict[str, int]:
    """How many of ``programs`` bench-scale programs of ``version``'s triangular and matmul families (version 3's
    triangles alone do not reach the scale) hold each trait."""
    out = {"three loops, a bound moves": 0, "two loops' bounds move": 0, "a lower bound moves": 0,
           "reads its own output elsewhere": 0}
    opts = GeneratorOptions(min_work=2e8, max_work=3e9, families=("triangular", "matmul"), version=version)
    for p in generate_programs(programs, seed=5, opts=opts):
        nests = list(p.walk_computations())
        moving = [_moving(nest) for _, nest in nests]
        out["three loops, a bound moves"] += any(len(nest) == 3 and _moving(nest) for _, nest in nests)
        out["two loops' bounds move"] += any(len(m) >= 2 for m in moving)
        out["a lower bound moves"] += any(lp.lower.terms for m in moving for lp in m)
        out["reads its own output elsewhere"] += any(r.buffer == c.target.buffer and r.index != c.target.index
                                                     for c, _ in nests for r in c.reads())
    return out


def test_version_4_draws_three_loops_over_triangles_and_version_3_none():
    """Nests of three loops of which one or two have bounds that move with an outer iterator (syrk, trmm in
    place, tetrahedra, elimination) and lower bounds that move (upper triangles): in version 4's triangular
    programs, none in version 3's (one triangle of two loops, its upper bound moving)."""
    old, new = _triangle_traits(3), _triangle_traits(4)
    for trait, count in new.items():
        assert old[trait] == 0 and count >= 4, (trait, old[trait], count)


def test_version_4_triangular_programs_build_and_verify(tmp_path):
    """The new nests compile, and random legal schedules of them (tiles, interchanges of loops whose bounds
    move) compute what the programs do: the build verifies each before its time counts."""
    opts = replace(TINY, families=("triangular",), max_comps=2, version=4)
    summary = build(str(tmp_path / "d.db"), programs=6, cfg=BuildConfig(seed=11, schedules=4, generator=opts),
                    workers=1, progress=False)
    assert summary["programs"] == 6 and summary["failures"] == 0 and summary["schedules"] == 6 * 5
    programs = [Program.from_json(json.loads(text)) for (text,) in sqlite3.connect(tmp_path / "d.db").execute(
        "SELECT json FROM programs")]
    assert any(len(nest) == 3 and _moving(nest) for p in programs for _, nest in p.walk_computations())


def test_a_family_of_a_later_generator_version_is_refused():
    assert GeneratorOptions(version=1).families == VERSION_FAMILIES[1] and "matvec" in FAMILIES
    with pytest.raises(LoopcostError, match="version 1 draws no matvec programs \\(from version 2 on\\)"):
        GeneratorOptions(version=1, families=("map", "matvec"))
    with pytest.raises(LoopcostError, match="version 2 draws no batched programs \\(from version 3 on\\)"):
        GeneratorOptions(version=2, families=("batched",))
    with pytest.raises(LoopcostError, match="unknown generator version 9"):
        GeneratorOptions(version=9)


def test_iterated_stencils_carry_dependences_across_time_and_offer_skews():
    opts = GeneratorOptions(min_work=2e4, max_work=3e5, max_bytes=2**20, families=("iterated",), max_comps=2)
    styles = set()
    for p in generate_programs(12, seed=4, opts=opts):
        state = ProgramState.initial(p)
        times = {cs.loops[0] for cs in state.comps}
        for t in times:  # a time loop around every sweep, carrying the sweeps' dependences
            assert t.startswith("t") and carried(state, t)
            sharing = sum(cs.loops[0] == t for cs in state.comps)
            styles.add(sharing)  # 1: Gauss-Seidel in place, 2: Jacobi A -> B -> A
        skews = proposals(state, SpaceOptions(kinds=("skew",)))
        assert any(s.a in times for s in skews)
    assert styles == {1, 2}


def test_sampler_draws_distinct_legal_schedules():
    p = generate_programs(1, seed=2, opts=TINY)[0]
    drawn = random_schedules(p, 10, random.Random(0))
    texts = [str(s) for s, _ in drawn]
    assert len(set(texts)) == len(texts) and all(texts)
    again = random_schedules(p, 10, random.Random(0))
    assert texts == [str(s) for s, _ in again]


def _follows_stages(kinds: list[str]) -> bool:
    """Whether ``kinds`` is a subsequence of the stage order."""
    rest = iter(STAGES)
    return all(k in rest for k in kinds)


def test_staged_walks_follow_the_search_order_and_grow_past_five_steps():
    progs = generate_programs(6, seed=2, opts=TINY)
    staged = [s for p in progs for s, _ in random_schedules(p, 12, random.Random(1), staged_share=1.0)]
    kinds = [[t.kind for t in s.steps] for s in staged]
    assert staged and all(_follows_stages(k) for k in kinds)
    assert max(map(len, kinds)) > 5
    plain = [s for p in progs for s, _ in random_schedules(p, 12, random.Random(1), staged_share=0.0)]
    assert max(len(s.steps) for s in plain) <= 5
    assert not all(_follows_stages([t.kind for t in s.steps]) for s in plain)  # random order
    mixed = [s for p in progs for s, _ in random_schedules(p, 12, random.Random(1))]
    assert any(len(s.steps) > 5 for s in mixed) and not all(_follows_stages([t.kind for t in s.steps]) for s in mixed)


def contents(db):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT p.seed, p.idx, p.hash, s.text, m.verified FROM measurements m JOIN schedules s "
                       "ON m.schedule = s.id JOIN programs p ON p.id = s.program WHERE m.kind = 'label' "
                       "ORDER BY 1, 2, 4").fetchall()
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    return rows


def test_build_stores_every_run_time_and_resumes(tmp_path):
    db = tmp_path / "d.db"
    cfg = BuildConfig(seed=3, schedules=3, generator=TINY)
    s1 = build(str(db), programs=3, cfg=cfg, workers=1, progress=False)
    assert s1["programs"] == 3 and s1["schedules"] + s1["failures"] == 3 * 4
    assert s1["failures"] == 0
    s2 = build(str(db), programs=4, cfg=cfg, workers=1, progress=False)  # resumes: only program 3 is new
    assert s2["programs"] == 1
    rows = contents(db)
    assert len(rows) == 4 * 4 and len(set(rows)) == len(rows)
    con = sqlite3.connect(db)
    for times, base, censored in con.execute("SELECT times, baseline_times, censored FROM measurements"):
        # a censored schedule is timed twice; the others until their runs agree (two at least) or three, or
        # once when that run alone took the 0.25 s
        assert len(json.loads(times)) == 2 if censored else len(json.loads(times)) >= 1
        assert len(json.loads(base)) >= 2
    for (seconds,) in con.execute("SELECT seconds FROM programs"):
        assert set(json.loads(seconds)) == {"generate", "codegen", "compile", "run", "timed", "wait"}
    assert con.execute("SELECT COUNT(*) FROM measurements m JOIN schedules s ON s.id = m.schedule "
                       "WHERE s.text = '' AND m.kind = 'label'").fetchone()[0] == 4  # each program's empty schedule
    with pytest.raises(LoopcostError, match="other settings: schedules 3 \\(now 5\\)"):
        build(str(db), programs=4, cfg=BuildConfig(seed=3, schedules=5, generator=TINY), workers=1, progress=False)


def test_a_database_built_before_the_staged_sampler_resumes_with_a_share_of_zero(tmp_path):
    db = str(tmp_path / "d.db")
    cfg = BuildConfig(seed=3, schedules=2, generator=TINY, staged_share=0.0)
    build(db, programs=1, cfg=cfg, workers=1, progress=False)
    con = sqlite3.connect(db)
    key = "build:3"
    settings = json.loads(con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])
    del settings["staged_share"]  # as such builds stored their settings
    con.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps(settings, sort_keys=True), key))
    con.commit()
    con.close()
    with pytest.raises(LoopcostError, match="staged_share 0.0 \\(now 0.5\\)"):
        build(db, programs=2, cfg=BuildConfig(seed=3, schedules=2, generator=TINY), workers=1, progress=False)
    assert build(db, programs=2, cfg=cfg, workers=1, progress=False)["programs"] == 1


def test_a_program_the_compiler_takes_too_long_on_fails_its_schedules_and_the_build_goes_on(tmp_path):
    db = str(tmp_path / "d.db")
    s = build(db, programs=2, cfg=BuildConfig(seed=3, schedules=2, generator=TINY, compile_timeout=0.001), workers=1,
              progress=False)
    assert s["programs"] == 2 and s["schedules"] == 0 and s["failures"] == 2 * 3
    errors = [e for _, _, e in Store(db).failures()]
    assert len(errors) == 6 and all("the compiler ran for more than 0.001 s" in e for e in errors)


def _stored_as_before(db: str, edit) -> None:
    """Rewrite build 3's stored settings with ``edit``, as an older loopcost stored them."""
    con = sqlite3.connect(db)
    settings = json.loads(con.execute("SELECT value FROM meta WHERE key = 'build:3'").fetchone()[0])
    edit(settings)
    con.execute("UPDATE meta SET value = ? WHERE key = 'build:3'", (json.dumps(settings, sort_keys=True),))
    con.commit()
    con.close()


def test_a_database_timed_before_censoring_resumes_with_its_timing_only(tmp_path):
    db = str(tmp_path / "d.db")
    legacy = BuildConfig(seed=3, schedules=2, generator=TINY, timing=LEGACY_TIMING)
    build(db, programs=1, cfg=legacy, workers=1, progress=False)

    def untimed(settings):
        for key in ("timed_check", "censor", "steady", "abort"):  # as such builds stored their timing
            del settings["timing"][key]

    _stored_as_before(db, untimed)
    with pytest.raises(LoopcostError, match="pass --legacy-timing to resume it"):
        build(db, programs=2, cfg=BuildConfig(seed=3, schedules=2, generator=TINY), workers=1, progress=False)
    assert build(db, programs=2, cfg=legacy, workers=1, progress=False)["programs"] == 1


@pytest.mark.parametrize("key, now, why", [("codegen", VERSION_WITHOUT_TEMPS, "older code generator"),
                                           ("space", SPACE_VERSION, "older space of schedules.*another --seed")])
def test_a_seed_built_before_a_version_changed_does_not_resume(tmp_path, key, now, why):
    """A seed measured on the C of an older code generator, or drawn from an older space of schedules."""
    db = str(tmp_path / "d.db")
    cfg = BuildConfig(seed=3, schedules=2, generator=TINY)
    build(db, programs=1, cfg=cfg, workers=1, progress=False)

    def unversioned(settings):
        assert settings[key] == now
        del settings[key]  # as builds before the version was stored

    _stored_as_before(db, unversioned)
    with pytest.raises(LoopcostError, match=f"{key} 1 \\(now {now}\\).*{why}"):
        build(db, programs=2, cfg=cfg, workers=1, progress=False)
    assert build(db, programs=1, cfg=replace(cfg, seed=4), workers=1, progress=False)["programs"] == 1


def test_a_seed_drawn_by_generator_version_1_and_run_to_the_end_resumes_with_both_only(tmp_path):
    """A build of before December 2026: programs of generator version 1, every run to its end."""
    db = str(tmp_path / "d.db")
    old = BuildConfig(seed=3, schedules=2, generator=GeneratorOptions(min_work=2e4, max_work=3e5, max_bytes=2**20,
                                                                      version=1),
                      timing=replace(DATASET_TIMING, abort=0.0))
    build(db, programs=1, cfg=old, workers=1, progress=False)

    def unversioned(settings):  # as builds stored them before the version and the abort existed
        assert settings["generator"].pop("version") == 1 and settings["timing"].pop("abort") == 0

    _stored_as_before(db, unversioned)
    now = BuildConfig(seed=3, schedules=2, generator=TINY)
    with pytest.raises(LoopcostError, match="pass --generator-version 1 --abort 0 to resume it"):
        build(db, programs=2, cfg=now, workers=1, progress=False)
    with pytest.raises(LoopcostError, match="pass --abort 0 to resume it"):
        build(db, programs=2, cfg=replace(now, generator=old.generator), workers=1, progress=False)
    assert build(db, programs=2, cfg=old, workers=1, progress=False)["programs"] == 1


@pytest.mark.slow
def test_sigkill_at_any_moment_then_resume_is_exact(tmp_path):
    args = ["dataset", "build", "--programs", "8", "--schedules", "3", "--seed", "4",
            "--min-work", "2e4", "--max-work", "3e5", "--workers", "2", "--no-progress"]
    cmd = [sys.executable, "-m", "loopcost.cli"]
    killed = tmp_path / "killed.db"
    proc = subprocess.Popen(cmd + args + ["--db", str(killed)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.2)
        try:
            n = sqlite3.connect(killed).execute("SELECT COUNT(*) FROM programs").fetchone()[0]
        except sqlite3.Error:
            n = 0
        if n >= 2:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = contents(killed)
    assert 0 < len(partial) < 8 * 4
    r = subprocess.run(cmd + args + ["--db", str(killed)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    clean = tmp_path / "clean.db"
    r = subprocess.run(cmd + args + ["--db", str(clean)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert contents(killed) == contents(clean)
    assert len(contents(clean)) == 8 * 4


@pytest.mark.slow
def test_a_build_killed_at_30_seeded_moments_resumes_to_the_dataset_of_a_build_never_killed(tmp_path):
    """After every kill the database is whole, holds every program stored before it with all its schedules,
    none twice; the build that finally runs through stores what a build never killed stores."""
    cfg, rng = BuildConfig(seed=4, schedules=3, generator=TINY), random.Random(21)
    killed, clean = tmp_path / "killed.db", tmp_path / "clean.db"

    def stored() -> list[tuple]:
        return contents(killed) if killed.exists() and killed.stat().st_size else []

    before: list[tuple] = []
    landed = 0  # kills that came before the build was done
    for _ in range(30):
        landed += killed_at(lambda: build(str(killed), programs=12, cfg=cfg, workers=1, progress=False),
                            rng.uniform(0.0, 0.6))
        now = stored()
        assert set(before) <= set(now) and len(now) == len(set(now))  # nothing lost, nothing twice
        per_program = {(seed, idx) for seed, idx, *_ in now}
        assert len(now) == 4 * len(per_program)  # a program is stored with all its schedules or not at all
        before = now
    assert 0 < len(before) and landed >= 20, landed
    build(str(killed), programs=12, cfg=cfg, workers=1, progress=False)
    build(str(clean), programs=12, cfg=cfg, workers=1, progress=False)
    assert contents(killed) == contents(clean) and len(contents(clean)) == 12 * 4


def test_dask_local_cluster_build(tmp_path):
    pytest.importorskip("distributed")
    db = tmp_path / "dask.db"
    s = build(str(db), programs=2, cfg=BuildConfig(seed=8, schedules=2, generator=TINY), workers=2,
              cluster="local", progress=False)
    assert s["programs"] == 2 and len(contents(db)) == 2 * 3


@pytest.mark.slow
def test_stats_and_noise(tmp_path):
    db = tmp_path / "s.db"
    build(str(db), programs=4, cfg=BuildConfig(seed=9, schedules=6, generator=TINY), workers=1, progress=False,
          noise_fraction=0.5)
    s = dataset_stats(str(db))
    assert s["programs"] == 4 and s["schedules"] > 0
    con = sqlite3.connect(db)  # what the stats summarize, read straight from the database
    label = dict(con.execute("SELECT schedule, speedup FROM measurements WHERE kind = 'label' AND verified = 1 "
                             "AND censored = 0"))  # a censored speedup is a bound: neither a quantile nor noise
    again = {k: v for k, v in con.execute("SELECT schedule, speedup FROM measurements WHERE kind = 'noise' "
                                          "AND verified = 1 AND censored = 0") if k in label}
    censored = con.execute("SELECT COUNT(*) FROM measurements WHERE kind = 'label' AND verified = 1 "
                           "AND censored = 1").fetchone()[0]
    texts = [t for t, in con.execute("SELECT s.text FROM schedules s JOIN measurements m ON m.schedule = s.id "
                                     "WHERE m.kind = 'label' AND m.verified = 1 AND s.text != ''")]
    labelled = {k for k, in con.execute("SELECT schedule FROM measurements WHERE kind = 'label' AND verified = 1")}
    fastest: dict[int, tuple[float, int]] = {}  # per labelled schedule, its fastest label or recheck, censored or not
    for k, sp, cens in con.execute("SELECT schedule, speedup, censored FROM measurements WHERE kind IN "
                                   "('label', 'recheck') AND verified = 1"):
        if k in labelled and (k not in fastest or sp > fastest[k][0]):
            fastest[k] = (sp, cens)
    con.close()
    trained = {k: sp for k, (sp, _) in fastest.items()}  # the label models see
    rel = np.array([abs(b - label[k]) / label[k] for k, b in again.items()])
    assert s["noise_pairs"] == len(again) > 0
    assert s["noise_median_rel"] == pytest.approx(np.median(rel)) and s["noise_p90_rel"] == pytest.approx(
        np.percentile(rel, 90))
    floor = 100 * np.mean([abs(b - trained[k]) / trained[k] for k, b in again.items()])
    assert s["noise_floor_mape"] == pytest.approx(floor) and floor > 0
    assert s["machine"][0]["cores"] == os.cpu_count() and s["censored"] == censored
    timed = sorted(sp for *_, sp, cens in Store(db).labels() if not cens)  # the labels models see, less the bounds
    # the faster of label and recheck is the label, censored if that measurement was (either way round: a
    # slow label whose recheck stopped early, a censored label rechecked in full)
    assert timed == pytest.approx(sorted(sp for sp, cens in fastest.values() if not cens))
    assert s["speedup"]["p50"] == pytest.approx(np.median(timed))
    sec = s["seconds_per_schedule"]  # where a build's time goes, per measured schedule
    assert set(sec) == {"generate", "codegen", "compile", "run", "timed", "wait"} and sec["run"] > sec["timed"] > 0
    assert s["timed_bound_per_hour"] == pytest.approx(3600 / sec["timed"])  # timed runs one at a time
    assert f"at most {3600 / sec['timed']:,.0f} schedules an hour" in format_stats(s)
    kinds = [{t.kind for t in Schedule.parse(text).steps} for text in texts]
    assert texts and s["transformation_share"] == pytest.approx(
        {k: sum(k in ks for ks in kinds) / len(kinds) for k in set().union(*kinds)})  # share of schedules using each
    r = subprocess.run([sys.executable, "-m", "loopcost.cli", "dataset", "stats", "--db", str(db), "--json"],
                       capture_output=True, text=True)
    out = json.loads(r.stdout)
    for key in ("programs", "schedules", "failures", "noise_median_rel", "noise_p90_rel", "machine"):
        assert key in out


def test_noise_is_reported_and_records_exported_per_build(tmp_path):
    from loopcost.costmodel.data import export, load

    db = tmp_path / "b.db"
    for seed in (9, 10):
        build(str(db), programs=2, cfg=BuildConfig(seed=seed, schedules=4, generator=TINY), workers=1,
              progress=False, noise_fraction=0.6)
    con = sqlite3.connect(db)
    by_seed: dict[int, list[float]] = {}
    for seed, a, b in con.execute(
            "SELECT p.seed, a.speedup, b.speedup FROM measurements a JOIN measurements b ON a.schedule = b.schedule "
            "JOIN schedules s ON s.id = a.schedule JOIN programs p ON p.id = s.program WHERE a.kind = 'label' "
            "AND b.kind = 'noise' AND a.verified AND b.verified AND NOT a.censored AND NOT b.censored"):
        by_seed.setdefault(seed, []).append(abs(b - a) / a)
    con.close()
    s = dataset_stats(str(db))
    assert set(s["noise_by_build"]) == {f"build:{k}" for k in by_seed} and by_seed
    for seed, rel in by_seed.items():
        got = s["noise_by_build"][f"build:{seed}"]
        assert got["pairs"] == len(rel) and got["median_rel"] == pytest.approx(np.median(rel))
    info = export(str(db), str(tmp_path / "ten.npz"), seeds=[10])
    data = load(str(tmp_path / "ten.npz"))
    con = sqlite3.connect(db)
    tens = {i for i, in con.execute("SELECT id FROM programs WHERE seed = 10")}
    con.close()
    assert info["programs"] == 2 and set(data.programs) == tens and len(tens) == 2
    with pytest.raises(LoopcostError, match="seeds 11"):
        export(str(db), str(tmp_path / "none.npz"), seeds=[11])


def test_a_simulated_remeasurement_scores_what_the_noise_allows():
    import numpy as np

    rng = np.random.default_rng(1)
    speedup, program = rng.uniform(0.2, 3.0, 400), np.repeat(np.arange(20), 20)
    exact = noise_ceiling([(1.0, 1.0), (2.0, 2.0)], speedup, program)
    assert exact["mape"] == 0 and exact["spearman_per_program_mean"] == 1 and exact["top1_recovery"] == 1
    noisy = noise_ceiling([(1.0, 1.5), (1.0, 0.7), (2.0, 2.0)], speedup, program)
    assert 0 < noisy["spearman_per_program_mean"] < 1 and 0 < noisy["pairwise_accuracy"] < 1
    assert 20 < noisy["mape"] < 50  # ratios 1.5, 0.7, 1: APE 50%, 30%, 0%
    assert noise_ceiling([(1.0, 1.5), (1.0, 0.7), (2.0, 2.0)], speedup, program) == noisy
    assert noise_ceiling([], speedup, program) is None


def test_pack_writes_a_compressed_copy_and_a_manifest(tmp_path, monkeypatch):
    from loopcost.dataset import shipped

    db = tmp_path / "p.db"
    build(str(db), programs=2, cfg=BuildConfig(seed=12, schedules=2, generator=TINY, timing=LEGACY_TIMING), workers=1,
          progress=False, noise_fraction=1.0)  # timed in full: every label has a noise pair
    m = shipped.pack(db, tmp_path / "out", command="loopcost dataset build ...", fields={"rate": "fast"})
    assert m["programs"] == 2 and m["schedules"] + m["failures"] == 6 and m["machine"][0]["cores"] == os.cpu_count()
    written = json.loads((tmp_path / "out" / "dataset.manifest.json").read_text())
    assert written["command"].startswith("loopcost") and written["rate"] == "fast"
    s = dataset_stats(str(db))  # the manifest's noise is the database's: every label measured again
    by_build = written["noise"].pop("by_build")
    assert written["noise"] == pytest.approx({"pairs": s["noise_pairs"], "median_rel": s["noise_median_rel"],
                                              "p90_rel": s["noise_p90_rel"],
                                              "floor_mape_vs_label": s["noise_floor_mape"]})
    assert by_build.keys() == s["noise_by_build"].keys()
    assert sum(v["pairs"] for v in by_build.values()) == s["noise_pairs"]
    assert written["noise"]["pairs"] == m["schedules"] and written["noise"]["floor_mape_vs_label"] > 0
    assert contents(shipped.shipped_db(tmp_path / "out" / "dataset.sqlite.xz")) == contents(db)


def test_the_same_program_drawn_twice_is_stored_twice(tmp_path):
    from loopcost.database.store import Row, Store

    store = Store(tmp_path / "dup.db")
    row = Row("", [], True, None, (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))
    prog = generate_programs(1, seed=1, opts=TINY)[0]
    for idx in (0, 5):
        store.add_batch(program_json=prog.to_json(), program_hash=prog.content_hash(), seed=1, idx=idx, machine=1,
                        baseline_times=(1.0,), rows=[row], now=0.0)
    assert store.counts()["programs"] == 2 and store.done_indices(1) == {0, 5}
    assert len({split for _, split, *_ in store.labels()}) == 1


def test_a_build_draws_again_the_programs_of_an_excluded_database(tmp_path):
    from loopcost.cli import main
    from loopcost.database.store import Row
    from loopcost.generator.programs import stream_program

    opts = GeneratorOptions(min_work=2e4, max_work=3e5)  # the command line's options below
    stream = generate_programs(2, seed=3, opts=opts)
    other = stream_program(3, 0, opts, exclude=frozenset({stream[0].content_hash()}))
    assert other.content_hash() != stream[0].content_hash() and other.name == stream[0].name
    trained = tmp_path / "trained.db"  # a database holding program 0 of the stream
    with Store(trained) as store:
        store.add_batch(program_json=stream[0].to_json(), program_hash=stream[0].content_hash(), seed=3, idx=0,
                        machine=1, baseline_times=(1.0,), rows=[Row("", [], True, None, (1.0,), (1.0,))], now=0.0)
    assert main(["dataset", "build", "--db", str(tmp_path / "held.db"), "--programs", "2", "--schedules", "1",
                 "--seed", "3", "--min-work", "2e4", "--max-work", "3e5", "--workers", "1", "--no-progress",
                 "--exclude-programs-of", str(trained)]) == 0
    with Store(tmp_path / "held.db") as store:
        held = store.program_hashes()
    # program 0 is drawn again from its stream (a new program); program 1 is the stream's own
    assert len(held) == 2 and stream[0].content_hash() not in held.values()
    assert stream[1].content_hash() in held.values()


@pytest.mark.slow
def test_shipped_schedules_still_apply_to_their_programs():
    """Every stored schedule must replay on today's code: the data is only useful while it does.
    Checks a seeded sample of every shipped dataset (the default one and each CPU kind's) plus the
    schedules that once broke (a tile of loops that another computation holds at a different level)."""
    import json
    import random
    import sqlite3

    from loopcost.dataset.shipped import shipped_db
    from loopcost.ir.program import Program
    from loopcost.paths import DEFAULT_SHIPPED, MACHINES
    from loopcost.transforms.schedule import Schedule

    once_broken = {"F(S1,S2,2) S(y,x,2) I(f,x) T2(f,u,128,32)", "T3(i_2,j_2,k_1,32,8,128) I(k_1_t,i_2) "
                   "T3(i_2,k_1_t,j_2,8,16,16)", "R(x) T3(i,j,r,32,8,8) I(i_t,i) S(y,v,1) T3(i,j_t,r_t,16,32,16)"}
    packed = [DEFAULT_SHIPPED.dataset, *sorted(MACHINES.glob("*/dataset.sqlite.xz"))]
    assert len(packed) >= 2
    broken_found = 0
    for pack in packed:
        db = sqlite3.connect(shipped_db(pack))
        rows = db.execute("SELECT program, text FROM schedules ORDER BY id").fetchall()
        broken = [r for r in rows if r[1] in once_broken]
        broken_found += len(broken)
        sample = random.Random(0).sample(rows, 300) + broken
        programs = {}
        for pid, text in sample:
            if pid not in programs:
                (js,) = db.execute("SELECT json FROM programs WHERE id = ?", (pid,)).fetchone()
                programs[pid] = Program.from_json(json.loads(js))
            Schedule.parse(text).apply(programs[pid])
    assert broken_found == 3


def test_slow_labels_are_rechecked_and_the_faster_measurement_wins(tmp_path, monkeypatch):
    import loopcost.dataset.build as build_module
    from loopcost.database.store import Store

    monkeypatch.setattr(build_module, "RECHECK_BELOW", 1e9)  # every label counts as slow: all are rechecked
    db = tmp_path / "d.db"
    # timed in full (a censored label has no noise pair): every label has its pair
    stats = build(str(db), programs=3, cfg=BuildConfig(seed=3, schedules=3, generator=TINY, timing=LEGACY_TIMING),
                  workers=1, progress=False, noise_fraction=1.0)
    store = Store(db)
    pairs, labels = store.recheck_pairs(), list(store.labels())
    assert stats["recheck"] == len(pairs) == len(labels) == stats["schedules"] > 0
    assert sorted(sp for *_, sp, _censored in labels) == pytest.approx(sorted(max(a, b) for a, b in pairs))
    assert store.pending("recheck", below=1e9) == {}
    # the noise floor is taken against the same label: the faster of label and recheck
    raw, effective = store.noise_pairs(), store.noise_pairs(effective=True)
    assert len(effective) == len(raw) == len(labels)
    assert sorted(a for a, _ in raw) == pytest.approx(sorted(a for a, _ in pairs))
    assert sorted(a for a, _ in effective) == pytest.approx(sorted(max(a, b) for a, b in pairs))
    store.close()
    assert dataset_stats(str(db))["rechecked"] == len(pairs)


def test_a_bug_met_on_one_program_is_reported_and_the_build_goes_on(tmp_path, monkeypatch):
    from loopcost.dataset import tasks

    drawn = tasks.random_schedules

    def broken_on_program_1(program, *args, **kwargs):
        if program.name.endswith("_1"):
            raise ValueError("call to isl_map_move_dims failed")
        return drawn(program, *args, **kwargs)

    monkeypatch.setattr(tasks, "random_schedules", broken_on_program_1)
    db = tmp_path / "d.db"
    cfg = BuildConfig(seed=3, schedules=2, generator=TINY)
    s = build(str(db), programs=3, cfg=cfg, workers=1, progress=False)
    assert s["programs"] == 2 and s["errors"] == ["program 1: internal error: ValueError: call to isl_map_move_dims "
                                                  "failed"]
    monkeypatch.setattr(tasks, "random_schedules", drawn)  # fixed: a resume measures the program it left out
    assert build(str(db), programs=3, cfg=cfg, workers=1, progress=False)["programs"] == 1
