"""Candidate revalidation: the seed vectors of the original design, bad input, the result types.

Every test runs against both the Rust core and the reference (``impl``), so the vectors pin down
the specification itself as well as the core.
"""

from __future__ import annotations

import copy
import multiprocessing
import pickle
import sys
from collections.abc import Mapping

import numpy as np
import pytest

import rankfusion
from rankfusion import reference

IMPLS = {"core": rankfusion, "reference": reference}


@pytest.fixture(params=list(IMPLS))
def impl(request):
    return IMPLS[request.param]


class Store:
    """A lookup that records its calls. ``records``: id -> record (None: soft-deleted);
    ``raises``: ids whose get() raises; ``batch``: offer get_many (or not); ``extra``: rows
    get_many returns that nobody asked for; ``batch_error``: what get_many raises."""

    def __init__(self, records, *, raises=(), batch=True, extra=None, batch_error=None):
        self.records = dict(records)
        self.raises = set(raises)
        self.extra = dict(extra or {})
        self.batch_error = batch_error
        self.calls = []
        if batch:
            self.get_many = self._get_many

    def get(self, id):
        self.calls.append(("get", id))
        if id in self.raises:
            raise RuntimeError(f"lookup of {id} failed")
        return self.records.get(id)

    def _get_many(self, ids):
        self.calls.append(("get_many", list(ids)))
        if self.batch_error is not None:
            raise self.batch_error
        found = {i: self.records[i] for i in ids if i in self.records}
        found.update(self.extra)
        return found


def triples(result):
    return [tuple(r) for r in result]


# --- the seed vectors ---------------------------------------------------------------------------


def test_all_live_in_order(impl):
    store = Store({1: "one", 2: "two"})
    assert triples(impl.revalidate([(1, 0.9), (2, 0.8)], store)) == [
        (1, "one", 0.9),
        (2, "two", 0.8),
    ]
    assert store.calls == [("get_many", [1, 2])]


def test_per_id_path_drops_raising_and_missing(impl):
    store = Store({1: "one"}, raises={2}, batch=False)
    out = impl.revalidate([(1, 0.9), (2, 0.8), (3, 0.7)], store)
    assert triples(out) == [(1, "one", 0.9)]
    assert store.calls == [("get", 1), ("get", 2), ("get", 3)]


def test_batch_path_drops_none_deleted_absent_and_ignores_extra_rows(impl):
    # 2 -> None, 3 soft-deleted (the store leaves it out), 4 absent; 99 was never asked for.
    store = Store({1: "one", 2: None}, extra={99: "unrequested"})
    out = impl.revalidate([(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)], store)
    assert triples(out) == [(1, "one", 0.9)]
    assert store.calls == [("get_many", [1, 2, 3, 4])]


def test_duplicates_one_batch_entry_every_occurrence_kept(impl):
    store = Store({1: "one", 2: "two"})
    out = impl.revalidate([(1, 0.9), (1, 0.8), (2, 0.7)], store)
    assert store.calls == [("get_many", [1, 2])]
    assert triples(out) == [(1, "one", 0.9), (1, "one", 0.8), (2, "two", 0.7)]


def test_failing_batch_call_falls_back_to_one_get_per_candidate(impl):
    store = Store({1: "one", 2: "two"}, batch_error=ConnectionError("down"))
    out = impl.revalidate([(1, 0.9), (2, 0.8), (1, 0.7), (3, 0.6)], store)
    assert store.calls == [("get_many", [1, 2, 3]), ("get", 1), ("get", 2), ("get", 1), ("get", 3)]
    assert triples(out) == [(1, "one", 0.9), (2, "two", 0.8), (1, "one", 0.7)]


def test_no_candidates_no_call(impl):
    store = Store({1: "one"})
    assert impl.revalidate([], store) == []
    assert impl.revalidate(iter(()), store, where=lambda r: 1 / 0) == []
    assert store.calls == []


