import json

import pytest

from loopcost.errors import NotAffineError, OutOfBoundsError, ProgramError
from loopcost.ir.affine import Affine
from loopcost.ir.dependence import dependences
from loopcost.ir.dsl import ProgramBuilder
from loopcost.ir.program import Program
from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS

from .programs import chain, matvec


def test_affine_arithmetic_normalizes():
    i, j = Affine.var("i"), Affine.var("j")
    e = 2 * i + j - i + 3 - j
    assert e == Affine.var("i") + 3
    assert (i - i).terms == ()
    assert (3 * (i + 1)).to_c() == "3 * i + 3"
    assert (-i - 2).to_c() == "-i - 2"
    assert (j - 2 * i).to_c({"i": "c1", "j": "c3 + 1"}) == "-2 * c1 + (c3 + 1)"


def test_product_of_iterators_is_refused():
    i, j = Affine.var("i"), Affine.var("j")
    with pytest.raises(NotAffineError, match="affine"):
        _ = i * j
    with pytest.raises(NotAffineError):
        Affine.of(1.5)


def test_dsl_builds_tree_and_renames_repeated_loops():
    p = chain()
    assert [lp.name for lp in p.loops()] == ["i", "i_1", "j"]
    assert [c.name for c in p.computations()] == ["S0", "S1"]
    assert [lp.name for lp in p.enclosing_loops("S1")] == ["i_1", "j"]


def test_plus_equals_is_a_reduction():
    c = matvec().computation("S1")
    assert c.reduction == "+"
    assert [r.buffer for r in c.reads()] == ["y", "A", "x"]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_json_round_trip_and_stable_hash(name):
    p = KERNELS[name].program("small")
    q = Program.from_json(json.loads(json.dumps(p.to_json())))
    assert q == p
    assert q.content_hash() == p.content_hash()


def test_hash_ignores_name_but_not_content():
    a, b = matvec(), matvec()
    assert a.content_hash() == b.content_hash()
    renamed = Program("other", a.buffers, a.body)
    assert renamed.content_hash() == a.content_hash()
    assert matvec(n=13).content_hash() != a.content_hash()


def test_out_of_bounds_access_is_detected_with_a_witness():
    p = ProgramBuilder("oob")
    A, B = p.input("A", (10,)), p.output("B", (10,))
    with p.loop("i", 0, 10) as i:
        B[i] = A[i + 1]
    with pytest.raises(OutOfBoundsError, match=r"A\[10\]"):
        p.build()


def test_triangular_bounds_are_exact():
    # j <= i < 8 touches only the lower triangle: in bounds of an 8x8 buffer; one step past it is not.
    def tri(past):
        p = ProgramBuilder("tri")
        A, B = p.input("A", (8, 8)), p.output("B", (8, 8))
        with p.loop("i", 0, 8) as i:
            with p.loop("j", 0, i + 1 + past) as j:
                B[i, j] = A[j, i]
        return p.build()

    assert [c.name for c in tri(0).computations()] == ["S0"]
    with pytest.raises(OutOfBoundsError, match=r"B\[7, 8\]"):
        tri(1)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["buffers"][0].update(dtype="complex"), "dtype"),
    (lambda d: d["body"][0]["body"][0]["rhs"]["args"][0].update(read="Nope"), "unknown buffer 'Nope'"),
    (lambda d: d["buffers"][0].update(shape=[0]), "shape"),
    (lambda d: d["body"][0]["body"][0]["target"].update(read="A"), "declared an input"),
    (lambda d: d["body"][0].update(lower={"terms": {"q": 1}, "const": 0}), "iterator 'q'"),
    (lambda d: d.pop("buffers"), "malformed"),
])
def test_bad_json_programs_get_clear_errors(mutate, message):
    d = chain().to_json()
    mutate(d)
    with pytest.raises(ProgramError, match=message):
        Program.from_json(d)


def test_wrong_index_arity_is_refused():
    p = ProgramBuilder("arity")
    A, B = p.input("A", (4, 4)), p.output("B", (4,))
    with p.loop("i", 0, 4) as i:
        B[i] = A[i]
    with pytest.raises(ProgramError, match="2 dimension"):
        p.build()


