"""Every fusion method of fuse_batch, side by side with ranx.fuse and with rrf_batch.

    python benches/bench_methods.py                       # both workloads (~10 minutes on 2 busy cores)
    python benches/bench_methods.py --workloads A --only rrf,wsum,med
    python benches/bench_methods.py --workloads B --only sum/min-max,sum/z-score,dbsf/-
    python benches/bench_methods.py --no-ranx             # fuse_batch vs rrf_batch only
    python benches/bench_methods.py --ranx-fraction 1     # ranx on every query (~15 s a call on A)

The README's ranx ratios are from --ranx-fraction 1 (every query; docs/batch.md, "ranx on every
query"), not scaled up from a tenth of the queries (issue 28).
    python benches/bench_methods.py --threads1 all        # 1 thread vs all CPUs for every row

Build the extension in release mode first (`maturin develop --release`).

Workloads: A = 10,000 queries x 2 lists x 100, B = 1,000 queries x 5 lists x 1,000. Ids are
random int64 drawn per query from a pool of 2.5 N ids (workloads.id_arrays: ~40% of a list is in
another), scores descending per row, each list on its own scale (BM25-like 3..30, a cosine with
a few negative values, ...), fixed seed.

What is timed (best of the rounds; rounds interleaved, so that a change of the machine's load hits
every column alike; the garbage collector is off while a call runs):
- fuse_batch(ids, scores, method=..., norm=...) on the whole workload, all CPUs (and 1 thread);
- rrf_batch(ids) on the same id arrays, in the same rounds: the ratio fuse_batch / rrf_batch;
- ranx.fuse(runs, norm=..., method=..., params=...) on the same ids (as str) and scores. ranx
  costs ~1 ms per query of A (more on B), so by default it runs on the first tenth of the queries
  (--ranx-fraction) and its time is scaled to the whole workload (ranx fuses query by query:
  its time is linear in the queries; --ranx-fraction 1 measures it directly); 2 rounds. Its
  numba JIT compilation is excluded by an untimed call on a few queries of the same data first;
  building the Run objects (and the ids as str) is not timed, its cost is reported apart.
  Methods ranx lacks (dbsf, relative_score, the OpenSearch means, the l2 and dbsf norms) are
  set against the nearest ranx call doing the same kind of work, marked "~".
Untimed check: on the ranx rows sampled, the same keys as ranx, scores within 1e-9, and our
order sorted by ranx's scores (ties aside) — "same" — where ranx defines the method as we do.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Before numpy is imported: its OpenBLAS threads would spin on the 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from workloads import cpu_info, have_ranx, id_arrays

import rankfusion as rf
from rankfusion import reference as ref
from rankfusion._core import __file__ as core_file

WORKLOADS = {"A": (10_000, 2, 100), "B": (1_000, 5, 1_000)}
# Each list's score range (high, low): a lexical BM25, cosines (one dips below 0), ...
SCALES = [(30.0, 3.0), (0.92, -0.08), (1.0, 0.2), (12.0, 10.0), (5.0, -5.0)]
WEIGHTS = {2: [0.7, 0.3], 5: [0.3, 0.25, 0.2, 0.15, 0.1]}
CHECK_ROWS = 20


def score_arrays(n_queries: int, n_lists: int, depth: int, seed: int = 1) -> list:
    """Per list a (Q, N) float64 array, strictly descending per row, on the list's own scale."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_lists):
        high, low = SCALES[i % len(SCALES)]
        u = -np.sort(-rng.random((n_queries, depth)), axis=1)  # descending in [0, 1)
        out.append(low + (high - low) * u)
    return out


class Case(NamedTuple):
    """One row of the table: a fuse_batch call and the ranx call set against it."""

    method: str
    norm: Optional[str]  # None: the method's own (or none)
    kwargs: dict  # fuse_batch's method parameters; "weights": True means WEIGHTS[L]
    ranx: Optional[tuple]  # (method, norm, params) with "weights" as above, or None
    same: bool  # ranx's definition is ours: compare the results
    one_thread: bool = False  # also time threads=1 (by default)

    @property
    def proxy(self) -> bool:
        """ranx lacks the method (or norm): its call is the nearest one, not the same."""
        return not self.same and self.method not in ("condorcet",)


W = "weights"


