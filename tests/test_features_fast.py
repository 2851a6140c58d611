"""Fast featurizing gives exactly isl's features.

Levels read from their text (``loopcost.ir.quasi``) against isl's reading of the same text, and
features computed along chains of schedules with warm caches against the same states featurized from
scratch with isl alone.
"""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopcost.features import extract
from loopcost.features.extract import FeatureLimitError, featurize
from loopcost.generator.programs import generate_programs
from loopcost.ir import quasi
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.transforms.space import random_step

NAMES = ("i", "j", "k")


def _features(state: ProgramState) -> tuple:
    try:
        t = featurize(state)
    except FeatureLimitError as e:
        return ("limit", str(e))
    return t.comps.dtype, t.comps.tolist(), t.loops.dtype, t.loops.shape, t.loops.tolist(), t.shape


def _chains(program, n_chains: int, seed: int) -> list[ProgramState]:
    """Every state along ``n_chains`` random walks of up to 6 legal steps, parents before children."""
    rng = random.Random(seed)
    out = []
    for _ in range(n_chains):
        state = ProgramState.initial(program)
        out.append(state)
        for _ in range(rng.randint(1, 6)):
            step = random_step(state, rng)
            if step is None:
                break
            state = step.state
            out.append(state)
    return out


@pytest.mark.parametrize("program", [KERNELS[k].program(size) for k, size in (
    ("gemm", "bench"), ("2mm", "small"), ("jacobi-2d", "bench"), ("heat-3d", "small"), ("conv2d", "bench"),
    ("trmm", "small"), ("seidel-2d", "small"))] + generate_programs(4, 3), ids=lambda p: p.name)
def test_features_along_chains_equal_features_from_scratch_with_isl(program, monkeypatch):
    states = _chains(program, 12, seed=len(program.name))
    extract.clear_caches()
    incremental = [_features(s) for s in states]  # each child featurized after its parent: caches warm
    again = [_features(s) for s in states]
    extract.clear_caches()
    with monkeypatch.context() as m:
        m.setattr(extract, "_level_without_isl", lambda comp, expr: None)
        from_isl = [_features(s) for s in states]
        extract._scheduled.cache_clear()
        extract._vector.cache_clear()
    assert incremental == again == from_isl


def test_a_tree_owns_its_arrays():
    p = KERNELS["gemm"].program("small")
    state = ProgramState.initial(p)
    first = featurize(state)
    first.comps[:] = 7
    first.loops[:] = 7
    assert not np.any(featurize(state).comps == 7)


def _level_texts(inner):
    """Texts the transformations write around existing levels: skew, reversal, tiling, interchange."""
    return st.one_of(
        st.builds(lambda a, b, f: f"({a}) + {f} * ({b})", inner, inner, st.integers(1, 3)),
        st.builds(lambda a: f"-({a})", inner),
        st.builds(lambda a, s: f"floor(({a})/{s})", inner, st.sampled_from([2, 3, 8, 16, 32, 128])),
        st.builds(lambda a: f"(({a}))", inner))


@settings(max_examples=300, deadline=None)
@given(text=st.recursive(st.sampled_from(NAMES), _level_texts, max_leaves=5),
       box=st.lists(st.tuples(st.integers(-4, 4), st.integers(1, 300)), min_size=3, max_size=3))
def test_a_level_read_from_its_text_is_what_isl_reads(text, box):
    bounds = tuple((lo, lo + n - 1) for lo, n in box)
    cons = " and ".join(f"{lo} <= {x} <= {hi}" for x, (lo, hi) in zip(NAMES, bounds, strict=True))
    domain = "{ S[i, j, k] : " + cons + " }"
    q = quasi.parse(text, {x: k for k, x in enumerate(NAMES)})
    assert q is not None, "the transformations' texts are inside the grammar"
    extent, coef = quasi.extent(q, bounds), quasi.coefficients(q)
    isl_extent, isl_coef = extract._level(domain, text, len(NAMES))
    if extent is not None:
        assert extent == isl_extent
    if coef is not None:
        assert coef == isl_coef


@pytest.mark.parametrize("text", ["i", "((j))", "(i) + 2 * (floor((j)/32))", "floor((floor((k)/32))/4)",
                                  "-((floor((i)/16)) + 1 * (j))", "floor(((j) + 1 * (floor((i)/32)))/32)"])
def test_the_transformations_usual_levels_are_read_without_isl(text):
    q = quasi.parse(text, {x: k for k, x in enumerate(NAMES)})
    bounds = ((0, 99), (0, 199), (0, 49))
    assert q is not None and quasi.extent(q, bounds) is not None and quasi.coefficients(q) is not None
    domain = "{ S[i, j, k] : 0 <= i <= 99 and 0 <= j <= 199 and 0 <= k <= 49 }"
    assert (quasi.extent(q, bounds), quasi.coefficients(q)) == extract._level(domain, text, 3)


@pytest.mark.parametrize("text", ["i * 2", "floor(i/j)", "floor(i/0)", "m", "(i", "i j"])
def test_text_outside_the_grammar_is_left_to_isl(text):
    assert quasi.parse(text, {x: k for k, x in enumerate(NAMES)}) is None


@pytest.mark.parametrize("text, refused", [("(i) + 1 * (-(floor((i)/8)))", "extent"),  # not monotone
                                           ("floor((i)/3)", "coefficients"),  # a float sum isl may order
                                           ("floor((-(floor((j)/128)))/8)", "coefficients")])  # isl keeps it nested
def test_levels_only_isl_can_read_are_refused(text, refused):
    q = quasi.parse(text, {x: k for k, x in enumerate(NAMES)})
    bounds = ((0, 99), (0, 199), (0, 49))
    assert q is not None
    assert (quasi.extent(q, bounds) if refused == "extent" else quasi.coefficients(q)) is None
