"""Parity with the anchors the fusion methods come from (docs/semantics.md, "Fusion methods").

1. ranx 0.3.21 itself (``ranx.fuse``, run here) on the shipped Cranfield and Vaswani BM25 + MiniLM
   runs and on three synthetic runs (negative scores, ties in lists longer than 15, all-equal,
   one-key, tiny-span and huge-magnitude lists), fused two and three at a time. For every ranx
   method/norm pair that ranx defines as rankfusion does, every document's score agrees to
   ``TOLERANCE``. Where rankfusion's documented edge-case choice differs from ranx's (``EDGE_CASES``),
   only the documents of the lists (or queries) that hit the edge case may differ, and ranx fed
   rankfusion's documented values for exactly those lists agrees on every document.
2. Float64 transcriptions of Qdrant's DBSF, Elasticsearch's linear retriever with the min-max
   normalizer, Weaviate's relativeScoreFusion, OpenSearch's arithmetic/geometric/harmonic means and
   nem's recency boost (each cites the source file it transcribes; the research note behind them
   cites the commits), compared the same way.

rankfusion is fed each list in the order ranx's ``Run`` gives it: ranx ranks by numba's argsort,
which is not stable for more than 15 tied scores, and every rank-based method reads that order.

``python tests/test_parity_anchors.py`` prints the figures (max difference per pair and dataset,
documents hitting each edge case) as markdown. The real runs are compared on their first 50
queries per collection; ``RANKFUSION_PARITY_QUERIES=all`` (or a number) compares more.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import rankfusion
from rankfusion import trec

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ("cranfield", "vaswani")
RUN_NAMES = ("bm25", "minilm")

# Scores agree when |ours - theirs| <= TOLERANCE * max(1, |theirs|): absolute for scores of
# magnitude <= 1 (every normalised score), relative above (raw BM25 sums, the 1e9-scale lists).
TOLERANCE = 1e-12


def close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= TOLERANCE * max(1.0, abs(theirs))


# === Inputs =======================================================================================
# A run is {qid: {doc: score}}. Query ids carry their dataset: "cranfield:12", "syn:ties:007".


# The real queries compared: the first REAL_QUERIES of each collection (in run-file order), which
# keeps the suite's ranx calls to seconds; RANKFUSION_PARITY_QUERIES=all compares every query
# (Cranfield's 225 and Vaswani's 93: several times as long).
_QUERIES = os.environ.get("RANKFUSION_PARITY_QUERIES", "50")
REAL_QUERIES = None if _QUERIES == "all" else int(_QUERIES)


def real_runs() -> dict:
    """{collection: [bm25, minilm]} for the collections present under data/ (their first
    REAL_QUERIES queries)."""
    found = {}
    for name in COLLECTIONS:
        folder = ROOT / "data" / name
        paths = [folder / f"{run}.run.gz" for run in RUN_NAMES]
        if all(p.is_file() for p in paths):
            runs = [trec.to_dict(trec.read_run(p)) for p in paths]
            qids = list(runs[0])[:REAL_QUERIES]
            found[name] = [{f"{name}:{q}": run[q] for q in qids if q in run} for run in runs]
    return found


# The synthetic queries, by kind; each has one list in each of 3 runs (none empty).
KINDS = ("gauss", "negative", "ties", "flat", "tiny", "huge", "consensus", "same-order")
SYNTHETIC_QUERIES_PER_KIND = 10


def synthetic_runs(seed: int = 20240607) -> list:
    """Three runs over the same queries, made to reach every edge case ranx and rankfusion treat
    differently, and the ordinary cases around them:

    - gauss: N(0, 3) scores (about half negative), 1..30 keys from a pool of 40 (one-key lists);
    - negative: run 0 all negative (the max norm's edge); runs 1, 2 gauss;
    - ties: 16..40 integer scores in [-3, 3] (ties in lists longer than 15);
    - flat: run 0 all-equal, run 1 one key, run 2 gauss. The constants (2.0, -0.5, 0.5, 3.0) have
      an exact mean: see test_z_score_of_an_all_equal_list_is_zero for the others;
    - tiny: spans below 1e-9 (ranx's floor): 1 + i*1e-11; a list whose max is 0; one in (0, 1e-9);
    - huge: scores of magnitude 2e9..5e9, negative in run 0, positive in run 1 (comb_max's and
      comb_min's 1e9 stand-ins for a missing document);
    - consensus: the same 10 documents in every run, a shared quality plus noise (condorcet's
      majority is usually a strict order over 3 runs);
    - same-order: the same 12 documents, runs 0 and 1 in the same order (condorcet over 2 runs).
    """
    rng = np.random.default_rng(seed)
    runs = [{}, {}, {}]

    def pick(pool, n):
        return [f"d{i:03d}" for i in rng.choice(pool, size=n, replace=False)]

    def gauss(pool=40, low=1, high=31):
        n = int(rng.integers(low, high))
        return pick(pool, n), list(rng.normal(0.0, 3.0, n))

    for number in range(SYNTHETIC_QUERIES_PER_KIND * len(KINDS)):
        kind = KINDS[number % len(KINDS)]
        lists = []
        if kind == "gauss":
            lists = [gauss() for _ in range(3)]
        elif kind == "negative":
            docs, _ = gauss(low=2)
            lists = [(docs, list(-rng.uniform(0.1, 10.0, len(docs)))), gauss(), gauss()]
        elif kind == "ties":
            for _ in range(3):
                n = int(rng.integers(16, 41))
                lists.append((pick(60, n), [float(x) for x in rng.integers(-3, 4, n)]))
        elif kind == "flat":
            n = int(rng.integers(2, 11))
            constant = float(rng.choice([2.0, -0.5, 0.5, 3.0]))
            lists = [(pick(20, n), [constant] * n), (pick(20, 1), [float(rng.normal())])]
            lists.append(gauss(pool=20, low=5, high=12))
        elif kind == "tiny":
            n = int(rng.integers(2, 8))
            lists.append((pick(15, n), [1.0 + (n - i) * 1e-11 for i in range(n)]))
            lists.append((pick(15, n), [0.0] + sorted(-rng.uniform(0.5, 3.0, n - 1))[::-1]))
            lists.append((pick(15, n), sorted(rng.uniform(1e-11, 9e-10, n))[::-1]))
        elif kind == "huge":
            for sign in (-1.0, 1.0):
                n = int(rng.integers(3, 10))
                lists.append((pick(15, n), list(sign * rng.uniform(2e9, 5e9, n))))
            lists.append(gauss(pool=15, low=3, high=10))
        elif kind == "consensus":
            quality = rng.normal(0.0, 1.0, 10)
            docs = [f"d{i:03d}" for i in range(10)]
            lists = [(docs, list(quality + rng.normal(0.0, 0.3, 10))) for _ in range(3)]
        elif kind == "same-order":
            base = rng.normal(0.0, 2.0, 12)
            docs = [f"d{i:03d}" for i in range(12)]
            lists = [(docs, list(base)), (docs, list(2.0 * base - 1.0))]
            lists.append((docs, list(base + rng.normal(0.0, 1.0, 12))))
        qid = f"syn:{kind}:{number:03d}"
        for run, (docs, scores) in zip(runs, lists):
            run[qid] = {d: float(s) for d, s in zip(docs, scores)}
    return runs


# === ranx =========================================================================================

RANX_NORMS = {None: "none", "min-max": "min-max", "max": "max", "sum": "sum", "zmuv": "z-score"}
RANX_NORMS.update({"rank": "rank", "borda": "borda"})
SCORE_METHODS = ("sum", "wsum", "mnz", "anz", "gmnz", "max", "min", "med", "wmnz", "mixed")
WEIGHTED = ("wsum", "wmnz", "mixed", "w_bordafuse", "w_condorcet")
GAMMA, PHI = 1.5, 0.8


@dataclass(frozen=True)
class Pair:
    """One ranx method/norm pair and its rankfusion spelling."""

    method: str  # ranx's
    norm: object  # ranx's norm (for rank-based methods ranx's default, min-max: it never reorders)
    params: tuple = ()  # ranx's params besides weights, as (name, value) pairs

    @property
    def ours(self) -> str:
        return {"w_bordafuse": "bordafuse", "w_condorcet": "condorcet"}.get(
            self.method, self.method
        )

    @property
    def score_based(self) -> bool:
        return self.method in SCORE_METHODS

    def __str__(self) -> str:
        params = "".join(f",{k}={v}" for k, v in self.params)
        return f"{self.method}{params}/{self.norm}" if self.score_based else self.method + params


PAIRS = [
    Pair(m, norm, (("gamma", GAMMA),) if m == "gmnz" else ())
    for m in SCORE_METHODS
    for norm in RANX_NORMS
]
PAIRS += [
    Pair(m, "min-max", params)
    for m, params in [
        ("isr", ()),
        ("log_isr", ()),
        ("logn_isr", ()),
        ("logn_isr", (("sigma", 0.2),)),
        ("rrf", ()),
        ("rrf", (("k", 10),)),
        ("rbc", (("phi", PHI),)),
        ("bordafuse", ()),
        ("w_bordafuse", ()),
        ("condorcet", ()),
        ("w_condorcet", ()),
    ]
]


@dataclass
class Corpus:
    """Runs fused together by ranx in one call, and the same lists as rankfusion reads them."""

    name: str
    weights: list
    runs: list = field(default_factory=list)  # ranx.Run
    lists: dict = field(default_factory=dict)  # qid -> [[doc, ...] per run], in ranx's order
    scores: dict = field(default_factory=dict)  # qid -> [[score, ...] per run]
    normalised: dict = field(default_factory=dict)  # ranx norm -> ranx's normalised runs


def as_dict(run) -> dict:
    """A ranx Run as {qid: {doc: score}} in its order: Run.to_dict(), six times faster."""
    return {qid: dict(docs) for qid, docs in run.run.items()}


def make_corpus(ranx, name: str, runs: list, weights: list) -> Corpus:
    corpus = Corpus(name, weights)
    corpus.runs = [ranx.Run(run) for run in runs]
    ordered = [as_dict(run) for run in corpus.runs]
    for qid in ordered[0]:
        corpus.lists[qid] = [list(run[qid]) for run in ordered]
        corpus.scores[qid] = [list(run[qid].values()) for run in ordered]
    return corpus


def subset(ranx, corpus: Corpus, qids) -> Corpus:
    runs = [{q: dict(zip(corpus.lists[q][i], corpus.scores[q][i])) for q in qids}
            for i in range(len(corpus.runs))]  # fmt: skip
    return make_corpus(ranx, corpus.name, runs, corpus.weights)


def dataset(qid: str) -> str:
    return qid.split(":")[0]


@pytest.fixture(scope="module")
def ranx():
    return pytest.importorskip("ranx")


def build_corpora(ranx) -> dict:
    """The ranx calls' inputs. "2 runs": Cranfield and Vaswani (BM25, MiniLM) and synthetic runs
    0, 1, weights 0.7, 0.3; "3 runs": synthetic runs 0, 1, 2, weights 0.5, -0.2, 0.35."""
    synthetic = synthetic_runs()
    pairs: list = [{}, {}]
    for bm25, minilm in real_runs().values():
        pairs[0].update(bm25)
        pairs[1].update(minilm)
    pairs[0].update(synthetic[0])
    pairs[1].update(synthetic[1])
    return {
        "2 runs": make_corpus(ranx, "2 runs", pairs, [0.7, 0.3]),
        "3 runs": make_corpus(ranx, "3 runs", synthetic, [0.5, -0.2, 0.35]),
    }


# Condorcet in ranx sorts the candidates with a pure-Python comparator: seconds per hundred real
# queries. Its corpora keep the synthetic queries and the first CONDORCET_REAL_QUERIES of each real
# collection (on which ranx's comparator is never a strict order: see the tests below).
CONDORCET_REAL_QUERIES = 10


def build_condorcet_corpora(ranx, corpora: dict) -> dict:
    out = {}
    for name, corpus in corpora.items():
        counts: dict = {}
        qids = []
        for q in corpus.lists:
            counts[dataset(q)] = counts.get(dataset(q), 0) + 1
            if q.startswith("syn:") or counts[dataset(q)] <= CONDORCET_REAL_QUERIES:
                qids.append(q)
        out[name] = subset(ranx, corpus, qids)
    return out


@pytest.fixture(scope="module")
def corpora(ranx) -> dict:
    return build_corpora(ranx)


@pytest.fixture(scope="module")
def condorcet_corpora(ranx, corpora) -> dict:
    return build_condorcet_corpora(ranx, corpora)


def ranx_fuse(ranx, corpus: Corpus, pair: Pair, runs=None, norm="default") -> dict:
    params = dict(pair.params)
    if pair.method in WEIGHTED:
        params["weights"] = corpus.weights
    norm = pair.norm if norm == "default" else norm
    return as_dict(ranx.fuse(runs or corpus.runs, norm=norm, method=pair.method, params=params))


def our_fuse(lists: list, scores: list, pair: Pair, weights: list):
    """rankfusion's {doc: score}, or the ValueError it raised."""
    kwargs = dict(pair.params)
    if pair.method in WEIGHTED:
        kwargs["weights"] = weights
    if pair.score_based:
        kwargs.update(norm=RANX_NORMS[pair.norm], scores=scores)
    try:
        hits = rankfusion.fuse(lists, method=pair.ours, **kwargs)
    except ValueError as error:
        return error
    return {h.key: h.score for h in hits}


# === The edge cases ===============================================================================
# What ranx does and what rankfusion documents (docs/semantics.md; the reference's _normalizer),
# and which pairs each one touches. The test checks this table: the differences it predicts occur,
# and no others.

EDGE_CASES = {
    "min-max, all-equal or one-key list": ("0.0 (divides by max(span, 1e-9))", "1.0"),
    "min-max, 0 < span < 1e-9": ("(s - min) / 1e-9", "(s - min) / span"),
    "max, largest score < 0": ("s / 1e-9", "ValueError (the query)"),
    "max, largest score 0": ("s / 1e-9", "0.0"),
    "max, 0 < largest score < 1e-9": ("s / 1e-9", "s / max"),
    "sum, all-equal or one-key list": ("0.0", "1 / n"),
    "sum, 0 < Σ(s - min) < 1e-9": ("(s - min) / 1e-9", "(s - min) / Σ(s - min)"),
    "z-score, all-equal or one-key list": ("(s - mean) / 1e-9: 0 unless the mean rounds", "0.0"),
    "z-score, 0 < σ < 1e-9": ("(s - mean) / 1e-9", "(s - mean) / σ"),
    "max method: every present value < -1e9, missing from a run": ("-1e9", "max of present"),
    "min method: every present value > 1e9, missing from a run": ("1e9", "min of present"),
    "condorcet: ranx's comparator not a strict order": ("set-order dependent", "Copeland count"),
}
NORM_EDGES = {  # ranx norm -> the edge cases of its lists
    "min-max": ("min-max, all-equal or one-key list", "min-max, 0 < span < 1e-9"),
    "max": ("max, largest score < 0", "max, largest score 0", "max, 0 < largest score < 1e-9"),
    "sum": ("sum, all-equal or one-key list", "sum, 0 < Σ(s - min) < 1e-9"),
    "zmuv": ("z-score, all-equal or one-key list", "z-score, 0 < σ < 1e-9"),
}


def ascending_sum(values) -> float:
    """docs/semantics.md's sum: in ascending order, from 0.0."""
    total = 0.0
    for v in sorted(values):
        total += v
    return total


def list_edge(norm, scores: list):
    """The edge case a list of raw scores hits under ranx's ``norm``, or None."""
    if norm not in NORM_EDGES:
        return None
    low, high = min(scores), max(scores)
    if norm == "min-max":
        return (
            NORM_EDGES[norm][0]
            if high == low
            else NORM_EDGES[norm][1]
            if high - low < 1e-9
            else None
        )
    if norm == "max":
        return NORM_EDGES[norm][0 if high < 0 else 1 if high == 0 else 2] if high < 1e-9 else None
    if high == low:
        return NORM_EDGES[norm][0]
    if norm == "sum":
        total = 0.0
        for s in scores:  # ranx: numba's sum in list order, then minus min * n
            total += s
        return NORM_EDGES[norm][1] if total - low * len(scores) < 1e-9 else None
    return NORM_EDGES[norm][1] if np.std(scores) < 1e-9 else None  # zmuv


def documented(norm, scores: list) -> list:
    """rankfusion's documented normalisation of an edge-case list (docs/semantics.md)."""
    n, low, high = len(scores), min(scores), max(scores)
    if norm == "min-max":
        return [1.0] * n if high == low else [(s - low) / (high - low) for s in scores]
    if norm == "max":
        return [0.0] * n if high == 0 else [s / high for s in scores]
    if norm == "sum":
        total = ascending_sum(s - low for s in scores)
        return [1.0 / n] * n if high == low else [(s - low) / total for s in scores]
    if norm == "zmuv":  # population sigma
        mean = ascending_sum(scores) / n
        sd = math.sqrt(ascending_sum((s - mean) * (s - mean) for s in scores) / n)
        return [0.0] * n if high == low else [(s - mean) / sd for s in scores]
    raise AssertionError(norm)


def ranx_normalised(ranx, corpus: Corpus, norm) -> list:
    """ranx's own normalisation of each run: [{qid: {doc: value}}]."""
    from ranx.normalization import norm_switch

    if norm not in corpus.normalised:
        if norm is None:
            runs = corpus.runs
        elif norm == "borda":
            runs = norm_switch(norm)(corpus.runs)
        else:
            runs = [norm_switch(norm)(r) for r in corpus.runs]
        corpus.normalised[norm] = [as_dict(r) for r in runs]
    return corpus.normalised[norm]


def sentinel_docs(pair: Pair, normalised: list, qid: str) -> set:
    """Documents on which ranx's comb_max / comb_min stand-in for a missing run wins."""
    if pair.method not in ("max", "min"):
        return set()
    per_run = [run[qid] for run in normalised]
    out = set()
    for doc in set().union(*per_run):
        present = [r[doc] for r in per_run if doc in r]
        if len(present) < len(per_run):
            if (pair.method == "max" and max(present) < -1e9) or (
                pair.method == "min" and min(present) > 1e9
            ):
                out.add(doc)
    return out


def condorcet_is_strict(lists: list, weights=None) -> bool:
    """Whether ranx's condorcet comparator (ranx/fusion/condorcet.py, weighted_condorcet.py) is a
    strict total order on the query's candidates, so that its sort cannot depend on their order:
    for every pair exactly one of cmp(x, y), cmp(y, x) puts its first argument first, and the
    relation is transitive (the numbers of wins are 0 .. n-1)."""
    candidates = sorted(set().union(*lists))
    index = {d: i for i, d in enumerate(candidates)}
    n = len(candidates)
    positions = np.full((len(lists), n), 1_000_000)
    for j, lst in enumerate(lists):
        positions[j, [index[d] for d in lst]] = np.arange(len(lst))
    x_votes = np.zeros((n, n))
    y_votes = np.zeros((n, n))
    for j in range(len(lists)):
        ahead = positions[j][:, None] < positions[j][None, :]
        w = 1.0 if weights is None else weights[j]
        x_votes = x_votes + np.where(ahead, w, 0.0)  # the sums in list order, as ranx's loop
        y_votes = y_votes + np.where(ahead, 0.0, w)
    first = x_votes >= y_votes  # cmp(x, y) == -1
    off = ~np.eye(n, dtype=bool)
    if np.any(first[off] == first.T[off]):
        return False
    wins = (first & off).sum(axis=1)
    return sorted(wins.tolist()) == list(range(n))


# === The comparison ===============================================================================


@dataclass
class Figures:
    """Per dataset: documents compared, bit-identical, the largest difference outside the edge
    cases, and per edge case the documents that hit it and those that differ from ranx."""

    docs: int = 0
    identical: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    edge_docs: dict = field(default_factory=dict)
    edge_differing: dict = field(default_factory=dict)


def compare(ranx, corpus: Corpus, pair: Pair) -> dict:
    """{dataset: Figures}; asserts agreement outside the edge cases, and that each edge query
    raising or differing is one the table predicts."""
    theirs = ranx_fuse(ranx, corpus, pair)
    normalised = None
    if pair.method in ("max", "min"):
        normalised = ranx_normalised(ranx, corpus, pair.norm)
    figures: dict = {}
    failures = []
    for qid, lists in corpus.lists.items():
        scores = corpus.scores[qid]
        f = figures.setdefault(dataset(qid), Figures())
        edges = {}  # doc -> the (first) edge case it hits
        negative = "max, largest score < 0"
        raising = False  # the query is an error
        if pair.score_based:
            for lst, s in zip(lists, scores):
                edge = list_edge(pair.norm, s)
                raising = raising or edge == negative
                if edge:
                    edges.update({d: edge for d in lst if d not in edges})
            if normalised is not None:
                edge = "max method: every present value < -1e9, missing from a run"
                if pair.method == "min":
                    edge = "min method: every present value > 1e9, missing from a run"
                edges.update(dict.fromkeys(sentinel_docs(pair, normalised, qid), edge))
        elif pair.ours == "condorcet":
            weights = corpus.weights if pair.method == "w_condorcet" else None
            if not condorcet_is_strict(lists, weights):
                edges = dict.fromkeys(
                    theirs[qid], "condorcet: ranx's comparator not a strict order"
                )
        if raising:
            edges = dict.fromkeys(theirs[qid], negative)
        ours = our_fuse(lists, scores, pair, corpus.weights)
        for edge in set(edges.values()):
            f.edge_docs[edge] = f.edge_docs.get(edge, 0) + sum(e == edge for e in edges.values())
        if raising:  # every document differs
            if isinstance(ours, ValueError) and "norm='max'" in str(ours):
                f.edge_differing[negative] = f.edge_differing.get(negative, 0) + len(theirs[qid])
            else:
                failures.append(f"{qid}: no ValueError for a list whose largest score is < 0")
            continue
        if isinstance(ours, ValueError):
            failures.append(f"{qid}: raised {ours!r}")
            continue
        if set(ours) != set(theirs[qid]):
            failures.append(f"{qid}: keys differ: {sorted(set(ours) ^ set(theirs[qid]))[:5]}")
            continue
        for doc, expected in theirs[qid].items():
            got = ours[doc]
            if doc in edges:
                if not close(got, expected):
                    e = edges[doc]
                    f.edge_differing[e] = f.edge_differing.get(e, 0) + 1
                continue
            f.docs += 1
            f.identical += got == expected
            diff = abs(got - expected)
            f.max_abs = max(f.max_abs, diff)
            f.max_rel = max(f.max_rel, diff / max(1.0, abs(expected)))
            if not close(got, expected):
                failures.append(f"{qid} {doc}: ours {got!r}, ranx {expected!r}")
    assert not failures, f"{pair} on {corpus.name}: {len(failures)} differences: {failures[:10]}"
    return figures


def substituted(ranx, corpus: Corpus, pair: Pair):
    """ranx's normalisation of every list of the edge queries, but with rankfusion's documented
    values in the lists that hit an edge case; None when no list does (or only raising ones)."""
    normalised = ranx_normalised(ranx, corpus, pair.norm)
    qids = []
    for qid, scores in corpus.scores.items():
        edges = [list_edge(pair.norm, s) for s in scores]
        if any(edges) and "max, largest score < 0" not in edges:
            qids.append(qid)
    if not qids:
        return None, []
    runs = []
    for i, run in enumerate(normalised):
        runs.append({})
        for qid in qids:
            docs, scores = corpus.lists[qid][i], corpus.scores[qid][i]
            if list_edge(pair.norm, scores):
                runs[i][qid] = dict(zip(docs, documented(pair.norm, scores)))
            else:
                runs[i][qid] = run[qid]
    return [ranx.Run(r) for r in runs], qids


# === ranx tests ===================================================================================

CORPORA = ("2 runs", "3 runs")


def test_the_synthetic_runs_reach_every_case():
    runs = synthetic_runs()
    lists = [s for run in runs for q in run.values() for s in [list(q.values())]]
    hit = {list_edge(norm, s) for norm in NORM_EDGES for s in lists} - {None}
    assert hit == {e for edges in NORM_EDGES.values() for e in edges}
    assert any(len(s) > 15 and len(set(s)) < len(s) for s in lists)  # ties in long lists
    assert sum(x < 0 for s in lists for x in s) > 1000


@pytest.mark.parametrize("corpus_name", CORPORA)
@pytest.mark.parametrize("pair", PAIRS, ids=str)
def test_ranx_parity(ranx, corpora, condorcet_corpora, corpus_name, pair):
    corpus = (condorcet_corpora if pair.ours == "condorcet" else corpora)[corpus_name]
    figures = compare(ranx, corpus, pair)
    FIGURES[(str(pair), corpus_name)] = figures
    assert sum(f.docs for f in figures.values()) > 0
    if pair.norm in ("min-max", "sum", "max") and pair.score_based:
        # the table's edge cases of this norm change scores in the data (z-score's does only with
        # a rounding error in the mean: test_z_score_of_an_all_equal_list_is_zero) ...
        assert sum(sum(f.edge_differing.values()) for f in figures.values()) > 0
    if pair.norm in NORM_EDGES and pair.score_based:
        # ... and ranx given rankfusion's documented values for those lists agrees everywhere
        runs, qids = substituted(ranx, corpus, pair)
        assert qids
        theirs = ranx_fuse(ranx, corpus, pair, runs=runs, norm=None)
        normalised = [as_dict(r) for r in runs]
        for qid in qids:
            ours = our_fuse(corpus.lists[qid], corpus.scores[qid], pair, corpus.weights)
            assert not isinstance(ours, Exception), (qid, ours)
            skip = sentinel_docs(pair, normalised, qid)
            for doc, expected in theirs[qid].items():
                if doc not in skip:
                    assert close(ours[doc], expected), (pair, qid, doc, ours[doc], expected)


def test_real_runs_hit_no_edge_case_but_condorcet(corpora, condorcet_corpora):
    """On the real runs every difference the table allows is condorcet's: no real list is flat,
    tiny or non-positive, and ranx's comparator is never a strict order there (two runs that do
    not hold the same documents: a document only in run 0 and one only in run 1 each come first)."""
    corpus = corpora["2 runs"]
    real = [q for q in corpus.lists if not q.startswith("syn:")]
    if not real:
        pytest.skip("data/cranfield and data/vaswani are absent")
    for qid in real:
        for s in corpus.scores[qid]:
            assert all(list_edge(norm, s) is None for norm in NORM_EDGES), qid
    for qid in condorcet_corpora["2 runs"].lists:
        if not qid.startswith("syn:"):
            assert not condorcet_is_strict(condorcet_corpora["2 runs"].lists[qid])


def test_condorcet_agrees_where_ranx_is_well_defined(ranx, condorcet_corpora):
    """Condorcet's parity is not vacuous: ranx's comparator is a strict order on many synthetic
    queries (then the scores are equal: test_ranx_parity), and not on others."""
    for name, corpus in condorcet_corpora.items():
        for weights in (None, corpus.weights):
            strict = [condorcet_is_strict(lists, weights) for lists in corpus.lists.values()]
            assert 5 <= sum(strict) < len(strict), (name, weights)


def test_ranx_orders_long_tied_lists_its_own_way(corpora):
    """Each list rankfusion reads is ranx's: sorted by score, ties in ranx's order, which for
    lists longer than 15 is not the stable order of the input (so it matters that we follow it)."""
    synthetic = synthetic_runs()
    corpus = corpora["2 runs"]
    unstable = 0
    for qid, lists in corpus.lists.items():
        for i, (docs, scores) in enumerate(zip(lists, corpus.scores[qid])):
            assert scores == sorted(scores, reverse=True), qid
            if qid.startswith("syn:"):
                given = synthetic[i][qid]
                assert scores == [given[d] for d in docs]
                unstable += docs != sorted(given, key=lambda d: -given[d])
    assert unstable > 0


ZERO_WEIGHTED = ("wsum", "wmnz", "mixed", "w_bordafuse")


@pytest.mark.parametrize("method", ZERO_WEIGHTED)
def test_a_list_of_weight_zero_is_left_out(ranx, corpora, method):
    """rankfusion reads no list of weight 0 (docs/semantics.md); ranx still counts its documents
    (their presence in wmnz's and mixed's |present|, wmnz's sum, bordafuse's candidates). So ours
    equals ranx on the other runs, and differs from ranx on all runs exactly where that list
    matters."""
    corpus = corpora["3 runs"]
    weights = [0.6, 0.0, 0.4]
    pair = Pair(method, None)
    kept = Corpus("2 of 3 runs", [0.6, 0.4], [corpus.runs[0], corpus.runs[2]])
    without = ranx_fuse(ranx, kept, pair)
    with_all = ranx_fuse(ranx, Corpus("3 runs", weights, corpus.runs), pair)
    differing = 0
    for qid, lists in corpus.lists.items():
        ours = our_fuse(lists, corpus.scores[qid], pair, weights)
        assert set(ours) == set(without[qid]) == set(lists[0]) | set(lists[2])
        for doc, score in ours.items():
            assert close(score, without[qid][doc]), (qid, doc)
            differing += not close(score, with_all[qid][doc])
    FIGURES[("weight 0", method)] = differing
    assert (differing == 0) == (method == "wsum")


@pytest.mark.parametrize("impl", ["core", "reference"])
def test_z_score_of_an_all_equal_list_is_zero(impl):
    """z-score of an all-equal list is 0.0 for every key, even where the mean rounds: the mean of
    [0.1] * 3 is 0.30000000000000004 / 3 = 0.10000000000000002, a sigma of 1.4e-17 from rounding
    alone, which would give every key (0.1 - mean) / sigma = -1.0 ([0.7] * 3: +1.0). ranx floors
    sigma at 1e-9 and gives -1.39e-8."""
    fuse = rankfusion.fuse if impl == "core" else rankfusion.reference.fuse
    for value in (0.1, 0.7, 2.0):
        hits = fuse([["a", "b", "c"]], method="sum", norm="z-score", scores=[[value] * 3])
        assert [h.score for h in hits] == [0.0, 0.0, 0.0], (value, hits)


@pytest.mark.parametrize("impl", ["core", "reference"])
@pytest.mark.parametrize(
    "norm, scores, expected",
    [
        ("l2", [4e-170, 3e-170], [0.8, 0.6]),
        ("l2", [4e170, 3e170], [0.8, 0.6]),
        ("z-score", [3e-170, 1e-170], [1.0, -1.0]),
        ("z-score", [3e170, 1e170], [1.0, -1.0]),
    ],
)
def test_l2_and_z_score_of_tiny_or_huge_scores(impl, norm, scores, expected):
    """l2 is s / sqrt(sum s^2) and z-score (s - mean) / sigma: scale-free, so [4e-170, 3e-170]
    normalises as [4, 3] does, although its squares underflow to 0 (and [4e170, 3e170]'s
    overflow): the root is then taken of the squares scaled by the largest term."""
    fuse = rankfusion.fuse if impl == "core" else rankfusion.reference.fuse
    hits = fuse([["a", "b"]], method="sum", norm=norm, scores=[scores])
    assert [h.key for h in hits] == ["a", "b"]
    assert all(close(h.score, e) for h, e in zip(hits, expected)), hits


# === The other anchors: float64 transcriptions of their source ====================================
# A list is [(doc, score), ...], best first. The commits are those of the research note behind
# docs/semantics.md's table of anchors (Qdrant 74f3e85, OpenSearch neural-search 936d3c4, Weaviate
# adcffc5, nem 1d1c30b; Elasticsearch's MinMaxScoreNormalizer after elastic/elasticsearch#128689).


def qdrant_dbsf(lists: list, t=float) -> dict:
    """qdrant/qdrant@74f3e85 lib/segment/src/common/score_fusion.rs, ScoreFusion::dbsf: per list distr_norm
    (Welford's mean and sample variance in list order, lo/hi = mean -/+ 3 std, (s - lo) / (hi - lo)
    not clipped; one point, or lo == hi: 0.5), weights 1, summed in list order. Qdrant computes
    in f32 (t=numpy.float32); the parity is with the same formula in f64 (t=float)."""
    fused: dict = {}
    for lst in lists:
        n = len(lst)
        normalised = [t(0.5)] * n
        if n > 1:
            mean = agg = t(0.0)
            for k, (_, s) in enumerate(lst, 1):
                old_delta = t(s) - mean
                mean += old_delta / t(k)
                agg += old_delta * (t(s) - mean)
            std = t(np.sqrt(agg / t(n - 1)))
            lo, hi = mean - t(3.0) * std, mean + t(3.0) * std
            if lo != hi:
                normalised = [(t(s) - lo) / (hi - lo) for _, s in lst]
        for (doc, _), v in zip(lst, normalised):
            fused[doc] = fused[doc] + v * t(1.0) if doc in fused else v * t(1.0)
    return {doc: float(v) for doc, v in fused.items()}


FLOAT_MIN_VALUE = 1.4e-45  # Java's Float.MIN_VALUE: the smallest positive float
ES_EPSILON = float(np.float32(1e-6))


def es_linear_minmax(lists: list, weights: list) -> dict:
    """elastic/elasticsearch x-pack/plugin/rank-rrf/.../linear: LinearRetrieverBuilder's
    combineInnerRetrieverResults (blob 030968aa: score += weight * normalized, retriever order) over
    MinMaxScoreNormalizer after elastic/elasticsearch#128689 (min within 1e-6 of max: 1.0). ES
    computes in f32; max starts at Float.MIN_VALUE."""
    fused: dict = {}
    for lst, weight in zip(lists, weights):
        low, high = float(np.finfo(np.float32).max), FLOAT_MIN_VALUE
        for _, s in lst:
            high, low = max(high, s), min(low, s)
        for doc, s in lst:
            v = 1.0 if abs(low - high) < ES_EPSILON else (s - low) / (high - low)
            fused[doc] = fused.get(doc, 0.0) + weight * v
    return fused


def weaviate_relative_score(lists: list, weights: list) -> dict:
    """weaviate/weaviate@adcffc5 usecases/traverser/hybrid/hybrid_fusion.go, FusionRelativeScore: score = weight,
    times (v - min) / (max - min) when max != min, added to the document's score in list order.
    Weaviate computes in f32."""
    fused: dict = {}
    for lst, weight in zip(lists, weights):
        values = [s for _, s in lst]
        high, low = max(values), min(values)
        for doc, v in lst:
            score = weight
            if high != low:
                score *= (v - low) / (high - low)
            fused[doc] = score + fused[doc] if doc in fused else score
    return fused


def opensearch_l2(scores: list) -> list:
    """opensearch-project/neural-search@936d3c4 processor/normalization/
    L2ScoreNormalizationTechnique: s / sqrt(sum s^2), the sum in list order; a zero norm gives 0."""
    total = 0.0
    for s in scores:
        total += s * s
    norm = math.sqrt(total)
    return [0.0 if norm == 0 else s / norm for s in scores]


def opensearch_min_max(scores: list) -> list:
    """neural-search MinMaxScoreNormalizationTechnique without bounds: max starts at
    Float.MIN_VALUE; an all-equal list's score is 1.0; the list's minimum becomes 0.001."""
    low, high = min(float(np.finfo(np.float32).max), *scores), max(FLOAT_MIN_VALUE, *scores)
    out = []
    for s in scores:
        if high == low and high == s:
            out.append(1.0)
            continue
        v = (s - low) / (high - low)
        out.append(0.001 if v == 0.0 else v)
    return out


def opensearch_mean(technique: str, values: list, weights: list) -> float:
    """neural-search processor/combination/{Arithmetic,Geometric,Harmonic}MeanScoreCombination-
    Technique over one document's normalised score per sub-query (0.0 where it is missing)."""
    total = weight_sum = 0.0
    for s, w in zip(values, weights):
        if technique == "arithmetic_mean" and s >= 0.0:
            total += s * w
            weight_sum += w
        elif technique == "geometric_mean" and s > 0:
            weight_sum += w
            total += w * math.log(s)
        elif technique == "harmonic_mean" and s > 0:
            weight_sum += w
            total += w / s
    if technique == "arithmetic_mean":
        return 0.0 if weight_sum == 0 else total / weight_sum
    if technique == "geometric_mean":
        return 0.0 if weight_sum == 0 else math.exp(total / weight_sum)
    return weight_sum / total if total > 0 else 0.0


def opensearch(lists: list, weights: list, technique: str, normalise) -> dict:
    normalised = [dict(zip([d for d, _ in lst], normalise([s for _, s in lst]))) for lst in lists]
    docs = {d for lst in lists for d, _ in lst}
    return {
        d: opensearch_mean(technique, [n.get(d, 0.0) for n in normalised], weights) for d in docs
    }


def documented_min_max(scores: list) -> list:
    """rankfusion's min-max (docs/semantics.md): (s - min) / (max - min); all-equal: 1.0."""
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]


def nem_fuse(channels: list, timestamps: dict, recency: float, k: float = 60.0) -> dict:
    """Dieg0Code/nem@1d1c30b internal/retrieve/retrieve.go, Fuse: RRF (1 / (k + rank), channel order),
    then recency * (ts - min) / (max - min) over the merged keys with a timestamp (!= 0), added
    when the span is > 0 and the key's timestamp > 0."""
    fused: dict = {}
    for channel in channels:
        for rank, key in enumerate(channel):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + float(rank + 1))
    have = [timestamps.get(key, 0) for key in fused if timestamps.get(key, 0) != 0]
    low, high = (min(have), max(have)) if have else (0, 0)
    span = float(high - low)
    for key in fused:
        ts = timestamps.get(key, 0)
        if span > 0 and ts > 0:
            fused[key] += recency * (float(ts - low) / span)
    return fused


@pytest.fixture(scope="module")
def anchor_queries() -> list:
    """(qid, lists) with lists [[(doc, score), ...], ...] best first: the real runs (2 lists, in
    trec_eval's order) and the synthetic runs (3 lists)."""
    return anchor_data()


def anchor_data() -> list:
    out = []
    for bm25, minilm in real_runs().values():
        for qid in bm25:
            out.append((qid, [list(bm25[qid].items()), list(minilm[qid].items())]))
    synthetic = synthetic_runs()
    for qid in synthetic[0]:
        lists = [sorted(run[qid].items(), key=lambda p: -p[1]) for run in synthetic]
        out.append((qid, lists))
    return out


def compare_anchor(queries, ours, theirs, edge=None) -> dict:
    """{dataset: Figures}: ours(lists) and theirs(lists) ({doc: score}) agree on every document
    but those edge(lists) ({doc: edge case}) names."""
    figures: dict = {}
    failures = []
    for qid, lists in queries:
        f = figures.setdefault(dataset(qid), Figures())
        mine, expected = ours(lists), theirs(lists)
        edges = edge(lists) if edge else {}
        for name in set(edges.values()):
            f.edge_docs[name] = f.edge_docs.get(name, 0) + sum(e == name for e in edges.values())
        if set(mine) != set(expected):
            failures.append(f"{qid}: keys differ")
            continue
        for doc, value in expected.items():
            if doc in edges:
                if not close(mine[doc], value):
                    f.edge_differing[edges[doc]] = f.edge_differing.get(edges[doc], 0) + 1
                continue
            f.docs += 1
            f.identical += mine[doc] == value
            f.max_abs = max(f.max_abs, abs(mine[doc] - value))
            f.max_rel = max(f.max_rel, abs(mine[doc] - value) / max(1.0, abs(value)))
            if not close(mine[doc], value):
                failures.append(f"{qid} {doc}: ours {mine[doc]!r}, theirs {value!r}")
    assert not failures, failures[:10]
    assert sum(f.docs for f in figures.values()) > 0
    return figures


def fused(lists, **kwargs) -> dict:
    docs = [[d for d, _ in lst] for lst in lists]
    scores = [[s for _, s in lst] for lst in lists]
    return {h.key: h.score for h in rankfusion.fuse(docs, scores=scores, **kwargs)}


def anchor_weights(lists, two, three):
    return two if len(lists) == 2 else three


def test_dbsf_is_qdrants(anchor_queries):
    FIGURES[("Qdrant", "dbsf")] = compare_anchor(
        anchor_queries, lambda lists: fused(lists, method="dbsf"), qdrant_dbsf
    )
    worst = 0.0
    for qid, lists in anchor_queries:
        if not qid.startswith("syn:"):
            ours = fused(lists, method="dbsf")
            for doc, v in qdrant_dbsf(lists, np.float32).items():
                worst = max(worst, abs(ours[doc] - v))
    FIGURES[("Qdrant", "dbsf in f32")] = worst


ES_EDGES = ("min-max, 0 < span < 1e-6", "min-max, every score < 0")


def es_edges(lists) -> dict:
    """Where ES's min-max is not ours: a span under its 1e-6 epsilon (ES: 1.0), and a list whose
    scores are all negative (ES's max stays Float.MIN_VALUE; Lucene scores are never negative)."""
    edges: dict = {}
    for lst in lists:
        values = [s for _, s in lst]
        span = max(values) - min(values)
        name = ES_EDGES[0] if 0 < span < ES_EPSILON else ES_EDGES[1] if max(values) < 0 else None
        if name:
            edges.update({d: name for d, _ in lst if d not in edges})
    return edges


def test_wsum_min_max_is_elasticsearchs_linear_retriever(anchor_queries):
    def weights(lists):
        return anchor_weights(lists, [2.0, 1.0], [1.0, 0.5, 2.0])

    figures = compare_anchor(
        anchor_queries,
        lambda lists: fused(lists, method="wsum", norm="min-max", weights=weights(lists)),
        lambda lists: es_linear_minmax(lists, weights(lists)),
        es_edges,
    )
    FIGURES[("Elasticsearch", "wsum/min-max")] = figures
    for name in ES_EDGES:  # both occur, and change scores
        assert sum(f.edge_differing.get(name, 0) for f in figures.values()) > 0, name


def test_relative_score_is_weaviates(anchor_queries):
    def weights(lists):
        return anchor_weights(lists, [0.25, 0.75], [0.2, 0.5, 0.3])  # alpha 0.75: BM25 first

    FIGURES[("Weaviate", "relative_score")] = compare_anchor(
        anchor_queries,
        lambda lists: fused(lists, method="relative_score", weights=weights(lists)),
        lambda lists: weaviate_relative_score(lists, weights(lists)),
    )


MEANS = ("arithmetic_mean", "geometric_mean", "harmonic_mean")


def opensearch_weights(lists):
    return anchor_weights(lists, [0.6, 0.4], [0.5, 0.3, 0.2])  # each in [0, 1], summing to 1


@pytest.mark.parametrize("technique", MEANS)
def test_means_over_l2_are_opensearchs(anchor_queries, technique):
    FIGURES[("OpenSearch", f"{technique}/l2")] = compare_anchor(
        anchor_queries,
        lambda lists: fused(lists, method=technique, norm="l2", weights=opensearch_weights(lists)),
        lambda lists: opensearch(lists, opensearch_weights(lists), technique, opensearch_l2),
    )


OPENSEARCH_MIN_MAX_EDGES = ("min-max, the list's minimum", "min-max, the list's max <= 0")


def opensearch_min_max_edges(lists) -> dict:
    """Where OpenSearch's min_max is not ours: the minimum of a list that is not all-equal
    (OpenSearch: 0.001, we: 0.0, which the geometric and harmonic means skip), and every score of
    a list whose max is <= 0 (OpenSearch's max starts at Float.MIN_VALUE)."""
    edges: dict = {}
    for lst in lists:
        values = [s for _, s in lst]
        low, high = min(values), max(values)
        for d, s in lst:
            if d not in edges and high <= 0:
                edges[d] = OPENSEARCH_MIN_MAX_EDGES[1]
            elif d not in edges and s == low < high:
                edges[d] = OPENSEARCH_MIN_MAX_EDGES[0]
    return edges


@pytest.mark.parametrize("technique", MEANS)
def test_means_over_min_max_are_opensearchs(anchor_queries, technique):
    """OpenSearch's combination over our min-max agrees everywhere; over its own min_max (which
    lifts each list's minimum to 0.001) it differs only on the documents that normaliser treats
    otherwise."""

    def ours(lists):
        return fused(lists, method=technique, norm="min-max", weights=opensearch_weights(lists))

    compare_anchor(
        anchor_queries,
        ours,
        lambda lists: opensearch(lists, opensearch_weights(lists), technique, documented_min_max),
    )
    figures = compare_anchor(
        anchor_queries,
        ours,
        lambda lists: opensearch(lists, opensearch_weights(lists), technique, opensearch_min_max),
        opensearch_min_max_edges,
    )
    FIGURES[("OpenSearch", f"{technique}/min_max")] = figures
    assert sum(sum(f.edge_differing.values()) for f in figures.values()) > 0


def timestamps(queries) -> dict:
    """A positive Unix-like time for four documents in five (nem's real use); the others none."""
    rng = np.random.default_rng(7)
    docs = sorted({d for _, lists in queries for lst in lists for d, _ in lst})
    times = rng.integers(1_600_000_000, 1_700_000_000, len(docs))
    keep = rng.random(len(docs)) < 0.8
    return {d: int(t) for d, t, k in zip(docs, times, keep) if k}


@pytest.mark.parametrize("weight", [0.02, 0.5])
def test_boost_is_nems_recency(anchor_queries, weight):
    """fuse(method="rrf", boost=timestamps, boost_weight=w) is nem's Fuse with recency weight w.
    The boost mapping also holds 20 documents no list of the query has: nem never sees those,
    and neither do rankfusion's min and max."""
    ts = timestamps(anchor_queries)
    others = list(ts.items())

    def boost(lists):
        docs = {d for lst in lists for d, _ in lst}
        strangers = [(d, t) for d, t in others[:40] if d not in docs][:20]
        return dict([(d, ts[d]) for d in docs if d in ts] + strangers)

    FIGURES[("nem", f"rrf + boost {weight}")] = compare_anchor(
        anchor_queries,
        lambda lists: fused(lists, method="rrf", boost=boost(lists), boost_weight=weight),
        lambda lists: nem_fuse([[d for d, _ in lst] for lst in lists], ts, weight),
    )
    for qid, lists in anchor_queries[:50]:  # nem computes the boost before cutting to the limit
        keys = [[d for d, _ in lst] for lst in lists]
        top = rankfusion.fuse(keys, boost=boost(lists), boost_weight=weight, limit=10)
        best = sorted(nem_fuse(keys, ts, weight).values(), reverse=True)[:10]
        assert len(top) == len(best), qid
        assert all(close(h.score, v) for h, v in zip(top, best)), qid


# === The figures ==================================================================================

FIGURES: dict = {}  # what the tests above measured, for the report below
ANCHORS = ("Qdrant", "Elasticsearch", "Weaviate", "OpenSearch", "nem")


def cell(f) -> str:
    """The largest absolute difference (relative too when it is not the same), bit-identical
    documents / documents compared."""
    if f is None:
        return ""
    text = (
        f"{f.max_abs:.1e}" if f.max_rel == f.max_abs else f"{f.max_abs:.1e} (rel {f.max_rel:.1e})"
    )
    return f"{text}; {f.identical}/{f.docs} identical"


def report(figures: dict) -> str:
    """Markdown: the largest difference per pair and dataset, each edge case's documents."""
    datasets = ("cranfield", "vaswani", "syn")
    out = ["| pair | runs | " + " | ".join(datasets) + " |", "|---|---|---|---|---|"]
    for (name, runs), by_dataset in figures.items():
        if not isinstance(by_dataset, dict) or name in ANCHORS:
            continue
        cells = []
        for d in datasets:
            f = by_dataset.get(d)
            cells.append(cell(f))
        out.append(f"| {name} | {runs} | " + " | ".join(cells) + " |")
    out += ["", f"Qdrant in f32: {figures.get(('Qdrant', 'dbsf in f32'))}"]
    out += ["", "| anchor | method | " + " | ".join(datasets) + " | edge case: docs, differing |"]
    out.append("|---|---|---|---|---|---|")
    for (anchor, method), by_dataset in figures.items():
        if anchor not in ANCHORS or not isinstance(by_dataset, dict):
            continue
        cells = []
        edges: dict = {}
        for d in datasets:
            f = by_dataset.get(d)
            cells.append(cell(f))
            for e, n in f.edge_docs.items() if f else ():
                hit, differ = edges.get(e, (0, 0))
                edges[e] = (hit + n, differ + f.edge_differing.get(e, 0))
        edge_cells = "; ".join(f"{e}: {h}, {d}" for e, (h, d) in edges.items())
        out.append(f"| {anchor} | {method} | " + " | ".join(cells) + f" | {edge_cells} |")
    out += ["", "| edge case | ranx | rankfusion | pair | runs | docs | differing |"]
    out.append("|---|---|---|---|---|---|---|")
    for edge, (theirs, ours) in EDGE_CASES.items():
        for (name, runs), by_dataset in figures.items():
            if not isinstance(by_dataset, dict) or name in ANCHORS:
                continue
            hit = sum(f.edge_docs.get(edge, 0) for f in by_dataset.values())
            differ = sum(f.edge_differing.get(edge, 0) for f in by_dataset.values())
            if hit:
                out.append(f"| {edge} | {theirs} | {ours} | {name} | {runs} | {hit} | {differ} |")
    out += ["", "| weight 0 (3 runs): docs differing from ranx on all runs | |", "|---|---|"]
    out += [f"| {m} | {n} |" for (k, m), n in figures.items() if k == "weight 0"]
    return "\n".join(out)


if __name__ == "__main__":
    status = pytest.main([__file__, "-q", "-p", "no:warnings", "-p", "no:cacheprovider"])
    print(report(sys.modules["test_parity_anchors"].FIGURES))
    sys.exit(status)