def cases() -> list:
    mm = "min-max"
    c = [
        # rank-based: no scores passed (rrf_batch has none either), ranx with norm=None
        Case("rrf", None, {}, ("rrf", None, {"k": 60}), True, True),
        Case("rbc", None, {"phi": 0.8}, ("rbc", None, {"phi": 0.8}), True),
        Case("isr", None, {}, ("isr", None, {}), True),
        Case("log_isr", None, {}, ("log_isr", None, {}), True),
        Case("logn_isr", None, {}, ("logn_isr", None, {"sigma": 0.01}), True),
        Case("bordafuse", None, {}, ("bordafuse", None, {}), True, True),
        Case("bordafuse", None, {W: True}, ("w_bordafuse", None, {W: True}), True),
        Case("condorcet", None, {}, ("condorcet", None, {}), False, True),
        Case("condorcet", None, {W: True}, ("w_condorcet", None, {W: True}), False),
        # score-based over min-max
        Case("sum", mm, {}, ("sum", mm, {}), True),
        Case("wsum", mm, {W: True}, ("wsum", mm, {W: True}), True, True),
        Case("mnz", mm, {}, ("mnz", mm, {}), True),
        Case("anz", mm, {}, ("anz", mm, {}), True),
        Case("gmnz", mm, {"gamma": 1.0}, ("gmnz", mm, {"gamma": 1.0}), True),
        Case("max", mm, {}, ("max", mm, {}), True),
        Case("min", mm, {}, ("min", mm, {}), True),
        Case("med", mm, {}, ("med", mm, {}), True, True),
        Case("wmnz", mm, {W: True}, ("wmnz", mm, {W: True}), True),
        Case("mixed", mm, {W: True}, ("mixed", mm, {W: True}), True),
        Case("relative_score", None, {W: True}, ("wsum", mm, {W: True}), False),
        Case("arithmetic_mean", mm, {W: True}, ("wsum", mm, {W: True}), False),
        Case("geometric_mean", mm, {W: True}, ("wsum", mm, {W: True}), False),
        Case("harmonic_mean", mm, {W: True}, ("wsum", mm, {W: True}), False),
        Case("dbsf", None, {}, ("sum", "zmuv", {}), False),
        # the other norms, on sum (and a few on wsum / mnz)
        Case("sum", "none", {}, ("sum", None, {}), True),
        Case("sum", "z-score", {}, ("sum", "zmuv", {}), True, True),
        Case("sum", "max", {}, ("sum", "max", {}), True),
        Case("sum", "sum", {}, ("sum", "sum", {}), True),
        Case("sum", "l2", {}, ("sum", "max", {}), False),
        Case("sum", "rank", {}, ("sum", "rank", {}), True),
        Case("sum", "borda", {}, ("sum", "borda", {}), True),
        Case("sum", "dbsf", {}, ("sum", "zmuv", {}), False),
        Case("wsum", "none", {W: True}, ("wsum", None, {W: True}), True),
        Case("wsum", "z-score", {W: True}, ("wsum", "zmuv", {W: True}), True),
        Case("wsum", "dbsf", {W: True}, ("wsum", "zmuv", {W: True}), False),
        Case("mnz", "z-score", {}, ("mnz", "zmuv", {}), True),
    ]
    return c


def with_weights(d: dict, n_lists: int) -> dict:
    return {k: (WEIGHTS[n_lists] if k == W and v is True else v) for k, v in d.items()}


def label(case: Case) -> tuple:
    params = ", ".join(
        f"{k}={'w' if k == W else v}" for k, v in case.kwargs.items()
    )  # "w": the workload's weights
    return case.method, case.norm or "-", params


def ranx_label(case: Case) -> str:
    if case.ranx is None:
        return "-"
    m, n, _ = case.ranx
    return ("~" if case.proxy else "") + f"{m}/{n or 'none'}"


def timed(f) -> float:
    gc.disable()
    try:
        t = time.perf_counter()
        f()
        return time.perf_counter() - t
    finally:
        gc.enable()


def str_ids(arrays: list, rows: int) -> list:
    """The first `rows` rows of every list as lists of str (what ranx keys documents by)."""
    return [a[:rows].astype(str).tolist() for a in arrays]


def ranx_runs(ids: list, scores: list, rows: int, offset: int = 0) -> list:
    from ranx import Run

    runs = []
    for i, (lst, sc) in enumerate(zip(ids, scores)):
        sc = sc[offset : offset + rows].tolist()
        d = {f"q{q}": dict(zip(lst[offset + q], sc[q])) for q in range(rows)}
        runs.append(Run(d, name=f"run{i}"))
    return runs


