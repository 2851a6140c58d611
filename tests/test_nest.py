"""The nest block of the features (layouts 5 to 7): guards, parallel entries, carried dependences and the loops
the code keeps, against what the generated code of known schedules does."""

import math
import random
import re

import islpy as isl
import pytest

from loopcost.codegen.c_source import ast_of, kernel_c
from loopcost.features import layout as L
from loopcost.features.extract import featurize
from loopcost.features.nest import dependence_fields, distance_boxes, hidden_levels
from loopcost.generator.schedules import random_schedules
from loopcost.ir.trips import level_trips
from loopcost.kernels import KERNELS
from loopcost.transforms.schedule import Schedule

from .programs import two_maps


def nest(program, text: str) -> list[dict[str, float]]:
    """Each computation's nest fields, in the feature tree's order."""
    t = featurize(Schedule.parse(text).apply(program))
    return [dict(zip(L.NEST_FIELDS, c[L.NEST_AT:L.DOMAIN_AT].tolist(), strict=True)) for c in t.comps]


@pytest.mark.parametrize(("text", "inner", "free"), [("", 1, 0), ("S(i,j,1) I(i,j)", 1, 0), ("S(i,j,2) I(i,j)", 0, 1)])
def test_seidel_wavefront_frees_the_inner_loop_only_with_skew_two(text, inner, free):
    """Seidel's in-place stencil: after a skew by 2 and an interchange no dependence stays inside the inner
    loop (gcc may vectorize it); a skew by 1 leaves one there."""
    (f,) = nest(KERNELS["seidel-2d"].program("small"), text)
    assert (f["inner_carries"], f["free_inner_levels"], f["outer_carries"]) == (inner, free, 1)
    assert f["self_dependences"] == len(distance_boxes(KERNELS["seidel-2d"].program("small"))["S0"]) > 0


def test_gemm_reduction_carried_by_its_inner_loop_until_interchanged():
    p = KERNELS["gemm"].program("small")
    init, update = nest(p, "")
    assert init["self_dependences"] == 0 and init["free_inner_levels"] == 2
    assert update["inner_carries"] == 1 and update["free_inner_levels"] == 0 and update["outer_carries"] == 0
    _, update = nest(p, "F(S0,S1,1) I(j_1,k)")
    assert update["inner_carries"] == 0 and update["free_inner_levels"] == 1


def test_an_inner_parallel_loop_counts_its_entries():
    p = KERNELS["gemm"].program("small")
    _, update = nest(p, "P(j)")
    outer = featurize(Schedule.parse("").apply(p)).comps[1][L.LEVEL_INDEX["log2_extent"]]  # log2 of i's extent
    assert update["parallel"] == 1 and update["log2_parallel_entries"] == pytest.approx(outer) and outer > 0
    _, update = nest(p, "P(i)")
    assert update["log2_parallel_entries"] == 0


def test_fusing_loops_of_different_ranges_guards_the_smaller():
    """two_maps: B's loop has n + 1 iterations, C's n; fused, C's statement runs under a guard."""
    p = two_maps(16)
    st = Schedule.parse("F(S0,S1,1)").apply(p)
    assert "if (" in kernel_c(st)
    fields = nest(p, "F(S0,S1,1)")
    b, c = fields[0], fields[1]
    assert b["guarded_levels"] == 0 and c["guarded_levels"] == 1 and c["guard_depth"] == 1
    assert c["log2_idle_iterations"] == pytest.approx(math.log2(17) - math.log2(16), abs=1e-5)
    assert b["fused_levels"] == c["fused_levels"] == 1 and b["inner_sharers"] == 2
    assert all(f["guarded_levels"] == 0 and f["fused_levels"] == 0 for f in nest(p, ""))


@pytest.mark.parametrize(("text", "hidden", "depth", "idle"), [
    ("", 0, 0, 0.0), ("T2(j,k,16,8)", 2, 2, 2 * math.log2(4)),
    ("T3(i,j,k,8,16,8)", 3, 3, math.log2(5) + 2 * math.log2(4)), ("F(S0,S1,1) I(j_1,k)", 0, 0, 0.0)])
