"""The Postgres hybrid example on the repo's Cranfield data, against the session's server:
hybrid search on Postgres holds up against SQLiteStore on the same data (nDCG@10 at least 0.9x)
and beats both of its lists."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "hybrid_postgres.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("hybrid_postgres", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hybrid_on_postgres_holds_up_against_sqlite(example, pg_dsn):
    docs, doc_embeddings, queries, query_embeddings, qrels = example.hybrid_cranfield.load(
        example.DATA
    )
    scores = {}
    with example.build_store(docs, doc_embeddings, pg_dsn, progress=False) as postgres:
        assert len(postgres) == 1400 and postgres.dim == 384
        sqlite = example.hybrid_cranfield.build_store(docs, doc_embeddings)
        for name, store in (("postgres", postgres), ("sqlite", sqlite)):
            runs, _ = example.hybrid_cranfield.search_all(store, queries, query_embeddings, 100)
            scores[name] = example.evaluate(qrels, runs)
    postgres, sqlite = scores["postgres"], scores["sqlite"]
    # HNSW search finds the exact neighbours of these queries: the shipped MiniLM run's figure
    assert postgres["vector"]["nDCG@10"] == pytest.approx(0.3817, abs=5e-4)
    assert postgres["hybrid"]["nDCG@10"] >= 0.9 * sqlite["hybrid"]["nDCG@10"], scores
    assert postgres["keyword"]["nDCG@10"] >= 0.9 * sqlite["keyword"]["nDCG@10"], scores
    best_list = max(postgres["keyword"]["nDCG@10"], postgres["vector"]["nDCG@10"])
    assert postgres["hybrid"]["nDCG@10"] > best_list + 0.02, scores
    assert postgres["hybrid"]["R@100"] >= 0.9 * sqlite["hybrid"]["R@100"], scores


def test_main_prints_both_stores_and_a_traced_hit(example, pg_dsn, capsys):
    example.main(["--dsn", pg_dsn, "--queries", "5", "--index", "exact"])
    out = capsys.readouterr().out
    assert "PostgresStore" in out and "SQLiteStore" in out and "R@100" in out
    assert "hybrid nDCG@10, PostgresStore / SQLiteStore" in out and '"contributions"' in out
