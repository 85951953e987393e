"""The result types as Python sees them: their checked constructors (each kind of field, the
binding of the arguments, the order of the errors), repr, to_dict, pickling, docstrings.

The types are made in Rust (rust/py/results.rs); what a user calls on them from Python is
rankfusion/_results.py. These tests pin the behaviour of both together (tests/test_results.py
has the memory handling and the types' likeness to the reference's).
"""

from __future__ import annotations

import copy
import decimal
import fractions
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

import rankfusion as rf
from rankfusion import FusionError, FusionTypeError

C = rf.Contribution(0, 1, 1.0, 0.5)
I2 = np.zeros((2, 3), np.int64)
F2 = np.zeros((2, 3))
I1 = np.zeros(2, np.int64)

FIELDS = {
    rf.Contribution: ("list_index", "rank", "weight", "contribution", "score", "normalized"),
    rf.Hit: ("key", "score", "contributions", "factor", "divisor", "boost"),
    rf.Revalidated: ("id", "record", "score"),
    rf.BatchResult: ("ids", "scores", "counts", "ranks", "contributions", "normalized"),
    rf.RevalidatedBatch: ("ids", "scores", "counts"),
}
# Every field given, and how many of them are the tuple.
FULL = {
    rf.Contribution: ((0, 1, 1.0, 0.5, 2.0, 0.25), 5),
    rf.Hit: (("k", 1.0, (C,), 2.0, 3.0, 4.0), 2),
    rf.Revalidated: ((1, {"t": 1}, 0.5), 3),
    rf.BatchResult: (
        (I2, F2, I1, np.zeros((2, 3, 1), np.int32), np.zeros((2, 3, 1)), np.zeros((2, 3, 1))),
        3,
    ),
    rf.RevalidatedBatch: ((I2, F2, I1), 3),
}


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


class Index:
    def __index__(self):
        return 5


class FloatSub(float):
    pass


class IntSub(int):
    pass


class TupleSub(tuple):
    pass


def raised(f, *args, **kwargs):
    """The exception of ``f(*args, **kwargs)``."""
    with pytest.raises(Exception) as e:
        f(*args, **kwargs)
    return e.value


@pytest.mark.parametrize("cls", list(FIELDS), ids=lambda c: c.__name__)
def test_fields_are_the_getters_in_order_and_the_first_ones_the_tuple(cls):
    getters = [k for k, v in vars(cls).items() if isinstance(v, types.GetSetDescriptorType)]
    assert tuple(getters) == FIELDS[cls]
    values, visible = FULL[cls]
    made = cls(*values)
    assert len(made) == visible and type(made) is cls and isinstance(made, tuple)
    assert all(getattr(made, f) is made[i] for i, f in enumerate(FIELDS[cls][:visible]))
    by_name = cls(**dict(zip(FIELDS[cls], values)))
    assert [getattr(by_name, f) for f in FIELDS[cls]] == [getattr(made, f) for f in FIELDS[cls]]


@pytest.mark.parametrize(
    "value, expected",
    [
        (1.5, 1.5),
        (3, 3.0),
        (IntSub(4), 4.0),
        (FloatSub(2.5), 2.5),
        (np.float32(0.1), float(np.float32(0.1))),
        (np.float64(2.5), 2.5),
        (np.int64(7), 7.0),
        (np.int8(-3), -3.0),
        (fractions.Fraction(1, 4), 0.25),
        (float("inf"), float("inf")),
    ],
)
def test_a_real_field_is_any_real_number_stored_as_a_float(value, expected):
    for made, field in (
        (rf.Hit("k", value), "score"),
        (rf.Hit("k", 1.0, factor=value), "factor"),
        (rf.Contribution(0, 1, value, 1.0, value, value), "normalized"),
        (rf.Revalidated(1, "r", value), "score"),
    ):
        got = getattr(made, field)
        assert type(got) is float and got == expected
    assert str(rf.Hit("k", -0.0).score) == "-0.0"
    nan = rf.Hit("k", np.float64("nan")).score
    assert type(nan) is float and nan != nan


