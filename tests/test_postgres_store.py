"""PostgresStore against a real PostgreSQL 18 + pgvector server (the session's EmbeddedServer):
the SQLiteStore interface, BM25 and vector search against independent oracles, the one-statement
SQL RRF against hybrid_search, the snapshot, schema on demand, and bad input."""

from __future__ import annotations

import inspect
import json
import math
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg_pool import ConnectionPool

import rankfusion
from rankfusion import SQLiteStore, hybrid_search
from rankfusion.postgres import Document, MetadataMatch, PostgresStore

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "cranfield"

TEXTS = {
    1: "wing flutter at supersonic speed",
    2: "heat transfer in a laminar boundary layer",
    3: "boundary layer transition on a flat plate",
    4: "flutter of panels in supersonic flow",
    5: "buckling of thin cylindrical shells",
}
EMBEDDINGS = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0.2], [0, 0, 1]], dtype=np.float32)
EMBEDDINGS /= np.linalg.norm(EMBEDDINGS, axis=1, keepdims=True)


def ids(hits):
    return [h[0] for h in hits]


def make_store(dsn, index=None, **kwargs):
    s = PostgresStore(dsn, dim=3, index=index, **kwargs)
    s.add_documents(
        list(TEXTS),
        list(TEXTS.values()),
        EMBEDDINGS,
        metadata=[{"year": 1950 + i} for i in TEXTS],
    )
    return s


@pytest.fixture(params=[None, "hnsw"], ids=["exact", "hnsw"])
def store(pg_dsn, request):
    s = make_store(pg_dsn, index=request.param)
    yield s
    s.close()


def truth(dsn, table="documents"):
    """(live count, live tokens) and the statistics row, read straight from the tables."""
    with psycopg.connect(dsn) as conn:
        live = conn.execute(
            f"SELECT count(*), coalesce(sum(length), 0) FROM {table} WHERE NOT deleted"
        ).fetchone()
        stats = conn.execute(f"SELECT documents, tokens FROM {table}_stats").fetchone()
    return tuple(live), tuple(stats)


# --- the interface ----------------------------------------------------------------------------


def test_same_methods_and_signatures_as_sqlite_store():
    methods = [
        "add",
        "add_documents",
        "delete",
        "get",
        "get_many",
        "live_ids",
        "keyword_search",
        "vector_search",
        "close",
        "__enter__",
        "__exit__",
        "__len__",
    ]
    for name in methods:
        sqlite = list(inspect.signature(getattr(SQLiteStore, name)).parameters.values())
        postgres = list(inspect.signature(getattr(PostgresStore, name)).parameters.values())
        assert [(p.name, p.kind, p.default) for p in sqlite] == [
            (p.name, p.kind, p.default) for p in postgres[: len(sqlite)]
        ], name
        # the searches take a filter besides: keyword-only, optional
        extra = [(p.name, p.kind, p.default) for p in postgres[len(sqlite) :]]
        assert extra == (
            [("where", inspect.Parameter.KEYWORD_ONLY, None)] if "search" in name else []
        ), name
    assert isinstance(PostgresStore.dim, property) and isinstance(SQLiteStore.dim, property)


def test_filtering_is_declared_by_the_index(store):
    assert store.filtering == ("pre" if store.index is None else "post")


def test_protocols_and_records(store):
    assert isinstance(store, rankfusion.KeywordIndex)
    assert isinstance(store, rankfusion.VectorIndex)
    assert isinstance(store, rankfusion.RecordStore)
    assert store.get(3) == Document(3, "", TEXTS[3], {"year": 1953})
    assert len(store) == 5 and store.dim == 3


def test_small_corpus_expected_ranking(store):
    # doc 1 and doc 4 hold both terms and have 4 tokens each: a BM25 tie, the earlier-added first
    keyword = store.keyword_search("supersonic flutter", 9)
    assert ids(keyword) == [1, 4] and keyword[0][1] == keyword[1][1] > 0
    assert ids(store.vector_search([1, 0, 0.2], 3)) == [4, 1, 5]
    hits = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3)
    assert ids(hits) == [1, 4, 5]
    assert hits[0].score == hits[1].score == 1 / 61 + 1 / 62 and hits[2].score == 1 / 63
    assert hits[0].record == Document(1, "", TEXTS[1], {"year": 1951})
    assert ids(hybrid_search(store, "heat transfer", [0, 0, 1], limit=3)) == [2, 5, 3]
    recent = lambda doc: doc.metadata["year"] >= 1954
    assert ids(hybrid_search(store, "supersonic flutter", [1, 0, 0.2], where=recent)) == [4, 5]


def test_trace_keeps_raw_per_list_scores(store):
    keyword = dict(store.keyword_search("supersonic flutter", 10))
    vector = dict(store.vector_search([1, 0, 0.2], 10))
    (first, *_) = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3, trace=True)
    assert [(c.list_index, c.rank) for c in first.contributions] == [(0, 1), (1, 2)]
    assert first.contributions[0].score == keyword[1]
    assert first.contributions[1].score == vector[1]


