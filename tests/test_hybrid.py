"""The hybrid pipeline: pool sizing, search, revalidation, in-engine filter, truncation, RRF."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rankfusion
from rankfusion import HybridHit, SQLiteStore, hybrid_search

TEXTS = {
    1: "wing flutter at supersonic speed",
    2: "heat transfer in a laminar boundary layer",
    3: "boundary layer transition on a flat plate",
    4: "flutter of panels in supersonic flow",
    5: "buckling of thin cylindrical shells",
}
EMBEDDINGS = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0.2], [0, 0, 1]], dtype=np.float32)
EMBEDDINGS /= np.linalg.norm(EMBEDDINGS, axis=1, keepdims=True)


@pytest.fixture
def store():
    s = SQLiteStore()
    s.add_documents(
        list(TEXTS),
        list(TEXTS.values()),
        EMBEDDINGS,
        metadata=[{"year": 1950 + i} for i in TEXTS],
    )
    yield s
    s.close()


def ids(hits):
    """The ids of hybrid hits or of (id, score) pairs."""
    return [h[0] for h in hits]


def test_small_corpus_expected_ranking(store):
    # keyword: [1, 4] (doc 1 is shorter); vector for [1, 0, .2]: [4, 1, 5].
    assert ids(store.keyword_search("supersonic flutter", 9)) == [1, 4]
    assert ids(store.vector_search([1, 0, 0.2], 3)) == [4, 1, 5]
    hits = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3)
    # 1 and 4 tie at 1/61 + 1/62: the key met first in the interleaved scan (keyword rank 1) wins.
    assert ids(hits) == [1, 4, 5]
    assert hits[0].score == hits[1].score == 1 / 61 + 1 / 62
    assert hits[2].score == 1 / 63
    assert hits[0].record.text == TEXTS[1]

    # Weights favour the vector list.
    assert ids(
        hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3, weights=[1, 2])
    ) == [
        4,
        1,
        5,
    ]
    # The two lists disagree: keyword [2], vector [5, 3, 4].
    assert ids(hybrid_search(store, "heat transfer", [0, 0, 1], limit=3)) == [2, 5, 3]


def test_soft_deleted_documents_never_come_back(store):
    store.delete(4)
    assert ids(hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3)) == [1, 5, 3]


def test_stale_vector_index_is_revalidated(store):
    class StaleIndex:
        filtering = "none"

        def vector_search(self, vector, k):
            return [(4, 0.99), (404, 0.98), (1, 0.97)][:k]  # 404 never existed

    store.delete(4)
    hits = hybrid_search(store, None, [1, 0, 0], vector_index=StaleIndex(), limit=5)
    assert ids(hits) == [1]


def test_trace_keeps_raw_per_list_scores(store):
    keyword = dict(store.keyword_search("supersonic flutter", 10))
    vector = dict(store.vector_search([1, 0, 0.2], 10))
    hits = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3, trace=True)
    first = hits[0]
    assert [(c.list_index, c.rank) for c in first.contributions] == [(0, 1), (1, 2)]
    assert first.contributions[0].score == keyword[1]  # the BM25 score
    assert first.contributions[1].score == vector[1]  # the cosine similarity
    d = first.to_dict()
    assert d["id"] == 1 and [c["list"] for c in d["contributions"]] == ["keyword", "vector"]
    assert d["contributions"][0]["score"] == keyword[1]
    assert hits[2].to_dict()["contributions"][0]["list"] == "vector"
    assert hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=1)[0].contributions is None


def test_where_filters_both_lists(store):
    recent = lambda doc: doc.metadata["year"] >= 1954
    hits = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=5, where=recent)
    assert ids(hits) == [4, 5]


def test_one_list_only(store):
    assert ids(hybrid_search(store, "supersonic flutter", None)) == [1, 4]
    assert ids(hybrid_search(store, None, [0, 1, 0], limit=2)) == [2, 3]
    assert hybrid_search(store, None, None) == []
    assert hybrid_search(store, "supersonic", [1, 0, 0], limit=0) == []


def test_window_deeper_than_limit(store):
    # A window of 5 reads the whole vector list [5, 3, 4, 1, 2]: doc 2 gains its rank 5 there.
    hits = hybrid_search(store, "heat transfer", [0, 0, 1], limit=2, window=5)
    assert ids(hits) == [2, 5]
    assert hits[0].score == 1 / 61 + 1 / 65


def test_hybrid_hit_unpacks_as_id_score(store):
    (hit,) = hybrid_search(store, "buckling", None, limit=1)
    id, score = hit
    assert (id, score) == (5, 1 / 61) and len(hit) == 2 and hit[0] == 5
    assert isinstance(hit, HybridHit)


def test_hybrid_hits_are_the_instances_the_constructor_builds(store):
    for trace in (False, True):
        hits = hybrid_search(store, "boundary layer", [0, 1, 0], limit=3, trace=trace)
        assert len(hits) == 3
        for hit in hits:
            expected = HybridHit(hit.id, hit.score, store.get(hit.id), hit.contributions)
            assert type(hit) is HybridHit and vars(hit) == vars(expected)
            assert hit == expected and repr(hit) == repr(expected)
            assert (hit.contributions is None) is not trace
            with pytest.raises(dataclasses.FrozenInstanceError):
                hit.score = 0.0  # type: ignore[misc]


class FakeIndex:
    """An index over a fixed ranking that records how it is asked."""

    def __init__(self, ranking, filtering=None):
        self.ranking = ranking
        if filtering is not None:
            self.filtering = filtering
        self.calls = []

    def keyword_search(self, text, k, **kwargs):
        return self._search(k, kwargs)

    def vector_search(self, vector, k, **kwargs):
        return self._search(k, kwargs)

    def _search(self, k, kwargs):
        self.calls.append((k, sorted(kwargs)))
        ranking = self.ranking
        if "where" in kwargs:
            ranking = [(i, s) for i, s in ranking if kwargs["where"](RECORDS[i])]
        self.returned = ranking[:k]
        return self.returned


RECORDS = {i: {"id": i, "lang": "en" if i % 2 else "fr"} for i in range(1, 30)}


class DictStore:
    def __init__(self):
        self.batches = []

    def get(self, id):
        raise AssertionError("the batch path is used")

    def get_many(self, ids):
        self.batches.append(list(ids))
        return {i: RECORDS[i] for i in ids if i in RECORDS}


@pytest.mark.parametrize(
    "filtering, pool, gets_where",
    [
        ("pre", 2, True),
        ("post", 6, True),
        ("none", 6, False),
        ("unknown", 6, False),
        (None, 6, False),
    ],
)
def test_pool_sizing_by_filtering_capability(filtering, pool, gets_where):
    ranking = [(i, 1 - i / 100) for i in range(1, 30)]
    keyword = FakeIndex(ranking, filtering)
    vector = FakeIndex(ranking[::-1], filtering)
    store = DictStore()
    english = lambda r: r["lang"] == "en"
    hits = hybrid_search(
        store, "q", [0.0], keyword_index=keyword, vector_index=vector, limit=2, where=english
    )
    expected_kwargs = ["where"] if gets_where else []
    assert keyword.calls == [(pool, expected_kwargs)] and vector.calls == [(pool, expected_kwargs)]
    # one batched revalidation of the union of both lists ("where" needs the records)
    (batch,) = store.batches
    assert batch == list(dict.fromkeys(i for i, _ in keyword.returned + vector.returned))
    assert all(RECORDS[h.id]["lang"] == "en" for h in hits) and len(hits) == 2


def test_bad_arguments_fail_before_any_search():
    index = FakeIndex([(1, 1.0)], "none")
    store = DictStore()
    for kwargs, exc in [
        ({"limit": -1}, ValueError),
        ({"limit": 1.5}, TypeError),
        ({"window": -2}, ValueError),
        ({"k": -1}, ValueError),
        ({"weights": [1.0]}, ValueError),
        ({"multiplier": 0}, ValueError),
        ({"where": "en"}, TypeError),
        ({"trace": 1}, TypeError),
    ]:
        with pytest.raises(exc):
            hybrid_search(store, "q", [0.0], keyword_index=index, vector_index=index, **kwargs)
    assert index.calls == [] and store.batches == []


def test_the_protocols_are_public():
    assert rankfusion.hybrid.LISTS == ("keyword", "vector")
    assert isinstance(FakeIndex([], "pre"), rankfusion.VectorIndex)
    assert isinstance(DictStore(), rankfusion.RecordStore)


# --- one snapshot: both searches first, then one check of the union ------------------------------


class GetManyOnly:
    """A store without live_ids: the records of the union are looked up by get_many."""

    def __init__(self, store):
        self.store = store
        self.calls = []

    def get(self, id):
        self.calls.append(("get", id))
        return self.store.get(id)

    def get_many(self, ids):
        self.calls.append(("get_many", list(ids)))
        return self.store.get_many(ids)


class GetOnly:
    """A store with get alone: looked up one id at a time."""

    def __init__(self, store):
        self.store = store

    def get(self, id):
        return self.store.get(id)


class Spy(GetManyOnly):
    """A store with live_ids too: records every call."""

    def live_ids(self, ids):
        self.calls.append(("live_ids", list(ids)))
        return self.store.live_ids(ids)


def deleting_vector_index(store, id):
    """A vector index that deletes ``id`` once it has answered, as another request would
    between the two searches."""

    class Index:
        filtering = "none"

        def vector_search(self, vector, k):
            found = store.vector_search(vector, k)
            store.delete(id)
            return found

    return Index()


@pytest.mark.parametrize("kind", ["SQLiteStore", "live_ids", "get_many", "get", "where"])
def test_a_document_deleted_between_the_searches_never_comes_back(store, kind):
    # keyword [1, 4], vector [4, 1, 5, ...]: doc 1 is deleted after the keyword search found it
    stores = {"live_ids": Spy, "get_many": GetManyOnly, "get": GetOnly}
    records = stores.get(kind, lambda s: s)(store)
    where = (lambda doc: True) if kind == "where" else None
    index = deleting_vector_index(store, 1)
    hits = hybrid_search(
        records,
        "supersonic flutter",
        [1, 0, 0.2],
        keyword_index=store,
        vector_index=index,
        limit=5,
        where=where,
    )
    assert 1 not in ids(hits)
    # exactly what searching the store without doc 1 gives: the keyword list lost its rank 1
    assert hits == hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=5)
    assert ids(hits) == [4, 5, 3, 2]


def test_the_union_is_checked_by_one_ids_only_call_and_only_the_hits_are_hydrated(store):
    spy = Spy(store)
    hits = hybrid_search(
        spy,
        "supersonic flutter boundary",
        [1, 0, 0.2],
        keyword_index=store,
        vector_index=store,
        limit=2,
        window=4,
    )
    keyword = ids(store.keyword_search("supersonic flutter boundary", 12))
    vector = ids(store.vector_search([1, 0, 0.2], 12))
    assert spy.calls == [
        ("live_ids", list(dict.fromkeys(keyword + vector))),
        ("get_many", ids(hits)),
    ]
    assert len(hits) == 2 and all(h.record == store.get(h.id) for h in hits)


def test_with_where_the_records_of_the_union_are_one_get_many_call(store):
    spy = Spy(store)
    recent = lambda doc: doc.metadata["year"] >= 1954
    hits = hybrid_search(
        spy,
        "supersonic flutter",
        [1, 0, 0.2],
        keyword_index=store,
        vector_index=store,
        limit=5,
        where=recent,
    )
    assert ids(hits) == [4, 5]
    assert [name for name, _ in spy.calls] == ["get_many"]


def test_a_hit_deleted_after_the_check_is_left_out_not_returned_without_record(store):
    class DeletesAfterTheCheck(Spy):
        def live_ids(self, ids):
            live = super().live_ids(ids)
            self.store.delete(4)  # after the snapshot, before the records are read
            return live

    spy = DeletesAfterTheCheck(store)
    hits = hybrid_search(
        spy, "supersonic flutter", [1, 0, 0.2], keyword_index=store, vector_index=store, limit=3
    )
    assert ids(hits) == [1, 5]  # 4 was fused (live at the check) but is not returned
    assert all(h.record is not None for h in hits)


@pytest.mark.parametrize(
    "candidates, exc, match",
    [
        ([(1, 0.5), ("ab")], TypeError, r"candidates\[1\] must be an \(id, score\) pair"),
        ([(1, 0.5, 2)], ValueError, r"candidates\[0\] must be an \(id, score\) pair, got 3"),
        ([([1], 0.5)], TypeError, r"candidates\[0\]\[0\] is not hashable"),
        ([(1, "high")], TypeError, r"candidates\[0\]\[1\]"),
        (iter([(1, 0.5), "ab"]), TypeError, r"candidates\[1\] must be an \(id, score\) pair"),
    ],
)
def test_bad_candidates_are_named_as_revalidate_names_them(store, candidates, exc, match):
    class Index:
        filtering = "none"

        def vector_search(self, vector, k):
            return candidates

    with pytest.raises(exc, match=match):
        hybrid_search(store, "flutter", [1, 0, 0], vector_index=Index(), limit=3)


# --- candidates as (id, float) tuples take a one-pass path: the same hits as the general one -----


class AsGiven:
    """An index returning fixed candidates, as they are given (any shape)."""

    filtering = "none"

    def __init__(self, candidates):
        self.candidates = candidates

    def keyword_search(self, text, k):
        return self.candidates[:k]

    def vector_search(self, vector, k):
        return self.candidates[:k]


class LiveSet:
    """A store that answers liveness from a set and records the union it was asked about."""

    def __init__(self, live):
        self.live = live
        self.asked = []

    def live_ids(self, ids):
        self.asked.append(list(ids))
        return {i for i in ids if i in self.live}

    def get(self, id):
        return {"id": id} if id in self.live else None

    def get_many(self, ids):
        return {i: {"id": i} for i in ids if i in self.live}


KEYWORD = [(1, 3.0), ("b", 2.5), (2, 2.0), (1.0, 1.5), (True, 1.25), (7, 1.0), ((3, "t"), 0.5)]
VECTOR = [(2, 0.9), (9, 0.8), ("b", 0.7), (1, 0.6), (5, -0.1), (8, float("-inf"))]


@pytest.mark.parametrize("trace", [False, True])
@pytest.mark.parametrize("window, limit", [(2, 3), (3, 10), (100, 100)])
@pytest.mark.parametrize("weights", [None, [2.0, 0.5], [1.0, 0.0]])
@pytest.mark.parametrize(
    "general",
    [
        lambda c: [list(p) for p in c],  # lists, not tuples
        lambda c: [(i, np.float64(s)) for i, s in c],  # a float subclass
        lambda c: tuple(c),  # a tuple of pairs
    ],
    ids=["lists", "np.float64", "tuple"],
)
def test_tuple_pairs_fuse_as_the_general_path_does(general, weights, window, limit, trace):
    live = {1, "b", 2, 9, (3, "t"), 5}  # 7 and 8 are deleted; 1.0 and True are 1
    fast_store, general_store = LiveSet(live), LiveSet(live)
    fast = hybrid_search(
        fast_store, "q", [0.0], keyword_index=AsGiven(KEYWORD), vector_index=AsGiven(VECTOR),
        limit=limit, window=window, weights=weights, trace=trace,
    )  # fmt: skip
    slow = hybrid_search(
        general_store, "q", [0.0],
        keyword_index=AsGiven(general(KEYWORD)), vector_index=AsGiven(general(VECTOR)),
        limit=limit, window=window, weights=weights, trace=trace,
    )  # fmt: skip
    assert fast == slow and [vars(h) for h in fast] == [vars(h) for h in slow]
    # one liveness question about the union of the pools (window * 3 candidates of each list),
    # in first-seen order, each id once (dict semantics: 1.0 and True are the key 1)
    union = [1, "b", 2, 7, (3, "t"), 9, 5, 8] if window >= 3 else [1, "b", 2, 7, 9, 5, 8]
    assert fast_store.asked == general_store.asked == [union]
    assert 7 not in ids(fast) and 8 not in ids(fast)


def test_an_unhashable_id_among_tuple_pairs_is_named():
    bad = [(1, 0.5), ([2], 0.25)]
    with pytest.raises(TypeError, match=r"candidates\[1\]\[0\] is not hashable"):
        hybrid_search(LiveSet({1}), "q", None, keyword_index=AsGiven(bad), limit=3)


def search_meddled(keyword: list, meddle) -> list:
    """hybrid_search over the keyword candidates `keyword` (the index returns the list itself,
    not a copy) with a store whose liveness check calls `meddle()` before each answer."""

    class Meddling(set):
        def __contains__(self, id):
            meddle()
            return super().__contains__(id)

    class Store:
        def live_ids(self, ids):
            return Meddling(ids)

        def get(self, id):
            return {"id": id}

        def get_many(self, ids):
            return {i: {"id": i} for i in ids}

    class Same(AsGiven):
        def keyword_search(self, text, k):
            return self.candidates

    return hybrid_search(Store(), "q", None, keyword_index=Same(keyword), limit=5)


def test_a_liveness_check_that_changes_the_candidates_does_not_crash():
    keyword = [(i, 1.0 / i) for i in range(1, 9)]
    hits = search_meddled(keyword, keyword.clear)  # emptied while it is read
    assert ids(hits) == [1]  # read until the list ran out, nothing invented


def test_an_id_whose_hash_changes_the_candidates_does_not_crash():
    candidates = []

    class Meddling:
        def __hash__(self):
            candidates[1] = 12345  # no longer a pair, after the pairs were checked
            return 1

    candidates.extend([(Meddling(), 0.5), ("b", 0.25)])
    assert rankfusion._core._pairs_union([candidates]) is None  # the general path names it


def test_a_liveness_check_that_makes_a_candidate_no_pair_is_named():
    keyword = [(i, 1.0 / i) for i in range(1, 9)]

    def unmake_a_pair():  # after the pairs were checked, while they are read
        keyword[3] = "no pair"

    # The one-call path gives way to the general one, which names the candidate.
    with pytest.raises(TypeError, match=r"^candidates\[3\] must be an \(id, score\) pair"):
        search_meddled(keyword, unmake_a_pair)
