"""``rankfusion.Fusion``: the settings of a fusion as one value, checked once.

- Calling a ``Fusion`` equals ``fuse`` with the same settings equals the reference's ``Fusion``,
  for every method (Hypothesis, exact: keys, order, score bits, traces, exception and message).
- A ``Fusion`` survives ``pickle``, ``repr`` (eval) and ``to_dict`` round trips; equal fusions
  hash alike; the core's and the reference's agree on all three.
- The method table the core exports (``rankfusion.METHODS``) is the reference's.
- Errors are ``FusionError`` / ``FusionTypeError`` with fields, the same in both.
"""

from __future__ import annotations

import collections
import collections.abc
import enum
import pickle
import types

import numpy as np
import pytest
from _fusion_cases import COMBINATIONS, combination_id, examples_for
from hypothesis import given, settings
from test_differential_fuse import assert_same_hits, fuse_calls, input_maker

import rankfusion as rf
from rankfusion import reference as ref

CALL_INPUTS = ("scores", "boost")


def split(kw: dict) -> tuple:
    """``fuse``'s keyword arguments as a Fusion's settings and a call's inputs."""
    fusion = {k: v for k, v in kw.items() if k not in CALL_INPUTS}
    return fusion, {k: v for k, v in kw.items() if k in CALL_INPUTS}


