"""The checks of ``rankfusion.optimize`` that docs/optimize.md reports, on the shipped runs
(Cranfield and Vaswani, BM25 + MiniLM, in data/). Each check prints its figures and OK or FAIL;
the script exits with status 1 when a check fails.

Run sets: ``2 runs`` (BM25, MiniLM) and two three-run sets made from them (tests/_third_run.py):
``+noisy`` (MiniLM with every score moved by a hash-drawn amount in [-0.05, 0.05]) and ``+rrf``
(the RRF fusion, k=60, of BM25 and MiniLM, its top 100, as a third run).

1. grid: the weights grid is every composition (counted by brute force over the product, and
   C(m + n - 1, n - 1)), in lexicographic order; how many of them ranx's float-sum filter keeps.
2. brute force: every setting's score against a Python loop over the same grid that calls
   ``rankfusion.fuse`` per query and ir-measures' ``calc_aggregate`` per setting: the same best
   setting (first of the best), its score and every other to 1e-12.
3. ranx: ``ranx.optimize_fusion`` on the same runs and metric (wsum, 3 runs, step 0.1; rrf, its k
   grid): its settings are among ours; each scores the same in our table as ranx's own fused run
   evaluated by ir-measures (ranx's reported figure differs where its metrics order tied documents
   otherwise than trec_eval); where ranx's filter skips our best setting, ranx's choice and ours.
4. cross-validation: the same folds, choices and figure twice for a seed; the per-fold figures
   add up to the reported mean.

    python benches/optimize_checks.py [--skip brute,ranx] [--collections cranfield,vaswani]
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import ir_measures  # noqa: E402
from _third_run import write_fused_run, write_noisy_run  # noqa: E402

import rankfusion  # noqa: E402
from rankfusion import _optimize, trec  # noqa: E402

RANX_NORMS = {"min-max": "min-max", "z-score": "zmuv", None: None}
FAILED: List[str] = []


def verdict(ok: bool, what: str) -> str:
    if not ok:
        FAILED.append(what)
    return "OK" if ok else "FAIL"


def run_sets(name: str, folder: Path, tmp: str) -> Dict[str, List[str]]:
    bm25, minilm = str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")
    noisy = write_noisy_run(minilm, f"{tmp}/{name}-noisy.run")
    fused = write_fused_run([bm25, minilm], f"{tmp}/{name}-rrf.run")
    return {
        "2 runs": [bm25, minilm],
        "+noisy": [bm25, minilm, noisy],
        "+rrf": [bm25, minilm, fused],
    }


def check_grid(ranx: bool) -> None:
    print("1. the weights grid: every vector of n multiples of 1/m summing to 1")
    tried_by_ranx = None
    if ranx:
        from ranx.fusion_optimization import optimize_weights as tried_by_ranx
    for n, m in [(2, 10), (3, 10), (4, 10), (5, 10), (3, 20), (3, 4)]:
        ours = list(_optimize._weights_of(m, n))
        product = [c for c in itertools.product(range(m + 1), repeat=n) if sum(c) == m]
        same = ours == [tuple(i / m for i in c) for c in product]
        line = (
            f"   n={n} step 1/{m}: {len(ours)} settings = C({m + n - 1}, {n - 1}) = "
            f"{math.comb(m + n - 1, n - 1)}; = the {len(product)} of the product, same order: "
        )
        ok = same and len(ours) == math.comb(m + n - 1, n - 1)
        line += verdict(ok, f"grid {n} {m}")
        if tried_by_ranx is not None:
            configs = tried_by_ranx.get_trial_configs(tried_by_ranx.get_possible_weights(1 / m), n)
            kept = {tuple(map(float, c)) for c in configs}
            missed = sorted(set(ours) - kept)
            line += f"; ranx's filter keeps {len(kept)}, skips {len(missed)}"
            if n == 3 and m == 10:
                line += f": {missed}"
        print(line)


def brute_force(
    files: Sequence[str], qrels_path: str, method: str, norm: Any, metric: str, settings: List[dict]
) -> Tuple[List[float], int]:
    """Per setting: each judged query fused by ``rankfusion.fuse`` on the runs as
    ``trec.read_run`` reads them, the run evaluated by ir-measures' ``calc_aggregate``."""
    runs = [trec.read_run(f) for f in files]
    qrels = trec.read_qrels(qrels_path)
    measure = ir_measures.parse_measure(metric)
    empty = trec.Ranking([], [])
    scores = []
    for setting in settings:
        fused = {}
        for qid in qrels:
            rankings = [run.get(qid, empty) for run in runs]
            if all(r is empty for r in rankings):
                continue
            hits = rankfusion.fuse(
                [r.docids for r in rankings],
                scores=[r.scores for r in rankings],
                method=method,
                norm=norm,
                **setting,
            )
            fused[qid] = {h.key: h.score for h in hits}
        scores.append(ir_measures.calc_aggregate([measure], qrels, fused)[measure])
    return scores, max(range(len(settings)), key=lambda i: (scores[i], -i))