def test_an_initialization_left_in_the_tile_loops_of_its_reduction_is_guarded(text, hidden, depth, idle):
    """gemm's initialization has no level of the reduction's: tiling k puts it inside k's tile loop (and
    those of the loops tiled outside it) at a constant value, under ``if (c3 == 0 && ...)``, as many guards as
    tile loops it has none of; its own levels do not show them, the nest block does (the tile loops' trips
    idle, the innermost guard as many levels out as the init's own levels inside it, plus one)."""
    p = KERNELS["gemm"].program("small")
    st = Schedule.parse(text).apply(p)
    guard = re.search(r"if \(((?:c\d+ == 0(?: && )?)+)\) \{\n\s*C\[c\d+\]\[c\d+\] = ", kernel_c(st))
    assert (guard.group(1).count("==") if guard else 0) == hidden
    init, update = nest(p, text)
    assert (init["guarded_levels"], init["guard_depth"], update["guarded_levels"]) == (hidden, depth, 0)
    assert init["log2_idle_iterations"] == pytest.approx(idle, abs=1e-5)


def test_hidden_levels_need_the_same_betas_and_outer_loops():
    """A computation sits in another's loop only where nothing orders them apart outside it."""
    before = ((0, 0, 0), ("i", None))                                    # betas b0 b1 b2 around loops l0 l1
    assert hidden_levels((before, ((0, 1, 0), ("i", "k")))) == ((), ())  # the init before the k loop
    assert hidden_levels((before, ((0, 0, 0), ("i", "k")))) == (((0, ((1, 1),)),), ())
    assert hidden_levels((((0, 0, 0), (None, "j")), ((0, 0, 0), ("i", "j")), ((1, 0, 0), ("t", None)))) == \
        (((1, ((1, 0),)),), (), ())                                      # the third is after the first two


def test_a_tile_loop_widens_a_distance_to_may_carry():
    """floor(i/4) of a distance 1 along i is 0 or 1: the tile loop may carry it, and so may the point loop."""
    boxes = (((1.0,), (1.0,)),)
    assert dependence_fields([(0.25,), (1.0,)], boxes) == {"self_dependences": 1, "inner_carries": True,
                                                           "outer_carries": True, "free_inner_levels": 0}
    assert dependence_fields([(1.0,)], ()) == {"self_dependences": 0, "inner_carries": False,
                                               "outer_carries": False, "free_inner_levels": 1}


def test_footprints_count_each_access_over_the_loops_it_reads():
    """gemm (small: C 40x50, A 40x30, B 30x50, doubles), S1 C[i][j] += A[i][k] * B[k][j]: one run of k touches
    C once and 30 of A and of B; of j and k, 50 of C, 30 of A, 1500 of B; of all three, every element."""
    p = KERNELS["gemm"].program("small")
    t = featurize(Schedule.parse("").apply(p))
    at = L.NEST_AT + L.NEST_INDEX["log2_bytes_inner1"]
    got = t.comps[1, at:at + L.MAX_DEPTH]
    expected = [math.log2(8 * n) for n in (1 + 30 + 30, 50 + 30 + 1500, 2000 + 1200 + 1500)]
    assert got[:3] == pytest.approx(expected, abs=1e-4) and (got[3:] == got[2]).all()
    tiled = featurize(Schedule.parse("T3(i,j,k,32,32,32)").apply(p)).comps[1, at:at + L.MAX_DEPTH]
    assert tiled[0] == pytest.approx(math.log2(8 * (1 + 32 + 32)), abs=1e-4)  # a run of k is one tile's
    assert tiled[2] < expected[2] < tiled[5] + 1e-4  # one tile touches less than the whole; every tile, all


def _loop_depths(node: isl.AstNode, depth: int, out: dict[str, int]) -> dict[str, int]:
    """Per statement of an isl AST, the most ``for`` loops around one of its occurrences."""
    t = node.get_type()
    if t == isl.ast_node_type.for_:
        _loop_depths(node.for_get_body(), depth + 1, out)
    elif t == isl.ast_node_type.if_:
        _loop_depths(node.if_get_then_node(), depth, out)
        if node.if_has_else_node():
            _loop_depths(node.if_get_else_node(), depth, out)
    elif t == isl.ast_node_type.block:
        children = node.block_get_children()
        for k in range(children.n_ast_node()):
            _loop_depths(children.get_at(k), depth, out)
    elif t == isl.ast_node_type.mark:
        _loop_depths(node.mark_get_node(), depth, out)
    elif t == isl.ast_node_type.user:
        name = node.user_get_expr().get_op_arg(0).get_id().get_name()
        out[name] = max(out.get(name, 0), depth)
    return out