def test_post_filter_pool_of_six_at_most_two_matching(impl):
    limit = 2
    pool = impl.pool_size(limit, "post")
    assert pool == 6
    records = {i: {"id": i, "lang": "en" if i % 3 == 0 else "fr"} for i in range(1, 20)}
    index = [(i, 1.0 - i / 100) for i in range(1, 20)]  # best first
    candidates = index[:pool]
    seen = []

    def english(record):
        seen.append(record["id"])
        return record["lang"] == "en"

    out = impl.revalidate(candidates, Store(records), where=english, limit=limit)
    assert [r.id for r in out] == [3, 6]
    assert all(r.record["lang"] == "en" for r in out)
    assert seen == [1, 2, 3, 4, 5, 6]  # the predicate runs in input order, stops at the limit


# --- more behaviour -----------------------------------------------------------------------------


def test_pool_size(impl):
    assert impl.pool_size(10, "pre") == 10
    assert impl.pool_size(10, "post") == 30
    assert impl.pool_size(10, "none") == 30
    assert impl.pool_size(10, "something new") == 30  # unknown: fail safe, widen
    assert impl.pool_size(10, None) == 30
    assert impl.pool_size(10, "post", multiplier=5) == 50
    assert impl.pool_size(10, "post", 1) == 10
    assert impl.pool_size(0, "post") == 0
    assert impl.pool_size(np.int64(4), "post") == 12
    assert impl.pool_size(2**70, "post") == 3 * 2**70  # exact, like Python ints
    assert impl.pool_size(2**62, "post", 8) == 2**65


def test_pool_size_str_subclass(impl):
    class Filtering(str):
        pass

    assert impl.pool_size(10, Filtering("pre")) == 10
    assert impl.pool_size(10, b"pre") == 30


@pytest.mark.parametrize(
    "args, exc, words",
    [
        ((-1, "pre"), ValueError, "limit"),
        ((1.0, "pre"), TypeError, "limit"),
        ((True, "pre"), TypeError, "limit"),
        ((None, "pre"), TypeError, "limit"),
        ((3, "post", 0), ValueError, "multiplier"),
        ((3, "post", 2.5), TypeError, "multiplier"),
        ((3, "post", False), TypeError, "multiplier"),
    ],
)
def test_pool_size_bad_input(impl, args, exc, words):
    with pytest.raises(exc, match=words):
        impl.pool_size(*args)


def test_a_mapping_lookup(impl):
    lookup = {1: "one", 2: None}
    out = impl.revalidate([(3, 0.9), (1, 0.8), (2, 0.7), (1, 0.6)], lookup)
    assert triples(out) == [(1, "one", 0.8), (1, "one", 0.6)]


def test_dict_semantics_for_ids(impl):
    store = Store({1: "one"})
    out = impl.revalidate([(1, 0.9), (1.0, 0.8), (True, 0.7)], store)
    assert store.calls == [("get_many", [1])]
    # Each occurrence keeps its own id object.
    assert [type(r.id) for r in out] == [int, float, bool]


def test_ids_of_any_hashable_type(impl):
    ids = ["a", ("t", 1), frozenset({1}), None, 2.5]
    records = {i: f"rec {i!r}" for i in ids}
    out = impl.revalidate([(i, 0.5) for i in ids], Store(records))
    assert [r.id for r in out] == ids


def test_numpy_ids_and_scores(impl):
    ids = np.array([5, 7, 5])
    scores = np.array([0.9, 0.8, 0.7], dtype=np.float32)
    store = Store({5: "five"})
    out = impl.revalidate(zip(ids, scores), store)
    assert [(r.id, r.score) for r in out] == [
        (5, float(np.float32(0.9))),
        (5, float(np.float32(0.7))),
    ]
    assert all(type(r.score) is float for r in out)


def test_scores_are_carried_as_is_nan_included(impl):
    out = impl.revalidate([(1, float("nan")), (2, float("-inf")), (3, 7)], {1: "a", 2: "b", 3: "c"})
    assert np.isnan(out[0].score) and out[1].score == float("-inf") and out[2].score == 7.0


