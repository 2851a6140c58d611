"""Layout 8's domain block: triangular nests are told from rectangular ones of the same extents, and a network
of layout 7 fine-tunes on layout 8's vectors from where it was."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from loopcost.costmodel.model import CostModel, make_net
from loopcost.features import layout as L
from loopcost.features.domain import SAMPLES, _log2_fill, domain_shape
from loopcost.features.extract import featurize
from loopcost.ir.affine import Affine
from loopcost.ir.dsl import ProgramBuilder
from loopcost.ir.polyhedral import domain_str
from loopcost.ir.state import ProgramState
from loopcost.transforms.schedule import Schedule

WIDTH_7 = L.DOMAIN_AT  # a layout-7 vector is a layout-8 one less its domain block


def _trmm_like(n: int, triangular: bool):
    p = ProgramBuilder("tri" if triangular else "rect")
    A, B = p.input("A", (n, n)), p.output("B", (n, n))
    with p.loop("i", 0, n if triangular else n - 1) as i:  # the same bounding box: i < n - 1 where k runs
        with p.loop("j", 0, n) as j:
            with p.loop("k", i + 1 if triangular else 1, n) as k:
                B[i, j] += A[k, i] * B[k, j]
    return p.build()


def _domain(vec: np.ndarray, name: str) -> float:
    return float(vec[L.DOMAIN_AT + L.DOMAIN_INDEX[name]])


def _shape(program):
    ((c, loops),) = list(program.walk_computations())
    return domain_shape(c, loops, domain_str(c, loops))


def test_a_triangular_nest_differs_from_a_rectangular_one_only_in_its_domain_block():
    tri, rect = (featurize(ProgramState.initial(_trmm_like(1024, t))).comps[0] for t in (True, False))
    assert np.array_equal(tri[:L.NEST_AT], rect[:L.NEST_AT])  # layout 7's levels, accesses, operations: the same
    assert not rect[WIDTH_7:].any()
    assert _domain(tri, "log2_fill") == pytest.approx(-1.0, abs=0.06)  # half of the box, from the sample
    # levels i, j, k: k's bounds move with i, i bounds k, j is free of both
    assert [_domain(tri, f"varying_level{d}") for d in range(3)] == [0.0, 0.0, 1.0]
    assert [_domain(tri, f"bounding_level{d}") for d in range(3)] == [1.0, 0.0, 0.0]


def test_the_fill_of_a_small_domain_is_counted_exactly_and_a_large_one_sampled_the_same_every_time():
    small = _shape(_trmm_like(40, True))
    # 40 * (39 + 38 + ... + 0) points in a box of i in [0, 38], j in [0, 39], k in [1, 39]
    assert small.log2_fill == pytest.approx(math.log2(40 * 780 / (39 * 40 * 39)), abs=1e-9)
    assert small.varying == frozenset({2}) and small.bounding == frozenset({0})
    first = _shape(_trmm_like(4096, True))
    _log2_fill.cache_clear()  # drawn again, not read from the cache
    assert _shape(_trmm_like(4096, True)) == first
    assert abs(_shape(_trmm_like(4096, True)).log2_fill + 1) < 4 / math.sqrt(SAMPLES)
    assert _shape(_trmm_like(4096, False)).log2_fill == 0.0


def test_a_guard_over_two_iterators_marks_both_and_schedules_carry_the_flags_to_their_levels():
    p = ProgramBuilder("guarded")
    A, B = p.input("A", (600, 600)), p.output("B", (600, 600))
    with p.loop("i", 0, 600) as i:
        with p.loop("j", 0, 600) as j:
            B[i, j] = A[i, j] * 2.0
    plain = p.build()
    (outer,) = plain.body
    (inner,) = outer.body
    (comp,) = inner.body
    guarded = replace(comp, guards=(Affine((("i", 1), ("j", -1)), 0),))  # if (i >= j), as the C frontend reads it
    shape = _shape(replace(plain, body=(replace(outer, body=(replace(inner, body=(guarded,)),)),)))
    assert shape.varying == shape.bounding == frozenset({0, 1})
    assert shape.log2_fill == pytest.approx(math.log2(600 * 601 / 2 / 600 ** 2), abs=0.06)
    # tiled: the tile loops of k and i read the iterators their point loops read
    tri = _trmm_like(1024, True)
    state = Schedule.parse("T2(i,j,32,32)").apply(tri)
    vec = featurize(state).comps[0]
    flags = [(_domain(vec, f"varying_level{d}"), _domain(vec, f"bounding_level{d}")) for d in range(5)]
    assert flags == [(0.0, 1.0), (0.0, 0.0), (0.0, 1.0), (0.0, 0.0), (1.0, 0.0)]  # i_t, j_t, i, j, k


@pytest.mark.parametrize("arch", ["lstm", "transformer"])
def test_a_network_of_layout_7_widened_predicts_as_before_and_saves_its_new_width(arch, tmp_path):
    torch.manual_seed(0)
    old = make_net(arch, comp_size=WIDTH_7, dropout=0.0).eval()
    first = old.comp_embed[0].weight.detach().clone()
    states = [ProgramState.initial(_trmm_like(512, t)) for t in (True, False)]
    states.append(Schedule.parse("T2(i,j,32,32)").apply(_trmm_like(512, True)))
    trees = [featurize(s) for s in states]
    before = CostModel(old).predict_trees(trees)
    comps = torch.from_numpy(np.concatenate([t.comps for t in trees]))
    old.widen(comps)
    assert old.config["comp_size"] == L.COMP_SIZE and old.comp_shift.shape == old.comp_scale.shape == (L.COMP_SIZE,)
    weight = old.comp_embed[0].weight
    assert torch.equal(weight[:, :WIDTH_7], first) and not weight[:, WIDTH_7:].any()
    assert np.allclose(CostModel(old).predict_trees(trees), before, rtol=1e-5)
    # the fill varies among these vectors: standardized (the triangle and the box apart), not dropped
    fill = L.DOMAIN_AT + L.DOMAIN_INDEX["log2_fill"]
    seen = old.standardized_comps(comps)[:, fill]
    assert old.comp_scale[fill] > 0 and seen[0] != seen[1] and seen[0] == seen[2]
    CostModel(old).save(tmp_path / "w.pt")
    again = CostModel.load(tmp_path / "w.pt")
    assert again.nets[0].config["comp_size"] == L.COMP_SIZE
    assert np.allclose(again.predict_trees(trees), before, rtol=1e-5)