def test_soft_delete_and_re_add(store, pg_dsn):
    assert store.delete(4) and not store.delete(4) and not store.delete(404)
    assert store.get(4) is None and 4 not in store.live_ids([4]) and store.get_many([4]) == {}
    assert ids(store.keyword_search("supersonic flutter", 10)) == [1]
    assert 4 not in ids(store.vector_search([1, 0, 0.2], 10))
    assert ids(hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=3)) == [1, 5, 3]
    assert len(store) == 4
    store.add(4, "flutter again", [1, 0, 0.2], metadata={"v": 2})  # replaces and revives
    assert store.get(4) == Document(4, "", "flutter again", {"v": 2}) and len(store) == 5
    assert ids(store.vector_search([1, 0, 0.2], 1)) == [4]
    live, stats = truth(pg_dsn)
    assert live == stats and live[0] == 5


def test_lookups_follow_dict_semantics(store):
    store.delete(2)
    asked = [1, 2, 99, "1", 3.0, True, np.int64(5), 3.5, None, (1,), 2**70, float("nan")]
    assert store.live_ids(asked) == {1, 3, 5}
    assert all(type(i) is int for i in store.live_ids(asked))
    assert sorted(store.get_many(asked)) == [1, 3, 5]
    assert store.get(1.0).id == 1 and store.get("1") is None and store.get(None) is None
    assert store.live_ids([]) == set() and store.get_many([]) == {}
    assert store.live_ids(range(100_000)) == {1, 3, 4, 5}  # one array parameter


@pytest.mark.parametrize("k", [2**63 - 1, 2**63, 2**64, 10**30])
def test_huge_k_means_no_bound(store, k):
    everything = store.keyword_search("boundary layer flutter", 5)
    assert len(everything) == 4
    assert store.keyword_search("boundary layer flutter", k) == everything
    assert store.vector_search([1, 0, 0], k) == store.vector_search([1, 0, 0], 5)
    assert len(store.vector_search([1, 0, 0], k)) == 5


def test_zero_and_negative_k(store):
    assert store.keyword_search("wing", 0) == [] and store.vector_search([1, 0, 0], -1) == []
    with pytest.raises(TypeError):
        store.keyword_search("wing", 1.5)
    with pytest.raises(TypeError):
        store.vector_search([1, 0, 0], "3")


# --- bad input: clear errors, nothing written half ---------------------------------------------


def test_empty_and_stop_word_queries_are_empty_results(store):
    for text in ["", "   ", "?!. ,;", "the of and", "what is it", "\x00", "a\x00the"]:
        assert store.keyword_search(text, 5) == [], text
        hits = hybrid_search(store, text, [1, 0, 0], limit=5)
        assert ids(hits) == ids(store.vector_search([1, 0, 0], 5))


def test_stopwords_are_left_out_of_queries(pg_dsn):
    s = PostgresStore(pg_dsn, dim=1, stopwords={"buckling"})
    s.add_documents([1, 2], ["buckling of shells", "buckling buckling"], [[1.0], [1.0]])
    assert ids(s.keyword_search("buckling shells", 5)) == [1]
    assert s.keyword_search("buckling", 5) == []
    s.close()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("wing'); DROP TABLE documents; --", {1}),
        ("wing' | 'flutter", {1, 4}),
        ("wing & !flutter", {1, 4}),
        ("wing:*", {1}),
        ("wing <-> flutter", {1, 4}),
        ("(wing", {1}),
        ("'", set()),
        ("\\", set()),
        ("''", set()),
        ('"wing flutter"', {1, 4}),
        ("-wing +flutter", {1, 4}),
        ("wing OR flutter", {1, 4}),
        ("$$ wing $$", {1}),
        ("über flügel", set()),
        ("wing\x00flutter", {1, 4}),
        ("a" * 10_000, set()),
    ],
)
def test_keyword_search_never_parses_user_text(store, text, expected):
    # the words are stemmed and OR-ed: operators, quotes and punctuation are inert
    assert set(ids(store.keyword_search(text, 5))) == expected
    assert len(store) == 5


def test_unusual_ids_are_found_everywhere(pg_dsn):
    s = PostgresStore(pg_dsn, dim=10)
    weird = ["'; DROP TABLE documents; --", "\x01", "\u2028", "😀", "\\", '"', "a\tb", "$1", "%s"]
    weird.append("{a,b}")  # an array literal's syntax
    s.add_documents(weird, ["wing"] * len(weird), np.eye(len(weird)))
    assert sorted(s.get_many(weird)) == sorted(weird)
    assert s.live_ids(weird) == set(weird)
    assert all(s.get(i).id == i for i in weird)
    assert sorted(ids(s.keyword_search("wing", 99))) == sorted(weird)
    hits = hybrid_search(s, "wing", np.ones(len(weird)), limit=99)
    assert sorted(ids(hits)) == sorted(weird)
    assert s.delete(weird[0]) and s.get(weird[0]) is None and len(s) == len(weird) - 1
    s.close()