@pytest.mark.parametrize(
    "value, shown",
    [
        (True, "bool True"),
        (np.bool_(True), "bool np.True_"),
        (decimal.Decimal("1.5"), "Decimal Decimal('1.5')"),
        (complex(1, 0), "complex (1+0j)"),
        ("1.0", "str '1.0'"),
        ([1.0], "list [1.0]"),
        (BadRepr(), "BadRepr <unrepresentable>"),
    ],
)
def test_a_real_field_refuses_bools_and_non_reals(value, shown):
    e = raised(rf.Hit, "k", 1.0, divisor=value)
    assert type(e) is FusionTypeError and e.argument == "Hit.divisor"
    assert str(e) == f"Hit.divisor must be a real number, got {shown}"
    e = raised(rf.Contribution, 0, 1, 1.0, value)
    assert str(e) == f"Contribution.contribution must be a real number, got {shown}"
    # None is "not given" only where the field is optional
    e = raised(rf.Revalidated, 1, "r", None)
    assert type(e) is FusionTypeError
    assert str(e) == "Revalidated.score must be a real number, got NoneType None"


def test_a_real_that_overflows_a_float_is_a_value_error():
    for value in (10**400, -(10**400), fractions.Fraction(10**400)):
        e = raised(rf.Hit, "k", value)
        assert type(e) is FusionError and e.argument == "Hit.score"
        assert str(e) == f"Hit.score must be finite, got {value!r}"


def test_a_real_whose_conversion_fails_raises_its_own_error():
    class Unconvertible(float):
        def __float__(self):
            raise RuntimeError("no float")

    with pytest.raises(RuntimeError, match="no float"):
        rf.Hit("k", Unconvertible(1.0))


def test_a_count_field_is_an_int_at_least_0_kept_as_given():
    for value in (0, 7, 10**30, IntSub(3), np.int64(2), np.uint64(2**64 - 1), Index()):
        c = rf.Contribution(value, value, 1.0, 1.0)
        assert c.list_index is value and c.rank is value
    for value, shown in [(-1, "-1"), (-(10**30), str(-(10**30))), (np.int32(-1), "-1")]:
        e = raised(rf.Contribution, value, 0, 1.0, 1.0)
        assert type(e) is FusionError and e.argument == "Contribution.list_index"
        assert str(e) == f"Contribution.list_index must be >= 0, got {shown}"
    for value, shown in [
        (True, "bool True"),
        (np.bool_(False), "bool np.False_"),
        (1.0, "float 1.0"),
        ("1", "str '1'"),
        (None, "NoneType None"),
        (BadRepr(), "BadRepr <unrepresentable>"),
    ]:
        e = raised(rf.Contribution, 0, value, 1.0, 1.0)
        assert type(e) is FusionTypeError and e.argument == "Contribution.rank"
        assert str(e) == f"Contribution.rank must be an int, got {shown}"

    class BadIndex:
        def __index__(self):
            raise RuntimeError("bad index")

    with pytest.raises(RuntimeError, match="bad index"):
        rf.Contribution(BadIndex(), 0, 1.0, 1.0)


def test_a_hashable_field_refuses_unhashable_values_and_an_any_field_takes_all():
    for key in ("a", 1, (1, 2), None, b"x", frozenset([1]), np.int64(3)):
        assert rf.Hit(key, 1.0).key is key and rf.Revalidated(key, [1], 0.0).id is key
    for key, shown in [([1], "list [1]"), ({1: 2}, "dict {1: 2}")]:
        e = raised(rf.Hit, key, 1.0)
        assert type(e) is TypeError and str(e) == f"Hit.key must be hashable, got {shown}"
        e = raised(rf.Revalidated, key, None, 1.0)
        assert type(e) is TypeError and str(e) == f"Revalidated.id must be hashable, got {shown}"
        assert rf.Revalidated(1, key, 1.0).record is key


