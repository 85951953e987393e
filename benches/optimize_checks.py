"""The figures docs/optimize.md quotes for ``rankfusion.optimize``, computed on the shipped runs:

1. the weights grid: how many compositions, and how many ranx's float filter keeps;
2. brute-force parity: every setting's score against a Python loop of ``rankfusion.fuse`` per
   query + ir-measures (``calc_aggregate``), on Cranfield and Vaswani (BM25 + MiniLM, and the
   two with a third run made from MiniLM by tests/_third_run.py): the largest difference and
   whether the best setting is the same;
3. ranx's ``optimize_fusion`` on the same runs: its settings among ours, the largest score
   difference (apart: settings with a zero weight, which ranx fuses otherwise), and where its
   filter misses a better setting;
4. cross-validation: the same folds and choices twice for a seed, the per-fold figures adding
   up to the reported mean.

    python benches/optimize_checks.py [--skip ranx]

Vaswani is read from ../shared/data when it is there.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import ir_measures  # noqa: E402
from _third_run import write_noisy_run  # noqa: E402

import rankfusion  # noqa: E402
from rankfusion import trec  # noqa: E402
from rankfusion._optimize import _weights_of  # noqa: E402

COLLECTIONS = {
    "cranfield": ROOT / "data" / "cranfield",
    "vaswani": ROOT.parent / "shared" / "data" / "vaswani",
}
RANX_NORMS = {"min-max": "min-max", "z-score": "zmuv", None: None}


def brute_force(files, qrels_path, method, norm, metric, settings):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip", default="", help="ranx: leave out the ranx comparison")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    folder = tempfile.mkdtemp()
    data = {}
    for name, path in COLLECTIONS.items():
        if (path / "qrels.txt").exists():
            third = write_noisy_run(str(path / "minilm.run.gz"), f"{folder}/{name}-noisy.run")
            data[name] = (
                [str(path / "bm25.run.gz"), str(path / "minilm.run.gz"), third],
                str(path / "qrels.txt"),
            )

    print("1. weights grid, step 0.1: runs, compositions (= C(10 + n - 1, n - 1)), ranx tries")
    ranx_filter = None
    if "ranx" not in args.skip:
        from ranx.fusion_optimization import optimize_weights as ranx_filter
    for n in (2, 3, 4, 5):
        ours = list(_weights_of(10, n))
        line = f"   {n} runs: {len(ours)} (C = {math.comb(10 + n - 1, n - 1)})"
        if ranx_filter is not None:
            tried = ranx_filter.get_trial_configs(ranx_filter.get_possible_weights(0.1), n)
            missed = set(ours) - {tuple(map(float, t)) for t in tried}
            line += f", ranx {len(tried)}"
            if n == 3:
                line += f", missed {sorted(missed)}"
        print(line)

    print("\n2. brute force (rankfusion.fuse per query + ir-measures), every setting")
    cases = [
        ("rrf", None, "nDCG@10", 2, None),
        ("wsum", "min-max", "nDCG@10", 2, None),
        ("wsum", "min-max", "nDCG@10", 3, None),
        ("mixed", "min-max", "AP", 3, None),
    ]
    for name, (files, qrels) in data.items():
        for method, norm, metric, n, grid in cases:
            r = rankfusion.optimize(files[:n], qrels, method=method, norm=norm, metric=metric)
            scores, best = brute_force(files[:n], qrels, method, norm, metric, list(r.settings))
            diff = max(abs(a - b) for a, b in zip(r.scores, scores))
            print(
                f"   {name} {method} {norm or ''} {metric} {n} runs: {len(r.settings)} settings, "
                f"best {r.best} {r.best_score:.6f}, brute force {list(r.settings)[best]} "
                f"{scores[best]:.6f}, same best {best == r.best_index}, max |diff| {diff:.1e}"
            )

    if "ranx" not in args.skip:
        from ranx import Qrels, optimize_fusion

        print("\n3. ranx.optimize_fusion on the same runs (BM25, MiniLM, noisy MiniLM)")
        cases3 = [
            ("wsum", "min-max", "ndcg@10", (0, 1, 2)),
            ("mixed", "min-max", "map", (0, 1, 2)),
            ("wsum", "z-score", "recall@100", (0, 2, 1)),
        ]
        for name, (files, qrels) in data.items():
            rq = Qrels.from_dict(trec.read_qrels(qrels))
            for method, norm, metric, order in cases3:
                fs = [files[i] for i in order]
                runs = [trec.to_ranx(trec.read_run(f), name=str(i)) for i, f in enumerate(fs)]
                best, report = optimize_fusion(
                    rq,
                    runs,
                    norm=RANX_NORMS[norm],
                    method=method,
                    metric=metric,
                    return_optimization_report=True,
                    show_progress=False,
                )
                r = rankfusion.optimize(fs, qrels, method=method, norm=norm, metric=metric)
                ours = {s["weights"]: v for s, v in zip(r.settings, r.scores)}
                theirs = {
                    tuple(float(x) for x in c.strip("()").split(",")): v
                    for c, v in zip(report.configs, report.results)
                }
                among = set(theirs) <= set(ours)
                plain = [abs(ours[w] - v) for w, v in theirs.items() if 0.0 not in w]
                zero = [abs(ours[w] - v) for w, v in theirs.items() if 0.0 in w]
                rb = tuple(float(x) for x in best["weights"])
                missed = r.best["weights"] not in theirs
                print(
                    f"   {name} {method} {norm} {metric} runs {order}: ranx {len(theirs)} "
                    f"settings, all among our {len(ours)}: {among}; |diff| without a zero "
                    f"weight {max(plain):.1e}, with one {max(zero):.1e}; ranx best {rb} "
                    f"(ranx {theirs[rb]:.6f}, ours {ours[rb]:.6f}); our best {r.best['weights']} "
                    f"{r.best_score:.6f}" + (" <- a setting ranx never tries" if missed else "")
                )

    print("\n4. cross-validation (wsum, min-max, nDCG@10, 3 runs, 5 folds)")
    for name, (files, qrels) in data.items():
        for seed in (0, 1):
            kw = dict(method="wsum", norm="min-max", metric="nDCG@10", folds=5, seed=seed)
            a = rankfusion.optimize(files, qrels, **kw)
            b = rankfusion.optimize(files, qrels, **kw)
            n = len(a.queries)
            added = sum(len(f.queries) * f.score for f in a.folds) / n
            folds = ", ".join(
                f"{len(f.queries)}q {f.choice['weights']} {f.train_score:.4f}/{f.score:.4f}"
                for f in a.folds
            )
            print(
                f"   {name} seed {seed}: in-sample {a.best['weights']} {a.best_score:.4f}, "
                f"CV {a.cv_score:.4f}; twice the same: {a.folds == b.folds}; "
                f"sum(n_f * score_f) / n = {added:.15f} vs {a.cv_score:.15f} "
                f"(|diff| {abs(added - a.cv_score):.1e})\n      folds: {folds}"
            )


if __name__ == "__main__":
    main()