def ranx_call(case: Case, n_lists: int):
    from ranx import fuse

    method, norm, params = case.ranx
    params = with_weights(params, n_lists)
    return lambda runs: fuse(runs, norm=norm, method=method, params=params)


def fuse_call(case: Case, arrays: list, scores: list, threads: Optional[int] = None):
    kwargs = with_weights(case.kwargs, len(arrays))
    reads_scores = ref.METHODS[case.method].kind == "score"
    s = scores if reads_scores else None
    if case.norm is not None:
        kwargs["norm"] = case.norm
    if threads is not None:
        kwargs["threads"] = threads
    return lambda: rf.fuse_batch(arrays, s, method=case.method, **kwargs)


def check(result, fused, rows: int) -> str:
    """Our rows against ranx's: same keys, scores within 1e-9, our order by ranx's scores."""
    worst, keys_ok, order_ok = 0.0, True, True
    for q in range(0, rows, max(1, rows // CHECK_ROWS)):
        c = int(result.counts[q])
        ours = [str(x) for x in result.ids[q, :c].tolist()]
        theirs = dict(fused[f"q{q}"])
        if set(ours) != set(theirs):
            keys_ok = False
            continue
        ts = [theirs[k] for k in ours]
        for k, s in zip(ours, result.scores[q, :c].tolist()):
            worst = max(worst, abs(s - theirs[k]) / max(1.0, abs(s)))
        order_ok &= all(a >= b - 1e-12 * max(1.0, abs(a)) for a, b in zip(ts, ts[1:]))
    if not keys_ok:
        return "keys differ"
    if worst > 1e-9:
        return f"scores differ ({worst:.1e})" + ("" if order_ok else ", order")
    return "same" if order_ok else "order differs"


def run_workload(name: str, args, case_list: list) -> list:
    q, n_lists, depth = WORKLOADS[name]
    arrays = id_arrays(q, n_lists, depth)
    scores = score_arrays(q, n_lists, depth)
    entries = q * n_lists * depth
    use_ranx = args.ranx
    rows_ranx = max(1, min(q, round(q * args.ranx_fraction)))
    scale = q / rows_ranx
    print(
        f"\n## workload {name}: {q:,} queries x {n_lists} lists x {depth:,} ({entries:,} entries)"
    )
    runs = None
    if use_ranx:
        t = time.perf_counter()
        ids_str = str_ids(arrays, rows_ranx)
        t_str = time.perf_counter() - t
        t = time.perf_counter()
        runs = ranx_runs(ids_str, scores, rows_ranx)
        t_runs = time.perf_counter() - t
        warm = ranx_runs(ids_str, scores, min(3, rows_ranx))
        print(
            f"ranx on the first {rows_ranx:,} queries, its times x {scale:g}. Input conversion "
            f"(not timed below), scaled to the workload: ids to str {t_str * scale:.2f} s, "
            f"ranx Run objects {t_runs * scale:.1f} s "
            f"(measured {t_str:.2f} s + {t_runs:.1f} s on the {rows_ranx:,} queries)"
        )
    rrf = lambda: rf.rrf_batch(arrays)  # noqa: E731
    rrf1 = lambda: rf.rrf_batch(arrays, threads=1)  # noqa: E731
    out = []
    for case in case_list:
        one = args.threads1 == "all" or (args.threads1 == "some" and case.one_thread)
        calls = {"fb": fuse_call(case, arrays, scores), "rrf": rrf}
        if one:
            calls["fb1"] = fuse_call(case, arrays, scores, threads=1)
            calls["rrf1"] = rrf1
        first = {k: timed(f) for k, f in calls.items()}  # warm: pools, first-touch memory
        per_round = sum(first.values())
        rounds = max(1, min(args.rounds, int(args.budget / max(per_round, 1e-9))))
        best = dict(first) if rounds == 1 else dict.fromkeys(calls, math.inf)
        ranx_best, verdict = math.inf, "-"
        do_ranx = use_ranx and case.ranx is not None
        if do_ranx:
            fuse_ranx = ranx_call(case, n_lists)
            fuse_ranx(warm)  # numba compiles (or loads its cache) here, untimed
        for r in range(max(rounds, args.ranx_rounds if do_ranx else 0)):
            if r < rounds and not (rounds == 1 and r == 0):
                for k, f in calls.items():
                    best[k] = min(best[k], timed(f))
            if do_ranx and r < args.ranx_rounds:
                holder = {}

                def go(holder=holder, fuse_ranx=fuse_ranx):
                    holder["fused"] = fuse_ranx(runs)

                ranx_best = min(ranx_best, timed(go))
                if r == 0 and case.same:
                    verdict = check(calls["fb"](), holder["fused"], rows_ranx)
                elif r == 0:
                    verdict = "(ranx lacks it)" if case.proxy else "(ranx: other scores)"
        row = {
            "case": case,
            "rounds": rounds,
            "fb": best["fb"],
            "rrf": best["rrf"],
            "fb1": best.get("fb1"),
            "rrf1": best.get("rrf1"),
            "ranx": ranx_best * scale if do_ranx else None,
            "check": verdict,
        }
        out.append(row)
        show = " ".join(f"{k} {v * 1e3:.1f} ms" for k, v in best.items())
        if do_ranx:
            show += f" ranx {ranx_best * 1e3:.0f} ms (x{scale:g})"
        print(f"# {' '.join(label(case))}: {show}; {rounds} rounds", flush=True)
    return out


def table(name: str, rows: list) -> None:
    q, n_lists, depth = WORKLOADS[name]
    print(f"\n### {name}: {q:,} x {n_lists} x {depth:,}\n")
    print(
        "| method | norm | params | fuse_batch ms | rrf_batch ms | fuse/rrf (<= 1.5) "
        "| ranx ms | ranx call | ranx/fuse (>= 50) | check | 1 thread: fuse, rrf ms | rounds |"
    )
    print("|---|---|---|---:|---:|---:|---:|---|---:|---|---:|---:|")
    for row in rows:
        case = row["case"]
        method, norm, params = label(case)
        ratio = row["fb"] / row["rrf"]
        mark = "" if ratio <= 1.5 else " **miss**"
        if row["ranx"] is None:
            ranx, speedup = "-", "-"
        else:
            r = row["ranx"] / row["fb"]
            ranx = f"{row['ranx'] * 1e3:,.0f}"
            speedup = f"{r:,.0f}x" + ("" if r >= 50 else " **miss**")
        one = "-"
        if row["fb1"] is not None:
            one = f"{row['fb1'] * 1e3:.1f}, {row['rrf1'] * 1e3:.1f}"
        print(
            f"| {method} | {norm} | {params} | {row['fb'] * 1e3:.1f} | {row['rrf'] * 1e3:.1f} "
            f"| {ratio:.2f}{mark} | {ranx} | {ranx_label(case)} | {speedup} | {row['check']} "
            f"| {one} | {row['rounds']} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", default="A,B")
    parser.add_argument(
        "--only", default=None, help="comma-separated methods, or method/norm for one row"
    )
    parser.add_argument("--no-ranx", dest="ranx", action="store_false")
    parser.add_argument("--ranx-fraction", type=float, default=0.1)
    parser.add_argument("--ranx-rounds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7, help="at most, per row")
    parser.add_argument(
        "--budget", type=float, default=4.0, help="seconds of our calls per row (fewer rounds)"
    )
    parser.add_argument("--threads1", choices=("none", "some", "all"), default="some")
    args = parser.parse_args()
    args.ranx = args.ranx and have_ranx()
    case_list = cases()
    if args.only:
        # A method (every row of it) or method/norm (that row; "-" for the method's own norm).
        wanted = set(args.only.split(","))
        case_list = [
            c for c in case_list if c.method in wanted or f"{c.method}/{c.norm or '-'}" in wanted
        ]
    print(f"# rankfusion fuse_batch per method ({cpu_info()})")
    print(f"# extension: {core_file}")
    print(f"# command: python {' '.join(sys.argv)}")
    print(f"# load average at start: {os.getloadavg()}")
    t0 = time.perf_counter()
    results = {}
    for name in args.workloads.split(","):
        results[name] = run_workload(name, args, case_list)
        print(f"# load average: {os.getloadavg()}", flush=True)
    for name, rows in results.items():
        table(name, rows)
    print(
        "\nfuse/rrf: fuse_batch over rrf_batch on the same id arrays, same rounds (all CPUs). "
        "ranx: scaled to the whole workload when run on a slice; '~': ranx lacks the method, "
        "the nearest ranx call. check: against ranx on sampled rows (see the docstring)."
    )
    print(f"# total {time.perf_counter() - t0:.0f} s; load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