def result(fn, *args, **kwargs):
    """(hits, None) or (None, the exception)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as exc:  # noqa: BLE001 -- an outcome to compare
        return None, exc


def same_outcome(got, want) -> None:
    (hits, exc), (want_hits, want_exc) = got, want
    if want_exc is not None:
        assert exc is not None, f"want {want_exc!r}, got {hits!r}"
        assert type(exc) is type(want_exc) and str(exc) == str(want_exc), (exc, want_exc)
        if isinstance(want_exc, (rf.FusionError, rf.FusionTypeError)):
            assert exc.fields() == want_exc.fields() or _same_keys(exc, want_exc)
        return
    assert exc is None, f"raised {exc!r}, want {want_hits!r}"
    assert_same_hits(hits, want_hits)


def _same_keys(a, b) -> bool:
    """The fields of two errors about keys that are equal but not the same object (1 and 1.0)."""
    fa, fb = a.fields(), b.fields()
    return fa.pop("key", None) == fb.pop("key", None) and fa == fb


@pytest.mark.parametrize("method, norm", COMBINATIONS, ids=combination_id)
def test_a_fusion_called_equals_fuse_and_the_reference(method, norm):
    """``Fusion(**settings)(lists, scores, boost)`` == ``fuse(lists, **kw)`` == the reference's
    ``Fusion``, valid or not (the settings are checked when the Fusion is made)."""

    @settings(max_examples=examples_for(method, norm, settings().max_examples))
    @given(fuse_calls(combination=(method, norm)))
    def check(call):
        lists, kw, outer, _ = call
        make = input_maker(lists, kw, outer)
        settings_, inputs = split(make()[1])

        def called(module):
            def run():
                fusion = module.Fusion(**settings_)
                return fusion(make()[0], inputs.get("scores"), inputs.get("boost"))

            return result(run)

        want = result(ref.fuse, *make()[:1], **make()[1])
        same_outcome(called(rf), want)
        same_outcome(called(ref), want)
        same_outcome(result(rf.fuse, *make()[:1], **make()[1]), want)
        core, reference = result(rf.Fusion, **settings_), result(ref.Fusion, **settings_)
        if core[0] is not None:
            assert_round_trips(core[0], reference[0])

    check()


def assert_round_trips(fusion, reference) -> None:
    assert pickle.loads(pickle.dumps(fusion)) == fusion
    assert eval(repr(fusion), {"Fusion": rf.Fusion}) == fusion  # noqa: S307 -- our own repr
    again = rf.Fusion(**fusion.to_dict())
    assert again == fusion and hash(again) == hash(fusion) and repr(again) == repr(fusion)
    assert fusion.to_dict() == reference.to_dict() and repr(fusion) == repr(reference)
    assert pickle.loads(pickle.dumps(reference)) == reference
    assert fusion.reads_scores == reference.reads_scores
    assert fusion.norm_in_effect == reference.norm_in_effect


def test_equal_fusions_are_equal_and_hash_alike():
    for a, b in [
        (rf.Fusion(), rf.Fusion(method="rrf", k=60)),
        (rf.Fusion(method="wsum"), rf.Fusion(method="wsum", norm="none")),
        (rf.Fusion(method="logn_isr"), rf.Fusion(method="logn_isr", sigma=0.01)),
        (rf.Fusion(weights=[1, 2]), rf.Fusion(weights=(1.0, 2.0))),
        (rf.Fusion(limit=2**80), rf.Fusion(limit=2**63)),
        (rf.Fusion(weights=[-0.0]), rf.Fusion(weights=[0.0])),
    ]:
        assert a == b and hash(a) == hash(b) and repr(a) == repr(b), (a, b)
    assert rf.Fusion(k=1) != rf.Fusion(k=2)
    assert rf.Fusion(weights=[1.0, 1.0]) != rf.Fusion()  # two lists, or any number
    assert rf.Fusion() != "Fusion(method='rrf')"
    assert len({rf.Fusion(), rf.Fusion(k=60), rf.Fusion(trace=True)}) == 2


def test_a_fusion_is_immutable_and_replace_makes_a_checked_copy():
    f = rf.Fusion(method="wsum", norm="min-max", weights=[0.3, 0.7])
    with pytest.raises(AttributeError):
        f.method = "rrf"  # type: ignore[misc]
    g = f.replace(weights=[0.5, 0.5], limit=10)
    assert (g.weights, g.limit, g.norm, f.weights) == ((0.5, 0.5), 10, "min-max", (0.3, 0.7))
    assert f.replace(norm=None).norm is None  # None: back to the default
    with pytest.raises(rf.FusionError) as e:
        f.replace(k=10)
    assert e.value.argument == "k" and str(e.value) == "k is not used by method 'wsum'"


def test_the_attributes_are_the_settings_in_effect():
    f = rf.Fusion(method="dbsf", lower_is_better=np.array([True, False]))
    assert (f.method, f.norm, f.norm_in_effect, f.k, f.sigma) == ("dbsf", None, "dbsf", 60, None)
    assert f.lower_is_better == (True, False) and f.reads_scores
    assert rf.Fusion(method="logn_isr").sigma == 0.01
    assert not rf.Fusion(method="sum", norm="rank").reads_scores
    assert rf.Fusion(method="rbc", phi=0.5).to_dict() == {"method": "rbc", "phi": 0.5}


def test_check_is_the_calls_check_of_the_number_of_lists():
    f = rf.Fusion(weights=[1.0, 2.0])
    f.check(2)
    for fusion, n, argument in [
        (f, 3, "weights"),
        (rf.Fusion(normalize=True), 0, "normalize"),
        (rf.Fusion(method="sum", norm="min-max", lower_is_better=[True]), 2, "lower_is_better"),
    ]:
        with pytest.raises(rf.FusionError) as e:
            fusion.check(n)
        assert e.value.argument == argument
        with pytest.raises(rf.FusionError) as r:
            ref.Fusion(**fusion.to_dict()).check(n)
        assert str(r.value) == str(e.value)
    with pytest.raises(rf.FusionError, match="weights has 2 values for 3 lists"):
        f([[1], [2], [3]])


def test_a_fusion_called_on_varying_numbers_of_lists_plans_each_call_right():
    # A Fusion keeps the plan of the number of lists it first met: calls on other numbers of
    # lists (more, fewer, none, an error in between) are planned for themselves.
    a, b, c = ["x", "y", "z"], ["y", "w"], ["w", "x", "v"]
    for kw in ({}, {"normalize": True, "k": 2}, {"method": "mnz", "norm": "rank"}):
        f, r = rf.Fusion(**kw), ref.Fusion(**kw)
        for lists in ([a, b], [a, b, c], [a], [a, b], [], [c, a, b], [a, b]):
            same_outcome(result(f, lists), result(r, lists))
        queries = [[a, b], [a, b, c], [a], [a, b]]
        assert_same_many(f.many(queries), r.many(queries))
    f, r = rf.Fusion(weights=[1.0, 2.0]), ref.Fusion(weights=[1.0, 2.0])
    for lists in ([a, b], [a, b, c], [a, b], [b]):
        same_outcome(result(f, lists), result(r, lists))


def assert_same_many(got, want) -> None:
    assert len(got) == len(want)
    for hits, want_hits in zip(got, want):
        assert_same_hits(hits, want_hits)


def test_the_core_method_table_is_the_references():
    assert tuple(rf.METHODS) == tuple(ref.METHODS)
    for name, row in rf.METHODS.items():
        want = ref.METHODS[name]
        assert (row.name, row.kind, row.weighted) == (name, want.kind, want.weighted), name
        assert (row.params, row.norm, row.fills) == (want.params, want.norm, want.fills), name
        sums_terms = want.combine in ("sum", "times") and want.term != "points"
        assert row.traced == sums_terms, name
    assert tuple(rf.NORMS) == ref.NORMS
    assert [n for n, row in rf.NORMS.items() if not row.reads_scores] == list(ref.RANK_NORMS)
    with pytest.raises(TypeError):
        rf.METHODS["new"] = rf.METHODS["rrf"]  # type: ignore[index]
    with pytest.raises(AttributeError, match="read-only"):
        rf.METHODS["rrf"].k = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="read-only"):
        rf.METHODS["rrf"].name = "x"  # type: ignore[misc]
    assert repr(rf.METHODS["wmnz"]) == (
        "MethodInfo(name='wmnz', kind='score', term='v', "
        'combine="S * sum of the present lists\' weights")'
    )
    assert repr(rf.NORMS["rank"]) == "NormInfo(name='rank', reads_scores=False)"
    assert rf.MethodInfo.__module__ == "rankfusion"


@pytest.mark.parametrize("module", [rf, ref], ids=["core", "reference"])
def test_errors_carry_what_and_where(module):
    cases = [
        (lambda: module.Fusion(k=-1), rf.FusionError, dict(argument="k")),
        (
            lambda: module.Fusion(weights=[1, "x"]),
            rf.FusionTypeError,
            dict(argument="weights", list=1),
        ),  # fmt: skip
        (
            lambda: module.fuse([["a"], ["b"]], scores=[[1.0], [float("nan")]], method="sum"),
            rf.FusionError,
            dict(argument="scores", list=1, rank=1),
        ),  # fmt: skip
        (
            lambda: module.rrf([["a", "b", "a"]], duplicates="error"),
            rf.FusionError,
            dict(list=0, rank=3, key="a"),
        ),  # fmt: skip
        (
            lambda: module.rrf_many([[["a"]], [["b", "b"]]], duplicates="error"),
            rf.FusionError,
            dict(query=1, list=0, rank=2, key="b"),
        ),  # fmt: skip
        (
            lambda: module.rrf_batch([np.array([[1, 2], [3, 3]])], duplicates="error"),
            rf.FusionError,
            dict(row=1, list=0, rank=2, key=3),
        ),  # fmt: skip
        (
            lambda: module.rrf([["a"]], weights=[5e-324], k=1e300, normalize=True),
            rf.FusionError,
            dict(argument="normalize"),
        ),  # fmt: skip
        (
            lambda: module.fuse([["a"], ["a"]], weights=[1e308, 1e308], k=0),
            rf.FusionError,
            dict(key="a"),
        ),  # fmt: skip
    ]
    for call, kind, fields in cases:
        with pytest.raises(kind) as e:
            call()
        got = {name: getattr(e.value, name) for name in fields}
        assert got == fields, (e.value, got)
        unset = set(e.value.fields()) - set(fields) - {"key"}
        assert all(getattr(e.value, name) is None for name in unset), (e.value, e.value.fields())
        relocated = e.value.located(qid="q1", row=None, query=None)
        assert str(relocated) == f"query 'q1': {e.value.reason}"
        assert pickle.loads(pickle.dumps(e.value)).fields() == e.value.fields()


class _Floaty(float):
    """A float subclass whose ``float()`` is not its value."""

    def __float__(self):
        return 5.0


class _Floats(list):
    """A list subclass: read through the general path, as any other iterable."""


@pytest.mark.parametrize("module", [rf, ref], ids=["core", "reference"])
def test_every_form_of_scores_reads_the_same(module):
    # A list of exact floats is read in place; ints, float subclasses, tuples, list subclasses
    # and arrays are converted: every form gives the same hits and the same errors.
    lists = [["a", "b", "c"], ["c", "d"]]
    f = module.Fusion(method="wsum", norm="min-max", weights=[0.3, 0.7], trace=True)
    want = f(lists, [[3.0, 2.0, 1.0], [0.5, 0.25]])
    forms = [
        [[3, 2.0, 1.0], [0.5, 0.25]],
        [(3.0, 2.0, 1.0), np.array([0.5, 0.25])],
        [_Floats([3.0, 2.0, 1.0]), [np.float64(0.5), 0.25]],
    ]
    for scores in forms:
        assert f(lists, scores) == want
    nan = float("nan")
    for bad in ([3.0, nan, 1.0], [3.0, nan, "x"], (3.0, nan, 1.0), _Floats([3.0, nan, 1.0])):
        with pytest.raises(rf.FusionError) as e:
            f(lists, [bad, [0.5, 0.25]])
        assert (e.value.argument, e.value.list, e.value.rank) == ("scores", 0, 2)
    for bad in ([3.0, 2.0], [3.0, 2.0, 1.0, 0.0]):
        with pytest.raises(rf.FusionError) as e:
            f(lists, [bad, [0.5, 0.25]])
        assert (e.value.argument, e.value.list) == ("scores", 0)
    with pytest.raises(rf.FusionTypeError) as e:
        f(lists, [[3.0, "x", nan], [0.5, 0.25]])
    assert (e.value.argument, e.value.list, e.value.rank) == ("scores", 0, 2)


def _outcome(fusion, *inputs):
    try:
        return fusion(*inputs)
    except (ValueError, TypeError) as e:
        return type(e), str(e), getattr(e, "fields", lambda: None)()


def test_scores_as_numpy_arrays_read_as_the_reference_reads_them():
    # A 1-D array of a real dtype is converted as a whole; anything else item by item. Both
    # must give what the reference's float(item) gives, and the same errors.
    lists = [["a", "b", "c"], ["c", "d", "e"]]
    nan = float("nan")
    base = np.array([3.0, 2.5, -1.0])
    forms = [
        base,
        base.astype(np.float32),
        base.astype(np.float16),
        base.astype(">f8"),
        np.array([3, 2, -1], dtype=np.int8),
        np.array([2**63 - 1, 2**53 + 1, -(2**62)], dtype=np.int64),
        np.array([2**64 - 1, 2**53 + 1, 0], dtype=np.uint64),
        np.array([9.0, 3.0, 8.0, 2.5, 7.0, -1.0])[::2],  # not contiguous
        np.frombuffer(b"\0" + base.tobytes(), dtype=np.float64, offset=1),  # not aligned
        np.array([3.0, nan, 1.0]),
        np.array([3.0, 2.0, nan], dtype=np.float32),
        np.array([True, False, True]),
        np.array([1 + 0j, 2, 3]),
        np.array([3.0, 2.0, 1.0], dtype=object),
        np.array([3.0, 2.0]),
        np.ma.masked_array([3.0, 2.0, 1.0], mask=[0, 1, 0]),
        np.array([[3.0], [2.0], [1.0]]),
        np.float64(3.0),
    ]
    # Lists of exact floats and ints are read in place; any other item is converted by Python.
    forms += [
        np.array(form, dtype=object)
        for form in (
            [3, 2.5, -1],
            [2**63 + 1, 2**53 + 1, -(2**70)],
            [10**400, 1.0, 2.0],
            [3.0, True, 1.0],
            [3.0, enum.IntEnum("E", "A B")["B"], 1],
            [3.0, 2, nan],
            [3.0, "2", 1],
            [np.float32(3.5), np.float64(2.0), np.int64(-1)],
            [np.uint64(2**64 - 1), np.float16(1.5), np.int8(3)],
            [np.float64(nan), np.float32(1.0), 0.5],
            [np.longdouble(3), _Floaty(2.0), 1.0],
            [np.bool_(True), 1.0, 2.0],
        )
    ]
    for method, norm in [("wsum", "min-max"), ("rrf", None), ("sum", "z-score")]:
        kw = dict(method=method, norm=norm, trace=True)
        core, reference = rf.Fusion(**kw), ref.Fusion(**kw)
        for form in forms:
            stacked = [np.stack([form, form])] if form.ndim == 1 else []
            listed = [[form.tolist(), form.tolist()]] if form.dtype == object else []
            for scores in [[form, form], [None, form], *stacked, *listed]:
                got = _outcome(core, lists, scores)
                want = _outcome(reference, lists, scores)
                assert got == want, (method, form.dtype, form, scores, got, want)


def test_every_form_of_boost_reads_the_same():
    # A dict of finite floats is copied as it is; any other mapping or value is converted item
    # by item: the same hits and the same errors as the reference.
    lists = [["a", "b", 1], ["c", 1.0, "a"]]
    nan, inf = float("nan"), float("inf")
    boosts = [
        {"a": 2.0, 1: 0.5, "zz": 9.0},
        {"a": 2, 1.0: 0.5},
        {"a": np.float64(2.0), "c": 0.25},
        collections.OrderedDict([("c", 1.0), ("a", 3.0)]),
        types.MappingProxyType({"b": 1.0}),
        {"a": 1.0, "b": inf},
        {"a": nan, "b": "x"},
        {"a": 1.0, "b": 10**400},
        {"a": True},
        {},
    ]
    for kw in (dict(boost_weight=0.5, trace=True), dict(method="wsum", boost_weight=2.0)):
        core, reference = rf.Fusion(**kw), ref.Fusion(**kw)
        for boost in boosts:
            scores = [[3.0, 2.0, 1.0], [1.0, 0.5, 0.0]]
            got = _outcome(core, lists, scores, boost)
            want = _outcome(reference, lists, scores, boost)
            assert got == want, (kw, boost, got, want)


class _ItemsMapping(collections.abc.Mapping):
    """A mapping whose ``items()`` gives what it is told to: lists, iterators, wrong lengths."""

    def __init__(self, items):
        self._items = items

    def __getitem__(self, key):
        raise KeyError(key)

    def __iter__(self):
        return iter(())

    def __len__(self):
        return len(self._items)

    def items(self):
        return self._items


def test_a_boost_mappings_items_are_any_pairs_and_anything_else_is_named():
    # A pair from items() is any iterable of two (a list, an iterator, a namedtuple); anything
    # else is our error naming boost, in both (it was pyo3's bare "is not an instance of
    # 'tuple'", or Python's unpacking errors in the reference).
    lists = [["a", "b", 1], ["c", 1.0, "a"]]
    pair = collections.namedtuple("pair", "key value")
    forms = [
        ([["a", 2.0], ["c", 1]], None),
        (lambda: [iter(("a", 2.0)), pair("b", 0.5)], None),
        ([("a", 1.0, 2)], (rf.FusionError, "got 3 items")),
        ([("a",)], (rf.FusionError, "got 1 items")),
        ([3], (rf.FusionTypeError, "got int 3")),
        (["ab"], (rf.FusionTypeError, "got str 'ab'")),
        ([["a", float("nan")]], (rf.FusionError, "boost['a'] must be finite")),
    ]
    for items, error in forms:
        fresh = items if callable(items) else lambda items=items: items
        for kw in (dict(boost_weight=0.5, trace=True), dict(method="wsum", boost_weight=2.0)):
            core, reference = rf.Fusion(**kw), ref.Fusion(**kw)
            scores = [[3.0, 2.0, 1.0], [1.0, 0.5, 0.0]]
            got = _outcome(core, lists, scores, _ItemsMapping(fresh()))
            want = _outcome(reference, lists, scores, _ItemsMapping(fresh()))
            assert got == want, (kw, fresh(), got, want)
            if error is None:
                plain = dict(tuple(p) for p in fresh())
                assert got == _outcome(reference, lists, scores, plain)
            else:
                kind, text = error
                assert got[0] is kind and text in got[1], got
                assert got[2]["argument"] == "boost"


def test_numpy_bools_are_flags():
    for module in (rf, ref):
        f = module.Fusion(method="sum", norm="min-max", lower_is_better=np.array([True, False]))
        hits = f([["a", "b"], ["b", "a"]], [[1.0, 2.0], [1.0, 2.0]])
        assert [h.key for h in hits] == ["a", "b"] and f.lower_is_better == (True, False)
        assert module.rrf([["a"]], trace=np.True_)[0].contributions is not None


class Raising:
    """A sequence setting whose own iterator raises."""

    def __iter__(self):
        raise RuntimeError("the caller's iterator")


@pytest.mark.parametrize("impl", [rf, ref], ids=["core", "reference"])
@pytest.mark.parametrize(
    "settings, expected",
    [
        # An earlier mistake is reported first: the caller's object is never read.
        (dict(method="sum", weights=Raising()), "weights is not used by method 'sum'"),
        (dict(method="nope", k=Raising()), "method must be one of"),
        (dict(method="wsum", norm="rank", lower_is_better=Raising()), "lower_is_better"),
        # Reached in its turn: the caller's own exception, as it was.
        (dict(weights=Raising()), RuntimeError("the caller's iterator")),
        (dict(weights=Raising(), trace="x"), RuntimeError("the caller's iterator")),
        (dict(method="wsum", lower_is_better=Raising()), RuntimeError("the caller's iterator")),
    ],
)
def test_a_setting_that_raises_is_reported_in_its_turn(impl, settings, expected):
    """The caller's exception while a setting is converted comes when the checker reaches that
    setting, after any earlier mistake, the same in the core and the reference."""
    if isinstance(expected, str):
        with pytest.raises(rf.FusionError, match=expected):
            impl.Fusion(**settings)
        with pytest.raises(rf.FusionError, match=expected):
            impl.fuse([["a"], ["b"]], **settings)
    else:
        with pytest.raises(type(expected), match=str(expected)):
            impl.Fusion(**settings)


class _FusesOnEq(str):
    """A str key whose ``==`` fuses another query first: the inner call needs the thread's key
    table while the outer call is using it."""

    def __hash__(self):
        return 7  # every such key collides, so ``==`` runs

    def __eq__(self, other):
        inner = [[f"inner{i}" for i in range(300)], [f"inner{i}" for i in range(299, -1, -1)]]
        assert rf.rrf(inner, limit=3) == ref.rrf(inner, limit=3)
        return str.__eq__(self, other)


def test_a_key_whose_eq_fuses_meanwhile_leaves_the_outer_call_exact():
    keys = [_FusesOnEq(f"k{i}") for i in range(40)]
    lists = [keys, keys[::-1], [f"plain{i}" for i in range(500)] + keys[:5]]
    for fn in (rf.rrf, ref.rrf):
        hits = fn(lists)
        assert [h.key for h in hits] == [h.key for h in ref.rrf(lists)]
        assert [h.score for h in hits] == [h.score for h in ref.rrf(lists)]
    # The thread's table, used by calls of other sizes after, still interns exactly.
    for n in (1, 700, 3):
        small = [[f"s{i}" for i in range(n)], [f"s{i}" for i in range(n - 1, -1, -1)]]
        assert rf.rrf(small) == ref.rrf(small)


def test_fresh_str_keys_whose_hash_is_not_computed_yet_intern_as_dict_does():
    # Strings made at run time carry no hash until one is asked for; equal ones are one key.
    a = ["".join(["key", str(i)]) for i in range(200)]
    b = ["".join(["key", str(i)]) for i in range(199, -1, -1)]
    assert rf.rrf([a, b]) == ref.rrf([list(a), list(b)])
    assert len(rf.rrf([a, b])) == 200