def test_limit_stops_the_per_id_walk(impl):
    store = Store({i: i for i in range(10)}, batch=False)
    out = impl.revalidate([(i, 0.0) for i in range(10)], store, limit=3)
    assert [r.id for r in out] == [0, 1, 2]
    assert store.calls == [("get", 0), ("get", 1), ("get", 2)]


def test_limit_zero_calls_nothing(impl):
    store = Store({1: 1})
    assert impl.revalidate([(1, 0.5)], store, limit=0) == []
    assert store.calls == []


def test_where_sees_each_live_record_once_per_occurrence(impl):
    seen = []
    out = impl.revalidate(
        [(1, 0.9), (2, 0.8), (1, 0.7)],
        Store({1: "one", 2: None}),
        where=lambda r: seen.append(r) or True,
    )
    assert seen == ["one", "one"]
    assert len(out) == 2


def test_where_truthiness(impl):
    out = impl.revalidate([(1, 0.9), (2, 0.8)], {1: [], 2: [0]}, where=len)
    assert [r.id for r in out] == [2]


def test_where_exceptions_propagate(impl):
    def boom(record):
        raise LookupError("predicate failed")

    with pytest.raises(LookupError, match="predicate failed"):
        impl.revalidate([(1, 0.9)], {1: "one"}, where=boom)


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_base_exceptions_propagate(impl, error):
    store = Store({1: "one"}, batch_error=error())
    with pytest.raises(error):
        impl.revalidate([(1, 0.9)], store)
    assert store.calls == [("get_many", [1])]

    class PerId:
        def get(self, id):
            raise error()

    with pytest.raises(error):
        impl.revalidate([(1, 0.9)], PerId())


def test_get_many_returning_a_non_mapping_is_a_type_error(impl):
    class Lookup:
        def get(self, id):
            return "rec"

        def get_many(self, ids):
            return [("rec", i) for i in ids]  # a bug of the lookup, not a failure to fall back on

    with pytest.raises(TypeError, match="get_many"):
        impl.revalidate([(1, 0.9)], Lookup())


def test_get_many_may_return_any_mapping(impl):
    class Rows(Mapping):
        def __init__(self, rows):
            self.rows = rows

        def __getitem__(self, key):
            return self.rows[key]

        def __iter__(self):
            return iter(self.rows)

        def __len__(self):
            return len(self.rows)

    class Lookup:
        def get(self, id):
            raise AssertionError("the batch path must not call get")

        def get_many(self, ids):
            return Rows({i: f"rec {i}" for i in ids if i != 2})

    out = impl.revalidate([(1, 0.9), (2, 0.8), (3, 0.7)], Lookup())
    assert triples(out) == [(1, "rec 1", 0.9), (3, "rec 3", 0.7)]


def test_get_many_gets_a_fresh_list_it_may_keep(impl):
    kept = []

    class Lookup:
        def get(self, id):
            return id

        def get_many(self, ids):
            kept.append(ids)
            ids.append("intruder")  # mutating its argument changes nothing for the caller
            return {i: i for i in ids}

    out = impl.revalidate([(1, 0.9), (2, 0.8)], Lookup())
    assert [r.id for r in out] == [1, 2]
    assert kept == [[1, 2, "intruder"]]


def test_inputs_are_not_modified(impl):
    candidates = [(1, 0.9), [2, 0.8], (1, 0.7)]
    before = copy.deepcopy(candidates)
    impl.revalidate(candidates, {1: "a", 2: "b"}, limit=2)
    assert candidates == before


class Unhashable:
    __hash__ = None


