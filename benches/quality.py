"""nDCG@10 and R@100 of every fusion method on the shipped Cranfield and Vaswani runs (BM25 + MiniLM).

python benches/quality.py > quality-tables.md

Prints markdown tables (docs/quality.md holds them with the parameter choices). Each query's two
lists are the runs' top 100 in trec_eval's order, fused by ``rankfusion.fuse`` with every candidate
kept (limit=None); ``rankfusion.trec.evaluate`` computes the metrics with ir-measures (pytrec_eval:
trec_eval's ``ndcg_cut.10`` and ``recall.100``, ties in a fused list broken by doc id as trec_eval
does), averaged over every judged query. Needs ir-measures: pip install ".[eval]".

Parameters (each method's weights are 1 for both lists unless said otherwise):
- rrf k=60; rbc phi=0.8 and 0.95; logn_isr sigma=0.01 (the default); gmnz gamma=0.5;
- with unit weights wsum is sum and wmnz is mnz, so they are not repeated; with unit weights and
  two lists mixed is gmnz with gamma=0.5 and med is anz (both rows kept, so that each is found);
- relative_score with weights 0.25 (BM25) and 0.75 (MiniLM) too: Weaviate's default alpha=0.75.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import rankfusion
from rankfusion import trec

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ("cranfield", "vaswani")
METRICS = ("nDCG@10", "R@100")

RANK_METHODS = [
    ("rrf", {}, "k=60"),
    ("rbc", {"phi": 0.8}, "phi=0.8"),
    ("rbc", {"phi": 0.95}, "phi=0.95"),
    ("isr", {}, ""),
    ("log_isr", {}, ""),
    ("logn_isr", {}, "sigma=0.01"),
    ("bordafuse", {}, ""),
    ("condorcet", {}, ""),
]
SCORE_METHODS = [
    ("sum", {}, ""),
    ("mnz", {}, ""),
    ("anz", {}, ""),
    ("gmnz", {"gamma": 0.5}, "gamma=0.5"),
    ("max", {}, ""),
    ("min", {}, ""),
    ("med", {}, ""),
    ("mixed", {}, ""),
]
NORMS = ("none", "min-max", "max", "sum", "z-score", "l2", "rank", "borda", "dbsf")
ANCHOR_METHODS = [  # the methods that carry their anchor's name
    ("dbsf", {}, None, "Qdrant"),
    ("relative_score", {}, None, "Weaviate, weights 1, 1"),
    ("relative_score", {"weights": [0.25, 0.75]}, None, "Weaviate, alpha=0.75"),
    ("wsum", {}, "min-max", "Elasticsearch linear, min-max"),
    ("wsum", {}, "l2", "Elasticsearch linear, l2_norm"),
    ("arithmetic_mean", {}, "min-max", "OpenSearch default"),
    ("arithmetic_mean", {}, "l2", "OpenSearch"),
    ("arithmetic_mean", {}, "z-score", "OpenSearch"),
    ("geometric_mean", {}, "min-max", "OpenSearch"),
    ("geometric_mean", {}, "l2", "OpenSearch"),
    ("harmonic_mean", {}, "min-max", "OpenSearch"),
    ("harmonic_mean", {}, "l2", "OpenSearch"),
]


def load(collection: str):
    folder = ROOT / "data" / collection
    runs = [trec.read_run(folder / f"{name}.run.gz") for name in ("bm25", "minilm")]
    return runs, trec.read_qrels(folder / "qrels.txt")


def evaluate(run, qrels) -> tuple:
    measured = trec.evaluate(run, qrels, ["ndcg@10", "recall@100"])
    return tuple(measured[m] for m in METRICS)


def fused(runs, method: str, norm, params: dict):
    out = {}
    for qid in runs[0]:
        rankings = [run.get(qid, trec.Ranking([], [])) for run in runs]
        kwargs = dict(params)
        if norm is not None:
            kwargs["norm"] = norm
        if method not in {m for m, _, _ in RANK_METHODS}:
            kwargs["scores"] = [r.scores for r in rankings]
        out[qid] = rankfusion.fuse([r.docids for r in rankings], method=method, **kwargs)
    return out


def cell(values: tuple) -> str:
    return " / ".join(f"{v:.4f}" for v in values)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    data = {}
    for collection in COLLECTIONS:
        if not (ROOT / "data" / collection / "qrels.txt").is_file():
            sys.exit(f"data/{collection} is absent")
        data[collection] = load(collection)

    head = "| method | parameters | norm | " + " | ".join(
        f"{c.capitalize()} nDCG@10 / R@100" for c in COLLECTIONS
    )
    rule = "|---|---|---|" + "---|" * len(COLLECTIONS)

    def row(name, params_text, norm_text, results) -> str:
        return f"| {name} | {params_text} | {norm_text} | " + " | ".join(map(cell, results)) + " |"

    print("### Inputs and rank-based methods\n")
    print(head + " |\n" + rule)
    for i, name in enumerate(("BM25", "MiniLM")):
        print(row(name, "", "", [evaluate(data[c][0][i], data[c][1]) for c in COLLECTIONS]))
    for method, params, text in RANK_METHODS:
        results = [
            evaluate(fused(data[c][0], method, None, params), data[c][1]) for c in COLLECTIONS
        ]
        print(row(method, text, "", results))

    print("\n### Methods named after their anchor\n")
    print(head + " | anchor |\n" + rule + "---|")
    for method, params, norm, anchor in ANCHOR_METHODS:
        results = [
            evaluate(fused(data[c][0], method, norm, params), data[c][1]) for c in COLLECTIONS
        ]
        text = ", ".join(f"{k}={v}" for k, v in params.items())
        print(row(method, text, norm or "(its own)", results) + f" {anchor} |")

    for collection in COLLECTIONS:
        runs, qrels = data[collection]
        print(f"\n### Score-based methods × normalisations, {collection.capitalize()}\n")
        print("nDCG@10 / R@100.\n")
        print("| method | " + " | ".join(NORMS) + " |")
        print("|---|" + "---|" * len(NORMS))
        for method, params, text in SCORE_METHODS:
            cells = [cell(evaluate(fused(runs, method, norm, params), qrels)) for norm in NORMS]
            label = f"{method} ({text})" if text else method
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
