"""Packing ``K(B,L)``: the box a loop reads, the copy in the generated C, and what is refused."""

import numpy as np
import pytest

from loopcost.codegen.c_source import kernel_c
from loopcost.errors import IllegalScheduleError, ScheduleError
from loopcost.ir.dsl import ProgramBuilder
from loopcost.ir.packing import PACK_BYTES, pack_scale, read_box
from loopcost.kernels import KERNELS
from loopcost.runner import LocalRunner, Timing
from loopcost.transforms.schedule import Schedule

from .programs import matvec


def test_the_box_of_a_tile_moves_with_the_tile_loops_and_has_the_tiles_extents():
    state = Schedule.parse("T3(i,j,k,8,16,8)").apply(KERNELS["gemm"].program("small"))
    box = read_box(state, "i", "B")  # B[k][j] inside the k_t and j_t tiles
    assert box.extents == (8, 16)
    assert [str(lo).split("->")[1].strip() for lo in box.low] == ["{ [(8c5)] }", "{ [(16c3)] }"]
    assert read_box(state, "k_t", "A").extents == (8, 30)  # A[i][k]: one i tile, every k
    with pytest.raises(ScheduleError, match="reads 'x'"):
        read_box(state, "i", "x")


def test_a_copy_lays_its_dimensions_out_in_the_order_its_readers_move_them():
    gemm = KERNELS["gemm"].program("small")
    # B[k][j] under the i-j-k tile: k runs innermost, so the copy is [j][k] and k steps by one element
    tiled = Schedule.parse("T3(i,j,k,8,16,8) K(B,i)").apply(gemm)
    assert read_box(tiled, "i", "B").order == (1, 0) and read_box(tiled, "i", "B").copy_extents == (16, 8)
    assert "double lc_pack0[16][8] __attribute__((aligned(64)));" in kernel_c(tiled)
    # a 4x4 block: k runs, the copies of i and j sit inside it; A[i][k]'s copy is [k][i] (the four rows' elements
    # of one k side by side, one element apart: each is broadcast against the vectors of B), B[k][j]'s stays [k][j]
    block = Schedule.parse("F(S0,S1,0) T3(i_1,j_1,k,8,16,8) J(i_1,4) J(j_1,4) K(B,i_1_r) K(A,j_1_r)").apply(gemm)
    a, b = read_box(block, "j_1_r", "A"), read_box(block, "i_1_r", "B")
    assert (a.order, a.gap, a.copy_shape) == ((1, 0), 2, (8, 8)) and (b.order, b.gap) == ((0, 1), 1)
    code = kernel_c(block)
    assert "double lc_pack1[8][8] __attribute__((aligned(64)));" in code
    copy = "lc_pack1[lc_pack1_i1 - lc_pack1_o1][2 * (lc_pack1_i0 - lc_pack1_o0)]"
    assert f"{copy} = (1.5 * A[lc_pack1_i0][lc_pack1_i1]);" in code
    # the i-k-j block's vectors run along j, its loop: no copy there has a gap
    ikj = Schedule.parse("F(S0,S1,0) I(j_1,k) T3(i_1,k,j_1,8,8,16) J(i_1,4) J(k,2) K(A,j_1)").apply(gemm)
    assert read_box(ikj, "j_1", "A").gap == 1


