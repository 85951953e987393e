"""rrf_batch's cost per input entry from 10^4 to 10^7 entries, and its extra peak RSS on (iv).

    python benches/scaling.py            # the curve and the RSS line
    python benches/scaling.py --ranx     # also ranx.fuse's extra peak RSS on (iv) (slow)

Peak RSS: in a fresh process, after the input exists, the kernel's high-water mark is reset
(`echo 5 > /proc/self/clear_refs`), then one call runs; extra = VmHWM after - VmRSS before.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import id_arrays

SIZES = [10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000]


def curve(threads=None, depth: int = 100, n_lists: int = 2, rounds: int = 7) -> list:
    """(entries, queries, seconds, ns per entry) for Q x 2 x 100 workloads. Every size is timed
    the same way: its fastest single call (timeit's advice: the minimum is the figure least
    disturbed by other work), over calls repeated for 0.05 s per round (one call for the large
    sizes, hundreds for the small), in `rounds` rounds. The sizes are timed round-robin, so that
    a burst of load on a shared machine does not land on one size only. (An average over the
    0.05 s loop, as before, charged the small sizes for every scheduling hiccup of the VM and
    the large ones for none.)"""
    import rankfusion as rf

    workloads = []
    for size in SIZES:
        q = max(1, size // (depth * n_lists))
        arrays = id_arrays(q, n_lists, depth, seed=size)
        rf.rrf_batch(arrays, threads=threads)  # warm: first-touch memory, pools
        workloads.append((q, arrays))
    best = [float("inf")] * len(workloads)
    for _ in range(rounds):
        for i, (_, arrays) in enumerate(workloads):
            start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                rf.rrf_batch(arrays, threads=threads)
                t1 = time.perf_counter()
                best[i] = min(best[i], t1 - t0)
                if t1 - start >= 0.05:
                    break
    rows = []
    for (q, arrays), t in zip(workloads, best):
        n = sum(a.size for a in arrays)
        rows.append((n, q, t, t / n * 1e9))
    del workloads
    gc.collect()
    return rows


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _rss_child(what: str) -> dict:
    """Runs in a fresh process: the extra peak RSS of one call on (iv)."""
    import numpy as np
    from workloads import WORKLOADS, ranx_runs, str_queries, warm_ranx

    import rankfusion as rf

    q, n_lists, depth = WORKLOADS["iv"]
    arrays = id_arrays(q, n_lists, depth)
    input_bytes = sum(a.nbytes for a in arrays)
    if what == "ranx":
        from ranx import fuse

        warm_ranx()
        runs = ranx_runs(str_queries(arrays))
        call = lambda: fuse(runs, method="rrf")
    else:
        call = lambda: rf.rrf_batch(arrays)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    t = time.perf_counter()
    out = call()
    elapsed = time.perf_counter() - t
    peak = _status("VmHWM")
    output_bytes = 0
    if what != "ranx":
        output_bytes = out.ids.nbytes + out.scores.nbytes + out.counts.nbytes
        assert np.all(out.counts > 0)
    return {
        "what": what,
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "extra_peak": peak - before,
        "seconds": elapsed,
    }


def rss(what: str = "rrf_batch") -> dict:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--rss-child", what],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_curve(rows) -> None:
    costs = sorted(r[3] for r in rows)
    median = costs[len(costs) // 2]  # of the per-entry costs (7 sizes: the 4th)
    print(f"{'entries':>12} {'queries':>8} {'time':>10} {'ns/entry':>9} {'vs median':>9}")
    for n, q, t, per in rows:
        print(f"{n:>12,} {q:>8,} {t * 1e3:>8.2f}ms {per:>9.2f} {per / median:>8.2f}x")
    within = max(costs[-1] / median, median / costs[0])
    print(
        f"every size within {100 * (within - 1):.0f}% of the median cost per entry "
        f"(max/min {costs[-1] / costs[0]:.2f})"
    )


def print_rss(r: dict) -> None:
    mb = 1e6
    budget = 2 * (r["input_bytes"] + r["output_bytes"])
    print(
        f"{r['what']} on (iv): extra peak RSS {r['extra_peak'] / mb:.1f} MB; input "
        f"{r['input_bytes'] / mb:.1f} MB + output {r['output_bytes'] / mb:.1f} MB; "
        f"budget 2x = {budget / mb:.1f} MB; ratio to (input+output) "
        f"{r['extra_peak'] / max(1, r['input_bytes'] + r['output_bytes']):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    parser.add_argument("--ranx", action="store_true", help="also ranx's peak RSS on (iv)")
    args = parser.parse_args()
    if args.rss_child:
        print(json.dumps(_rss_child(args.rss_child)))
        return
    print_curve(curve())
    print_rss(rss("rrf_batch"))
    if args.ranx:
        print_rss(rss("ranx"))


if __name__ == "__main__":
    main()