def bad_writes():
    good = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    return [
        # (ids, texts, embeddings, kwargs, exception, message)
        ([7, 8], ["a", "b"], np.ones((2, 2)), {}, ValueError, "dimension"),
        ([7, 8], ["a", "b"], np.array([[1, 0, np.nan], [0, 1, 0]]), {}, ValueError, "finite"),
        ([7, 8], ["a", "b"], np.array([[1, 0, np.inf], [0, 1, 0]]), {}, ValueError, "finite"),
        ([7, 8], ["a", "b"], np.ones((3, 3)), {}, ValueError, "shape"),
        ([7, 8], ["a", "b"], [["x", 1, 2], [0, 1, 0]], {}, ValueError, "numbers"),
        ([7, 8], ["a", 3], good, {}, TypeError, r"texts\[1\] must be a str"),
        ([7, 8], ["a", b"b"], good, {}, TypeError, r"texts\[1\] must be a str"),
        ([7, 8], ["a", None], good, {}, TypeError, r"texts\[1\] must be a str"),
        ([7, 8], ["a", "b\x00c"], good, {}, ValueError, "NUL"),
        ([7, 8], ["a", "b"], good, {"titles": ["t", 2]}, TypeError, r"titles\[1\]"),
        ([7, 8], ["a", "b"], good, {"titles": ["t\x00", ""]}, ValueError, "NUL"),
        ([7, "8"], ["a", "b"], good, {}, TypeError, "ids are ints"),
        (["x", 8], ["a", "b"], good, {}, TypeError, "ids are ints"),
        ([7, 8.0], ["a", "b"], good, {}, TypeError, "id must be an int or a str"),
        ([7, True], ["a", "b"], good, {}, TypeError, "id must be an int or a str"),
        ([7, None], ["a", "b"], good, {}, TypeError, "id must be an int or a str"),
        ([7, 2**63], ["a", "b"], good, {}, ValueError, "64 bits"),
        ([7, 7], ["a", "b"], good, {}, ValueError, "unique"),
        ([7, 8], ["a"], good, {}, ValueError, "same length"),
        ([7, 8], ["a", "b"], good, {"metadata": [{"x": float("nan")}, None]}, ValueError, "JSON"),
        ([7, 8], ["a", "b"], good, {"metadata": [{"x": object()}, None]}, TypeError, "JSON"),
        ([7, 8], ["a", "b"], good, {"metadata": [{"x": "a\x00"}, None]}, ValueError, "NUL"),
        ([7, 8], ["a", "b"], good, {"metadata": [[1, 2], None]}, TypeError, "mapping"),
    ]


@pytest.mark.parametrize("case", bad_writes(), ids=lambda c: c[-1])
def test_bad_writes_raise_and_write_nothing(store, pg_dsn, case):
    write_ids, texts, embeddings, kwargs, exc, match = case
    before = truth(pg_dsn)
    with pytest.raises(exc, match=match):
        store.add_documents(write_ids, texts, embeddings, **kwargs)
    assert store.get(7) is None and store.get(8) is None and store.get("x") is None
    assert truth(pg_dsn) == before and len(store) == 5


def test_ids_of_a_str_table(pg_dsn):
    s = PostgresStore(pg_dsn, dim=1)
    s.add_documents(["a", "b"], ["x", "y"], [[1.0], [2.0]])
    with pytest.raises(TypeError, match="ids are strs"):
        s.add(1, "z", [1.0])
    with pytest.raises(ValueError, match="NUL"):
        s.add_documents(["c", "d\x00"], ["x", "y"], [[1.0], [2.0]])
    assert s.get("c") is None and s.get(1) is None and s.live_ids(["a", 1, "d\x00"]) == {"a"}
    s.close()


def test_bad_queries(store):
    with pytest.raises(ValueError, match="dimension"):
        store.vector_search([1.0, 0.0], 5)
    with pytest.raises(ValueError, match="finite"):
        store.vector_search([np.nan, 0, 0], 5)
    with pytest.raises(ValueError, match="finite"):
        hybrid_search(store, "wing", [np.inf, 0, 0])
    with pytest.raises(TypeError, match="text must be a str"):
        store.keyword_search(b"wing", 5)
    with pytest.raises(TypeError, match="text must be a str"):
        store.keyword_search(None, 5)


def test_bad_constructor_arguments(pg_dsn):
    for kwargs, exc in [
        ({"metric": "dot"}, ValueError),
        ({"index": "ivfflat"}, ValueError),
        ({"dim": 0}, ValueError),
        ({"dim": 1.5}, TypeError),
        ({"table": ""}, ValueError),
        ({"table": "x" * 41}, ValueError),
        ({"b": 2.0}, ValueError),
        ({"k1": -1}, ValueError),
        ({"text_config": "eng\x00lish"}, ValueError),
        ({"pool_size": 0}, ValueError),
        ({"connect_timeout": 0}, ValueError),
        ({"statement_timeout": float("nan")}, ValueError),
    ]:
        with pytest.raises(exc):
            PostgresStore(pg_dsn, **kwargs)
    with pytest.raises(TypeError, match="dsn_or_connection"):
        PostgresStore(42)  # type: ignore[arg-type]