@pytest.mark.parametrize("name, text", [
    ("gemm", "T3(i,j,k,8,16,8) K(B,i)"),
    ("gemm", "T3(i,j,k,8,16,8) K(B,i) K(A,j)"),  # two packs, one inside the other
    # a register block, the threads outside the pack
    ("gemm", "F(S0,S1,0) I(j_1,k) T3(i_1,k,j_1,8,8,16) J(i_1,4) J(k,2) K(B,i_1_r) P(i_1_t)"),
    ("2mm", "T2(i,j,8,16) K(A,j) K(C,i_1)"),
    ("conv2d", "K(weight,y) K(input,x)"),
    ("jacobi-2d", "T2(i,j,8,8) K(A,i) K(B,i_1)"),  # each sweep packs what it reads, in the time loop
    # S1 fused into S0's tile loops: where isl leaves out a tile loop that runs once, that part reads A itself
    # (the copy's offsets would name the missing loop's iterator: a compile error in 2% of random programs)
    ("jacobi-2d", "T2(i,j,8,8) F(S0,S1,3) K(A,i)"),
    # the tile loop j_1_t runs S1 only, but S0 (no such loop) sits under its node too: the copy's level
    # comes from S1 (taking it from S0 raised ValueError, in the runs where S0 came first)
    ("syrk", "T3(i,k,j_1,128,16,8) J(k,16) K(A,j_1_t)"),
    # S1 (mvt's second product, fused at depth 1) is printed inside the packed loop's first run, where the
    # loops it shares run once: it reads A outside the copy's box, so it reads A, not the copy (it read the
    # copy, wrong values, found by the adaptive bench's verification)
    ("mvt", "F(S0,S1,1) I(i,j) T2(j,i,8,64) J(j,4) K(A,j_r)"),
    # the skewed tile loops of S0 run under S1's longer fused loop, where isl prints them without a guard and
    # S0's loops do not run: the box's ends there reached 900 elements before y_1 (SIGSEGV, a pack campaign)
    ("mvt", "U(j_1,8) S(i,j,1) T2(i,j,16,64) F(S0,S1,1) K(y_1,i) K(y_2,i_t)"),
    # two nests' copies in one function: gcc 12 aligned the second for its vector loads but not the stack
    # slot it shares with the first (vmovaps on a 16-byte boundary: SIGSEGV); the copies are aligned now
    ("matmul-relu", "V(j_1,8) K(bias,j_1) K(B,j)"),
    # a scaled copy (1.5 * A) read by a block
    ("gemm", "F(S0,S1,0) T3(i_1,j_1,k,8,16,8) J(i_1,4) J(j_1,4) K(B,i_1_r) K(A,j_1_r)"),
])
def test_packed_schedules_compute_what_the_program_computes(name, text):
    state = Schedule.parse(text).apply(KERNELS[name].program("small"))
    assert "lc_pack" in kernel_c(state)
    m = LocalRunner().measure([state], timing=Timing(1, 0), labels=[text])[0]
    assert m.verified, (text, m.error)


def test_the_reads_inside_read_the_copy_and_the_notation_round_trips():
    s = Schedule.parse("T2(i,j,4,4) K(A,i)")
    assert str(s) == "T2(i,j,4,4) K(A,i)" and Schedule.from_json(s.to_json()) == s
    code = kernel_c(s.apply(matvec()))
    assert "double lc_pack0[4][4] __attribute__((aligned(64)));" in code
    assert "A[c" not in code.split("lc_pack0[lc_pack0_i0")[1]


@pytest.mark.parametrize("text, error, match", [
    ("K(C,k)", IllegalScheduleError, "S1 inside it writes 'C'"),  # the copy would go stale
    ("T3(i,j,k,8,16,8) K(B,i) P(i)", ScheduleError, "parallel"),  # threads would share the copy
    ("P(i) K(B,i)", ScheduleError, "parallel"),
    ("K(D,i)", ScheduleError, "no buffer 'D'"),
    ("K(B,i) K(B,i)", ScheduleError, "already packs"),
    ("K(B,q)", ScheduleError, "no loop 'q'"),
    # tiling the skewed loops under the pack: isl cannot bound the box's extent (it raised islpy.Error)
    ("S(j,k,2) S(j,k,1) K(B,j) T2(j,k,8,64)", ScheduleError, "no bounded box"),
])
def test_what_packing_refuses(text, error, match):
    with pytest.raises(error, match=match):
        Schedule.parse(text).apply(KERNELS["gemm"].program("small"))


@pytest.mark.parametrize("text", ["T2(i_1,j_1,32,64) P(i) K(tmp,i_1_t)",
                                  "T2(i_1,j_1,128,16) P(i_1_t) K(A,j_1_t) K(tmp,j_1_t)"])
def test_a_pack_is_refused_where_a_statement_printed_in_its_loop_writes_the_buffer(text):
    # atax: tiling S3's loops (inside i_1, beside S1 and S2, which write tmp) gives tile loops that only S3
    # names, but S1 and S2 sit under their node too (at its first value): the copy of tmp, taken before the
    # loop, went stale (wrong y, caught by verification in a pack campaign)
    with pytest.raises(IllegalScheduleError, match="S1 inside it writes 'tmp'"):
        Schedule.parse(text).apply(KERNELS["atax"].program("small"))


def test_a_copy_larger_than_the_stack_allows_is_refused_and_a_tile_of_it_is_not():
    gemm = KERNELS["gemm"].program("bench")  # B is 1200 x 1100 doubles
    with pytest.raises(ScheduleError, match=f"more than {PACK_BYTES}"):
        Schedule.parse("K(B,i)").apply(gemm)
    Schedule.parse("T3(i,j,k,32,128,128) K(B,i)").apply(gemm)


