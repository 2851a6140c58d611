"""Register-tiled seeds: roles read from the accesses, sizes from the CPU, schedules that compute the program."""

import pytest

from loopcost.ir.dsl import ProgramBuilder
from loopcost.ir.packing import PACK_BYTES
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.runner import LocalRunner, Timing
from loopcost.search.hardware import Hardware, read_hardware
from loopcost.search.microkernels import balanced, microkernel_seeds, roles, shapes
from loopcost.transforms.jam import MAX_BLOCK, MAX_JAM

from .programs import matvec

#: an AVX2 machine with caches small enough that the tiles cut the small kernels' loops
TINY = Hardware(l1=2 << 10, l2=16 << 10, vector_bytes=32, registers=16, cores=2)


def state(name: str) -> ProgramState:
    return ProgramState.initial(KERNELS[name].program("small"))


def test_roles_are_read_from_the_accesses():
    gemm = roles(state("gemm"), "S1")  # C[i][j] += 1.5 * A[i][k] * B[k][j]
    assert (gemm.i, gemm.j, gemm.reductions) == ("i", "j", ("k",))
    # out[n][f][y][x] += w[f][c][ky][kx] * in[n][c][y+ky][x+kx]: the rows are the output channels, whose copies
    # share the input's vectors (the rows y would each read other input rows)
    conv = roles(state("conv2d"), "S1")
    assert (conv.i, conv.j, conv.reductions) == ("f", "x", ("c", "ky", "kx"))
    assert roles(state("gemm"), "S0") is None  # C[i][j] *= beta accumulates nothing
    assert roles(ProgramState.initial(matvec()), "S1") is None  # y[i] += ...: no second loop of the target
    # a time loop that the operands do not move with is not a reduction to block
    assert all(roles(state("jacobi-2d"), cs.comp) is None for cs in state("jacobi-2d").comps)


def test_row_tiles_split_evenly_among_the_threads():
    assert balanced(1000, 128, 2, 8) == 128  # 8 tiles
    assert balanced(600, 128, 2, 8) == 152  # 4 tiles (128 would make 5: one core runs 3)
    assert balanced(600, 128, 1, 8) % 8 == 0
    for rows, threads in [(700, 2), (900, 4), (1100, 2), (333, 3)]:
        t = balanced(rows, 128, threads, 8)
        assert t % 8 == 0 and -(-rows // t) % threads == 0
    assert balanced(3, 128, 2, 8) == 128  # fewer rows than blocks: nothing to balance


@pytest.mark.parametrize("hw, element", [
    (Hardware(l1=48 << 10, l2=2 << 20, vector_bytes=64, registers=32), 8),  # AVX-512, float64
    (Hardware(l1=32 << 10, l2=1 << 20, vector_bytes=64, registers=32), 4),  # AVX-512, float32
    (Hardware(l1=32 << 10, l2=256 << 10, vector_bytes=32, registers=16), 8),  # AVX2
    (TINY, 8),
])
def test_the_block_fits_the_registers_and_its_tiles_the_caches(hw, element):
    found = shapes(hw, element)
    assert 1 <= len(found) <= 2
    for s in found:
        lanes = hw.vector_bytes // element
        assert s.nr == min(2 * lanes, MAX_JAM) and s.mr * s.nr <= MAX_BLOCK
        assert s.mr * s.nr // lanes + s.nr // lanes + 1 <= hw.registers  # accumulators, operands, a broadcast
        assert s.tj % s.nr == 0 and s.tj * s.tr * element <= PACK_BYTES  # the packed column operand
    first = found[0]
    assert first.mr * first.tr * element <= hw.l1 // 2 and first.tj * first.tr * element <= hw.l2 // 2
    if hw.vector_bytes == 64 and element == 8:
        assert (first.mr, first.nr, first.tj, first.tr) == (8, 16, 160, 384)


@pytest.mark.parametrize("name", ["gemm", "2mm", "conv2d"])
def test_the_seeds_are_blocks_that_compute_what_the_program_computes(name):
    root = state(name)
    found = microkernel_seeds(root, TINY)
    assert found
    for schedule in found:
        steps = [s.kind for s in schedule.steps]
        products = sum(roles(root, cs.comp) is not None for cs in root.comps)
        assert steps.count("jam") == 2 * products and steps.count("parallelize") >= 1
        m = LocalRunner().measure([schedule.apply(root)], timing=Timing(1, 0), labels=[str(schedule)])[0]
        assert m.verified, (str(schedule), m.error)
    if name == "gemm":  # i-j-k under tiles of the three (40 rows: two tiles, one a core), the 4x8 block, packs
        text = str(found[0])
        assert text.startswith("F(S0,S1,0) T3(i_1,j_1,k,20,32,32) J(i_1,4) J(j_1,8) P(i_1_t)")
        assert "K(A," in text and "K(B," in text


def test_a_program_without_a_contraction_has_no_seed():
    assert microkernel_seeds(state("jacobi-2d"), TINY) == []
    p = ProgramBuilder("scale")
    X, Y = p.input("X", (16, 16)), p.output("Y", (16, 16))
    with p.loop("i", 0, 16) as i, p.loop("j", 0, 16) as j:
        Y[i, j] = 2.0 * X[i, j]
    assert microkernel_seeds(ProgramState.initial(p.build()), TINY) == []


def test_the_hardware_is_read_from_sys_and_proc(tmp_path):
    caches = tmp_path / "cache"
    for k, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                              (3, "Unified", "1M")]):
        d = caches / f"index{k}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: X\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq\n")
    hw = read_hardware(caches, cpuinfo)
    assert (hw.l1, hw.l2, hw.vector_bytes, hw.registers) == (48 << 10, 2 << 20, 64, 32)
    cpuinfo.write_text("flags\t\t: fpu sse2 avx avx2 fma\n")
    assert read_hardware(caches, cpuinfo).vector_bytes == 32
    missing = read_hardware(tmp_path / "none", tmp_path / "none")
    assert (missing.l1, missing.l2, missing.vector_bytes) == (Hardware().l1, Hardware().l2, Hardware().vector_bytes)
