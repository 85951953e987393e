"""What checking for Ctrl-C costs a long call, side by side in one process.

    python benches/interrupt_cost.py
    python benches/interrupt_cost.py --rounds 30

A call made on Python's main thread checks for signals while it works (the calling thread polls
the call's `Cancel` between chunks, and every 4 ms attaches to the interpreter to run
`PyErr_CheckSignals`; see docs/batch.md, "Interrupting a call"). The same call made on another
thread never checks (only the main thread handles signals): everything else is the same code.
So the ratio main / other thread, timed interleaved round by round (best of the rounds), is the
cost of the checks, on the workloads of `benches/batch_table.py` and `benches/rrf_table.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import id_arrays, str_lists  # noqa: E402

import rankfusion as rf  # noqa: E402


def on_other_thread(call):
    """`call` run on a new thread (where signals are never checked); its time."""
    out = {}

    def run():
        start = time.perf_counter()
        call()
        out["t"] = time.perf_counter() - start

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out["t"]


def on_main_thread(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def workloads():
    batch = id_arrays(10_000, 2, 100)
    big = id_arrays(1_000, 5, 1_000)
    lists = str_lists(5, 1_000)
    return {
        "rrf_batch 10,000 x 2 x 100, 1 thread": lambda: rf.rrf_batch(batch, threads=1),
        "rrf_batch 10,000 x 2 x 100, 2 threads": lambda: rf.rrf_batch(batch, threads=2),
        "rrf_batch 1,000 x 5 x 1,000, 2 threads": lambda: rf.rrf_batch(big, threads=2),
        "fuse_batch wsum+min-max 10,000 x 2 x 100, 2 threads": lambda: rf.fuse_batch(
            batch,
            [a.astype("float64")[:, ::-1] for a in batch],
            method="wsum",
            norm="min-max",
            threads=2,
        ),
        "rrf 5 x 1,000 str": lambda: rf.rrf(lists),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    print("| workload | signals checked (main thread) | not checked (other thread) | ratio |")
    print("|---|---|---|---|")
    for name, call in workloads().items():
        call()
        best = {"main": float("inf"), "other": float("inf")}
        for r in range(args.rounds):
            order = ("main", "other") if r % 2 == 0 else ("other", "main")
            for side in order:
                t = on_main_thread(call) if side == "main" else on_other_thread(call)
                best[side] = min(best[side], t)
        print(
            f"| {name} | {best['main'] * 1e3:.2f} ms | {best['other'] * 1e3:.2f} ms "
            f"| {best['main'] / best['other']:.3f} |",
            flush=True,
        )
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
