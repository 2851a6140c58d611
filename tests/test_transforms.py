"""Each transformation applies where it is legal and is refused, with the dependence named, where not."""

import re

import pytest

from loopcost.errors import IllegalScheduleError, ScheduleError
from loopcost.ir.state import CODE_TAGS, ProgramState
from loopcost.ir.trips import single_trip_loops
from loopcost.kernels import KERNELS
from loopcost.transforms.schedule import Schedule, step_kinds
from loopcost.transforms.space import KINDS, SpaceOptions, candidates, proposals

from .programs import measure_one, two_maps


def prog(name):
    return KERNELS[name].program("small")


LEGAL = [
    ("gemm", "I(i,j)"),
    ("gemm", "F(S0,S1,1) I(j_1,k) V(j_1,8)"),
    ("gemm", "T2(i,j,32,16) P(i_t)"),
    ("gemm", "T3(i,j,k,8,16,32) U(k,4)"),
    ("gemm", "R(i) R(j)"),
    ("seidel-2d", "S(t,i,1) S(t,j,1) S(i,j,1) T3(t,i,j,8,8,8)"),
    ("jacobi-2d", "P(i) P(i_1) R(j)"),
    ("heat-3d", "T3(i,j,k,8,8,8) P(i_t) V(k,8)"),
    ("blur", "T2(y,x,8,32) P(y_t)"),
    ("conv2d", "T2(y,x,4,8) P(n)"),
    ("2mm", "F(S0,S1,2) F(S2,S3,2)"),
    ("gemm", "J(i,4) J(j,8)"),
    ("gemm", "F(S0,S1,0) J(i,3) J(j,7) P(i_r)"),  # partial blocks of both loops (40 = 13*3+1, 50 = 7*7+1)
    ("gemm", "T2(i,j,16,16) J(i,2) J(j,4)"),
    ("jacobi-2d", "J(i,2) J(i_1,4) P(i_r)"),
    ("conv2d", "J(f,4) P(n)"),
]

ILLEGAL = [
    ("gemm", "I(j,k)", "RAW on C (S0->S1)"),
    ("gemm", "P(k)", "reduction of S1 into C"),
    ("gemm", "V(k,8)", "reduction of S1 into C"),
    ("gemm", "R(k)", "on C"),
    ("seidel-2d", "T2(t,i,8,8)", "on A"),
    ("seidel-2d", "P(i)", "RAW on A (S0->S0)"),
    ("jacobi-2d", "R(t)", "on A"),
    ("jacobi-2d", "I(t,i)", ""),
    ("blur", "F(S0,S1,1)", "RAW on bx (S0->S1)"),
    ("heat-3d", "P(t)", ""),
    ("seidel-2d", "J(i,2)", "on A"),  # A[i][j] needs A[i-1][j+1]: i cannot run inside j
]


@pytest.mark.parametrize("kernel, schedule", LEGAL)
def test_legal_schedules_apply_and_verify(kernel, schedule):
    st = Schedule.parse(schedule).apply(prog(kernel))
    m = measure_one(st)
    assert m.verified, m.error


@pytest.mark.parametrize("kernel, schedule, why", ILLEGAL)
def test_illegal_schedules_are_refused_with_the_dependence(kernel, schedule, why):
    with pytest.raises(IllegalScheduleError, match="violates|cannot make") as e:
        Schedule.parse(schedule).apply(prog(kernel))
    assert why in str(e.value)


def test_fusion_and_distribution():
    p = two_maps()
    fused = Schedule.parse("F(S0,S1,1)").apply(p)
    assert [cs.loops for cs in fused.comps][:2] == [("i",), ("i",)]
    assert measure_one(fused).verified
    with pytest.raises(IllegalScheduleError, match="RAW on B"):
        Schedule.parse("F(S1,S2,1) F(S0,S2,1)").apply(p)   # D[i] needs B[i+1]: not yet written
    back = Schedule.parse("F(S0,S1,1) F(S0,S1,0)").apply(p)
    assert back.comps[1].loops != back.comps[0].loops      # distributed again, under a fresh name
    assert measure_one(back).verified


