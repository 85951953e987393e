"""Condorcet on workload B (1,000 queries x 5 lists x 1,000), which bench_methods.py leaves out:
ranx takes over a second a query there, so both run on the first queries only.

    python benches/condorcet_b.py [QUERIES]      # default 10: ~30 s, most of it ranx

Times (best of 3 for ours, one ranx call after an untimed JIT warm-up on one query):
fuse_batch(method="condorcet") unweighted (counts of lists decide: the bit-parallel path) and
weighted (every pair of keys compared), all CPUs and 1 thread, rrf_batch on the same ids, and
ranx.fuse(method="condorcet" / "w_condorcet") on the same ids as str.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench_methods import WEIGHTS, WORKLOADS, ranx_runs, score_arrays, str_ids  # noqa: E402
from workloads import have_ranx, id_arrays  # noqa: E402

import rankfusion as rf  # noqa: E402


def best(f, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    q, n_lists, depth = WORKLOADS["B"]
    ids = id_arrays(q, n_lists, depth)
    sub = [a[:rows] for a in ids]
    weights = WEIGHTS[n_lists]
    runs = None
    if have_ranx():
        from ranx import fuse

        scores = score_arrays(q, n_lists, depth)
        as_str = str_ids(ids, rows)
        runs = ranx_runs(as_str, scores, rows)
        warm = ranx_runs(as_str, scores, 1)
    cases = [
        ("unweighted", {}, {"method": "condorcet"}),
        (
            "weighted",
            {"weights": weights},
            {"method": "w_condorcet", "params": {"weights": weights}},
        ),
    ]
    for name, ours, theirs in cases:
        fb = best(lambda ours=ours: rf.fuse_batch(sub, method="condorcet", **ours))
        fb1 = best(lambda ours=ours: rf.fuse_batch(sub, method="condorcet", threads=1, **ours))
        rrf = best(lambda: rf.rrf_batch(sub))
        line = (
            f"condorcet {name}, {rows} queries of B: fuse_batch {fb * 1e3:.1f} ms "
            f"(1 thread {fb1 * 1e3:.1f}), rrf_batch {rrf * 1e3:.2f} ms: {fb / rrf:.0f}x rrf_batch"
        )
        if runs is not None:
            fuse(warm, **theirs)  # numba compiles here, untimed
            t = time.perf_counter()
            fuse(runs, **theirs)
            ranx = time.perf_counter() - t
            line += f"; ranx {ranx * 1e3:,.0f} ms: {ranx / fb:.0f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
