"""The SQLite store: soft deletes, one-statement get_many, FTS5 keyword search, exact vector search."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest

import rankfusion
from rankfusion.sqlite_store import Document, SQLiteStore, fts_query

TEXTS = {
    1: "wing flutter at supersonic speed",
    2: "heat transfer in a laminar boundary layer",
    3: "boundary layer transition on a flat plate",
    4: "flutter of panels in supersonic flow",
    5: "buckling of thin cylindrical shells",
}


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


EMBEDDINGS = {
    1: unit([1, 0, 0]),
    2: unit([0, 1, 0]),
    3: unit([0, 1, 1]),
    4: unit([1, 0, 0.2]),
    5: unit([0, 0, 1]),
}


@pytest.fixture
def store():
    s = SQLiteStore()
    ids = list(TEXTS)
    s.add_documents(
        ids,
        [TEXTS[i] for i in ids],
        np.stack([EMBEDDINGS[i] for i in ids]),
        titles=[f"doc {i}" for i in ids],
        metadata=[{"year": 1950 + i} for i in ids],
    )
    yield s
    s.close()


class StatementCounter:
    def __init__(self, connection):
        self.connection = connection
        self.statements = []

    def __enter__(self):
        self.connection.set_trace_callback(self.statements.append)
        return self

    def __exit__(self, *exc):
        self.connection.set_trace_callback(None)


def test_documents_round_trip(store):
    doc = store.get(3)
    assert doc == Document(3, "doc 3", TEXTS[3], {"year": 1953})
    assert store.get(99) is None
    assert store.get("3") is None  # ids keep their type
    assert store.get(np.int64(3)) == doc and store.get(3.0) == doc  # dict semantics
    assert store.get(object()) is None
    assert len(store) == 5
    assert store.dim == 3


def test_documents_read_are_the_instances_the_constructor_builds(store):
    store.vector_search([1, 0, 0], 5)  # get_many then reads the rows by rowid
    for doc in (store.get(2), store.get_many([2])[2], store.get_many(range(600))[2]):
        expected = Document(2, "doc 2", TEXTS[2], {"year": 1952})
        assert type(doc) is Document and vars(doc) == vars(expected)
        assert doc == expected and repr(doc) == repr(expected)
        with pytest.raises(dataclasses.FrozenInstanceError):
            doc.text = "changed"  # type: ignore[misc]
    # every read builds its own records: changing one changes no other
    store.get(2).metadata["year"] = 0
    store.get_many([2])[2].metadata["year"] = 0
    assert store.get(2).metadata == store.get_many([2])[2].metadata == {"year": 1952}


def test_get_many_is_one_statement_whatever_the_number_of_ids(store):
    for ids in ([1], [1, 2, 3], list(range(-20, 20)), list(range(50_000))):  # > SQLite's 32766 vars
        with StatementCounter(store.connection) as counter:
            found = store.get_many(ids)
        assert len(counter.statements) == 1, counter.statements
        assert set(found) == set(ids) & set(TEXTS)


def test_get_many_skips_soft_deleted_and_unknown_rows(store):
    assert store.delete(2) is True
    assert store.delete(2) is False  # already deleted
    assert store.delete("nope") is False
    found = store.get_many([1, 2, 99, "x", np.int64(3), 3.5, None, (1,)])
    assert sorted(found) == [1, 3]
    assert found[1] == store.get(1)
    assert store.get(2) is None and len(store) == 4
    assert store.get_many([]) == {}


def test_soft_deleted_between_vector_search_and_revalidation_is_dropped(store):
    candidates = store.vector_search([1, 0, 0], 3)
    assert [id for id, _ in candidates] == [1, 4, 2]  # 2, 3 and 5 tie at 0: the earliest wins
    store.delete(4)  # e.g. by another request, after the index answered
    live = rankfusion.revalidate(candidates, store)
    assert [r.id for r in live] == [1, 2]
    assert [r.score for r in live] == [candidates[0][1], candidates[2][1]]
    assert live[0].record.text == TEXTS[1]


def test_deleted_by_another_connection_is_dropped(tmp_path):
    path = str(tmp_path / "docs.db")
    with SQLiteStore(path) as store:
        store.add_documents([1, 2], ["a b", "a c"], np.eye(2))
        candidates = store.vector_search([1, 0.5], 2)
        other = sqlite3.connect(path)
        with other:
            other.execute("UPDATE documents SET deleted = 1 WHERE id = 1")
        other.close()
        assert [r.id for r in rankfusion.revalidate(candidates, store)] == [2]
        # The vector snapshot notices the other connection's commit too.
        assert [id for id, _ in store.vector_search([1, 0.5], 2)] == [2]


def test_vector_search_is_exact_best_first_ties_by_insertion(store):
    rng = np.random.default_rng(7)
    s = SQLiteStore()
    vectors = rng.normal(size=(200, 8)).astype(np.float32)
    vectors[50] = vectors[10]  # a tie: the earlier-added document wins
    s.add_documents(list(range(200)), [""] * 200, vectors)
    query = vectors[10] + 0.01
    got = s.vector_search(query, 20)
    sims = vectors @ query.astype(np.float32)
    expected = sorted(range(200), key=lambda i: (-sims[i], i))[:20]
    assert [i for i, _ in got] == expected
    assert [s for _, s in got] == [float(sims[i]) for i in expected]
    assert s.vector_search(query, 0) == []
    assert len(s.vector_search(query, 1000)) == 200
    with pytest.raises(ValueError, match="dimension"):
        s.vector_search(np.zeros(3), 5)
    with pytest.raises(ValueError, match="finite"):
        s.vector_search(np.full(8, np.nan), 5)


def test_vector_snapshot_follows_adds_and_deletes(store):
    store.add(6, "new", unit([1, 0, 0.05]))
    assert [id for id, _ in store.vector_search([1, 0, 0], 2)] == [1, 6]
    store.delete(1)
    assert [id for id, _ in store.vector_search([1, 0, 0], 2)] == [6, 4]
    store.add(1, "back again", unit([1, 0, 0]))  # re-adding replaces and revives
    assert store.get(1).text == "back again"
    assert [id for id, _ in store.vector_search([1, 0, 0], 1)] == [1]


def test_keyword_search_bm25_best_first(store):
    hits = store.keyword_search("supersonic flutter", 10)
    assert {id for id, _ in hits} == {1, 4}
    assert all(score > 0 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert {id for id, _ in store.keyword_search("boundary layers", 10)} == {2, 3}  # stemmed
    assert len(store.keyword_search("supersonic", 1)) == 1
    store.delete(4)
    assert [id for id, _ in store.keyword_search("supersonic flutter", 10)] == [1]


@pytest.mark.parametrize(
    "text",
    [
        'wing" OR "x',
        "wing AND NOT flutter",
        "NEAR(wing flutter, 2)",
        "wing*",
        "title:wing",
        "^wing",
        "(wing",
        "-wing +flutter",
        "'wing'",
        '""',
        "über flügel",
        "wing\x00flutter",
        "\\",
        "a" * 10_000,
    ],
)
def test_keyword_search_never_parses_user_text(store, text):
    hits = store.keyword_search(text, 5)  # never an FTS5 syntax error
    assert isinstance(hits, list)


def test_keyword_search_without_terms(store):
    assert store.keyword_search("", 5) == []
    assert store.keyword_search("?!. ,;", 5) == []
    assert store.keyword_search("wing", 0) == []


def test_fts_query():
    assert fts_query("Wing flutter?") == '"wing" OR "flutter"'
    assert fts_query("what is the wing", stopwords={"what", "is", "the"}) == '"wing"'
    assert fts_query("--") == ""


def test_stopwords(store):
    s = SQLiteStore(stopwords={"of"})
    s.add_documents([1, 2], ["buckling of shells", "of of of"])
    assert [id for id, _ in s.keyword_search("buckling of", 5)] == [1]


@pytest.mark.parametrize(
    "ids, exc",
    [
        ([1.5], TypeError),
        ([True], TypeError),
        ([None], TypeError),
        ([2**64], ValueError),
        ([1, 1], ValueError),
    ],
)
def test_bad_ids(ids, exc):
    s = SQLiteStore()
    with pytest.raises(exc):
        s.add_documents(ids, ["x"] * len(ids))


def test_bad_embeddings(store):
    with pytest.raises(ValueError, match="dimension"):
        store.add(9, "x", [1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        store.add(9, "x", [np.nan, 0.0, 0.0])
    with pytest.raises(ValueError, match="shape"):
        store.add_documents([7, 8], ["a", "b"], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="length"):
        store.add_documents([7, 8], ["a"])
    assert store.get(9) is None and store.get(7) is None  # nothing half-written


def test_string_ids_and_protocols():
    s = SQLiteStore()
    s.add("doc-1", "alpha beta", [1.0, 0.0], metadata={"lang": "en"})
    s.add("1", "alpha", [0.0, 1.0])
    assert s.get("doc-1").metadata == {"lang": "en"}
    assert s.get(1) is None and s.get("1").text == "alpha"
    assert isinstance(s, rankfusion.KeywordIndex)
    assert isinstance(s, rankfusion.VectorIndex)
    assert isinstance(s, rankfusion.RecordStore)


@pytest.mark.parametrize("bad", ["a\x00b", "\x00", "a\x00"])
def test_ids_with_nul_are_rejected_at_add(store, bad):
    # SQLite's JSON functions (get_many's one statement) end a string at NUL: such an id could
    # be stored and found by get and the searches, but never by get_many or hybrid_search.
    with pytest.raises(ValueError, match="id must not contain NUL"):
        store.add(bad, "wing flutter", [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="id must not contain NUL"):
        store.add_documents(["fine", bad], ["wing", "flutter"])
    assert store.get("fine") is None  # nothing half-written
    assert store.get(bad) is None and store.get_many([bad]) == {} and not store.delete(bad)
    assert len(store) == 5
    assert [id for id, _ in store.keyword_search("wing flutter", 10)] == [1, 4]


def test_unusual_str_ids_are_found_everywhere():
    s = SQLiteStore()
    ids = ["\x01", "\u2028", "😀", "\\", '"', "a\tb", "\x7f", "\ufeff", "a b", "'; --"]
    s.add_documents(ids, ["wing"] * len(ids), np.eye(len(ids)))
    assert sorted(s.get_many(ids)) == sorted(ids)
    assert all(s.get(i).id == i for i in ids)
    assert sorted(id for id, _ in s.keyword_search("wing", 99)) == sorted(ids)
    hits = rankfusion.hybrid_search(s, "wing", np.ones(len(ids)), limit=99)
    assert sorted(h.id for h in hits) == sorted(ids)


@pytest.mark.parametrize("k", [2**63 - 1, 2**63, 2**64, 10**30])
def test_huge_k_means_no_bound(store, k):
    everything = store.keyword_search("boundary layer flutter", 5)
    assert len(everything) == 4
    assert store.keyword_search("boundary layer flutter", k) == everything
    assert store.vector_search([1, 0, 0], k) == store.vector_search([1, 0, 0], 5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 2**62},
        {"limit": 2**64},
        {"window": 2**64},
        {"window": 2**62, "multiplier": 2**62},
        {"multiplier": 2**64},
        {"limit": 10**30, "window": 10**30, "multiplier": 10**30},
    ],
)
def test_hybrid_search_huge_sizes_mean_no_bound(store, kwargs):
    kwargs = {"limit": 10, **kwargs}  # window defaults to limit
    everything = rankfusion.hybrid_search(store, "wing layer", [0, 1, 0], limit=10)
    assert len(everything) == 5
    assert rankfusion.hybrid_search(store, "wing layer", [0, 1, 0], **kwargs) == everything
    assert rankfusion.hybrid_search(store, "wing", None, **kwargs) == rankfusion.hybrid_search(
        store, "wing", None, limit=10
    )


def test_live_ids_reads_only_ids_and_skips_deleted_and_unknown(store):
    store.delete(2)
    asked = [1, 2, 99, "1", 3.0, True, np.int64(5), 3.5, None, (1,), 2**70]
    with StatementCounter(store.connection) as counter:
        live = store.live_ids(asked)
    assert live == {1, 3, 5} and all(type(i) is int for i in live)
    (statement,) = counter.statements  # ids only: no document is read
    assert statement.startswith("SELECT id FROM documents WHERE deleted = 0 AND id IN (")
    assert store.live_ids([]) == set() and store.live_ids([2, 99]) == set()
    with StatementCounter(store.connection) as counter:
        assert store.live_ids(range(50_000)) == {1, 3, 4, 5}  # > SQLite's 32766 variables
    assert len(counter.statements) == 1


def write_directly(store, _):
    with store.connection:
        store.connection.execute("UPDATE documents SET deleted = 1 WHERE id = 4")


def write_from_another_connection(store, path):
    other = sqlite3.connect(path)
    with other:
        other.execute("UPDATE documents SET deleted = 1 WHERE id = 4")
    other.close()


@pytest.mark.parametrize(
    "delete",
    [lambda store, _: store.delete(4), write_directly, write_from_another_connection],
    ids=["delete", "the store's connection", "another connection"],
)
def test_after_a_vector_search_live_ids_and_get_many_still_see_every_write(tmp_path, delete):
    path = str(tmp_path / "docs.db")
    with SQLiteStore(path) as s:
        s.add_documents(list(TEXTS), list(TEXTS.values()), np.stack(list(EMBEDDINGS.values())))
        s.vector_search([1, 0, 0], 2)  # reads which rows are live: live_ids and get_many use it
        with StatementCounter(s.connection) as counter:
            assert s.live_ids([1, 4, 99]) == {1, 4}
            assert sorted(s.get_many([1, 4, 99])) == [1, 4]
        assert "PRAGMA data_version" in counter.statements
        delete(s, path)
        assert s.live_ids([1, 4, 99]) == {1}
        assert sorted(s.get_many([1, 4, 99])) == [1]
        assert s.get_many([4]) == {} and s.get(4) is None
        assert [id for id, _ in s.vector_search([1, 0, 0], 2)] == [1, 2]
        s.vector_search([1, 0, 0], 2)
        assert s.live_ids(list(TEXTS)) == {1, 2, 3, 5}
        assert s.get_many(list(TEXTS)) == {i: s.get(i) for i in (1, 2, 3, 5)}


def test_get_many_reads_the_same_documents_with_or_without_the_live_rows_read(store):
    ids = [5, "x", 1, 3.0, 1, None]
    before = store.get_many(ids)  # by id
    store.vector_search([1, 0, 0], 1)  # now by rowid
    assert store.get_many(ids) == before == {i: store.get(i) for i in (1, 3, 5)}
    assert store.get_many(range(600)) == {i: store.get(i) for i in TEXTS}  # > 500: one JSON list
    store.add(6, "no metadata")
    store.vector_search([1, 0, 0], 1)
    assert store.get_many([6]) == {6: Document(6, "", "no metadata", {})}
