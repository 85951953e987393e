"""Hybrid search over Cranfield in the embedded SQLite store.

Indexes the 1,400 Cranfield documents and their all-MiniLM-L6-v2 embeddings (data/cranfield) into
a SQLiteStore, runs the 225 queries through keyword search (FTS5 bm25), vector search (exact
cosine) and both fused with RRF (k=60) -- the candidates of both lists checked against the store
at one instant -- and prints nDCG@10 of the three runs (ir-measures, i.e. trec_eval's
ndcg_cut.10 over every judged query), the milliseconds per query of each, and one traced hit.

    python examples/hybrid_cranfield.py [--data DIR] [--depth 100] [--db PATH] [--queries N]

Needs ir-measures (``pip install rankfusion[eval]``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from rankfusion import SQLiteStore, hybrid_search

DATA = Path(__file__).resolve().parent.parent / "data" / "cranfield"

# Query words that carry no topic ("what are the ... ?"): left out of the FTS5 OR-query so the
# keyword list is not flooded by documents matching only them. A short list, not a tuned one.
STOPWORDS = frozenset(
    """a about above after all also an and any are as at be been being between both but by can
    could did do does done for from had has have how however if in into is it its made make may
    more most must no not of on or other such than that the their them then there these they this
    those through to under up was we were what when where whether which while who why will with
    would""".split()  # noqa: SIM905 -- a word list reads better as text
)


def load(data: Path):
    docs = [json.loads(line) for line in (data / "docs.jsonl").open(encoding="utf-8")]
    doc_embeddings = np.load(data / "doc_embeddings.npy")
    queries = [line.rstrip("\n").split("\t", 1) for line in (data / "queries.tsv").open()]
    query_embeddings = np.load(data / "query_embeddings.npy")
    qrels = {}
    for line in (data / "qrels.txt").open():
        qid, _, docid, gain = line.split()
        qrels.setdefault(qid, {})[docid] = int(gain)
    return docs, doc_embeddings, queries, query_embeddings, qrels


def build_store(docs, embeddings, path: str = ":memory:") -> SQLiteStore:
    store = SQLiteStore(path, stopwords=STOPWORDS)
    # Cranfield's text already starts with its title: index the text only, keep the title apart.
    store.add_documents(
        [d["id"] for d in docs],
        [d["text"] for d in docs],
        embeddings,
        titles=[""] * len(docs),
        metadata=[{"title": d["title"]} for d in docs],
    )
    return store


def ndcg_at_10(qrels: dict, runs: dict) -> float:
    """Mean nDCG@10 over every judged query (a query without hits counts 0). Scores are
    ``depth - rank``, so the evaluation follows the ranking as returned, ties included."""
    import ir_measures
    from ir_measures import nDCG

    run = {
        qid: {docid: float(len(ranked) - r) for r, docid in enumerate(ranked)}
        for qid, ranked in runs.items()
        if ranked
    }
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)}
    return sum(per_query.get(qid, 0.0) for qid in qrels) / len(qrels)


def search_all(store: SQLiteStore, queries, query_embeddings, depth: int):
    """The keyword, vector and hybrid runs (query id -> ranked doc ids), and the seconds each
    took. All three go through ``hybrid_search``: with one list it is that list, revalidated."""
    runs: dict[str, dict[str, list[str]]] = {"keyword": {}, "vector": {}, "hybrid": {}}
    seconds = dict.fromkeys(runs, 0.0)
    for (qid, text), vector in zip(queries, query_embeddings):
        for name, q_text, q_vector in (
            ("keyword", text, None),
            ("vector", None, vector),
            ("hybrid", text, vector),
        ):
            started = time.perf_counter()
            hits = hybrid_search(store, q_text, q_vector, limit=depth, window=depth)
            seconds[name] += time.perf_counter() - started
            runs[name][qid] = [str(h.id) for h in hits]
    return runs, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--depth", type=int, default=100, help="candidates per list (window)")
    parser.add_argument("--db", default=":memory:", help="SQLite file (default: in memory)")
    parser.add_argument("--queries", type=int, default=None, help="only the first N queries")
    args = parser.parse_args()

    docs, doc_embeddings, queries, query_embeddings, qrels = load(args.data)
    if args.queries is not None:
        queries, query_embeddings = queries[: args.queries], query_embeddings[: args.queries]
        qrels = {qid: qrels[qid] for qid, _ in queries if qid in qrels}
    started = time.perf_counter()
    store = build_store(docs, doc_embeddings, args.db)
    print(f"indexed {len(store)} documents in {time.perf_counter() - started:.2f}s ({args.db})")

    runs, seconds = search_all(store, queries, query_embeddings, args.depth)
    print(f"\n{len(queries)} queries, {args.depth} candidates per list, RRF k=60")
    print(f"{'run':<10}{'nDCG@10':>10}{'ms/query':>11}")
    for name, ranked in runs.items():
        ms = 1000 * seconds[name] / len(queries)
        print(f"{name:<10}{ndcg_at_10(qrels, ranked):>10.4f}{ms:>11.2f}")

    qid, text = queries[0]
    (hit,) = hybrid_search(store, text, query_embeddings[0], limit=1, window=args.depth, trace=True)
    print(f"\nquery {qid}: {text}")
    print(f"best hit: document {hit.id}: {hit.record.metadata['title']}")
    print(json.dumps(hit.to_dict(), indent=2))
    store.close()


if __name__ == "__main__":
    main()
