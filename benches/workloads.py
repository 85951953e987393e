"""The benchmark workloads, shared by bench_batch.py, batch_table.py and scaling.py.

A workload is Q queries x L lists x N candidates. Each list of a query is N distinct ids drawn
from a per-query universe of 2.5 N ids, so two lists share ~40% of their ids (within the 30-50%
the issue asks for). Ids are random int64 (as a vector index returns them); the per-query API gets
the same ids as strings ("d<id>").
"""

from __future__ import annotations

import math
import os
import sys
import time

# numpy's OpenBLAS threads spin for a while after a BLAS call and would steal the 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

WORKLOADS = {
    # name: (queries, lists, depth)
    "i": (1, 2, 100),
    "ii": (1, 2, 1000),
    "iii": (10_000, 2, 100),
    "iv": (1_000, 5, 1000),
}


def id_arrays(n_queries: int, n_lists: int, depth: int, seed: int = 0) -> list:
    """L arrays (Q, N) of int64 ids, ~40% overlap between any two lists of a query."""
    rng = np.random.default_rng(seed)
    universe = int(depth * 2.5)
    # Per query, a random map from universe positions to ids.
    ids = rng.integers(0, 2**62, size=(n_queries, universe), dtype=np.int64)
    lists = []
    for _ in range(n_lists):
        # The first `depth` of a random permutation per row, chunked to keep memory small.
        out = np.empty((n_queries, depth), dtype=np.int64)
        step = max(1, 2_000_000 // universe)
        for start in range(0, n_queries, step):
            stop = min(n_queries, start + step)
            perm = np.argsort(rng.random((stop - start, universe)), axis=1)[:, :depth]
            out[start:stop] = np.take_along_axis(ids[start:stop], perm, axis=1)
        lists.append(out)
    return lists


def str_queries(arrays: list) -> list:
    """The same workload for the per-query API: one list of lists of str ids per query."""
    n_queries = arrays[0].shape[0] if arrays else 0
    as_str = [[[f"d{x}" for x in row] for row in a.tolist()] for a in arrays]
    return [[lst[q] for lst in as_str] for q in range(n_queries)]


def entries(arrays: list) -> int:
    return sum(a.size for a in arrays)


def numpy_rrf(arrays: list, k: float = 60.0):
    """A numpy-vectorised RRF baseline (no pads, duplicates="first" assumed; float sums in an
    order of numpy's choosing, so scores may differ in the last bit from the canonical sum)."""
    n_queries = arrays[0].shape[0]
    q = np.concatenate([np.repeat(np.arange(n_queries), a.shape[1]) for a in arrays])
    ids = np.concatenate([a.ravel() for a in arrays])
    contrib = np.concatenate(
        [np.broadcast_to(1.0 / (k + np.arange(1, a.shape[1] + 1)), a.shape).ravel() for a in arrays]
    )
    order = np.lexsort((ids, q))
    q, ids, contrib = q[order], ids[order], contrib[order]
    start = np.flatnonzero(np.r_[True, (q[1:] != q[:-1]) | (ids[1:] != ids[:-1])])
    scores = np.add.reduceat(contrib, start)
    uq, uid = q[start], ids[start]
    rank = np.lexsort((-scores, uq))
    return uq[rank], uid[rank], scores[rank]


def ranx_runs(queries: list):
    """ranx Run objects (one per list position) for the per-query workload."""
    from ranx import Run

    n_lists = len(queries[0]) if queries else 0
    runs = []
    for i in range(n_lists):
        d = {}
        for q, lists in enumerate(queries):
            lst = lists[i]
            d[f"q{q}"] = {doc: float(len(lst) - r) for r, doc in enumerate(lst)}
        runs.append(Run(d, name=f"run{i}"))
    return runs


def warm_ranx():
    """ranx JIT-compiles (numba) on its first calls, ~10-20 s: made here, outside every timing,
    on a small workload of the same kind (str ids, several queries and lists)."""
    from ranx import fuse

    t = time.perf_counter()
    for n_lists in (2, 5):
        fuse(ranx_runs(str_queries(id_arrays(3, n_lists, 10, seed=99))), method="rrf")
    return time.perf_counter() - t


def have_ranx() -> bool:
    try:
        import ranx  # noqa: F401
    except ImportError:
        return False
    return True


def best_of(f, repeat: int = 5, min_time: float = 0.2) -> float:
    """The best wall time of `repeat` rounds; a round loops `f` until it lasts `min_time`."""
    best = math.inf
    for _ in range(repeat):
        n, t0 = 0, time.perf_counter()
        while True:
            f()
            n += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time:
                break
        best = min(best, elapsed / n)
    return best


def cpu_info() -> str:
    return f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, numpy {np.__version__}"


def str_lists(n_lists: int, depth: int, overlap: float = 0.4, seed: int = 0) -> list[list[str]]:
    """One query for `rrf`: `n_lists` lists of `depth` distinct string ids, about `overlap` of
    each list shared with the others (bench_rrf.py, rrf_table.py)."""
    import random

    rng = random.Random(seed)
    shared = [f"doc-{i}" for i in range(depth)]
    lists = []
    for j in range(n_lists):
        own = [f"doc-{j}-{i}" for i in range(depth)]
        n_shared = int(depth * overlap)
        items = rng.sample(shared, n_shared) + own[: depth - n_shared]
        rng.shuffle(items)
        lists.append(items)
    return lists