def test_contributions_are_an_iterable_of_contributions_stored_as_a_tuple():
    given = (C, C)
    assert rf.Hit("k", 1.0, given).contributions is given
    for value in ([C], TupleSub((C,)), iter([C]), (c for c in [C]), {C: 1}):
        got = rf.Hit("k", 1.0, value).contributions
        assert type(got) is tuple and got == (C,)
    assert rf.Hit("k", 1.0, ()).contributions == ()
    for value, words in [
        ("ab", "must be a non-string iterable, got str 'ab'"),
        (b"ab", "must be a non-string iterable, got bytes b'ab'"),
        (bytearray(b"a"), "must be a non-string iterable, got bytearray bytearray(b'a')"),
        (5, "must be iterable, got int 5"),
    ]:
        e = raised(rf.Hit, "k", 1.0, value)
        assert type(e) is FusionTypeError and e.argument == "Hit.contributions"
        assert str(e) == f"Hit.contributions {words}"
    for value, words in [
        ((1,), "[0] must be a Contribution, got int 1"),
        ([C, "x"], "[1] must be a Contribution, got str 'x'"),
        ((BadRepr(),), "[0] must be a Contribution, got BadRepr <unrepresentable>"),
        (rf.Hit("a", 1.0), "[0] must be a Contribution, got str 'a'"),
    ]:
        e = raised(rf.Hit, "k", 1.0, value)
        assert type(e) is TypeError and str(e) == f"Hit.contributions{words}"

    def halfway():
        yield C
        raise RuntimeError("halfway")

    with pytest.raises(RuntimeError, match="halfway"):
        rf.Hit("k", 1.0, halfway())


def test_an_array_field_is_a_numpy_array_of_its_dtype_and_ndim():
    class Fake:
        def __init__(self, ndim):
            self.dtype, self.ndim = "int64", ndim

    made = rf.BatchResult(I2, F2, I1)
    assert made.ids is I2 and made.scores is F2 and made.counts is I1 and made.ranks is None
    for values, words in [
        ((F2, F2, I1), "BatchResult.ids must be a 2-D int64 numpy array, got ndarray"),
        ((I2, I2, I1), "BatchResult.scores must be a 2-D float64 numpy array, got ndarray"),
        ((I2, F2, I2), "BatchResult.counts must be a 1-D int64 numpy array, got ndarray"),
        ((I2, F2, I1, F2), "BatchResult.ranks must be a 3-D int32 numpy array, got ndarray"),
        (([[1]], F2, I1), "BatchResult.ids must be a 2-D int64 numpy array, got list [[1]]"),
        ((np.ma.zeros((2, 3), np.int64), F2, I1), "must be a 2-D int64 numpy array, got Masked"),
        ((Fake(2), F2, I1), "BatchResult.ids must be a 2-D int64 numpy array, got Fake <"),
    ]:
        e = raised(rf.BatchResult, *values)
        assert type(e) is TypeError and words in str(e)
    e = raised(rf.RevalidatedBatch, 1, 2, 3)
    assert str(e) == "RevalidatedBatch.ids must be a 2-D int64 numpy array, got int 1"
    # an ndim that is not the field's is refused as well
    for ndim in ["x", -1]:
        e = raised(rf.BatchResult, Fake(ndim), F2, I1)
        assert type(e) is TypeError and "BatchResult.ids must be a 2-D int64" in str(e)


@pytest.mark.parametrize("cls", [rf.BatchResult, rf.RevalidatedBatch], ids=lambda c: c.__name__)
def test_a_batch_result_checks_its_shapes(cls):
    def arrays(q, w, scores_w=None, counts_q=None):
        return (
            np.zeros((q, w), np.int64),
            np.zeros((q, w if scores_w is None else scores_w)),
            np.zeros(q if counts_q is None else counts_q, np.int64),
        )

    for q, w in [(2, 3), (0, 3), (2, 0)]:
        assert len(cls(*arrays(q, w))) == 3
    for bad, shown in [
        (arrays(2, 3, scores_w=4), "[2, 3], [2, 4] and [2]"),
        (arrays(2, 3, counts_q=3), "[2, 3], [2, 3] and [3]"),
    ]:
        e = raised(cls, *bad)
        assert type(e) is ValueError
        assert str(e) == (
            f"ids, scores and counts must have shapes (Q, W), (Q, W) and (Q,), got {shown}"
        )