BRUTE_CASES = [
    ("2 runs", "rrf", None, "nDCG@10", None),
    ("2 runs", "rrf", None, "AP", None),
    ("2 runs", "wsum", "min-max", "nDCG@10", None),
    ("+noisy", "wsum", "min-max", "nDCG@10", None),
    ("+noisy", "rrf", None, "nDCG@10", {"weights": None}),
    ("+noisy", "mixed", "min-max", "AP", None),
    ("+rrf", "wsum", "min-max", "nDCG@10", None),
    ("+rrf", "wsum", "z-score", "R@100", None),
]


def check_brute_force(data: Dict[str, Tuple[Dict[str, List[str]], str]]) -> None:
    print("\n2. in-sample best vs a brute-force loop (rankfusion.fuse per query + ir-measures)")
    for name, (sets, qrels) in data.items():
        for run_set, method, norm, metric, grid in BRUTE_CASES:
            files = sets[run_set]
            kw = dict(method=method, norm=norm, metric=metric, grid=grid)
            plan = _optimize._plan(files, method, norm, metric, None, grid, 0, "score",
                                   None, "first", None, None)  # fmt: skip
            path = "traced" if _optimize._traceable(plan) else "whole"
            t0 = time.perf_counter()
            r = rankfusion.optimize(files, qrels, **kw)
            t1 = time.perf_counter()
            scores, best = brute_force(files, qrels, method, norm, metric, list(r.settings))
            t2 = time.perf_counter()
            diff = max(abs(a - b) for a, b in zip(r.scores, scores))
            ok = best == r.best_index and diff <= 1e-12
            print(
                f"   {name} {run_set} {method}{' ' + norm if norm else ''} {metric}: "
                f"{len(r.settings)} settings ({path}); best {_shown(r.best)} {r.best_score:.6f}, "
                f"brute force {_shown(r.settings[best])} {scores[best]:.6f}; max |diff| "
                f"{diff:.1e}; {t1 - t0:.2f}s vs {t2 - t1:.1f}s: "
                + verdict(ok, f"brute {name} {run_set} {method} {metric}")
            )


def _shown(setting: Dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in setting.items())


def _ranx_key(method: str, config: str) -> Any:
    if method == "rrf":
        return int(config)
    plain = re.sub(r"np\.float64\(([^)]*)\)", r"\1", config)  # numpy 2's repr of its floats
    return tuple(float(x) for x in plain.strip("()[]").split(","))


def ranx_fused_value(
    runs: List[Any], method: str, norm: Any, params: Dict[str, Any], qrels: Any, metric: str
) -> float:
    """ranx's fusion of ``runs`` with ``params``, evaluated by ir-measures."""
    from ranx import fuse

    fused = fuse(runs, norm=RANX_NORMS[norm], method=method, params=params)
    return next(iter(trec.evaluate(fused.to_dict(), qrels, metric).values()))


