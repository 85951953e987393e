"""``rankfusion.compare`` against ``ranx.compare(stat_test="fisher")``, side by side in one run.

    python benches/compare_table.py [--rounds 3] [--permutations 100000]

The workload of issue 29: 5 runs of the 225 Cranfield queries (BM25, MiniLM, their RRF fusion,
and MiniLM and BM25 with their scores jittered: tests/_third_run.py), 3 metrics (nDCG@10, AP,
R@100), every pair of runs, 100,000 permutations per test. Printed, each the best of
``--rounds``:

- ranx's numba JIT warm-up (its first ``compare``, on two queries: the metrics' and the Fisher
  test's compilation, or the load of numba's cache), apart;
- ``ranx.compare(qrels, runs, metrics, stat_test="fisher", n_permutations=100_000)`` on ranx
  runs already read (ranx tests every ordered pair: 20 pairs x 3 metrics = 60 Fisher tests), and
  ``rankfusion.compare(paths, qrels_path, ...)`` from the files (reading and evaluation with
  ir-measures included; 10 pairs x 3 metrics = 30 tests);
- the statistics alone: ranx's ``compute_statistical_significance`` on its per-query scores,
  and ``rankfusion.compare_per_query`` on rankfusion's;
- the whole command ``rankfusion compare RUN x 5 --qrels Q --metrics ndcg@10,map,recall@100``,
  wall time of the process (interpreter start-up included).

Ratios are per call and per test (ranx makes twice the tests). The machine's load is printed
before and after: it is shared, and absolute times move with it; the ratios are the point.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _third_run import write_fused_run, write_noisy_run  # noqa: E402

import rankfusion  # noqa: E402
from rankfusion import trec  # noqa: E402

METRICS = ["ndcg@10", "map", "recall@100"]


def best(call, rounds: int) -> tuple:
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--permutations", type=int, default=100_000)
    args = parser.parse_args()
    import ranx
    from ranx.statistical_tests import compute_statistical_significance

    print(f"# load average at start: {os.getloadavg()}")
    folder = ROOT / "data" / "cranfield"
    bm25, minilm = str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")
    qrels = str(folder / "qrels.txt")
    work = Path(tempfile.mkdtemp(prefix="compare-bench-"))
    runs = [
        bm25,
        minilm,
        write_fused_run([bm25, minilm], str(work / "rrf.run")),
        write_noisy_run(minilm, str(work / "minilm-noisy.run")),
        write_noisy_run(bm25, str(work / "bm25-noisy.run"), amplitude=0.5),
    ]
    b = args.permutations

    # ranx: its runs read once (not timed); the JIT warm-up on a tiny input, apart.
    ranx_qrels = ranx.Qrels.from_file(qrels, kind="trec")
    ranx_runs = [trec.to_ranx(trec.read_run(p), name=os.path.basename(p)) for p in runs]
    first = list(ranx_qrels.to_dict())[:2]
    tiny_qrels = ranx.Qrels({q: ranx_qrels.to_dict()[q] for q in first})
    tiny_runs = [ranx.Run({q: r.to_dict()[q] for q in first}, name=r.name) for r in ranx_runs[:2]]
    start = time.perf_counter()
    ranx.compare(tiny_qrels, tiny_runs, METRICS, stat_test="fisher", n_permutations=10)
    warm_up = time.perf_counter() - start

    def ranx_call():
        return ranx.compare(
            ranx_qrels, ranx_runs, METRICS, stat_test="fisher", n_permutations=b, max_p=0.05
        )

    def rf_call():
        return rankfusion.compare(runs, qrels, metrics=METRICS, permutations=b)

    rf_call()  # the pools, ir-measures' imports
    # rankfusion first: numba's threads may spin for a while after ranx's calls.
    t_rf, cmp = best(rf_call, args.rounds)
    t_rf_stats, _ = best(
        lambda: rankfusion.compare_per_query(cmp.per_query, permutations=b), args.rounds
    )
    command = [sys.executable, "-m", "rankfusion", "compare", *runs, "--qrels", qrels]
    command += ["--metrics", ",".join(METRICS), "--permutations", str(b), "-q"]
    t_cli, done = best(lambda: subprocess.run(command, capture_output=True, text=True), 3)
    assert done.returncode == 0, done.stderr
    t_ranx, report = best(ranx_call, args.rounds)

    # The statistics alone, on each one's per-query values.
    scores = {
        r.name: {m: ranx.evaluate(ranx_qrels, r, m, return_mean=False) for m in METRICS}
        for r in ranx_runs
    }
    names = [r.name for r in ranx_runs]
    t_ranx_stats, _ = best(
        lambda: compute_statistical_significance(names, scores, "fisher", b, 0.05, 42), args.rounds
    )

    n_rf, n_ranx = len(cmp.pairs), 2 * len(cmp.pairs)
    print(f"5 runs x {len(cmp.queries)} queries x 3 metrics, {b:,} permutations per test")
    print(f"{'':34}{'ranx':>10}{'rankfusion':>12}{'ratio':>9}{'per test':>10}")
    print(f"{'numba JIT warm-up (apart)':34}{warm_up:>9.2f}s{'-':>12}")
    for label, a, r in (
        ("compare, whole call", t_ranx, t_rf),
        ("the statistics alone", t_ranx_stats, t_rf_stats),
    ):
        print(f"{label:34}{a:>9.3f}s{r:>11.3f}s{a / r:>8.1f}x{(a / n_ranx) / (r / n_rf):>9.1f}x")
    print(f"tests made: ranx {n_ranx} (every ordered pair), rankfusion {n_rf}")
    print(f"rankfusion compare (the command, 5 runs, wall): {t_cli:.2f}s")
    # How the two agree: each pair's p-value, ranx's beside rankfusion's.
    worst = 0.0
    for r in cmp.pairs:
        theirs = report.comparisons[r.system, r.baseline][r.metric]["p_value"]
        worst = max(worst, abs(theirs - r.p))
    print(f"largest |p(ranx) - p(rankfusion)| over the {n_rf} pairs: {worst:.5f}")
    print(f"# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