def test_a_later_step_that_breaks_a_pack_is_refused():
    p = ProgramBuilder("producer")
    x, t, y = p.input("X", (64,)), p.temp("T", (64,)), p.output("Y", (64,))
    with p.loop("a", 0, 64) as a:
        t[a] = x[a] * 2.0
    with p.loop("b", 0, 64) as b:
        y[b] = t[b] + 1.0
    program = p.build()
    packed = Schedule.parse("K(T,b)").apply(program)
    assert packed.packs("b") == ["T"]
    with pytest.raises(ScheduleError, match="the pack of 'T' at loop 'b'"):  # fusion takes its loop away
        Schedule.parse("F(S0,S1,1)").apply(packed)
    gemm = KERNELS["gemm"].program("small")
    assert Schedule.parse("T2(i,j,8,8) K(B,i) P(i_t)").apply(gemm).packs("i") == ["B"]


def test_only_blocks_along_the_written_rows_keep_gcc_from_vectorizing_the_loop_around_them():
    from loopcost.codegen.c_source import SLP, slp_blocks

    gemm = KERNELS["gemm"].program("small")
    ijk = Schedule.parse("F(S0,S1,0) T3(i_1,j_1,k,8,16,8) J(i_1,4) J(j_1,8)").apply(gemm)  # C's rows: SLP
    ikj = Schedule.parse("F(S0,S1,0) I(j_1,k) T3(i_1,k,j_1,8,8,16) J(i_1,4) J(k,2)").apply(gemm)  # vectors along j
    assert slp_blocks(ijk) and not slp_blocks(ikj)
    assert SLP not in kernel_c(ijk)  # nothing packed
    assert f"{SLP} static inline" not in kernel_c(Schedule.parse("K(B,i_1_r)").apply(ikj))
    assert SLP in kernel_c(Schedule.parse("K(B,i_1_r)").apply(ijk))


def test_the_features_show_a_pack_as_a_copy_before_its_loop_whose_reads_read_the_copy():
    import math

    from loopcost.features import layout as L
    from loopcost.features.extract import featurize

    gemm = KERNELS["gemm"].program("small")
    plain = featurize(Schedule.parse("T3(i,j,k,8,16,8)").apply(gemm))
    packed = featurize(Schedule.parse("T3(i,j,k,8,16,8) K(B,i)").apply(gemm))
    access = lambda vec, a, field: vec[L.MAX_DEPTH * L.LEVEL_SIZE + a * L.ACCESS_SIZE + L.ACCESS_INDEX[field]]  # noqa: E731
    # one computation more (the copy), and its two loops over the 8 x 16 box
    assert len(packed.comps) == len(plain.comps) + 1 and len(packed.loops) == len(plain.loops) + 2
    copies = [v for v in packed.comps if access(v, 0, "buffer_is_temp")]
    assert len(copies) == 1
    copy = copies[0]
    assert access(copy, 0, "is_write") and access(copy, 0, "log2_buffer_size") == math.log2(8 * 16)
    assert access(copy, 1, "buffer_is_input") and access(copy, 0, "inner_stride_one") == 1
    # under S1's three tile loops (S0 keeps a loop named i, not the one packed), then the box's two
    extents = lambda vec: [vec[d * L.LEVEL_SIZE + L.LEVEL_INDEX["log2_extent"]] for d in range(6)]  # noqa: E731
    assert extents(copy) == extents(packed.comps[-1])[:3] + [3, 4, 0]
    assert len(packed.shape) == len(plain.shape) == 2  # S0's nest and S1's: the copy is inside S1's
    # the update reads B (its third access: C, then A and B) from a temporary of the box's size
    update = next(v for v in packed.comps if access(v, 2, "present") and not access(v, 0, "buffer_is_temp"))
    before = next(v for v in plain.comps if access(v, 2, "present"))
    assert access(before, 2, "buffer_is_input") and not access(before, 2, "buffer_is_temp")
    assert access(update, 2, "buffer_is_temp") and access(update, 2, "log2_buffer_size") == math.log2(8 * 16)
    # B[k][j] as gemm's innermost loop (k) steps: a row of B, the next element of the copy (laid out [j][k]:
    # its readers move k innermost); the rest of the vector is the same
    row = gemm.buffer("B").shape[-1]
    assert access(before, 2, "log2_inner_stride") == pytest.approx(math.log2(1 + row))
    assert access(update, 2, "inner_stride_one") == 1 and access(update, 2, "log2_inner_stride") == 1
    differ = np.flatnonzero(update != before)
    start = L.MAX_DEPTH * L.LEVEL_SIZE + 2 * L.ACCESS_SIZE
    # and the nest block says it shares the loops around the pack with the copy
    shared = L.NEST_AT + L.NEST_INDEX["fused_levels"]
    assert set(differ) <= set(range(start, start + len(L.ACCESS_FIELDS))) | {shared}
    assert update[shared] == 3 and before[shared] == 0