def test_the_first_write_needs_a_dimension(pg_dsn):
    s = PostgresStore(pg_dsn)
    assert s.dim is None and len(s) == 0 and s.keyword_search("wing", 5) == []
    assert s.vector_search([1.0, 2.0], 5) == [] and s.get(1) is None and s.live_ids([1]) == set()
    with pytest.raises(ValueError, match="dimension is unknown"):
        s.add(1, "wing")
    s.add(1, "wing", [1.0, 2.0])  # the embeddings give it
    s.add(2, "flutter")  # and from then on a document may have none
    assert s.dim == 2 and len(s) == 2
    assert ids(s.vector_search([1.0, 2.0], 5)) == [1]
    assert ids(s.keyword_search("flutter wing", 5)) == [1, 2]
    s.close()


# --- schema on demand, connections ------------------------------------------------------------


def test_an_existing_table_is_read_as_it_is(store, pg_dsn):
    with PostgresStore(pg_dsn, index=None) as again:
        assert again.dim == 3 and again.get(1).text == TEXTS[1]
        assert again.keyword_search("flutter", 5) == store.keyword_search("flutter", 5)
    with pytest.raises(ValueError, match="dim is 4"):
        PostgresStore(pg_dsn, dim=4)
    with pytest.raises(ValueError, match="text configuration"):
        PostgresStore(pg_dsn, text_config="simple")
    with PostgresStore(pg_dsn, table="other", dim=3) as other:  # another table beside it
        assert len(other) == 0
        other.add("a", "wing", [1, 0, 0])
        assert ids(other.keyword_search("wing", 5)) == ["a"] and len(store) == 5


def test_schema(store, pg_dsn):
    with psycopg.connect(pg_dsn) as conn:
        columns = dict(
            conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'documents' AND table_schema = current_schema()"
            ).fetchall()
        )
        indexes = dict(
            conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE tablename = 'documents' AND schemaname = current_schema()"
            ).fetchall()
        )
    assert columns["id"] == "bigint" and columns["tsv"] == "tsvector"
    assert columns["embedding"] == "USER-DEFINED" and columns["deleted"] == "boolean"
    assert "USING gin (tsv) WHERE (NOT deleted)" in indexes["documents_tsv"]
    hnsw = [d for d in indexes.values() if "hnsw" in d]
    if store.index == "hnsw":
        assert (
            len(hnsw) == 1 and "vector_cosine_ops" in hnsw[0] and "WHERE (NOT deleted)" in hnsw[0]
        )
    else:
        assert hnsw == []


def test_a_connection_or_a_pool_of_yours(pg_dsn):
    make_store(pg_dsn).close()
    with PostgresStore(pg_dsn, index=None) as own:
        expected = hybrid_search(own, "supersonic flutter", [1, 0, 0.2], limit=5)
    with psycopg.connect(pg_dsn) as conn:  # not autocommit
        s = PostgresStore(conn, index=None)
        assert hybrid_search(s, "supersonic flutter", [1, 0, 0.2], limit=5) == expected
        s.add(6, "flutter six", [1, 0, 0])
        assert s.get(6).text == "flutter six"
        with s.snapshot():
            with pytest.raises(RuntimeError, match="cannot write inside snapshot"):
                s.delete(6)
        s.close()
        assert not conn.closed  # yours: the store leaves it open
        conn.execute("SELECT 1")  # a transaction of yours is open
        with pytest.raises(RuntimeError, match="outside any transaction"):
            with PostgresStore(conn, index=None).snapshot():
                pass
        conn.rollback()
    with ConnectionPool(pg_dsn, kwargs={"autocommit": True}) as pool:
        s = PostgresStore(pool, index=None)
        assert s.delete(6)
        assert hybrid_search(s, "supersonic flutter", [1, 0, 0.2], limit=5) == expected
        s.close()
        assert not pool.closed


@pytest.mark.parametrize("metric", ["cosine", "l2", "ip"])
def test_metrics_give_higher_is_better_similarities(pg_dsn, metric):
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    s = PostgresStore(pg_dsn, metric=metric, index=None)
    s.add_documents(list(range(50)), ["x"] * 50, vectors)
    query = rng.normal(size=8).astype(np.float32)
    v, q = vectors.astype(np.float64), query.astype(np.float64)
    expected = {
        "cosine": v @ q / np.linalg.norm(v, axis=1) / np.linalg.norm(q),
        "l2": -np.linalg.norm(v - q, axis=1),
        "ip": v @ q,
    }[metric]
    got = s.vector_search(query, 50)
    order = np.argsort(-expected, kind="stable")
    assert ids(got) == order.tolist()
    # pgvector sums float32 products in float32: a few ulps of float32 apart from float64
    np.testing.assert_allclose([x for _, x in got], expected[order], rtol=1e-5, atol=1e-5)
    s.close()