def test_a_batch_results_traces_have_its_q_and_w():
    base = (I2, F2, I1)
    ok = rf.BatchResult(*base, np.zeros((2, 3, 0), np.int32), normalized=np.zeros((2, 3, 5)))
    assert ok.ranks.shape == (2, 3, 0) and ok.contributions is None
    for shape in [(2, 4, 1), (3, 3, 1)]:
        e = raised(rf.BatchResult, *base, normalized=np.zeros(shape))
        assert type(e) is ValueError
        assert str(e) == "normalized must have shape (Q, W, L) with (Q, W) = [2, 3]"
    # the first that is wrong is named
    e = raised(
        rf.BatchResult,
        *base,
        np.zeros((2, 3, 1), np.int32),
        np.zeros((2, 4, 1)),
        np.zeros((9, 9, 1)),
    )
    assert str(e) == "contributions must have shape (Q, W, L) with (Q, W) = [2, 3]"
    # the arrays' kinds are checked before their shapes
    e = raised(rf.BatchResult, I2, np.zeros((2, 4)), I1, F2)
    assert type(e) is TypeError and "BatchResult.ranks must be a 3-D int32" in str(e)


@pytest.mark.parametrize("cls", list(FIELDS), ids=lambda c: c.__name__)
def test_arguments_are_bound_as_by_a_signature(cls):
    name = cls.__name__
    values, _ = FULL[cls]
    fields = FIELDS[cls]
    n = len(fields)
    e = raised(cls, *values, 7)
    assert (
        type(e) is TypeError and str(e) == f"{name}() takes at most {n} arguments ({n + 1} given)"
    )
    e = raised(cls, *values, 7, 8, colour=1)
    assert str(e) == f"{name}() takes at most {n} arguments ({n + 2} given)"
    e = raised(cls)
    assert type(e) is TypeError and str(e) == f"{name}() missing required argument '{fields[0]}'"
    e = raised(cls, values[0])
    assert str(e) == f"{name}() missing required argument '{fields[1]}'"
    e = raised(cls, *values, **{fields[0]: values[0]})
    assert type(e) is TypeError
    assert str(e) == f"{name}() got multiple values for argument '{fields[0]}'"
    e = raised(cls, *values, **{fields[-1]: values[-1]})
    assert str(e) == f"{name}() got multiple values for argument '{fields[-1]}'"
    for keyword in ("colour", "cls", "self", "é"):
        e = raised(cls, *values, **{keyword: 1})
        assert type(e) is TypeError
        assert str(e) == f"{name}() got an unexpected keyword argument '{keyword}'"
    e = raised(cls, *values, size=1, colour=2)
    assert str(e) == f"{name}() got an unexpected keyword argument 'size'"
    # __new__ called directly: its first argument (the class) is not a field
    assert cls.__new__(cls, *values) == cls(*values)
    e = raised(cls.__new__)
    assert str(e) == f"{name}() missing required argument '{fields[0]}'"


def test_errors_come_field_by_field_then_the_unknown_keywords():
    # a field's error comes before a later field's absence, or an unknown keyword
    e = raised(rf.Hit, [])
    assert str(e) == "Hit.key must be hashable, got list []"
    e = raised(rf.Hit, "k", "x", colour=1)
    assert str(e) == "Hit.score must be a real number, got str 'x'"
    # an absent field comes before an unknown keyword
    e = raised(rf.Hit, "k", colour=1)
    assert str(e) == "Hit() missing required argument 'score'"
    e = raised(rf.Hit, zz=1, key="k")
    assert str(e) == "Hit() missing required argument 'score'"
    # too many arguments come first of all
    e = raised(rf.Hit, [], 1.0, None, None, None, None, None)
    assert str(e) == "Hit() takes at most 6 arguments (7 given)"
    # a repeated field is found in field order, after the checks of the fields before it
    e = raised(rf.Hit, "k", "x", score=1.0)
    assert str(e) == "Hit() got multiple values for argument 'score'"
    e = raised(rf.Hit, [], 1.0, score=1.0)
    assert str(e) == "Hit.key must be hashable, got list []"
    # a keyword that cannot be a str of Rust is refused as such
    with pytest.raises(UnicodeEncodeError):
        rf.Hit("k", 1.0, **{"\udc80": 1})


def test_optional_fields_are_none_when_not_given_or_given_none():
    hit = rf.Hit("k", 1.0, None, None, boost=None)
    assert (hit.contributions, hit.factor, hit.divisor, hit.boost) == (None,) * 4
    c = rf.Contribution(0, 1, 1.0, 1.0)
    assert tuple(c) == (0, 1, 1.0, 1.0, None) and c.normalized is None
    r = rf.BatchResult(I2, F2, I1, None, None, None)
    assert (r.ranks, r.contributions, r.normalized) == (None, None, None)


