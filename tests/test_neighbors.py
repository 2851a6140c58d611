"""Neighbors of a schedule (one step replaced, dropped or added) and the adaptive search's local phase."""

from loopcost.errors import ScheduleError
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.search.adaptive import AdaptiveOptions, adaptive_search
from loopcost.search.evaluator import MeasuringEvaluator, ModelEvaluator
from loopcost.search.neighbors import legal, neighbors
from loopcost.transforms.schedule import Schedule
from tests.test_adaptive import ByTags, small_model


def gemm():
    return KERNELS["gemm"].program("small")


def test_neighbors_are_one_change_away_and_legal_exactly_when_the_schedule_applies():
    p = gemm()
    root = ProgramState.initial(p)
    base = Schedule.parse("F(S0,S1,0) I(j_1,k) T2(i_1,k,8,16) P(i_1_t)")
    ns = neighbors(root, base)
    texts = [str(n.schedule) for n in ns]
    assert len(set(texts)) == len(texts) and str(base) not in texts
    assert len({n.state.key for n in ns}) == len(ns) and base.apply(p).key not in {n.state.key for n in ns}
    changes = {n.change.split()[0] for n in ns}
    assert changes == {"replace", "drop", "add"}
    # dropping the tile drops the parallel tile loop with it (the step no longer applies); dropping the
    # parallel step keeps the rest
    assert {t for t, n in zip(texts, ns, strict=True) if n.change == "drop 2"} == {"F(S0,S1,0) I(j_1,k)"}
    assert "F(S0,S1,0) I(j_1,k) T2(i_1,k,8,16)" in texts
    # another tile size, the interchange undone, an added unroll: one change each
    assert "F(S0,S1,0) I(j_1,k) T2(i_1,k,32,16) P(i_1_t)" in texts
    assert any(t.startswith("F(S0,S1,0) I(j_1,k) T2(i_1,k,8,16) P(i_1_t) U(") for t in texts)
    n_legal = 0
    for n in ns:  # legal() says exactly what applying the text with every check says
        try:
            again = Schedule.parse(str(n.schedule)).apply(p)
        except ScheduleError:
            assert not legal(root, n), n.schedule
            continue
        assert legal(root, n) and again.key == n.state.key, n.schedule
        n_legal += 1
    assert 0 < n_legal < len(ns)  # some neighbors break a dependence (parallel k, a skew) and are refused
    assert neighbors(root, Schedule.parse("P(nope)")) == []


def test_the_local_phase_measures_legal_neighbors_of_the_fastest_schedules_within_the_budget():
    runner = ByTags()
    scorer, measurer = ModelEvaluator(small_model()), MeasuringEvaluator(runner)
    root = ProgramState.initial(gemm())
    ranked = adaptive_search(root, scorer, measurer, opts=AdaptiveOptions(measure_budget=16, batch=4, beam_size=2,
                                                                          refine=0.75, refiners=("neighbors",)))
    every = [t for b in runner.batches for t in b]
    assert len(every) == 16 == len(set(every)) == len(measurer.measurements)
    first = 16 - 12  # the rounds' share, then the neighbors' batches
    done = set(every[:first])
    for batch in runner.batches[first // 4:]:
        # each local batch: neighbors of schedules measured before it
        near = {str(n.schedule) for t in done for n in neighbors(root, Schedule.parse(t))}
        assert set(batch) <= near
        done |= set(batch)
    for c in ranked:  # every measured schedule is legal: its text applies with every check
        assert Schedule.parse(str(c.schedule)).apply(gemm()).key == c.state.key
    # parallel and tiled schedules measure 4.5x here: the local search keeps them once found
    assert ranked[0].score == 4.5


def test_a_neighbors_pack_that_no_longer_applies_is_dropped_and_one_that_cannot_be_laid_out_scores_zero():
    # 3mm: fusing S2 into S3's nest leaves loop j_1 with no reader of D: the replayed pack is dropped
    p = KERNELS["3mm"].program("small")
    root = ProgramState.initial(p)
    ns = {str(n.schedule): n for n in neighbors(root, Schedule.parse("K(D,j_1) I(i_1,j_1) K(F,j_2)"))}
    fused = [t for t in ns if t.startswith("F(S2,S3,")]
    assert fused and all("K(D,j_1)" not in t for t in fused), fused
    # trmm: with j_r interchanged back, the box of A read in a run of i is unbounded: not a legal schedule,
    # and not one the model can read, so the search scores it 0 (it used to stop the search)
    p = KERNELS["trmm"].program("small")
    root = ProgramState.initial(p)
    n = next(n for n in neighbors(root, Schedule.parse("J(j,4) I(i,j_r) K(A,i)")) if str(n.schedule) ==
             "J(j,4) I(i,k) K(A,i)")
    assert not legal(root, n)
    scorer = ModelEvaluator(small_model())
    scores = scorer.score([root, n.state])
    assert scores[0] > 0 and scores[1] == 0


def test_a_long_schedule_keeps_every_drop_and_a_fixed_sample_of_its_other_neighbors():
    root = ProgramState.initial(gemm())
    s = Schedule.parse("F(S0,S1,0) T3(i_1,j_1,k,8,16,8) J(i_1,4) J(j_1,4) P(i_1_t)")
    every = neighbors(root, s, limit=10**6)
    few = neighbors(root, s, limit=12)
    assert len(few) <= 12 < len(every)
    assert {n.schedule for n in few} <= {n.schedule for n in every}
    assert [n.schedule for n in few] == [n.schedule for n in neighbors(root, s, limit=12)]  # seeded: the same
    assert {n.change for n in every if n.change.startswith("drop")} <= {n.change for n in few}