@pytest.mark.parametrize("kernel", ["gemm", "2mm", "jacobi-2d", "fdtd-2d", "doitgen"])
def test_the_kept_levels_are_the_loops_of_the_generated_code(kernel):
    """On random schedules of bench-scale kernels, each computation's levels of a real trip above one are the
    loops isl's AST puts around it (computations under no guard, whose loops are their own): the levels the
    features say run once per entry are those the code drops."""
    p = KERNELS[kernel].program("bench")
    compared = dropped = 0
    for _, state in [d for seed in (3, 4) for d in random_schedules(p, 12, random.Random(seed))]:
        if any(t.kind == "pack" for t in state.tags):
            continue
        comps = featurize(state).comps
        nest = comps[:, L.NEST_AT:]
        if (nest[:, L.NEST_INDEX["guarded_levels"]] > 0).any():
            continue
        levels = comps[:, L.FIELDS_AT + L.COMP_INDEX["n_levels"]]
        kept = levels - nest[:, L.NEST_INDEX["dropped_levels"]]
        assert sorted(kept.astype(int).tolist()) == sorted(_loop_depths(ast_of(state), 0, {}).values())
        compared += 1
        dropped += int((nest[:, L.NEST_INDEX["dropped_levels"]] > 0).any())
    assert compared >= 6 and dropped >= 1, (compared, dropped)


def test_a_tile_loop_inside_its_point_loop_runs_once_and_loses_its_tags():
    """gemm (bench: ni 1000, nj 1100, nk 1200) tiled, then its k tile loop swapped with the i tile loop: i's tile
    loop sits inside i and runs once, so isl drops it with its parallel tag (the code has no parallel loop); k
    runs its whole range outside, and a parallel j inside is entered once per k, j tile and i."""
    p = KERNELS["gemm"].program("bench")
    text = "T3(i,j,k,32,64,8) I(i_t,k)"
    state = Schedule.parse(f"{text} P(i_t)").apply(p)
    _, update = nest(p, f"{text} P(i_t)")
    assert "omp parallel" not in kernel_c(state)
    assert update["parallel"] == 1 and update["kept_parallel"] == 0 and update["dropped_levels"] == 2
    trips = [update[f"log2_trip_level{d}"] for d in range(6)]  # k, j_t, k_t, i, j, i_t
    expected = [math.log2(1200), math.log2(18), 0, math.log2(1000), math.log2(64), 0]
    assert trips == pytest.approx(expected, abs=1e-4)
    _, update = nest(p, f"{text} P(j)")
    assert update["kept_parallel"] == 1
    assert update["log2_kept_parallel_entries"] == pytest.approx(math.log2(1200 * 18 * 1000), abs=1e-4)
    assert update["log2_parallel_entries"] < update["log2_kept_parallel_entries"] - 4  # tile sizes, not ranges


def test_level_trips_of_splits_and_skews():
    """A split loop's point runs the split's factor, a tile loop inside its point loop once; a skewed level
    ``i + j`` inside ``i`` runs j's range; without a box, its extent."""
    box = ((0, 99), (0, 9))
    split = ((25.0, (0.25, 0.0)), (100.0, (1.0, 0.0)), (10.0, (0.0, 1.0)))
    assert level_trips(split, box) == pytest.approx((math.log2(25), 2.0, math.log2(10)))
    swapped = ((100.0, (1.0, 0.0)), (25.0, (0.25, 0.0)))
    assert level_trips(swapped, box) == pytest.approx((math.log2(100), 0.0))
    skew = ((100.0, (1.0, 0.0)), (109.0, (1.0, 1.0)))
    assert level_trips(skew, box) == pytest.approx((math.log2(100), math.log2(10)))
    assert level_trips(skew, None) == pytest.approx((math.log2(100), math.log2(109)))