def test_repr_names_the_tuple_and_the_fields_that_are_set():
    assert repr(rf.Hit("a", 1)) == "Hit(key='a', score=1.0)"
    assert (
        repr(rf.Hit("a", 1.0, (), boost=0.5))
        == "Hit(key='a', score=1.0, contributions=(), boost=0.5)"
    )
    assert repr(rf.Hit(None, 1.0, factor=2)) == "Hit(key=None, score=1.0, factor=2.0)"
    c = "Contribution(list_index=0, rank=1, weight=1.0, contribution=0.5, score=None)"
    assert repr(C) == c
    assert repr(rf.Hit("a", 0.5, [C], 1, 2, 3)) == (
        f"Hit(key='a', score=0.5, contributions=({c},), factor=1.0, divisor=2.0, boost=3.0)"
    )
    assert repr(rf.Contribution(1, 0, 2, 3, 4, 5)) == (
        "Contribution(list_index=1, rank=0, weight=2.0, contribution=3.0, score=4.0, "
        "normalized=5.0)"
    )
    assert repr(rf.Revalidated(1, None, 0.5)) == "Revalidated(id=1, record=None, score=0.5)"
    ids = np.array([[1, 2]])
    r = rf.RevalidatedBatch(ids, np.array([[0.5, np.nan]]), np.array([1]))
    assert repr(r) == (
        "RevalidatedBatch(ids=array([[1, 2]]), scores=array([[0.5, nan]]), counts=array([1]))"
    )
    b = rf.BatchResult(ids, np.array([[0.5, 0.25]]), np.array([2]), np.ones((1, 2, 1), np.int32))
    assert repr(b) == (
        "BatchResult(ids=array([[1, 2]]), scores=array([[0.5 , 0.25]]), counts=array([2]), "
        "ranks=array([[[1],\n        [1]]], dtype=int32))"
    )
    assert str(rf.Hit("a", 1.0)) == "Hit(key='a', score=1.0)"
    with pytest.raises(RuntimeError, match="no repr"):
        repr(rf.Hit(BadRepr(), 1.0))


def test_to_dict_is_plain_data_without_the_fields_not_set():
    assert rf.Hit("a", 1).to_dict() == {"key": "a", "score": 1.0}
    c2 = rf.Contribution(1, 0, 2, 3, None, 5)
    d = rf.Hit("a", 0.5, [C, c2], 1, None, 3).to_dict()
    assert d == {
        "key": "a",
        "score": 0.5,
        "contributions": [
            {"list_index": 0, "rank": 1, "weight": 1.0, "contribution": 0.5},
            {"list_index": 1, "rank": 0, "weight": 2.0, "contribution": 3.0, "normalized": 5.0},
        ],
        "factor": 1.0,
        "boost": 3.0,
    }
    assert list(d) == ["key", "score", "contributions", "factor", "boost"]
    assert type(d["contributions"]) is list
    assert rf.Hit("a", 1.0, ()).to_dict() == {"key": "a", "score": 1.0, "contributions": []}
    record = {"t": 1}
    r = rf.Revalidated(1, record, 0.5).to_dict()
    assert r == {"id": 1, "record": record, "score": 0.5} and r["record"] is record
    assert rf.Revalidated(1, None, 0.5).to_dict() == {"id": 1, "record": None, "score": 0.5}
    # batch results hold arrays: no to_dict
    assert not hasattr(rf.BatchResult, "to_dict") and not hasattr(rf.RevalidatedBatch, "to_dict")
    (hit,) = rf.rrf([["a"]], scores=[[2.0]], trace=True)
    assert hit.to_dict()["contributions"] == [
        {"list_index": 0, "rank": 1, "weight": 1.0, "contribution": 1 / 61, "score": 2.0}
    ]


@pytest.mark.parametrize("cls", list(FIELDS), ids=lambda c: c.__name__)
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_type_pickles_through_its_constructor(cls, protocol):
    values, _ = FULL[cls]
    required = {rf.Contribution: 4, rf.Hit: 2}.get(cls, 3)
    for made in (cls(*values), cls(*values[:required])):
        reduced = made.__reduce__()
        assert reduced[0] is cls and type(reduced[1]) is tuple and len(reduced[1]) == len(values)
        again = pickle.loads(pickle.dumps(made, protocol))
        assert type(again) is cls
        for field in FIELDS[cls]:
            a, b = getattr(again, field), getattr(made, field)
            assert type(a) is type(b)
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b) and a.dtype == b.dtype
            else:
                assert a == b
        for copied in (copy.copy(made), copy.deepcopy(made)):
            assert type(copied) is cls and repr(copied) == repr(made)


