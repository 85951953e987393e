"""rankfusion.dask on 1 and 2 local workers: rows per second and peak memory per worker, fusing
a collection of about 1 GB of Parquet (5 runs x 10,000 queries x 1,000 docs, benches/bench_frame.py's
workload) read with ``dd.read_parquet`` and written with ``to_parquet``.

    python benches/bench_dask.py [--dir DIR] [--queries 10000] [--partitions 32] [--rounds 1]

After an untimed warm-up, each round starts a fresh ``distributed.LocalCluster`` (worker
processes, one thread each) for 1 worker and for 2 (in the order 1, 2, 2, 1, ...; best of
``--rounds``), and times ``rfd.fuse(runs, limit=1000).to_parquet(...)`` (read, shuffle
on the query, fuse, write) wall-clock, and the CPU time the workers used (per row: what more
cores can share); a thread samples every worker's RSS every 0.2 s. Also
measured: ``frame.fuse`` alone on one partition-sized slice with one thread (the per-row cost of
the fusion step itself), the bytes the shuffle moves (the Arrow bytes of the rows shuffled), and
the result against single-process ``frame.fuse`` (every query's rows, score bits included).
The machine is shared and has 2 cores: 2 workers can be at most 2x one, and less when others
are busy (the load average is printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Dict, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dask.dataframe as dd
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
from bench_frame import make_runs
from distributed import Client, LocalCluster

from rankfusion import dask as rfd
from rankfusion import frame

LIMIT = 1000


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _cpu() -> float:
    """CPU seconds (user + system) this worker process has used."""
    import psutil

    times = psutil.Process().cpu_times()
    return times.user + times.system


class Sampler(threading.Thread):
    """The largest RSS each worker reaches while running."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.peak: Dict[str, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                for worker, rss in self.client.run(_rss).items():
                    self.peak[worker] = max(self.peak.get(worker, 0), rss)
            except Exception:  # a worker starting or stopping
                pass
            self.done.wait(0.2)


def one_run(parquet: Sequence[str], workers: int, partitions: int, out: str) -> Dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        base = client.run(_rss)
        cpu = client.run(_cpu)
        sampler = Sampler(client)
        sampler.start()
        t0 = time.perf_counter()
        runs = [dd.read_parquet(p) for p in parquet]
        rfd.fuse(runs, limit=LIMIT, npartitions=partitions).to_parquet(out, write_index=False)
        seconds = time.perf_counter() - t0
        sampler.done.set()
        sampler.join()
        used = sum(c - cpu.get(w, 0.0) for w, c in client.run(_cpu).items())
    peaks = sorted(sampler.peak.values())
    return {
        "seconds": seconds,
        "peak": max(peaks),
        "peaks": peaks,
        "base": max(base.values()),
        "cpu": used,
    }


def fusion_cost(parquet: Sequence[str], rows: int) -> float:
    """Seconds per row of ``frame.fuse`` (one thread) on the first ``rows`` rows of each run
    (whole queries): the fusion step a worker runs on one partition, without Dask."""
    per_run = rows // len(parquet)
    tables = [pq.read_table(p).slice(0, per_run) for p in parquet]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        frame.fuse(tables, limit=LIMIT, threads=1)
        best = min(best, time.perf_counter() - t0)
    return best / (per_run * len(parquet))


def same_as_frame(parquet: Sequence[str], out: str) -> bool:
    got = pq.read_table(out).select(["qid", "docid", "score", "rank"])
    want = frame.fuse([pq.read_table(p) for p in parquet], limit=LIMIT)
    if got.num_rows != want.num_rows:
        return False
    keys = [("qid", "ascending"), ("rank", "ascending")]
    got = got.take(pc.sort_indices(got, keys))
    want = want.take(pc.sort_indices(want, keys)).cast(got.schema)
    return all(got[c].equals(want[c]) for c in ("qid", "docid", "rank")) and np.array_equal(
        got["score"].to_numpy().view(np.int64), want["score"].to_numpy().view(np.int64)
    )


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=32, help="partitions of the shuffle")
    parser.add_argument("--rounds", type=int, default=2, help="best of N per worker count")
    parser.add_argument("--dir", help="keep the workload here (reused when it matches)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = args.dir or scratch
        folder = os.path.join(root, f"{args.runs}x{args.queries}x{args.docs}")
        parquet, _ = make_runs(folder, args.runs, args.queries, args.docs)
        rows = sum(pq.read_metadata(p).num_rows for p in parquet)
        size = sum(os.path.getsize(p) for p in parquet)
        arrow = sum(pq.read_table(p).nbytes for p in parquet)
        print(f"load average at start: {os.getloadavg()}")
        print(
            f"{args.runs} runs x {args.queries:,} queries x {args.docs:,} docs = {rows:,} rows: "
            f"{size / 1e9:.2f} GB of Parquet, {arrow / 1e9:.2f} GB as Arrow; shuffled into "
            f"{args.partitions} partitions (~{rows / args.partitions / 1e6:.1f} M rows each); "
            f"top {LIMIT} written"
        )
        out = os.path.join(root, "dask-out")
        one_run(parquet[:1], 1, 2, out)  # warm-up: page cache, imports, compiled bytecode
        results: Dict[int, Dict[str, float]] = {}
        for round_ in range(args.rounds):
            for workers in (1, 2) if round_ % 2 == 0 else (2, 1):  # 1, 2, 2, 1, ...
                r = one_run(parquet, workers, args.partitions, out)
                if workers not in results or r["seconds"] < results[workers]["seconds"]:
                    results[workers] = r
        print(
            f"{'workers':>8} {'seconds':>8} {'M rows/s':>9} {'worker CPU ns/row':>18} "
            f"{'peak RSS per worker':>24}"
        )
        for workers, r in results.items():
            peaks = ", ".join(f"{p / 1e9:.2f}" for p in r["peaks"])
            print(
                f"{workers:8} {r['seconds']:8.1f} {rows / r['seconds'] / 1e6:9.2f} "
                f"{r['cpu'] / rows * 1e9:18.0f} {peaks + ' GB':>24}"
            )
        speedup = results[1]["seconds"] / results[2]["seconds"]
        print(
            f"2 workers vs 1: {speedup:.2f}x (a worker at rest: {results[1]['base'] / 1e9:.2f} GB)"
        )
        cost = fusion_cost(parquet, rows // args.partitions)
        print(
            f"frame.fuse alone, one thread, one partition's rows: {cost * 1e9:.0f} ns/row "
            f"({1 / cost / 1e6:.2f} M rows/s)"
        )
        print(
            f"shuffled: {rows:,} rows, {arrow / 1e9:.2f} GB of Arrow + the run column "
            f"({rows * 8 / 1e9:.2f} GB)"
        )
        print(
            f"result == single-process frame.fuse (every query, score bits): {same_as_frame(parquet, out)}"
        )
        print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
