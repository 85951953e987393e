"""Hybrid search on the shipped Cranfield store: ``hybrid_search`` against the two raw searches.

    python benches/bench_hybrid.py                      # one table, measured side by side
    python benches/bench_hybrid.py --rounds 9 --queries 225 --depth 100
    pytest benches/bench_hybrid.py -o addopts="" --benchmark-only

The store is the one ``examples/hybrid_cranfield.py`` builds (1,400 documents, FTS5 and numpy
vectors, in memory). Per query, interleaved, in alternating order:

- ``raw searches``: ``keyword_search(text, pool)`` + ``vector_search(vector, pool)``, where
  ``pool = pool_size(depth, "none", 3)`` (SQLiteStore filters "none": 300 for depth 100) -- the
  least any hybrid search over this store does;
- ``hybrid_search``: ``hybrid_search(store, text, vector, limit=depth, window=depth)``: the two
  searches, one liveness check of the union of both candidate lists, RRF, and the records of the
  hits returned.

On a machine with few cores, ``OPENBLAS_NUM_THREADS=1`` steadies the figures: a 1,400 x 384
matrix-vector product gains nothing from BLAS threads, whose spinning after it takes the core
the rest of a hybrid search runs on (the raw searches stop timing right there).

Each query is timed ``--rounds`` times; the table shows, per step, the mean over the queries of
each query's best time (the machine is shared: absolute times are noise, the ratio is the point)
and ``hybrid / raw``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import hybrid_cranfield  # noqa: E402 -- the example's loader and store

import rankfusion  # noqa: E402
from rankfusion import hybrid_search, pool_size  # noqa: E402


def setup(data: Path = hybrid_cranfield.DATA, queries: int | None = None):
    docs, doc_embeddings, qs, query_embeddings, _ = hybrid_cranfield.load(data)
    store = hybrid_cranfield.build_store(docs, doc_embeddings)
    pairs = [(text, vector) for (_, text), vector in zip(qs, query_embeddings)]
    return store, pairs[:queries]


def raw_searches(store, text, vector, pool):
    store.keyword_search(text, pool)
    store.vector_search(vector, pool)


def measure(store, pairs, depth: int, rounds: int) -> dict:
    """Seconds per query of each step: per query the best of ``rounds`` (which filters out the
    moments another process had the CPU), averaged over the queries."""
    pool = pool_size(depth, store.filtering, 3)
    names = ("raw searches", "hybrid_search")
    best = {name: [float("inf")] * len(pairs) for name in names}
    for r in range(rounds):
        for i, (text, vector) in enumerate(pairs):
            for name in names if (i + r) % 2 else names[::-1]:
                started = time.perf_counter()
                if name == "raw searches":
                    raw_searches(store, text, vector, pool)
                else:
                    hybrid_search(store, text, vector, limit=depth, window=depth)
                elapsed = time.perf_counter() - started
                best[name][i] = min(best[name][i], elapsed)
    return {name: sum(times) / len(times) for name, times in best.items()}


def test_hybrid_search(benchmark):
    store, pairs = setup(queries=25)
    benchmark(lambda: [hybrid_search(store, t, v, limit=100, window=100) for t, v in pairs])


def test_raw_searches(benchmark):
    store, pairs = setup(queries=25)
    benchmark(lambda: [raw_searches(store, t, v, 300) for t, v in pairs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--queries", type=int, default=None, help="only the first N queries")
    parser.add_argument("--depth", type=int, default=100, help="limit and window")
    args = parser.parse_args()
    store, pairs = setup(queries=args.queries)
    for text, vector in pairs[:20]:  # warm-up: the vector snapshot, SQLite's page cache
        hybrid_search(store, text, vector, limit=args.depth, window=args.depth)
    ms = measure(store, pairs, args.depth, args.rounds)
    pool = pool_size(args.depth, store.filtering, 3)
    print(
        f"rankfusion {rankfusion.__version__}: {len(pairs)} Cranfield queries, {len(store)} docs, "
        f"limit = window = {args.depth}, pool {pool} per list, best of {args.rounds} per query"
    )
    print(f"{'':<16}{'ms/query':>10}")
    for name, seconds in ms.items():
        print(f"{name:<16}{1000 * seconds:>10.3f}")
    print(f"hybrid / raw    {ms['hybrid_search'] / ms['raw searches']:>10.2f}x")


if __name__ == "__main__":
    main()