def check_ranx(data: Dict[str, Tuple[Dict[str, List[str]], str]]) -> None:
    from ranx import Qrels, Run, optimize_fusion

    print("\n3. ranx.optimize_fusion on the same runs and metric")
    for name, (sets, qrels_path) in data.items():
        qrels = trec.read_qrels(qrels_path)
        rq = Qrels.from_dict(qrels)
        for run_set, method, norm, metric in [
            ("+noisy", "wsum", "min-max", "ndcg@10"),
            ("+rrf", "wsum", "min-max", "ndcg@10"),
            ("2 runs", "rrf", None, "ndcg@10"),
        ]:
            files = sets[run_set]
            runs = [trec.to_ranx(trec.read_run(f), name=str(i)) for i, f in enumerate(files)]
            best, report = optimize_fusion(
                rq, runs, norm=RANX_NORMS[norm], method=method, metric=metric,
                return_optimization_report=True, show_progress=False,
            )  # fmt: skip
            r = rankfusion.optimize(files, qrels_path, method=method, norm=norm, metric=metric)
            key = "k" if method == "rrf" else "weights"
            ours = {s[key]: v for s, v in zip(r.settings, r.scores)}
            reported = {_ranx_key(method, c): v for c, v in zip(report.configs, report.results)}
            among = set(reported) <= set(ours)
            # each of ranx's settings: its fused run evaluated by ir-measures vs our table
            tie_free = None
            if method == "rrf":  # the runs with scores n - rank (RRF reads ranks only)
                tie_free = [
                    Run.from_dict({q: {d: float(len(x[q].docids) - j)
                                       for j, d in enumerate(x[q].docids)} for q in x})
                    for x in (trec.read_run(f) for f in files)
                ]  # fmt: skip

            same, zero, ties, differ = 0, 0, 0, 0.0
            for setting in reported:
                params = {"k": setting} if method == "rrf" else {"weights": list(setting)}
                value = ranx_fused_value(runs, method, norm, params, qrels, metric)
                if abs(value - ours[setting]) <= 1e-12:
                    same += 1
                elif method != "rrf" and 0.0 in setting:
                    zero += 1  # ranx keeps a weight-0 run's documents, at 0
                elif (
                    tie_free is not None
                    and abs(
                        ranx_fused_value(tie_free, method, norm, params, qrels, metric)
                        - ours[setting]
                    )
                    <= 1e-12
                ):
                    ties += 1
                else:
                    differ = max(differ, abs(value - ours[setting]))
            reported_gap = max(abs(reported[s] - ours[s]) for s in reported)
            choice = best[key] if method == "rrf" else tuple(float(w) for w in best[key])
            ok = among and differ == 0.0
            print(
                f"   {name} {run_set} {method} {norm or ''} {metric}: ranx tries "
                f"{len(reported)}, all among our {len(ours)}: {among}; its fused run, evaluated "
                f"by ir-measures, scores as ours (1e-12) for {same}"
                + (f", and not for {zero} with a zero weight" if zero else "")
                + (
                    f"; {ties} more once the runs' tied scores are ranked as trec_eval ranks them "
                    "(ranx's sort of tied scores is unstable)"
                    if ties
                    else ""
                )
                + f"; ranx's own figure differs by up to {reported_gap:.1e}; ranx's choice "
                f"{key}={choice} (ours {ours[choice]:.6f}), our choice {key}={r.best[key]} "
                f"{r.best_score:.6f}: " + verdict(ok, f"ranx {name} {run_set} {method}")
            )

    print("   where ranx's float-sum filter skips the best setting (min-max, step 0.1):")
    from ranx.fusion_optimization import optimize_weights as ow

    kept = {tuple(map(float, c)) for c in ow.get_trial_configs(ow.get_possible_weights(0.1), 3)}
    shown = 0
    for name, (sets, qrels_path) in data.items():
        for run_set, method, order, metric in itertools.product(
            ("+noisy", "+rrf"),
            ("wsum", "mixed"),
            itertools.permutations(range(3)),
            ("ndcg@10", "map", "precision@10", "recall@100", "mrr"),
        ):
            files = [sets[run_set][i] for i in order]
            r = rankfusion.optimize(files, qrels_path, method=method, norm="min-max",
                                            metric=metric)  # fmt: skip
            if r.best["weights"] in kept:
                continue
            shown += 1
            if shown > 4:
                continue  # counted; ranx's own run is shown for the first few
            tried = [i for i, s in enumerate(r.settings) if s["weights"] in kept]
            theirs = max(tried, key=lambda i: (r.scores[i], i))  # ranx: the last best
            rq = Qrels.from_dict(trec.read_qrels(qrels_path))
            runs = [trec.to_ranx(trec.read_run(f), name=str(i)) for i, f in enumerate(files)]
            best = optimize_fusion(rq, runs, norm="min-max", method=method, metric=metric,
                                           show_progress=False)  # fmt: skip
            choice = tuple(float(w) for w in best["weights"])
            print(
                f"   {name} {run_set} {method} runs {order} {metric}: our best "
                f"{r.best['weights']} {r.best_score:.6f} is never tried by ranx; ranx "
                f"chooses {choice} ({r.scores[r.settings.index({'weights': choice})]:.6f} "
                f"in our table; the best it tries there: "
                f"{r.settings[theirs]['weights']} {r.scores[theirs]:.6f})"
            )
    print(
        f"   ranx's filter skips our best setting in {shown} of {len(data) * 2 * 2 * 6 * 5} "
        "(collection, run set, method, run order, metric) cases"
    )