def test_statistics_follow_every_write(pg_dsn):
    s = PostgresStore(pg_dsn, dim=1, index=None)
    s.add_documents([1, 2, 3], ["a b c wing", "flutter flutter", "x"], [[1.0], [1.0], [1.0]])
    s.delete(2)
    s.add(3, "a much longer text about wings and flutter", [1.0])
    s.add(2, "back", [1.0])
    s.delete(1)
    s.delete(1)
    live, stats = truth(pg_dsn)
    # live: 3 (much, longer, text, wing, flutter: "a", "about", "and" are stop words), 2 (back)
    assert live == stats == (2, 6)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM documents WHERE id = 3")  # a hard delete of someone else's
        assert truth(pg_dsn)[0] == truth(pg_dsn)[1] == (1, 1)
        conn.execute("TRUNCATE documents")
    assert truth(pg_dsn) == ((0, 0), (0, 0))
    s.close()


# --- the snapshot -------------------------------------------------------------------------------


def test_writes_committed_during_a_hybrid_search_are_not_seen(pg_dsn):
    """Doc 1 is deleted and doc 4 rewritten by another connection, committed, between the two
    searches: the search's snapshot predates both, so it returns what it would have returned
    before them -- doc 1 (live at the snapshot) and doc 4's old record."""
    store = make_store(pg_dsn)
    before = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=5, trace=True)

    class WritesAfterSearching:
        filtering = "none"

        def vector_search(self, vector, k):
            found = store.vector_search(vector, k)
            writer = threading.Thread(target=write)
            writer.start()
            writer.join()
            return found

    def write():
        with PostgresStore(pg_dsn) as other:  # its own pool: committed at once
            assert other.delete(1)
            other.add(4, "rewritten", [0, 1, 0], metadata={"year": 2000})

    during = hybrid_search(
        store,
        "supersonic flutter",
        [1, 0, 0.2],
        vector_index=WritesAfterSearching(),
        limit=5,
        trace=True,
    )
    assert during == before and ids(during) == [1, 4, 5, 3, 2]
    assert during[1].record == Document(4, "", TEXTS[4], {"year": 1954})
    after = hybrid_search(store, "supersonic flutter", [1, 0, 0.2], limit=5)
    assert 1 not in ids(after) and store.get(4).text == "rewritten"
    store.close()


def test_live_ids_in_a_snapshot_counts_what_its_searches_found(store, pg_dsn):
    """Inside a snapshot, the ids the store's searches returned are live at that snapshot (it
    does not move): live_ids answers for them without asking, and asks about the others --
    the same answer either way, whatever is committed meanwhile."""
    with store.snapshot():
        found = ids(store.keyword_search("boundary layer flutter", 10))
        assert sorted(found) == [1, 2, 3, 4]
        with PostgresStore(pg_dsn) as other:  # committed at once, after the snapshot began
            assert other.delete(2) and other.delete(5)
        assert store.live_ids([*found, 5, 99, "x"]) == {1, 2, 3, 4, 5}
        assert store.get_many([2, 5]).keys() == {2, 5}
    assert store.live_ids([1, 2, 3, 4, 5]) == {1, 3, 4}
    with store.snapshot():  # a new snapshot: nothing carried over
        assert store.live_ids([2, 5]) == set()


def test_a_snapshot_is_one_repeatable_read_read_only_transaction(store):
    with store.snapshot():
        conn = store.snapshot_connection
        settings = conn.execute(
            "SELECT current_setting('transaction_isolation'), "
            "current_setting('transaction_read_only'), now(), pg_current_snapshot()::text"
        ).fetchone()
        assert settings[:2] == ("repeatable read", "on")
        store.keyword_search("flutter", 5)
        store.vector_search([1, 0, 0], 5)
        store.live_ids([1, 2])
        with store.snapshot():  # nested: the same transaction
            assert store.snapshot_connection is conn
        again = conn.execute("SELECT now(), pg_current_snapshot()::text").fetchone()
        assert again == settings[2:]
    assert store.snapshot_connection is None


# --- Cranfield: the searches against independent oracles ---------------------------------------


def cranfield():
    docs = [json.loads(line) for line in (DATA / "docs.jsonl").open(encoding="utf-8")]
    queries = [line.rstrip("\n").split("\t", 1) for line in (DATA / "queries.tsv").open()]
    return (
        docs,
        np.load(DATA / "doc_embeddings.npy"),
        queries,
        np.load(DATA / "query_embeddings.npy"),
    )


@pytest.fixture(scope="module")
def cranfield_stores(pg_server):
    """The Cranfield documents in two tables of one schema: exact and HNSW."""
    schema = "cranfield"
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    dsn = f"{pg_server.dsn} options='-c search_path={schema},public'"
    docs, embeddings, queries, query_embeddings = cranfield()
    stores = {}
    for index in (None, "hnsw"):
        s = PostgresStore(dsn, table=f"cranfield_{index or 'exact'}", index=index)
        s.add_documents([d["id"] for d in docs], [d["text"] for d in docs], embeddings, titles=None)
        stores[index or "exact"] = s
    yield dsn, stores, embeddings, queries, query_embeddings
    for s in stores.values():
        s.close()