@pytest.mark.parametrize(
    "candidates, exc, words",
    [
        ({1: 0.9}, TypeError, "mapping"),
        ("ab", TypeError, "candidates"),
        (5, TypeError, "candidates"),
        ([1, 2], TypeError, r"candidates\[0\]"),
        (["ab"], TypeError, r"candidates\[0\]"),
        ([(1, 0.9, "x")], ValueError, r"candidates\[0\].*3 items"),
        ([(1, 0.9), (2,)], ValueError, r"candidates\[1\].*1 items"),
        ([([1], 0.9)], TypeError, r"candidates\[0\]\[0\] is not hashable"),
        ([(1, 0.9), (Unhashable(), 0.9)], TypeError, r"candidates\[1\]\[0\] is not hashable"),
        ([(1, "0.9")], TypeError, r"candidates\[0\]\[1\]"),
        ([(1, None)], TypeError, r"candidates\[0\]\[1\]"),
        ([(1, True)], TypeError, r"candidates\[0\]\[1\]"),
        ([(1, 10**400)], ValueError, r"candidates\[0\]\[1\]"),
    ],
)
def test_bad_candidates(impl, candidates, exc, words):
    store = Store({1: "one"})
    with pytest.raises(exc, match=words):
        impl.revalidate(candidates, store)
    assert store.calls == []


def test_an_id_whose_hash_raises_propagates(impl):
    class BadHash:
        def __hash__(self):
            raise ArithmeticError("no hash")

    with pytest.raises(ArithmeticError):
        impl.revalidate([(BadHash(), 0.5)], Store({}, batch=False))


@pytest.mark.parametrize(
    "lookup, exc, words",
    [
        (None, TypeError, "lookup"),
        ([1, 2], TypeError, "lookup"),
        (type("NoGet", (), {"get_many": lambda self, ids: {}})(), TypeError, "lookup"),
        (type("GetNotCallable", (), {"get": 5})(), TypeError, "lookup"),
        (
            type("ManyNotCallable", (), {"get": lambda self, i: i, "get_many": 5})(),
            TypeError,
            "get_many",
        ),
    ],
)
def test_bad_lookup(impl, lookup, exc, words):
    with pytest.raises(exc, match=words):
        impl.revalidate([(1, 0.5)], lookup)
    with pytest.raises(exc, match=words):  # checked even when there is nothing to look up
        impl.revalidate([], lookup)


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"where": "lang = 'en'"}, TypeError, "where"),
        ({"where": 1}, TypeError, "where"),
        ({"limit": -1}, ValueError, "limit"),
        ({"limit": True}, TypeError, "limit"),
        ({"limit": 2.0}, TypeError, "limit"),
        ({"limit": "2"}, TypeError, "limit"),
    ],
)
def test_bad_keywords(impl, kwargs, exc, words):
    store = Store({1: "one"})
    with pytest.raises(exc, match=words):
        impl.revalidate([(1, 0.5)], store, **kwargs)
    assert store.calls == []


def test_huge_limit_is_no_limit(impl):
    assert len(impl.revalidate([(1, 0.5), (1, 0.4)], {1: 1}, limit=2**80)) == 2


# --- the result type ----------------------------------------------------------------------------


def test_revalidated_is_an_immutable_unpackable_triple():
    (hit,) = rankfusion.revalidate([("doc", 0.25)], {"doc": {"title": "t"}})
    id, record, score = hit
    assert (id, record, score) == ("doc", {"title": "t"}, 0.25)
    assert len(hit) == 3 and hit[0] == "doc" and hit[-1] == 0.25 and hit[1] is record
    with pytest.raises(IndexError):
        hit[3]
    with pytest.raises(AttributeError):
        hit.score = 1.0
    assert hit.to_dict() == {"id": "doc", "record": {"title": "t"}, "score": 0.25}
    assert repr(hit) == "Revalidated(id='doc', record={'title': 't'}, score=0.25)"
    assert pickle.loads(pickle.dumps(hit)) == hit
    assert hit == rankfusion.Revalidated("doc", {"title": "t"}, 0.25)
    # A tuple with names: equal to the plain tuple of its fields.
    assert hit == ("doc", {"title": "t"}, 0.25) and isinstance(hit, tuple)
    assert hash(rankfusion.Revalidated(1, "r", 0.5)) == hash(rankfusion.Revalidated(1, "r", 0.5))
    with pytest.raises(TypeError):
        hash(hit)  # its record, a dict, is unhashable