def test_original_schedule_is_2d_plus_1():
    st = ProgramState.initial(chain())
    assert st.depth == 2
    s0, s1 = st.comps
    assert (s0.betas, s0.loops) == ((0, 0, 0), ("i", None))
    assert (s1.betas, s1.loops) == ((1, 0, 0), ("i_1", "j"))
    assert s1.time_map().is_equal(type(s1.time_map())("{ S1[i_1, j] -> [1, i_1, 0, j, 0] }"))
    assert st.loop_names() == ["i", "i_1", "j"]


def test_dependences_are_exact_and_named():
    deps = {(d.kind, d.buffer): d for d in dependences(chain(n=4))}
    assert set(deps) == {("raw", "T")}
    # S1[i, j] reads T[i+1] and T[j], written by S0[i+1] and S0[j].
    rel = deps["raw", "T"].relation
    assert rel.is_equal(type(rel)("{ S0[a] -> S1[i_1, j] : 0 <= j <= i_1 < 4 and (a = i_1 + 1 or a = j) }"))
    assert deps["raw", "T"].describe() == "RAW on T (S0->S1)"
    mv = {(d.kind, d.buffer): d.relation for d in dependences(matvec(n=3, m=2))}
    assert set(mv) == {("raw", "y"), ("war", "y"), ("waw", "y")}
    # the reduction carries a flow dependence along j
    assert not mv["raw", "y"].intersect(type(rel)("{ S1[i, j] -> S1[i, j + 1] }")).is_empty()


@pytest.mark.parametrize("name", ["c3", "lc_x", "exp", "int", "main"])
def test_names_that_generated_c_uses_are_refused(name):
    p = ProgramBuilder("names")
    A = p.input(name, (4,))
    B = p.output("B", (4,))
    with p.loop("i", 0, 4) as i:
        B[i] = A[i]
    with pytest.raises(ProgramError, match="reserved"):
        p.build()


def ramp(n: int = 24) -> Program:
    """``B[i, j] = A[i, j] * (i - j) + j``: loop iterators read as numbers."""
    p = ProgramBuilder("ramp")
    A, B = p.input("A", (n, n)), p.output("B", (n, n))
    with p.loop("i", 0, n) as i, p.loop("j", 0, n) as j:
        B[i, j] = A[i, j] * (i - j) + j
    return p.build()


def test_iterator_values_round_trip_are_scoped_and_run_under_any_schedule():
    from loopcost.codegen.c_source import kernel_c
    from loopcost.features.extract import featurize, program_part
    from loopcost.features.layout import COMP_FIELDS
    from loopcost.ir.expr import IterValue
    from loopcost.transforms.schedule import Schedule

    from .programs import measure_one

    p = ramp()
    assert Program.from_json(json.loads(json.dumps(p.to_json()))) == p
    assert "((A[i][j] * (i - j)) + (j))" in kernel_c(ProgramState.initial(p)).replace("c1", "i").replace("c3", "j")
    (comp,) = p.computations()
    with pytest.raises(ProgramError, match="iterator 'k' is not an enclosing loop"):
        Program("bad", p.buffers, (replace_rhs(p.body[0], comp.rhs + IterValue(Affine.var("k"))),))
    assert program_part(p)["S0"][1][COMP_FIELDS.index("n_consts")] == 2  # (i - j) and j: no memory brings them
    featurize(ProgramState.initial(p))
    for schedule in ("I(i,j)", "T2(i,j,8,8) V(j,4)", "S(i,j,1) P(i)"):
        m = measure_one(Schedule.parse(schedule).apply(p))
        assert m.verified, (schedule, m.error)


def replace_rhs(loop, rhs):
    """``loop`` (two loops around one computation) with the computation's right-hand side ``rhs``."""
    from dataclasses import replace

    inner = loop.body[0]
    return replace(loop, body=(replace(inner, body=(replace(inner.body[0], rhs=rhs),)),))