def bm25_oracle(dsn, table, text, k1=1.2, b=0.75):
    """BM25 computed in Python from each live document's lexemes and positions (read with
    unnest) and the query's lexemes: Lucene's idf, N and the mean length over the live rows."""
    with psycopg.connect(dsn) as conn:
        terms = {
            row[0]
            for row in conn.execute(
                "SELECT lexeme FROM unnest(to_tsvector('english', %s))", [text]
            ).fetchall()
        }
        rows = conn.execute(
            f"SELECT d.pk, d.id, u.lexeme, cardinality(u.positions) "
            f"FROM {table} d, unnest(d.tsv) u WHERE NOT d.deleted"
        ).fetchall()
        # every live document counts, those without a word too
        key = dict(conn.execute(f"SELECT pk, id FROM {table} WHERE NOT deleted").fetchall())
    tf: dict = {}
    length: Counter = Counter()
    for pk, _, lexeme, count in rows:
        length[pk] += count
        if lexeme in terms:
            tf.setdefault(pk, {})[lexeme] = count
    n, mean = len(key), sum(length.values()) / len(key)
    df = Counter(lexeme for found in tf.values() for lexeme in found)
    scores = {
        pk: sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            * f
            * (k1 + 1)
            / (f + k1 * (1 - b + b * length[pk] / mean))
            for t, f in found.items()
        )
        for pk, found in tf.items()
    }
    return [
        (key[pk], score, pk) for pk, score in sorted(scores.items(), key=lambda x: (-x[1], x[0]))
    ]


def test_keyword_search_is_bm25_of_the_term_statistics(cranfield_stores):
    dsn, stores, _, queries, _ = cranfield_stores
    store = stores["exact"]
    for _, text in queries[:40]:
        expected = bm25_oracle(dsn, "cranfield_exact", text)
        got = store.keyword_search(text, 2000)
        assert len(got) == len(expected) > 0
        # the same scores (summed in another order: within a few ulps) ...
        np.testing.assert_allclose([s for _, s in got], [s for _, s, _ in expected], rtol=1e-12)
        # ... and the same order, ties (equal within those ulps) to the earlier-added document
        assert ids(got) == [id for id, _, _ in expected]


def test_exact_vector_search_is_the_numpy_ranking(cranfield_stores):
    _, stores, embeddings, _, query_embeddings = cranfield_stores
    store = stores["exact"]
    docs = embeddings.astype(np.float64)
    # pgvector sums 384 float32 products (and the two squared norms) in float32: each sum is
    # within n * 2**-24 of the exact one for unit vectors, so a similarity is within 3n * 2**-24.
    tolerance = 3 * docs.shape[1] * 2.0**-24
    for query in query_embeddings[:40]:
        exact = docs @ query.astype(np.float64)
        exact /= np.linalg.norm(docs, axis=1) * np.linalg.norm(query.astype(np.float64))
        got = store.vector_search(query, 100)
        positions = [int(id) - 1 for id, _ in got]  # Cranfield's ids are 1..1400, added in order
        assert len(got) == 100
        np.testing.assert_allclose([s for _, s in got], exact[positions], rtol=0, atol=tolerance)
        # the order is numpy's but among similarities closer than the tolerance
        assert all(np.diff(exact[positions]) <= 2 * tolerance)
        kth = exact[positions[-1]]
        assert set(np.flatnonzero(exact > kth + 2 * tolerance)) <= set(positions)


def test_exact_search_stays_exact_on_a_table_with_an_hnsw_index(cranfield_stores):
    # the planner would answer ORDER BY distance from the HNSW index (at most ef_search rows)
    dsn, stores, _, _, query_embeddings = cranfield_stores
    with PostgresStore(dsn, table="cranfield_hnsw", index=None) as exact_over_hnsw:
        for query in query_embeddings[:10]:
            assert exact_over_hnsw.vector_search(query, 300) == stores["exact"].vector_search(
                query, 300
            )
            keep = lambda doc: int(doc.id) % 50 == 7
            assert exact_over_hnsw.vector_search(query, 20, where=keep) == stores[
                "exact"
            ].vector_search(query, 20, where=keep)


def test_hnsw_recall_at_100_against_exact(cranfield_stores):
    _, stores, _, _, query_embeddings = cranfield_stores
    recalls = []
    for query in query_embeddings:
        exact = set(ids(stores["exact"].vector_search(query, 100)))
        approximate = stores["hnsw"].vector_search(query, 100)
        assert len(approximate) == 100
        recalls.append(len(exact & set(ids(approximate))) / 100)
    assert np.mean(recalls) >= 0.95, np.mean(recalls)
    # the settings matter: pgvector's defaults (ef_search 40, no iterative scan) return 40 rows
    with stores["hnsw"].snapshot():
        conn = stores["hnsw"].snapshot_connection
        for query in query_embeddings[:5]:
            rows = conn.execute(
                "SELECT id FROM cranfield_hnsw WHERE NOT deleted AND embedding IS NOT NULL "
                "ORDER BY embedding <=> %s LIMIT 100",
                [query],
            ).fetchall()
            assert len(rows) == 40