# --- revalidate_batch ---------------------------------------------------------------------------


class Liveness:
    def __init__(self, live):
        self.live = np.asarray(sorted(live), dtype=np.int64)
        self.calls = []

    def __call__(self, ids):
        self.calls.append(ids.copy())
        assert ids.dtype == np.int64 and ids.ndim == 1
        return np.isin(ids, self.live)


def test_batch_rows_keep_live_in_order(impl):
    ids = np.array([[1, 2, 3, -1], [3, 3, 9, 1], [-1, -1, -1, -1], [8, 9, 8, 9]])
    scores = np.arange(16, dtype=np.float64).reshape(4, 4) / 10
    is_live = Liveness({1, 3, 8})
    out = impl.revalidate_batch(ids, scores, is_live)
    assert len(is_live.calls) == 1
    assert is_live.calls[0].tolist() == [1, 2, 3, 9, 8]  # first seen, row by row; no pads
    out_ids, out_scores, counts = out
    assert out_ids.tolist() == [[1, 3, -1], [3, 3, 1], [-1, -1, -1], [8, 8, -1]]
    assert counts.tolist() == [2, 3, 0, 2]
    np.testing.assert_array_equal(
        out_scores, [[0.0, 0.2, np.nan], [0.4, 0.5, 0.7], [np.nan] * 3, [1.2, 1.4, np.nan]]
    )
    assert out_ids.dtype == np.int64 and out_scores.dtype == np.float64
    assert counts.dtype == np.int64


def test_batch_limit_and_width(impl):
    ids = np.array([[1, 2, 3], [4, 5, 6]])
    scores = np.zeros((2, 3))
    everything = lambda ids: np.ones(len(ids), dtype=bool)
    assert impl.revalidate_batch(ids, scores, everything, limit=2).ids.tolist() == [[1, 2], [4, 5]]
    assert impl.revalidate_batch(ids, scores, everything, limit=10).ids.shape == (2, 3)
    nothing = lambda ids: np.zeros(len(ids), dtype=bool)
    out = impl.revalidate_batch(ids, scores, nothing)
    assert out.ids.shape == (2, 0) and out.counts.tolist() == [0, 0]
    out = impl.revalidate_batch(ids, scores, nothing, limit=2)
    assert out.ids.tolist() == [[-1, -1], [-1, -1]] and np.isnan(out.scores).all()


def test_batch_uint64_ids_that_fit(impl):
    ids = np.array([[2**63 - 1, 5]], dtype=np.uint64)  # hnswlib and usearch return uint64 labels
    out = impl.revalidate_batch(ids, [[0.5, 0.25]], lambda u: u == 5)
    assert out.ids.tolist() == [[5]] and out.ids.dtype == np.int64


def test_batch_custom_pad_and_dtypes(impl):
    ids = np.array([[0, 7, 0, 7]], dtype=np.uint16)
    scores = np.array([[1, 2, 3, 4]], dtype=np.int32)
    is_live = Liveness({7})
    out = impl.revalidate_batch(ids, scores, is_live, pad=0)
    assert is_live.calls[0].tolist() == [7]
    assert out.ids.tolist() == [[7, 7]] and out.scores.tolist() == [[2.0, 4.0]]
    out = impl.revalidate_batch([[5, -1]], [[0.5, 0.25]], lambda ids: [True])
    assert out.ids.tolist() == [[5]]