@pytest.mark.parametrize("schedule, message", [
    ("I(i,i)", "two different loops"),
    ("U(k,1)", "at least 2"),
    ("V(i,8)", "only an innermost loop"),
    ("F(S0,S1,1) V(j,8) I(j,j_v)", "must stay innermost"),
    ("T2(i,k,8,8)", "not consecutive"),
    ("S(j,i,1)", "outside"),
    ("P(i) P(i)", "already parallel"),
    ("P(i) U(i,4)", "already parallel; a loop can be"),
    ("F(S0,S0,1)", "two different computations"),
    ("F(S0,S1,3)", "cannot fuse"),
    ("I(i,nope)", "no loop 'nope'"),
    ("T2(i,j,8)", "takes 4 arguments"),
    ("P(i", "cannot read schedule"),
    ("J(i,1)", "must be 2..16"),
    ("P(i) J(i,4)", "already parallel"),
    ("J(i,16) J(j,16)", "a block of 256 copies"),
])
def test_malformed_requests_are_refused(schedule, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule.parse(schedule).apply(prog("gemm"))


def test_partial_tiles_are_exact():
    # extents 40, 50, 30 are not multiples of 16 / 32
    st = Schedule.parse("T3(i,j,k,16,32,16)").apply(prog("gemm"))
    assert measure_one(st).verified


def test_notation_and_json_round_trip():
    text = "I(i,j) T2(i,k,32,64) T3(i,j,k,8,8,8) U(k,8) P(i_t) V(j,8) S(i,j,1) R(j) F(S0,S1,1) J(i,4)"
    s = Schedule.parse(text)
    assert str(s) == text
    assert Schedule.parse("  I( i , j )T2(i,k,32,64)") == Schedule.parse("I(i,j) T2(i,k,32,64)")
    assert Schedule.from_json(s.to_json()) == s
    text += " K(B,i)"  # the kinds read from the notation alone are the parsed steps' kinds
    assert step_kinds(text) == [t.kind for t in Schedule.parse(text).steps] and step_kinds("") == []
    with pytest.raises(ScheduleError, match="unknown transformation 'Q'"):
        step_kinds("P(i) Q(j)")



def test_a_loop_map_kept_by_a_composition_composes_as_its_text_parsed_back_would():
    """The next rewrite of a loop map starts from the isl map a composition kept, not from its text: the
    two must give the same text, or a schedule's loop maps would depend on what the process did before."""
    import islpy as isl

    from loopcost.transforms import levels

    for name, text in (("gemm", "T3(i,j,k,32,32,8) J(i,4) I(i_t,j_t)"), ("2mm", "T2(i,j,16,8) S(i_t,j_t,1)"),
                       ("heat-3d", "S(t,i,1) T2(i,j,16,16) R(k)"), ("conv2d", "I(y,x) T2(x,y,4,8) P(f)")):
        Schedule.parse(text).apply(prog(name))
    kept = list(levels._PRINTED.items())[-300:]
    assert len(kept) >= 20
    for text, m in kept:
        assert m.to_str() == text
        d = m.dim(isl.dim_type.out)
        rest = [f"l{k}" for k in range(1, d)]
        for exprs in (["floor(l0/4)", "l0", *rest], [*rest, "-l0"], [f"l0 + 2*l{d - 1}", *rest]):
            then = isl.Map(f"{{ [{', '.join(f'l{k}' for k in range(d))}] -> [{', '.join(exprs)}] }}")
            assert m.apply_range(then).to_str() == isl.Map(text).apply_range(then).to_str(), (text, exprs)

@pytest.mark.slow
def test_replay_leaves_out_the_steps_that_no_longer_apply_or_are_illegal():
    p = KERNELS["gemm"].program("small")
    untiled = Schedule.parse("F(S0,S1,0) I(j_1,k)").apply(p)
    # the tile loop the parallel step names is gone: the step is left out, the unroll stays
    state, kept = Schedule.parse("P(i_1_t) U(j_1,4)").replay(untiled)
    assert str(kept) == "U(j_1,4)" and state.key == Schedule.parse("F(S0,S1,0) I(j_1,k) U(j_1,4)").apply(p).key
    # a parallel k carries the reduction: left out when checked, kept without the check
    assert str(Schedule.parse("P(k) P(i_1)").replay(untiled)[1]) == "P(i_1)"
    assert str(Schedule.parse("P(k) P(i_1)").replay(untiled, check=False)[1]) == "P(k) P(i_1)"


def test_candidates_are_legal_cover_every_kind_and_exclude_illegal_ones():
    seen = set()
    for name in ("gemm", "heat-3d", "blur", "2mm"):
        st = ProgramState.initial(prog(name))
        cands = candidates(st)
        assert cands
        for t, new in cands:
            assert t.apply(st) == new
        seen |= {t.kind for t, _ in cands}
        strs = {str(t) for t, _ in cands}
        if name == "gemm":
            assert "P(k)" not in strs and "P(i)" in strs and "T2(i,j,128,8)" in strs
    assert seen == set(KINDS)


def test_factor_sets_are_options():
    st = ProgramState.initial(prog("gemm"))
    opts = SpaceOptions(tile_sizes=(4,), unroll_factors=(3,), vector_widths=(2,), skew_factors=(5,),
                        jam_factors=(6,))
    strs = {str(t) for t in proposals(st, opts)}
    assert {"T2(i,j,4,4)", "U(k,3)", "J(i,6)", "J(j,6)"} <= strs
    assert "S(t,i,5)" in {str(t) for t in proposals(ProgramState.initial(prog("jacobi-1d")), opts)}
    assert "J(k,6)" not in strs  # k encloses no loop: jamming it is unrolling it
    assert not any(s.startswith("T2") and "32" in s for s in strs)


def test_skews_are_proposed_only_where_a_dependence_is_slanted():
    def skews(name, schedule=""):
        st = Schedule.parse(schedule).apply(ProgramState.initial(prog(name)))
        return {str(t) for t in proposals(st) if t.kind == "skew"}

    assert skews("gemm") == set()  # k carries the reduction, straight along k: every order is legal already
    assert skews("atax") == skews("gesummv") == skews("blur") == set()
    assert {"S(t,i,1)", "S(t,i,2)"} <= skews("jacobi-1d")  # i[t+1] reads i-1 of step t: forward t, back i
    assert "S(i,j,1)" in skews("seidel-2d")  # in place: A[i-1][j+1] is read at (i, j)
    assert "S(i,j,1)" in skews("seidel-2d", "S(t,i,1)")


def test_a_pair_with_no_slanted_dependence_interchanges_without_a_skew():
    """What a skew serves: where no dependence goes forward along the outer loop and back along the inner
    one, interchanging two adjacent loops is legal without one; where one does, the interchange is refused
    (on random programs of every family and the kernels)."""
    from loopcost.generator.programs import GeneratorOptions, generate_programs
    from loopcost.transforms.legality import slanted
    from loopcost.transforms.reorder import Interchange

    opts = GeneratorOptions(min_work=2e4, max_work=3e5, max_bytes=2**20)
    programs = list(generate_programs(24, seed=11, opts=opts)) + [prog(n) for n in sorted(KERNELS)]
    seen = {True: 0, False: 0}
    for p in programs:
        st = ProgramState.initial(p)
        for cs in st.comps:
            for a, b in zip(cs.real_loops, cs.real_loops[1:], strict=False):
                if len(st.comps_with(a)) != len(st.comps_with(a, b)):
                    continue  # the interchange would move only some computations
                try:
                    Interchange(a, b).apply(st)
                    legal = True
                except ScheduleError:
                    legal = False
                s = slanted(st, a, b)
                seen[s] += 1
                assert legal != s, (p.name, a, b)
    assert seen[True] >= 5 and seen[False] >= 20


def test_order_keeping_steps_are_judged_like_a_full_check():
    """Tagging and strip-mining skip the dependence-order check; along random legal schedules of every
    kernel they accept and refuse exactly what the full check does."""
    import random

    from loopcost.transforms.legality import check
    from loopcost.transforms.space import random_step

    rng = random.Random(0)
    judged = refused = 0
    for name in sorted(KERNELS):
        state = ProgramState.initial(prog(name))
        for _ in range(3):
            for t in proposals(state):
                if not t.keeps_order:
                    continue
                outcome = []
                for judge in (t.apply, lambda s, t=t: check(t.transformed(s))):
                    try:
                        outcome.append(judge(state))
                    except ScheduleError:
                        outcome.append(None)
                assert outcome[0] == outcome[1], (name, str(t))
                judged += 1
                refused += outcome[0] is None
            step = random_step(state, rng)
            if step is None:
                break
            state = step.state
    assert judged > 200 and refused > 10


def test_unroll_and_jam_sinks_the_block_innermost_and_keeps_it_in_registers():
    from loopcost.codegen.c_source import kernel_c

    st = Schedule.parse("J(i,4) J(j,8)").apply(prog("gemm"))
    assert st.comp("S1").loops == ("i_r", "j_r", "k", "i", "j")
    assert st.comp("S0").loops[:4] == ("i_r", "j_r", "i", "j")
    code = kernel_c(st)
    # 4x8 accumulators loaded before the k loop and stored after it, in the version without guards
    assert code.count("double lc_r") == 32 and "lc_r31 += " in code
    # 50 = 6*8 + 2: the last block of j has guards, tested once before the k loop, which runs without them
    assert re.search(r"if \(8 \* c3 \+ 7 <= 49\) \{\s*if \(\(0\) <= 29\) \{\s*double lc_r0 =", code)
    assert "} else {" in code
    assert measure_one(st).verified
    unrolled = kernel_c(Schedule.parse("J(i,4) J(j,8) U(k,4)").apply(prog("gemm")))  # unrolling keeps the locals
    assert "#pragma GCC unroll 4" in unrolled and unrolled.count("double lc_r") == 32


def test_scalar_replacement_refuses_elements_that_may_alias():
    """Only a buffer whose every access in the loop stays put, at elements distinct at every point, is kept
    in locals: C[i][j] += C[i+8][k] leaves C in memory (the read moves with k)."""
    from loopcost.codegen.blocks import distinct as _distinct
    from loopcost.codegen.c_source import kernel_c
    from loopcost.ir.affine import Affine
    from loopcost.ir.dsl import ProgramBuilder

    c1, c3 = Affine.var("c1"), Affine.var("c3")
    assert _distinct(("C", (c1, c3 + 1)), ("C", (c1, c3)))
    assert not _distinct(("C", (c1, c3)), ("C", (c3, c1)))  # the same element where c1 == c3
    p = ProgramBuilder("shifted")
    C = p.output("C", (16, 8))
    with p.loop("i", 0, 8) as i, p.loop("j", 0, 8) as j, p.loop("k", 0, 8) as k:
        C[i, j] += C[i + 8, k] * 0.5
    st = Schedule.parse("J(i,2) J(j,2)").apply(p.build())
    assert "lc_r" not in kernel_c(st)
    assert measure_one(st).verified


def test_no_code_tag_is_proposed_on_a_tile_loop_inside_its_point_loop():
    """gemm tiled, then its k tile loop swapped with i's: i's and k's tile loops run once per entry (isl prints no
    loop for them), so the space tags neither; the loops around and inside them it does."""
    st = Schedule.parse("T3(i,j,k,32,64,8) I(i_t,k)").apply(ProgramState.initial(KERNELS["gemm"].program("bench")))
    assert single_trip_loops(st) == {"i_t", "k_t"}
    strs = {str(t) for t in proposals(st)}
    assert {"P(k)", "P(j_t)", "J(i,2)", "V(j,8)"} <= strs
    assert not any(re.fullmatch(r"[PUVJ]\((i_t|k_t)(,\d+)?\)", s) for s in strs)
    jam = Schedule.parse("J(j,2) I(i,j)").apply(ProgramState.initial(KERNELS["gemm"].program("bench")))
    assert single_trip_loops(jam) == {"j_r"} and "P(j_r)" not in {str(t) for t in proposals(jam)}


@pytest.mark.parametrize("kernel", ["gemm", "conv2d", "heat-3d"])
def test_a_tag_on_a_single_trip_loop_leaves_the_code_as_it_was(kernel):
    """Along random tilings, jams and interchanges of a bench-scale kernel: an unroll tag on each loop that
    ``single_trip_loops`` names prints the same C (the code has no loop there), so the space loses nothing by
    proposing none; the same tag on a loop around a computation's innermost statement changes the C."""
    import random

    from loopcost.codegen.c_source import kernel_c
    from loopcost.generator.schedules import random_schedules
    from loopcost.transforms.tags import Unroll

    p = KERNELS[kernel].program("bench")
    single = 0
    for text, state in random_schedules(p, 20, random.Random(5), SpaceOptions(kinds=("tile", "jam", "interchange"))):
        base = kernel_c(state)
        once = single_trip_loops(state)
        for loop in sorted(lp for lp in once if not any(state.tag_of(lp, k) for k in CODE_TAGS)):
            assert kernel_c(Unroll(loop, 2).transformed(state)) == base, (str(text), loop)
        single += len(once)
        inner = next((cs.real_loops[-1] for cs in state.comps if cs.real_loops[-1] not in once), None)
        if inner and not any(state.tag_of(inner, k) for k in CODE_TAGS):
            assert kernel_c(Unroll(inner, 2).transformed(state)) != base, (str(text), inner)
    assert single >= 4, single
