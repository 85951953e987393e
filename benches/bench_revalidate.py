"""Candidate revalidation: the Rust core against the pure-Python reference.

    pytest benches/bench_revalidate.py --benchmark-only --benchmark-group-by=group
    python benches/bench_revalidate.py          # one table of ratios, measured side by side

(``python -m pytest`` alone runs tests/ only.) Each benchmark records in ``extra_info["matches_reference"]``
whether the core's result equals the reference's.

Workloads:
- ``batch 10000x300``: ``revalidate_batch`` over 10,000 queries x 300 candidates (FAISS-like:
  int64 ids from a corpus of 1,000,000 documents, float32 scores, short rows padded with -1),
  10% of the corpus soft-deleted, ``is_live`` a numpy mask lookup, ``limit=100``.
- ``300 ...``: ``revalidate`` of 300 (id, score) candidates (a few duplicates) against an
  in-memory store whose ``get_many`` is a dict comprehension: the lookup is Python in both
  implementations, so the ratio measures the work around it. Variants: with ``where``, the
  per-id path (no ``get_many``), str ids, and the SQLite store of the package (1,000 docs).
"""

from __future__ import annotations

import struct
import sys
import timeit

import numpy as np
import pytest

import rankfusion
from rankfusion import reference

CORPUS = 1_000_000
RNG = np.random.default_rng(20240601)
ALIVE = RNG.random(CORPUS) >= 0.10  # 10% soft-deleted


def is_live(ids):
    return ALIVE[ids]


def batch_workload(n_rows: int = 10_000, n_cols: int = 300):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, CORPUS, size=(n_rows, n_cols), dtype=np.int64)
    short = rng.random(n_rows) < 0.05  # 5% of the queries found fewer candidates
    ids[short, n_cols - 20 :] = -1
    scores = np.sort(rng.random((n_rows, n_cols), dtype=np.float32), axis=1)[:, ::-1]
    return (ids, np.ascontiguousarray(scores), is_live), {"limit": 100}


class MemoryStore:
    """A dict-backed store: ``get_many`` returns the live records of the ids asked for."""

    def __init__(self, records):
        self.records = records

    def get(self, id):
        return self.records.get(id)

    def get_many(self, ids):
        records = self.records
        return {i: records[i] for i in ids if i in records}


class PerIdStore:
    def __init__(self, records):
        self.get = records.get


def candidates(n: int = 300, *, as_str: bool = False):
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 5_000, size=n).tolist()
    ids[10:15] = ids[0:5]  # a few duplicates
    scores = sorted(rng.random(n).tolist(), reverse=True)
    if as_str:
        ids = [f"doc-{i}" for i in ids]
    return list(zip(ids, scores))


def records(*, as_str: bool = False):
    """The live records of documents 0..4999 (10% are soft-deleted: absent)."""
    return {
        (f"doc-{i}" if as_str else i): {"id": i, "year": 1950 + i % 50}
        for i in range(5_000)
        if ALIVE[i]
    }


def sqlite_workload():
    store = rankfusion.SQLiteStore()
    store.add_documents(list(range(1000)), [f"document {i}" for i in range(1000)])
    for i in range(0, 1000, 10):
        store.delete(i)
    cands = [
        (int(i), 1.0 - j / 300)
        for j, i in enumerate(np.random.default_rng(3).integers(0, 1200, 300))
    ]
    return (cands, store), {"limit": 100}


INTS = candidates()
STRS = candidates(as_str=True)
INT_RECORDS = records()
STR_RECORDS = records(as_str=True)


def recent(record):
    return record["year"] >= 1975


REVALIDATE = (rankfusion.revalidate, reference.revalidate)
REVALIDATE_BATCH = (rankfusion.revalidate_batch, reference.revalidate_batch)

# name -> ((core, reference), args, kwargs)
WORKLOADS = {
    "batch 10000x300": (REVALIDATE_BATCH, *batch_workload()),
    "300 int ids": (REVALIDATE, (INTS, MemoryStore(INT_RECORDS)), {"limit": 100}),
    "300 int ids, where": (
        REVALIDATE,
        (INTS, MemoryStore(INT_RECORDS)),
        {"where": recent, "limit": 100},
    ),
    "300 int ids, per-id": (REVALIDATE, (INTS, PerIdStore(INT_RECORDS)), {"limit": 100}),
    "300 str ids": (REVALIDATE, (STRS, MemoryStore(STR_RECORDS)), {"limit": 100}),
    "300 int ids, SQLite": (REVALIDATE, *sqlite_workload()),
}


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def same(a, b) -> bool:
    """Bit-identical results: (id, record, score) triples, or the arrays of a batch."""
    if isinstance(a, list):
        return [(r.id, r.record, bits(r.score)) for r in a] == [
            (r.id, r.record, bits(r.score)) for r in b
        ]
    return all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(a, b)
    )


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("impl", ["core", "reference"])
def test_revalidate(benchmark, workload, impl):
    (core_fn, ref_fn), args, kwargs = WORKLOADS[workload]
    fn = core_fn if impl == "core" else ref_fn
    benchmark.group = workload
    if fn is reference.revalidate_batch:  # seconds per call: a few rounds
        result = benchmark.pedantic(fn, args, kwargs, rounds=2, warmup_rounds=1)
    else:
        result = benchmark(fn, *args, **kwargs)
    benchmark.extra_info["matches_reference"] = same(result, ref_fn(*args, **kwargs))
    assert benchmark.extra_info["matches_reference"]


# --- script mode: one table, core and reference measured side by side in one run -------------------


def best_time(fn, args, kwargs, *, budget: float = 1.0) -> float:
    timer = timeit.Timer(lambda: fn(*args, **kwargs))
    once = timer.timeit(1)
    number = max(1, int(0.2 / once)) if once < 0.2 else 1
    repeat = max(3, min(15, int(budget / max(once * number, 1e-9))))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def main() -> None:
    print(
        f"rankfusion {rankfusion.__version__}, Python {sys.version.split()[0]}, numpy {np.__version__}"
    )
    print(f"{'workload':<24}{'core':>12}{'reference':>14}{'ratio':>10}  same")
    for name, ((core_fn, ref_fn), args, kwargs) in WORKLOADS.items():
        core = best_time(core_fn, args, kwargs)
        ref = best_time(ref_fn, args, kwargs, budget=3.0)
        ok = same(core_fn(*args, **kwargs), ref_fn(*args, **kwargs))
        unit, scale = ("ms", 1e3) if ref > 1e-2 else ("us", 1e6)
        print(
            f"{name:<24}{core * scale:>10.2f}{unit}{ref * scale:>12.2f}{unit}{ref / core:>9.1f}x  {ok}"
        )


if __name__ == "__main__":
    main()
