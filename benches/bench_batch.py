"""pytest-benchmark suite: rrf_batch, rrf_many, a Python loop of rrf, the reference, a numpy
baseline and ranx side by side on workloads (i)-(iv) (see workloads.py).

    pytest benches/bench_batch.py --benchmark-only [--benchmark-columns=min,mean]

`extra_info["matches_reference"]` records whether the implementation's result equals the
reference's on the first queries of the workload (exact for rankfusion; the numpy baseline and
ranx are not expected to be bit-identical). ranx's first call JIT-compiles for ~10 s: it is made
once, outside every timing (`warm_ranx`). The reference is only timed on (i)-(iii) by default
(RANKFUSION_BENCH_REFERENCE_IV=1 adds (iv), ~30 s a round).
"""

from __future__ import annotations

import os

# Before numpy is imported: its OpenBLAS threads would spin on the 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest
from workloads import (
    WORKLOADS,
    entries,
    have_ranx,
    id_arrays,
    numpy_rrf,
    ranx_runs,
    str_queries,
    warm_ranx,
)

import rankfusion as rf
from rankfusion import reference as ref

CHECK = 20  # queries compared with the reference


@pytest.fixture(scope="module", params=list(WORKLOADS))
def workload(request):
    name = request.param
    q, n_lists, depth = WORKLOADS[name]
    arrays = id_arrays(q, n_lists, depth)
    return name, arrays, str_queries(arrays)


def reference_rows(arrays, n):
    return [ref.rrf([a[q].tolist() for a in arrays]) for q in range(min(n, arrays[0].shape[0]))]


def batch_matches(result, arrays) -> bool:
    for q, hits in enumerate(reference_rows(arrays, CHECK)):
        c = int(result.counts[q])
        if result.ids[q, :c].tolist() != [h.key for h in hits]:
            return False
        if result.scores[q, :c].tolist() != [h.score for h in hits]:
            return False
    return True


def hits_match(results, queries) -> bool:
    want = [ref.rrf(q) for q in queries[:CHECK]]
    return all(
        [(h.key, h.score) for h in g] == [(h.key, h.score) for h in w]
        for g, w in zip(results, want)
    )


def info(benchmark, name, arrays, matched):
    benchmark.extra_info.update(
        {"workload": name, "entries": entries(arrays), "matches_reference": matched}
    )


def test_rrf_batch(benchmark, workload):
    name, arrays, _ = workload
    result = benchmark(rf.rrf_batch, arrays)
    info(benchmark, name, arrays, batch_matches(result, arrays))


def test_rrf_batch_one_thread(benchmark, workload):
    name, arrays, _ = workload
    result = benchmark(rf.rrf_batch, arrays, threads=1)
    info(benchmark, name, arrays, batch_matches(result, arrays))


def test_rrf_many_str(benchmark, workload):
    name, arrays, queries = workload
    result = benchmark(rf.rrf_many, queries)
    info(benchmark, name, arrays, hits_match(result, queries))


def test_rrf_loop_str(benchmark, workload):
    name, arrays, queries = workload
    result = benchmark(lambda: [rf.rrf(q) for q in queries])
    info(benchmark, name, arrays, hits_match(result, queries))


def test_reference_loop_str(benchmark, workload):
    name, arrays, queries = workload
    if name == "iv" and not os.environ.get("RANKFUSION_BENCH_REFERENCE_IV"):
        pytest.skip("the reference takes ~30 s a round on (iv); RANKFUSION_BENCH_REFERENCE_IV=1")
    benchmark.pedantic(lambda: [ref.rrf(q) for q in queries], rounds=1, iterations=1)
    info(benchmark, name, arrays, True)


def test_numpy_baseline(benchmark, workload):
    name, arrays, _ = workload
    uq, uid, scores = benchmark(numpy_rrf, arrays)
    first = uq == 0
    want = reference_rows(arrays, 1)[0]
    matched = uid[first].tolist() == [h.key for h in want] and np.array_equal(
        scores[first], [h.score for h in want]
    )
    info(benchmark, name, arrays, bool(matched))


@pytest.mark.skipif(not have_ranx(), reason="ranx is not installed (the bench extra)")
def test_ranx_fuse(benchmark, workload):
    from ranx import fuse

    name, arrays, queries = workload
    warm_ranx()  # the JIT compilation, excluded from the timing
    runs = ranx_runs(queries)
    fused = benchmark.pedantic(lambda: fuse(runs, method="rrf"), rounds=3, iterations=1)
    got = fused.to_dict()["q0"]
    want = {h.key: h.score for h in ref.rrf(queries[0])}
    info(benchmark, name, arrays, set(got) == set(want))