def test_hybrid_search_equals_the_one_statement_sql_rrf(cranfield_stores):
    """With exact vector search, rankfusion's fused ids and scores are the SQL RRF's, bit for
    bit: the same two lists, 1/(k + rank) in float8 summed (two terms: a + b is b + a), ties
    to the id first met in the interleaved order."""
    _, stores, _, queries, query_embeddings = cranfield_stores
    store = stores["exact"]
    for window, k in [(100, 60), (20, 1)]:
        for (_, text), query in zip(queries[:40], query_embeddings[:40]):
            hits = hybrid_search(store, text, query, limit=2 * window, window=window, k=k)
            expected = store.sql_rrf(text, query, k=k, window=window, limit=2 * window)
            assert [(h.id, h.score) for h in hits] == expected
    # a stop-words-only query: the vector list alone, on both sides
    assert [(h.id, h.score) for h in hybrid_search(store, "the of", query_embeddings[0])] == (
        store.sql_rrf("the of", query_embeddings[0])
    )


# --- filters ------------------------------------------------------------------------------------


def test_metadata_match_is_the_same_predicate_in_sql_and_in_python(pg_dsn):
    values = [1, 1.0, 2, "1", "a", True, False, None, [1], {"x": 1}, 1.5]
    metadata = [{"v": v} for v in values] + [{}, {"w": 1}, {"v": 1, "w": "a"}]
    n = len(metadata)
    s = PostgresStore(pg_dsn, dim=2, index=None)
    s.add_documents(list(range(n)), ["wing"] * n, np.ones((n, 2)), metadata=metadata)
    records = s.get_many(range(n))
    for fields in [{"v": 1}, {"v": 1.0}, {"v": "1"}, {"v": True}, {"v": False}, {"v": None},
                   {"v": 1.5}, {"v": 1, "w": "a"}, {"w": 1}, {}, {"missing": None}]:  # fmt: skip
        match = MetadataMatch(fields)
        in_python = {i for i, record in records.items() if match(record)}
        in_sql = set(ids(s.keyword_search("wing", n, where=match)))
        assert in_sql == in_python == set(ids(s.vector_search([1, 1], n, where=match))), fields
    assert set(ids(s.keyword_search("wing", n, where=MetadataMatch(v=1)))) == {0, 1, 13}
    s.close()


def test_metadata_match_rejects_what_sql_cannot_hold():
    for fields, exc in [
        ({"v": [1]}, TypeError),
        ({"v": {"x": 1}}, TypeError),
        ({"v": float("nan")}, ValueError),
        ({"v": "a\x00"}, ValueError),
        ({1: "a"}, TypeError),
    ]:
        with pytest.raises(exc):
            MetadataMatch(fields)
    assert MetadataMatch({"a": 1}, b=2).fields == {"a": 1, "b": 2}


@pytest.fixture(scope="module")
def buckets(cranfield_stores):
    """The Cranfield stores with metadata {"bucket": i % 50}: 28 documents a bucket."""
    dsn, stores, embeddings, queries, query_embeddings = cranfield_stores
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("cranfield_exact", "cranfield_hnsw"):
            conn.execute(
                f"UPDATE {table} SET metadata = jsonb_build_object('bucket', id::int % 50)"
            )
    yield cranfield_stores
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("cranfield_exact", "cranfield_hnsw"):
            conn.execute(f"UPDATE {table} SET metadata = NULL")


def filtered(ranking, records, predicate, k):
    return [(id, score) for id, score in ranking if predicate(records[id])][:k]


def test_filters_come_before_the_top_k(buckets):
    """Exact vector search and keyword search with a filter return the top k of the documents
    it accepts -- the unfiltered ranking, filtered, cut at k -- whether the filter is SQL (a
    MetadataMatch) or a Python predicate streamed over the ranking."""
    _, stores, _, queries, query_embeddings = buckets
    store = stores["exact"]
    records = store.get_many(str(i) for i in range(1, 1401))
    match = MetadataMatch(bucket=7)
    python = lambda doc: doc.metadata["bucket"] == 7
    for (_, text), query in zip(queries[:10], query_embeddings[:10]):
        everything = store.vector_search(query, 2000)
        expected = filtered(everything, records, match, 10)
        assert len(expected) == 10
        assert store.vector_search(query, 10, where=match) == expected
        assert store.vector_search(query, 10, where=python) == expected
        keyword = store.keyword_search(text, 2000)
        expected = filtered(keyword, records, match, 10)
        assert store.keyword_search(text, 10, where=match) == expected
        assert store.keyword_search(text, 10, where=python) == expected
    with pytest.raises(TypeError, match="where must be callable"):
        store.keyword_search("wing", 5, where="bucket = 7")