def test_a_pack_copies_only_in_the_runs_that_read_it_when_fusion_lengthens_its_loop():
    p = ProgramBuilder("short_then_long")
    a, b = p.input("A", (8, 16)), p.output("B", (8, 16))
    z, y = p.input("Z", (40, 40)), p.output("Y", (40, 40))
    with p.loop("i", 0, 8) as i, p.loop("k", 0, 16) as k:
        b[i, k] = a[i, k] * 2.0
    with p.loop("q", 0, 40) as q, p.loop("r", 0, 40) as r:
        y[q, r] = z[q, r] + 1.0
    # before each run of k, row i of A; fused, i and k run 40 times, and A has 8 rows
    state = Schedule.parse("K(A,k) F(S0,S1,2)").apply(p.build())
    code = kernel_c(state)
    assert "if (c1 <= 7)\n" in code and code.index("if (c1 <= 7)\n") < code.index(" A[lc_pack0_i0]")
    m = LocalRunner().measure([state], timing=Timing(1, 0), labels=["fused"])[0]
    assert m.verified, m.error


def test_a_pack_copies_only_in_the_runs_that_read_it_when_a_fused_nest_beside_it_lengthens_the_loops_around():
    # the dataset's r5_279: a tiled nest fused with a longer one at its tile loops; the tile loops run 254
    # times, the pack's loop only in the first 4 (elsewhere it is empty), and A has 63 rows
    p = ProgramBuilder("tiles_beside_long")
    a, b = p.input("A", (64, 64)), p.output("B", (64, 64))
    z, y = p.input("Z", (256, 256)), p.output("Y", (256, 256))
    with p.loop("t", 0, 2):
        with p.loop("i", 1, 63) as i, p.loop("j", 1, 63) as j:
            b[i, j] = a[i, j] * 2.0
        with p.loop("q", 1, 255) as q, p.loop("r", 1, 255) as r:
            y[q, r] = z[q, r] + 1.0
    state = Schedule.parse("T2(i,j,16,16) K(A,i) F(S0,S1,3)").apply(p.build())
    code = kernel_c(state)
    assert "for (int c5 = 1; c5 <= 254; c5++)" in code  # the loops around the pack run where S0 does not
    guard = "if (c3 <= 3 && c5 <= 3)\n"
    assert code.count(guard) == code.count(" A[lc_pack0_i0]") > 0
    m = LocalRunner().measure([state], timing=Timing(1, 0), labels=["fused"])[0]
    assert m.verified, m.error


def test_a_copy_holds_the_products_when_every_read_it_serves_is_multiplied_by_one_constant():
    """gemm's ``C[i][j] += 1.5 * A[i][k] * B[k][j]`` parses as ``(1.5 * A[i][k]) * B[k][j]``: a copy of
    ``1.5 * A[i][k]`` gives each product the same operands, so the same bits, without the multiply."""
    gemm = KERNELS["gemm"].program("small")
    assert pack_scale(list(gemm.computations()), "A").value == 1.5
    assert pack_scale(list(gemm.computations()), "B") is None  # the right operand of a product, not a constant's
    assert pack_scale(list(gemm.computations()), "C") is None  # written
    code = kernel_c(Schedule.parse("F(S0,S1,0) T3(i_1,j_1,k,8,16,8) J(i_1,4) J(j_1,4) K(A,j_1_r)").apply(gemm))
    assert "] = (1.5 * A[lc_pack0_i0][lc_pack0_i1]);" in code
    body = code.split("lc_pack0_i1]);")[1]
    assert "1.5 *" not in body and "(lc_pack0[" in body
    p = ProgramBuilder("two_scales")
    X, Y = p.input("X", (8,)), p.output("Y", (8,))
    with p.loop("i", 0, 7) as i:
        Y[i] = 2.0 * X[i] + X[i + 1] * 2.0
    assert pack_scale(list(p.build().computations()), "X").value == 2.0  # either side of the product
    p = ProgramBuilder("mixed")
    X, Y = p.input("X", (8,)), p.output("Y", (8,))
    with p.loop("i", 0, 7) as i:
        Y[i] = 2.0 * X[i] + 3.0 * X[i + 1]
    assert pack_scale(list(p.build().computations()), "X") is None  # two constants: copied as it is