@pytest.mark.parametrize(
    "ids, limit",
    [
        (np.full((3, 4), -1), None),  # all pads
        (np.zeros((0, 4), dtype=np.int64), None),  # no rows
        (np.zeros((3, 0), dtype=np.int64), 5),  # no columns
        (np.array([[1, 2]]), 0),  # limit 0
    ],
)
def test_batch_no_call_when_nothing_to_ask(impl, ids, limit):
    def is_live(ids):
        raise AssertionError("is_live must not be called")

    out = impl.revalidate_batch(ids, np.zeros(ids.shape), is_live, limit=limit)
    assert out.counts.tolist() == [0] * ids.shape[0]
    assert out.ids.shape == (ids.shape[0], 0 if limit is None else min(limit, ids.shape[1]))


def test_batch_inputs_not_modified_and_strided_views(impl):
    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    ids = base[:, ::2]  # not contiguous
    scores = np.linspace(0, 1, 24).reshape(4, 6)[:, ::2]
    before = (ids.copy(), scores.copy())
    out = impl.revalidate_batch(ids, scores, lambda u: u % 4 == 0)
    assert out.ids.tolist() == [[0, 4], [8, -1], [12, 16], [20, -1]]
    assert out.scores[:, 0].tolist() == [scores[0, 0], scores[1, 1], scores[2, 0], scores[3, 1]]
    np.testing.assert_array_equal(ids, before[0])
    np.testing.assert_array_equal(scores, before[1])