def test_hnsw_with_a_filter_is_a_post_filter_that_iterative_scan_fills(buckets):
    """With HNSW a SQL WHERE filters the rows the index yields: with pgvector's defaults
    (ef_search 40, no iterative scan) a filter that keeps 1 document in 50 leaves about one of
    the 10 asked for; the store's iterative scan keeps the index going until 10 match, and finds
    the exact filtered top 10 (or nearly: the graph is approximate)."""
    _, stores, _, _, query_embeddings = buckets
    store, exact = stores["hnsw"], stores["exact"]
    match = MetadataMatch(bucket=7)
    defaults, recalls = [], []
    for query in query_embeddings[:20]:
        with store.snapshot():
            rows = store.snapshot_connection.execute(
                "SELECT id FROM cranfield_hnsw WHERE NOT deleted AND embedding IS NOT NULL "
                "AND metadata @> %s::jsonb ORDER BY embedding <=> %s LIMIT 10",
                [match.json, query],
            ).fetchall()
        defaults.append(len(rows))
        found = store.vector_search(query, 10, where=match)
        assert len(found) == 10 and all(int(id) % 50 == 7 for id in ids(found))
        truth_ids = set(ids(exact.vector_search(query, 10, where=match)))
        recalls.append(len(truth_ids & set(ids(found))) / 10)
    assert max(defaults) < 10 and np.mean(defaults) < 3, defaults
    assert np.mean(recalls) >= 0.95, recalls


def test_hybrid_search_with_a_filter(buckets):
    _, stores, _, queries, query_embeddings = buckets
    for store in stores.values():
        (_, text), query = queries[3], query_embeddings[3]
        sql_filter = hybrid_search(store, text, query, limit=10, where=MetadataMatch(bucket=7))
        python = hybrid_search(
            store, text, query, limit=10, where=lambda doc: doc.metadata["bucket"] == 7
        )
        assert sql_filter == python and len(sql_filter) == 10
        assert all(h.record.metadata == {"bucket": 7} for h in sql_filter)


def test_the_api_type_checks(tmp_path):
    """``mypy --strict`` on a user's code: the store, its filters and hybrid_search over it."""
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "snippet.py"
    path.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from rankfusion import hybrid_search
            from rankfusion.postgres import Document, MetadataMatch, PostgresStore

            def search(dsn: str) -> list[str]:
                with PostgresStore(dsn, dim=3, metric="l2", index=None) as store:
                    store.add_documents(["a"], ["wing"], np.ones((1, 3)), metadata=[{"x": 1}])
                    found: list[tuple[int | str, float]] = store.keyword_search("wing", 5)
                    doc: Document | None = store.get("a")
                    with store.snapshot():
                        hits = hybrid_search(store, "wing", [1.0, 0.0, 0.0], where=MetadataMatch(x=1))
                    return [str(h.id) for h in hits] + [str(i) for i, _ in found]
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- any fusion of the package ------------------------------------------------------------------

FUSIONS = {
    # Elasticsearch's linear retriever: min-max normalised scores, weighted
    "wsum/min-max": {"method": "wsum", "norm": "min-max", "weights": [0.3, 0.7]},
    "dbsf": {"method": "dbsf"},  # Qdrant's distribution-based score fusion
    "rrf": {"k": 60},
}


@pytest.mark.parametrize("name", list(FUSIONS))
def test_hybrid_search_takes_any_fusion_with_traces_of_the_raw_scores(cranfield_stores, name):
    """hybrid_search(store, ..., fusion=Fusion(...)) on Postgres: the hits are the fusion of the
    store's two lists (exact search, everything live: the searches at the window), called
    directly, bit for bit; each hit's trace carries each list's raw score -- the BM25 score, the
    similarity -- and, for the score-based methods, what the normalisation made of it; the
    records are the store's."""
    _, stores, _, queries, query_embeddings = cranfield_stores
    store = stores["exact"]
    fusion = rankfusion.Fusion(**FUSIONS[name], trace=True)
    for (_, text), query in zip(queries[:20], query_embeddings[:20]):
        hits = hybrid_search(store, text, query, limit=10, window=100, fusion=fusion)
        keyword, vector = store.keyword_search(text, 100), store.vector_search(query, 100)
        expected = fusion.replace(limit=10)(
            [ids(keyword), ids(vector)], [[s for _, s in keyword], [s for _, s in vector]]
        )
        assert [(h.id, h.score) for h in hits] == [(e.key, e.score) for e in expected]
        raw = [dict(keyword), dict(vector)]
        for hit, want in zip(hits, expected):
            assert hit.contributions == want.contributions and hit.contributions
            for c in hit.contributions:
                assert c.score == raw[c.list_index][hit.id]
                assert (c.normalized is None) is (name == "rrf")
        assert [h.record for h in hits] == [store.get(h.id) for h in hits]
        assert all(c["list"] in ("keyword", "vector") for c in hits[0].to_dict()["contributions"])
    # the settings as keyword arguments are the same fusion
    (_, text), query = queries[0], query_embeddings[0]
    assert hybrid_search(store, text, query, limit=10, window=100, fusion=fusion) == (
        hybrid_search(store, text, query, limit=10, window=100, **FUSIONS[name], trace=True)
    )