def test_pickled_results_of_the_functions_come_back_equal():
    hits = rf.fuse([["a", "b"], ["b", "c"]], method="mnz", scores=[[3, 2], [1, 0.5]], trace=True)
    assert any(h.factor is not None for h in hits)
    again = pickle.loads(pickle.dumps(hits))
    assert again == hits and [repr(h) for h in again] == [repr(h) for h in hits]
    assert all(type(c) is rf.Contribution for h in again for c in h.contributions)
    assert [h.to_dict() for h in again] == [h.to_dict() for h in hits]
    assert hits[0].__reduce__() == (rf.Hit, (*hits[0], hits[0].contributions, 2.0, None, None))
    lives = rf.revalidate([("a", 0.5), (2, 0.25)], {"a": {"t": 1}, 2: [1, 2]})
    assert pickle.loads(pickle.dumps(lives)) == lives


class Forged:
    """Pickles as a call of the constructor with bad fields."""

    def __init__(self, cls, fields):
        self.cls, self.fields = cls, fields

    def __reduce__(self):
        return (self.cls, self.fields)


def test_a_pickle_checks_its_fields_as_it_loads():
    assert pickle.loads(pickle.dumps(Forged(rf.Hit, ("b", 2)))) == ("b", 2.0)
    with pytest.raises(TypeError, match="Hit.key must be hashable, got list"):
        pickle.loads(pickle.dumps(Forged(rf.Hit, ([1], 1.0))))
    with pytest.raises(FusionError, match="Contribution.rank must be >= 0, got -1"):
        pickle.loads(pickle.dumps(Forged(rf.Contribution, (0, -1, 1.0, 1.0, None, None))))


def test_type_docstrings_say_what_the_types_are():
    assert rf.Hit.__doc__.startswith("A fused hit: the tuple `(key, score)`; its trace")
    assert "checks its\nfields (a hashable key" in rf.Hit.__doc__
    assert rf.Contribution.__doc__.startswith("What one list gave a hit: the tuple")
    assert rf.Revalidated.__doc__ == "A live candidate: the tuple `(id, record, score)`."
    assert rf.RevalidatedBatch.__doc__ == (
        "The live candidates of a batch: the tuple `(ids, scores, counts)`."
    )
    assert rf.BatchResult.__doc__.startswith("The result of `rrf_batch`, `fuse_batch` and")
    assert rf.Hit.key.__doc__ == "The key, as first met in the lists."
    assert rf.BatchResult.counts.__doc__ == "(Q,) int64: the number of real hits of each row."
    for cls in FIELDS:
        assert cls.__module__ == "rankfusion._core" and cls.__qualname__ == cls.__name__


def test_the_core_makes_a_result_as_told_and_only_of_a_result_type():
    from rankfusion import _core

    hit = _core._result(rf.Hit, ["k", 1])  # unchecked: the score stays an int
    assert tuple(hit) == ("k", 1) and hit.contributions is None and type(hit.score) is int
    assert tuple(_core._result(rf.Contribution, iter([0]))) == (0, None, None, None, None)
    with pytest.raises(TypeError, match="is not a result type"):
        _core._result(tuple, [1, 2])
    with pytest.raises(TypeError, match="Revalidated has 3 fields, not 4"):
        _core._result(rf.Revalidated, [1, 2, 3, 4])


def test_a_result_type_without_its_constructor_refuses_to_make_instances():
    # Until rankfusion._results has given the types their constructor, tuple's (which would make
    # an instance without room for the fields after the tuple's) is not theirs.
    code = (
        "import sys, types\n"
        "sys.modules['rankfusion._results'] = types.ModuleType('rankfusion._results')\n"
        "import rankfusion\n"
        "try:\n"
        "    rankfusion.Hit('a', 1.0)\n"
        "except TypeError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "the result types are made by rankfusion's constructors (import rankfusion)\n"
    )
