"""One run, one table: every implementation on workloads (i)-(iv), the ratios the issue asks for,
the scaling curve and the peak RSS.

    python benches/batch_table.py                 # everything (~3-5 minutes on 2 cores)
    python benches/batch_table.py --no-rust       # skip the criterion floor (no cargo)
    python benches/batch_table.py --no-ranx       # skip ranx
    python benches/batch_table.py --reference-iv  # also the reference on (iv), ~1 more minute

Build the extension in release mode first (`maturin develop --release`). The bare Rust loop is
criterion's `benches/core.rs`, run here on the very arrays timed from Python (written to a
temporary folder, RANKFUSION_BENCH_DATA). ranx JIT-compiles on its first call (~10 s): that call
is made once before any timing and excluded; building ranx's Run objects is not timed either.
Times are the best of several rounds (rrf_batch and the bare loop: 15 rounds, interleaved); ranx
runs 2 rounds and the reference 1 (they are slow). On a shared machine the load moves during the
run: the load average is printed before, during and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

# Before numpy is imported: its OpenBLAS threads would spin on the 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import scaling
from workloads import (
    WORKLOADS,
    best_of,
    cpu_info,
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
from rankfusion._core import __file__ as core_file

# The bare loop timed in-process is a benchmark hook, not in the shipped module: build it with
# `maturin develop --release --features bench-hooks` (else only criterion's floor is shown).
bare_loop = getattr(rf._core, "_bare_loop", None)

CHECK = 20


def matches_batch(result, arrays) -> bool:
    for q in range(min(CHECK, arrays[0].shape[0])):
        want = ref.rrf([a[q].tolist() for a in arrays])
        c = int(result.counts[q])
        got = list(zip(result.ids[q, :c].tolist(), result.scores[q, :c].tolist()))
        if got != [(h.key, h.score) for h in want]:
            return False
    return True


def matches_hits(results, queries) -> bool:
    return all(
        [(h.key, h.score) for h in got] == [(h.key, h.score) for h in ref.rrf(q)]
        for got, q in zip(results[:CHECK], queries[:CHECK])
    )


BARE = ("bare Rust loop, all CPUs", "bare Rust loop, 1 thread")


def interleaved(arrays, rounds: int = 15) -> dict:
    """Best seconds of rrf_batch and of the bare loop, all CPUs and 1 thread, interleaved."""
    calls = {
        "rrf_batch": lambda: rf.rrf_batch(arrays),
        "rrf_batch 1 thread": lambda: rf.rrf_batch(arrays, threads=1),
    }
    bare = BARE if bare_loop is not None else ()
    best = dict.fromkeys([*calls, *bare], float("inf"))
    for name, f in calls.items():
        f()  # warm: first-touch memory, pools
    for _ in range(rounds):
        for name, f in calls.items():
            t = time.perf_counter()
            f()
            best[name] = min(best[name], time.perf_counter() - t)
        if bare_loop is not None:
            best[BARE[0]] = min(best[BARE[0]], min(bare_loop(arrays, repeat=1)))
            best[BARE[1]] = min(best[BARE[1]], min(bare_loop(arrays, threads=1, repeat=1)))
    return best


def rust_floor(data: dict) -> dict:
    """Mean seconds of criterion's core/<workload>/<threads> on the given arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, arrays in data.items():
            shape = [arrays[0].shape[0], len(arrays)] + [a.shape[1] for a in arrays]
            Path(tmp, f"{name}.shape").write_text(" ".join(map(str, shape)))
            for i, a in enumerate(arrays):
                Path(tmp, f"{name}_{i}.i64").write_bytes(np.ascontiguousarray(a, "<i8").tobytes())
        env = dict(os.environ, RANKFUSION_BENCH_DATA=tmp)
        env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target"))
        subprocess.run(
            ["cargo", "bench", "--bench", "core", "--", "--noplot"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        out = {}
        base = Path(env["CARGO_TARGET_DIR"], "criterion", "core")
        for name in data:
            for d in sorted(base.glob(f"{name}/*")):
                estimates = d / "new" / "estimates.json"
                if estimates.exists():
                    mean = json.loads(estimates.read_text())["mean"]["point_estimate"]
                    out[(name, int(d.name))] = mean / 1e9
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-rust", action="store_true")
    parser.add_argument("--no-ranx", action="store_true")
    parser.add_argument("--no-scaling", action="store_true")
    parser.add_argument(
        "--reference-iv",
        action="store_true",
        help="also time the reference on (iv) (~1 minute; no target needs it)",
    )
    args = parser.parse_args()
    use_ranx = have_ranx() and not args.no_ranx
    print(f"# rankfusion batch benchmarks ({cpu_info()})")
    print(f"# extension: {core_file}")
    print(f"# load average at start: {os.getloadavg()}")
    if use_ranx:
        print(f"# ranx: first call (JIT compilation) {warm_ranx():.1f} s, excluded from timings")

    times: dict = {}
    ok: dict = {}
    data = {}
    for name, (q, n_lists, depth) in WORKLOADS.items():
        arrays = id_arrays(q, n_lists, depth)
        queries = str_queries(arrays)
        data[name] = arrays
        slow = entries(arrays) > 1e6

        def timed(impl, f, check, repeat=5, name=name):
            f()  # warm: first-touch memory, pools
            times[(impl, name)] = best_of(f, repeat=repeat)
            ok[(impl, name)] = check

        # rrf_batch and its floor, the bare Rust loop (fuse + write into reused buffers, no
        # Python, no input copy), on 1 thread and on every CPU, interleaved round by round so
        # that a change of the machine's load hits all four alike; best of the rounds.
        ok[("rrf_batch", name)] = matches_batch(rf.rrf_batch(arrays), arrays)
        ok[("rrf_batch 1 thread", name)] = matches_batch(rf.rrf_batch(arrays, threads=1), arrays)
        for impl in BARE if bare_loop is not None else ():
            ok[(impl, name)] = True
        for impl, secs in interleaved(arrays).items():
            times[(impl, name)] = secs
        m = rf.rrf_many(queries)
        timed("rrf_many (str)", lambda: rf.rrf_many(queries), matches_hits(m, queries), 3)  # noqa: B023
        loop = [rf.rrf(x) for x in queries]
        timed(
            "loop of rrf (str)",
            lambda: [rf.rrf(x) for x in queries],  # noqa: B023
            matches_hits(loop, queries),
            3,
        )
        if name != "iv" or args.reference_iv:
            t = time.perf_counter()
            [ref.rrf(x) for x in queries]
            times[("reference loop (str)", name)] = time.perf_counter() - t
            ok[("reference loop (str)", name)] = True
        uq, uid, sc = numpy_rrf(arrays)
        want = ref.rrf([a[0].tolist() for a in arrays])
        np_ok = uid[uq == 0].tolist() == [h.key for h in want] and sc[uq == 0].tolist() == [
            h.score for h in want
        ]
        timed("numpy baseline (int)", lambda: numpy_rrf(arrays), np_ok, 1 if slow else 3)  # noqa: B023
        if use_ranx:
            from ranx import fuse

            runs = ranx_runs(queries)
            best = float("inf")
            for _ in range(2):  # best of 2: ranx is slow, and the machine's load moves
                t = time.perf_counter()
                fused = fuse(runs, method="rrf")
                best = min(best, time.perf_counter() - t)
            times[("ranx.fuse rrf (str)", name)] = best
            got = fused.to_dict()["q0"]
            ok[("ranx.fuse rrf (str)", name)] = set(got) == {h.key for h in ref.rrf(queries[0])}
            del runs, fused
        print(f"# workload ({name}) done; load {os.getloadavg()[0]:.2f}", flush=True)

    floor = {}
    if not args.no_rust:
        floor = rust_floor({k: data[k] for k in ("iii", "iv")})
        for (name, n), secs in floor.items():
            times[(f"criterion bare loop, {n} thr", name)] = secs
            ok[(f"criterion bare loop, {n} thr", name)] = True

    impls = list(dict.fromkeys(i for i, _ in times))
    head = "".join(f"{'(' + n + ') ' + 'x'.join(map(str, WORKLOADS[n])):>24}" for n in WORKLOADS)
    print()
    print(f"{'implementation':<28}{head}")
    for impl in impls:
        cells = []
        for name in WORKLOADS:
            t = times.get((impl, name))
            if t is None:
                cells.append(f"{'-':>24}")
                continue
            rate = entries(data[name]) / t / 1e6
            mark = "" if ok[(impl, name)] else "!"
            cells.append(f"{t * 1e3:>11.3f} ms {rate:>7.1f} M/s{mark:1}")
        print(f"{impl:<28}{''.join(cells)}")
    print("(M/s: million input entries per second; ! = result differs from the reference)")

    def ratio(a, b, name):
        ta, tb = times.get((a, name)), times.get((b, name))
        return None if ta is None or tb is None else tb / ta

    print("\n# targets (same run)")
    rows = []
    r = ratio("rrf_batch", "reference loop (str)", "iii")
    rows.append(("(iii) rrf_batch vs the reference", r, ">= 100x", r is not None and r >= 100))
    r = ratio("rrf_batch", "ranx.fuse rrf (str)", "iii")
    rows.append(("(iii) rrf_batch vs ranx.fuse", r, ">= 300x", r is not None and r >= 300))
    rate = entries(data["iii"]) / times[("rrf_batch", "iii")] / 1e6
    rows.append(("(iii) rrf_batch M entries/s", rate, ">= 50", rate >= 50))
    for name in ("iii", "iv"):
        r = ratio(BARE[0], "rrf_batch", name)
        rows.append(
            (f"({name}) rrf_batch / bare Rust loop", r, "<= 1.5", r is not None and r <= 1.5)
        )
    r = ratio("rrf_batch", "rrf_batch 1 thread", "iv")
    rows.append(("(iv) rrf_batch all CPUs vs 1 thread", r, ">= 1.7", r is not None and r >= 1.7))
    r = ratio(BARE[0], BARE[1], "iv")
    rows.append(("(iv) bare loop all CPUs vs 1 thread", r, ">= 1.7", r is not None and r >= 1.7))
    for label, value, target, met in rows:
        shown = "n/a" if value is None else f"{value:.2f}"
        print(f"{label:<40}{shown:>10}  target {target:<8} {'met' if met else 'NOT met'}")

    if not args.no_scaling:
        print("\n# cost per entry, Q x 2 x 100, rrf_batch (all threads)")
        scaling.print_curve(scaling.curve())
        print()
        scaling.print_rss(scaling.rss("rrf_batch"))
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