@pytest.mark.parametrize(
    "ids, scores, exc, words",
    [
        (np.zeros((2, 2)), np.zeros((2, 2)), TypeError, "ids"),  # float ids
        (np.full((2, 2), 2**63, dtype=np.uint64), np.zeros((2, 2)), ValueError, "ids"),
        (np.zeros((2, 2), dtype=bool), np.zeros((2, 2)), TypeError, "ids"),
        ([["a", "b"]], np.zeros((1, 2)), TypeError, "ids"),
        (np.zeros(4, dtype=np.int64), np.zeros(4), ValueError, "ids"),  # 1-D
        (np.zeros((1, 2, 2), dtype=np.int64), np.zeros((1, 2, 2)), ValueError, "ids"),
        ([[1, 2], [3]], np.zeros((2, 2)), ValueError, "ids"),  # ragged
        (np.zeros((2, 2), dtype=np.int64), np.zeros((2, 3)), ValueError, "shape"),
        (np.zeros((2, 2), dtype=np.int64), np.zeros((2, 2), dtype=complex), TypeError, "scores"),
        (np.zeros((2, 2), dtype=np.int64), np.zeros((2, 2), dtype=bool), TypeError, "scores"),
        (np.zeros((2, 2), dtype=np.int64), [[0.1, 0.2], [0.3]], ValueError, "scores"),
        (np.zeros((2, 2), dtype=np.int64), np.zeros(4), ValueError, "scores"),
    ],
)
def test_batch_bad_arrays(impl, ids, scores, exc, words):
    with pytest.raises(exc, match=words):
        impl.revalidate_batch(ids, scores, lambda u: np.ones(len(u), dtype=bool))


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"limit": -1}, ValueError, "limit"),
        ({"limit": False}, TypeError, "limit"),
        ({"pad": True}, TypeError, "pad"),
        ({"pad": 1.0}, TypeError, "pad"),
        ({"pad": None}, TypeError, "pad"),
        ({"pad": 2**63}, ValueError, "pad"),
        ({"pad": -(2**63) - 1}, ValueError, "pad"),
    ],
)
def test_batch_bad_keywords(impl, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        impl.revalidate_batch([[1]], [[0.5]], lambda u: [True], **kwargs)


@pytest.mark.parametrize(
    "is_live, exc, words",
    [
        (None, TypeError, "is_live"),
        ("alive", TypeError, "is_live"),
        (lambda u: np.ones(len(u), dtype=np.int64), TypeError, "is_live"),  # not bool
        (lambda u: [1] * len(u), TypeError, "is_live"),
        (lambda u: None, TypeError, "is_live"),
        (lambda u: np.ones(len(u) + 1, dtype=bool), ValueError, "is_live"),
        (lambda u: np.ones((len(u), 1), dtype=bool), ValueError, "is_live"),
        (lambda u: True, ValueError, "is_live"),
    ],
)
def test_batch_bad_is_live(impl, is_live, exc, words):
    with pytest.raises(exc, match=words):
        impl.revalidate_batch([[1, 2], [2, 3]], np.zeros((2, 2)), is_live)


def test_batch_is_live_exceptions_propagate(impl):
    def is_live(ids):
        raise ConnectionError("store down")

    with pytest.raises(ConnectionError):
        impl.revalidate_batch([[1]], [[0.5]], is_live)


def test_batch_extreme_ids(impl):
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    ids = np.array([[big, small, 0, big], [small, -1, 5, 0]])
    out = impl.revalidate_batch(ids, np.ones((2, 4)), lambda u: u != 0)
    assert out.ids.tolist() == [[big, small, big], [small, 5, -1]]


def test_revalidated_batch_type():
    out = rankfusion.revalidate_batch([[1, 2]], [[0.5, 0.25]], lambda u: u > 1)
    ids, scores, counts = out
    assert ids is out.ids and scores is out.scores and counts is out.counts
    assert len(out) == 3 and out[0] is out.ids and out[-1] is out.counts
    with pytest.raises(AttributeError):
        out.ids = None
    with pytest.raises(IndexError):
        out[3]
    again = pickle.loads(pickle.dumps(out))
    assert again.ids.tolist() == [[2]] and again.scores.tolist() == [[0.25]]
    assert repr(out).startswith("RevalidatedBatch(ids=array([[2]]")


def _child(queue):
    out = rankfusion.revalidate_batch(
        np.arange(40000).reshape(200, 200), np.zeros((200, 200)), lambda u: u % 2 == 0
    )
    queue.put(int(out.counts.sum()))


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_batch_after_fork():
    """rayon's pool, started in the parent, must not hang a forked child."""
    rankfusion.revalidate_batch(
        np.arange(40000).reshape(200, 200), np.zeros((200, 200)), lambda u: u > 0
    )
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        pytest.fail("revalidate_batch hung in a forked child")
    assert queue.get(timeout=5) == 20000


@pytest.mark.parametrize("dtype", ["<u8", ">u8"])
def test_batch_uint64_ids_beyond_int64_are_refused_in_either_byte_order(impl, dtype):
    scores = np.zeros((1, 3))
    everything = lambda ids: np.ones(len(ids), dtype=bool)
    with pytest.raises(rankfusion.FusionError) as e:
        impl.revalidate_batch(np.array([[1, 2**63 + 5, 3]], dtype=dtype), scores, everything)
    assert e.value.argument == "ids"
    assert str(e.value) == "ids must fit in int64, got np.uint64(9223372036854775813)"
    out = impl.revalidate_batch(np.array([[1, 2**63 - 1, 3]], dtype=dtype), scores, everything)
    assert out.ids.tolist() == [[1, 2**63 - 1, 3]]


def test_numpy_scalars_as_ids_and_scores_read_as_the_reference_reads_them():
    class Floaty(float):
        def __float__(self):
            return 5.0

    store = Store({1: "a", 2: "b", 3: "c"})
    forms = [
        [(np.int64(1), np.float64(0.5)), (np.int64(2), np.float32(0.25))],
        [(1, np.float16(0.5)), (np.uint8(2), np.int64(3)), (3, np.uint64(2**64 - 1))],
        [(1, Floaty(0.5)), (2, np.longdouble(0.25)), (3, np.bool_(True))],
        [(1, np.float64("nan")), (2, 0.25)],
    ]
    for candidates in forms:
        outcomes = []
        for module in (rankfusion, rankfusion.reference):
            try:
                out = module.revalidate(candidates, store)
                outcomes.append(
                    [(type(r.id), r.id, r.record, type(r.score), r.score.hex()) for r in out]
                )
            except (TypeError, ValueError) as e:
                outcomes.append((type(e), str(e)))
        assert outcomes[0] == outcomes[1], candidates