def check_cv(data: Dict[str, Tuple[Dict[str, List[str]], str]]) -> None:
    print("\n4. cross-validation (wsum min-max nDCG@10, +noisy, 5 folds)")
    for name, (sets, qrels) in data.items():
        for seed in (0, 1):
            kw = dict(method="wsum", norm="min-max", metric="nDCG@10", folds=5, seed=seed)
            a = rankfusion.optimize(sets["+noisy"], qrels, **kw)
            b = rankfusion.optimize(sets["+noisy"], qrels, **kw)
            n = len(a.queries)
            added = sum(len(f.queries) * f.score for f in a.folds) / n
            exact = math.fsum(v for f in a.folds for v in a.per_query[f.choice_index][
                [a.queries.index(q) for q in f.queries]]) / n  # fmt: skip
            same = a.folds == b.folds and a.cv_score == b.cv_score
            ok = same and abs(added - a.cv_score) <= 1e-12 and exact == a.cv_score
            print(
                f"   {name} seed {seed}: in-sample {a.best['weights']} {a.best_score:.4f}, "
                f"cross-validated {a.cv_score:.4f}; twice the same folds, choices and figure: "
                f"{same}; sum(n_f * score_f) / n - cv = {added - a.cv_score:.1e}, fsum of the "
                f"held-out values / n == cv: {exact == a.cv_score}: "
                + verdict(ok, f"cv {name} {seed}")
            )
            for f in a.folds:
                print(
                    f"      fold {f.index + 1}: {len(f.queries)} queries, chosen "
                    f"{f.choice['weights']} ({f.train_score:.4f} on the others), held out "
                    f"{f.score:.4f}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip", default="", help="brute, ranx: leave out these checks")
    parser.add_argument("--collections", default="cranfield,vaswani")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    skip = set(args.skip.split(","))
    tmp = tempfile.mkdtemp()
    data = {}
    for name in args.collections.split(","):
        folder = ROOT / "data" / name
        if (folder / "qrels.txt").exists():
            data[name] = (run_sets(name, folder, tmp), str(folder / "qrels.txt"))
        else:
            print(f"({folder} is absent: skipped)")
    check_grid("ranx" not in skip)
    if "brute" not in skip:
        check_brute_force(data)
    if "ranx" not in skip:
        check_ranx(data)
    check_cv(data)
    print("\nall checks OK" if not FAILED else f"\nFAILED: {FAILED}")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
