"""``rankfusion.optimize`` and ``rankfusion optimize``: exact grids, the in-sample best against a
brute-force loop of ``rankfusion.fuse`` + ir-measures, cross-validation, the command."""

from __future__ import annotations

import itertools
import math
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ir_measures")
pytest.importorskip("pyarrow")

import ir_measures  # noqa: E402
from _third_run import write_noisy_run  # noqa: E402

import rankfusion  # noqa: E402
import rankfusion as rf  # noqa: E402
from rankfusion import _core, _optimize, trec  # noqa: E402
from rankfusion._optimize import _weights_of  # noqa: E402
from rankfusion.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CRANFIELD = ROOT / "data" / "cranfield"
VASWANI = ROOT / "data" / "vaswani"


def collection(name: str) -> Path:
    folder = CRANFIELD if name == "cranfield" else VASWANI
    if not (folder / "qrels.txt").exists():
        pytest.skip(f"{folder} is absent")
    return folder


@pytest.fixture(scope="module")
def collections(tmp_path_factory):
    """``get(name)``: BM25, MiniLM and a third run made from MiniLM (tests/_third_run.py), and
    the qrels, of a shipped collection (made once)."""
    made = {}

    def get(name):
        if name not in made:
            folder = collection(name)
            third = tmp_path_factory.mktemp(name) / "noisy.run"
            write_noisy_run(str(folder / "minilm.run.gz"), str(third))
            files = [str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz"), str(third)]
            made[name] = (files, str(folder / "qrels.txt"))
        return made[name]

    return get


@pytest.fixture(params=["cranfield", "vaswani"])
def three_runs(request, collections):
    return collections(request.param)


# --- the grid ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "runs, units", [(r, u) for r in (1, 2, 3, 4, 5) for u in (1, 4, 10)] + [(2, 20), (3, 20)]
)
def test_weights_grid_is_every_composition(runs, units):
    # every vector of `runs` whole numbers of steps summing to `units` steps, by brute force
    expected = [c for c in itertools.product(range(units + 1), repeat=runs) if sum(c) == units]
    got = list(_weights_of(units, runs))
    assert len(got) == len(expected) == math.comb(units + runs - 1, runs - 1)
    assert got == [tuple(i / units for i in c) for c in expected]  # the same order, too


def test_three_runs_at_a_tenth_is_66_triples_four_of_which_a_float_sum_filter_drops():
    got = list(_weights_of(10, 3))
    assert len(got) == 66 and (0.2, 0.7, 0.1) in got
    # ranx's filter: the product of round(arange(0, 1.1, 0.1), 1) whose float sum == 1.0
    tenths = [round(i * 0.1, 1) for i in range(11)]
    kept = {c for c in itertools.product(tenths, repeat=3) if sum(c) == 1.0}
    assert len(kept) == 62 and kept < set(got)
    assert set(got) - kept == {(0.2, 0.7, 0.1), (0.3, 0.6, 0.1), (0.6, 0.3, 0.1), (0.7, 0.2, 0.1)}


def test_default_grids(three_runs):
    files, qrels = three_runs
    r = rankfusion.optimize(files[:2], qrels, method="rrf", metric="P@5")
    assert [s["k"] for s in r.settings] == list(range(10, 101, 10))
    r = rankfusion.optimize(files, qrels, method="wsum", norm="min-max", metric="P@5")
    assert [s["weights"] for s in r.settings] == list(_weights_of(10, 3))
    r = rankfusion.optimize(files[:2], qrels, method="wsum", metric="P@5", step=0.25)
    assert [s["weights"] for s in r.settings] == [(i / 4, (4 - i) / 4) for i in range(5)]


def test_user_grid_is_the_product_first_parameter_slowest():
    folder = collection("cranfield")
    files = [str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")]
    grid = {"k": [60, 1], "weights": [[1, 0.5], [0.5, 1], [1, 1]]}
    r = rankfusion.optimize(files, str(folder / "qrels.txt"), method="rrf", metric="P@5", grid=grid)
    assert r.settings == tuple(
        {"k": k, "weights": tuple(map(float, w))} for k in [60, 1] for w in grid["weights"]
    )
    r = rankfusion.optimize(
        files,
        str(folder / "qrels.txt"),
        method="sum",
        metric="P@5",
        grid={"norm": ["min-max", "z-score"]},
    )
    assert r.settings == ({"norm": "min-max"}, {"norm": "z-score"}) and r.norm is None


# --- brute force ------------------------------------------------------------------------------


def brute_force(files, qrels_path, method, norm, metric, settings):
    """Per setting: every judged query fused by ``rankfusion.fuse`` on the runs as
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
    best = max(range(len(settings)), key=lambda i: (scores[i], -i))  # first of the best
    return scores, best


K_GRID = [{"k": k} for k in range(10, 101, 10)]
PAIRS = [{"weights": (i / 10, (10 - i) / 10)} for i in range(11)]
TRIPLES = [
    {"weights": (a / 10, b / 10, (10 - a - b) / 10)} for a in range(11) for b in range(11 - a)
]


@pytest.mark.parametrize(
    "name, method, norm, metric, runs, grid",
    [
        ("cranfield", "rrf", None, "nDCG@10", 2, K_GRID),
        ("cranfield", "wsum", "min-max", "nDCG@10", 2, PAIRS),
        ("cranfield", "rrf", None, "AP", 2, [{"k": k} for k in (1, 60)]),
        ("vaswani", "rrf", None, "nDCG@10", 2, K_GRID),
        ("vaswani", "wsum", "min-max", "nDCG@10", 3, TRIPLES),
    ],
)
def test_in_sample_best_equals_brute_force(collections, name, method, norm, metric, runs, grid):
    # (benches/optimize_checks.py does the same for more grids, run sets and both collections)
    files, qrels = collections(name)
    files = files[:runs]
    # the default grid, but for AP (a measure of the whole list) a short one
    given = {"k": [s["k"] for s in grid]} if metric == "AP" else None
    r = rankfusion.optimize(files, qrels, method=method, norm=norm, metric=metric, grid=given)
    assert list(r.settings) == grid  # the grid holds every composition, in this order
    scores, best = brute_force(files, qrels, method, norm, metric, grid)
    assert r.best_index == best and r.best == grid[best]
    assert abs(r.best_score - scores[best]) <= 1e-12
    assert max(abs(a - b) for a, b in zip(r.scores, scores)) <= 1e-12


@pytest.mark.parametrize("metric", ["P@5", "R@20", "AP@10", "Success@3", "nDCG@5", "RR", "Rprec"])
def test_cut_lists_score_as_the_whole_lists(metric):
    """Measures of the top c see lists cut after the c-th document and its ties: the same
    per-query values as the whole fused lists evaluated by ir-measures."""
    folder = collection("cranfield")
    files = [str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")]
    qrels = str(folder / "qrels.txt")
    r = rankfusion.optimize(files, qrels, method="rrf", metric=metric, grid={"k": [0, 60]})
    runs = [trec.read_run(f) for f in files]
    judged = trec.read_qrels(qrels)
    measure = ir_measures.parse_measure(metric)
    for i, k in enumerate([0, 60]):
        fused = trec.to_dict(trec.fuse(runs, k=k, queries=list(judged)))
        values = {m.query_id: m.value for m in ir_measures.iter_calc([measure], judged, fused)}
        assert list(r.per_query[i]) == [values[q] for q in r.queries]


def test_a_tie_across_the_cutoff_is_kept():
    # RRF of two disjoint runs ties rank r of one with rank r of the other: the 5th and 6th
    # fused documents tie, and trec_eval (doc id descending) puts the 6th ("b3") in its top 5
    runs = [
        {"q": trec.Ranking([f"a{i}" for i in range(1, 9)], [9.0 - i for i in range(1, 9)])},
        {"q": trec.Ranking([f"b{i}" for i in range(1, 9)], [9.0 - i for i in range(1, 9)])},
    ]
    qrels = {"q": {"b3": 1, "a7": 1}}
    r = rankfusion.optimize(runs, qrels, method="rrf", metric="P@5", grid={"k": [60]})
    fused = trec.to_dict(trec.fuse(runs, k=60))
    assert (
        r.scores[0]
        == ir_measures.calc_aggregate([ir_measures.P @ 5], qrels, fused)[ir_measures.P @ 5]
    )
    first_five = dict(list(fused["q"].items())[:5])  # a cut that ignores the tie
    assert "b3" not in first_five
    assert (
        r.scores[0]
        == 0.2
        != ir_measures.calc_aggregate([ir_measures.P @ 5], qrels, {"q": first_five})[
            ir_measures.P @ 5
        ]
    )


def test_a_float32_tie_across_the_cutoff_is_kept():
    # trec_eval compares scores as C floats: 0.4 and 0.39999999999999997 tie there, and the doc
    # id (descending) puts "y", second by its double score, first
    runs = [
        {"q": trec.Ranking(["x", "y"], [0.4, 0.39999999999999997])},
        {"q": trec.Ranking(["x", "y"], [0.0, 0.0])},
    ]
    qrels = {"q": {"y": 1}}
    r = rankfusion.optimize(runs, qrels, method="sum", metric="P@1", grid={"norm": ["none"]})
    fused = trec.to_dict(trec.fuse(runs, method="sum", norm="none"))
    assert list(fused["q"]) == ["x", "y"]
    whole = ir_measures.calc_aggregate([ir_measures.P @ 1], qrels, fused)[ir_measures.P @ 1]
    assert r.scores == (whole,) == (1.0,)


def test_a_tie_longer_than_the_ranked_depth_is_fused_whole():
    # 40 documents tie: the first ones the core ranks are not trec_eval's top 5 (doc id
    # descending puts d39 first), so the query is fused again whole
    docs = [f"d{i:02}" for i in range(40)]
    runs = [{"q": trec.Ranking(docs, [1.0] * 40)}, {"q": trec.Ranking([], [])}]
    qrels = {"q": {"d39": 1}}
    r = rankfusion.optimize(runs, qrels, method="sum", metric="P@5", grid={"norm": ["none"]})
    fused = trec.to_dict(trec.fuse(runs, method="sum", norm="none"))
    whole = ir_measures.calc_aggregate([ir_measures.P @ 5], qrels, fused)[ir_measures.P @ 5]
    assert r.scores == (whole,) == (0.2,)
    with pytest.warns(RuntimeWarning, match="every setting scores 0"):  # cut off: all 0
        r = rankfusion.optimize(runs, qrels, method="sum", metric="P@5", grid={"norm": ["none"]},
                                limit=30)  # fmt: skip
    cut = trec.to_dict(trec.fuse(runs, method="sum", norm="none", limit=30))
    assert "d39" not in cut["q"] and r.scores == (0.0,)  # the limit cuts it off, as -o would


def test_judged_queries_missing_from_the_runs_count_as_zero():
    runs = [{"q1": trec.Ranking(["a", "b"], [2.0, 1.0])}, {"q1": trec.Ranking(["b"], [1.0])}]
    qrels = {"q1": {"b": 1}, "q2": {"c": 1}}
    r = rankfusion.optimize(runs, qrels, method="rrf", metric="P@1", grid={"k": [60]})
    assert r.queries == ("q1", "q2") and list(r.per_query[0]) == [1.0, 0.0]
    assert r.scores == (0.5,)


def test_ties_go_to_the_first_setting_in_grid_order():
    runs = [{"q": trec.Ranking(["a", "b"], [2.0, 1.0])}, {"q": trec.Ranking(["a"], [1.0])}]
    r = rankfusion.optimize(runs, {"q": {"a": 1}}, method="rrf", metric="P@1")
    assert r.scores == (1.0,) * 10 and r.best_index == 0 and r.best == {"k": 10}
    assert r.ties == 10


def test_options_fuse_the_best_setting(three_runs):
    files, qrels = three_runs
    r = rankfusion.optimize(files, qrels, method="wsum", norm="min-max", metric="nDCG@10")
    assert r.options() == {"method": "wsum", "norm": "min-max", "weights": r.best["weights"]}
    fused = trec.fuse([trec.read_run(f) for f in files], **r.options())
    value = trec.evaluate(fused, trec.read_qrels(qrels), "nDCG@10")["nDCG@10"]
    assert abs(value - r.best_score) <= 1e-12
    assert [row["score"] for row in r.table()] == list(r.scores)


# --- the traced path: every setting scored from one traced fusion ----------------------------

TRACED_CASES = [
    ("rrf", None, {"k": [0, 10, 60], "weights": [[1, 0, 0.5], [0.2, 0.7, 0.1]]}, {}),
    ("rrf", None, {"k": [1, 60]}, {"window": 40, "limit": 25}),
    ("rbc", None, {"phi": [0.5, 0.9], "weights": [[1, 1, 1], [0, 1, 0.5]]}, {}),
    ("logn_isr", None, {"sigma": [0.01, 1.0]}, {}),
    ("gmnz", "min-max", {"gamma": [-1.0, 0.5, 2.0]}, {}),
    ("wsum", "z-score", {"weights": None}, {"lower_is_better": [False, True, False]}),
    ("relative_score", None, {"weights": [[0.3, 0.7, 0.0], [1.0, 1.0, 1.0]]}, {}),
    ("mixed", "min-max", {"weights": [[0.5, 0.5, 0.0], [2.0, -1.0, 0.5]]}, {"limit": 30}),
    ("wmnz", "rank", {"weights": [[0.5, 0.5, 1.0], [0.0, 1.0, 0.0]]}, {}),
]


@pytest.fixture(scope="module")
def small_cranfield(tmp_path_factory):
    """Cranfield's three runs (BM25, MiniLM, the third run) and the qrels of 40 queries."""
    folder = collection("cranfield")
    third = tmp_path_factory.mktemp("small") / "noisy.run"
    write_noisy_run(str(folder / "minilm.run.gz"), str(third))
    runs = [trec.read_run(f) for f in (folder / "bm25.run.gz", folder / "minilm.run.gz", third)]
    qrels = dict(list(trec.read_qrels(folder / "qrels.txt").items())[:40])
    return runs, qrels


def evaluated_runs(monkeypatch, *args, **kwargs):
    """``optimize(*args, **kwargs)`` and the run of each setting that ir-measures evaluated."""
    seen = []
    original = _optimize._Evaluator.__call__

    def spy(self, run):
        seen.append(run)
        return original(self, run)

    monkeypatch.setattr(_optimize._Evaluator, "__call__", spy)
    result = rankfusion.optimize(*args, **kwargs)
    monkeypatch.undo()
    return result, seen


@pytest.mark.parametrize("method, norm, grid, fixed", TRACED_CASES)
@pytest.mark.parametrize("metric", ["AP", "nDCG@10"])
def test_each_setting_is_fuse_bit_for_bit(small_cranfield, monkeypatch, method, norm, grid,
                                          fixed, metric):  # fmt: skip
    runs, qrels = small_cranfield
    step = 0.5 if grid.get("weights", 0) is None else None
    r, seen = evaluated_runs(
        monkeypatch, runs, qrels, method=method, norm=norm, metric=metric, grid=grid,
        step=step, **fixed,
    )  # fmt: skip
    assert _optimize._traceable(_optimize._plan(
        runs, method, norm, metric, step, grid, 0, "score", fixed.get("window"), "first",
        fixed.get("lower_is_better"), fixed.get("limit"),
    ))  # fmt: skip
    assert len(seen) == len(r.settings) > 1
    for i, run in enumerate(seen):
        fused = trec.fuse(runs, queries=list(qrels), **r.options(i))
        assert sorted(run) == sorted(q for q in qrels if q in fused)
        for qid, hits in fused.items():
            whole = [(h.key, h.score) for h in hits]
            got = list(run[qid].items())
            keep = len(whole)
            if metric == "nDCG@10" and keep > 10:  # cut after the 10th and its float32 ties
                t = np.float32(whole[9][1])
                keep = sum(1 for _, s in whole if np.float32(s) >= t)
            assert got == whole[:keep]  # the same documents, order and score bits
            assert [math.copysign(1, s) for _, s in got] == [
                math.copysign(1, s) for _, s in whole[:keep]
            ]


@pytest.mark.parametrize("metric", ["nDCG@10", "AP", "P@5", "R@100", "RR", "Judged@10"])
def test_traced_and_whole_fusions_score_the_same(small_cranfield, monkeypatch, metric):
    runs, qrels = small_cranfield
    kw = dict(method="wsum", norm="min-max", metric=metric, step=0.25)
    traced = rankfusion.optimize(runs, qrels, **kw)
    monkeypatch.setattr(_optimize, "_traceable", lambda plan: False)
    whole = rankfusion.optimize(runs, qrels, **kw)
    assert traced.scores == whole.scores and len(traced.scores) == 15
    assert np.array_equal(traced.per_query, whole.per_query)


def test_an_overflowing_setting_is_named_as_fuse_names_it(monkeypatch):
    runs = [
        {"q": trec.Ranking(["a", "b"], [1e308, 1.0])},
        {"q": trec.Ranking(["b", "a"], [2.0, 1e308])},
    ]
    kw = dict(method="wsum", norm="none", metric="P@1", grid={"weights": [[1, 1], [1, 0.5]]})
    with pytest.raises(ValueError) as traced:
        rankfusion.optimize(runs, {"q": {"a": 1}}, **kw)
    monkeypatch.setattr(_optimize, "_traceable", lambda plan: False)
    with pytest.raises(ValueError) as whole:
        rankfusion.optimize(runs, {"q": {"a": 1}}, **kw)
    assert str(traced.value) == str(whole.value)
    assert str(traced.value) == (
        "query 'q' (weights=(1.0, 1.0)): the fused score of key 'a' is not finite (inf)"
    )


@pytest.mark.parametrize("metric", ["nDCG@10", "AP", "P@5", "Rprec", "Success@1", "Judged@5"])
def test_the_evaluator_gives_ir_measures_values(small_cranfield, metric):
    runs, qrels = small_cranfield
    fused = trec.to_dict(trec.fuse(runs, queries=list(qrels)[:30]))
    measure = ir_measures.parse_measure(metric)
    queries = list(qrels)
    evaluate = _optimize._Evaluator(measure, qrels, queries)
    assert (evaluate.direct is None) == (metric == "Judged@5")  # not a trec_eval measure
    want = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, fused)}
    assert evaluate(fused).tolist() == [want[q] for q in queries]


def test_trace_arguments_are_checked():
    ids = np.array([[1, 2]])
    ranks = np.array([[[1], [2]]], dtype=np.int32)
    trace = _core._Trace(ids, [2], ranks)
    counts, got, scores = trace.combine([rf.Fusion(k=60), rf.Fusion(k=0)], cutoff=1)
    assert counts.tolist() == [[1], [1]] and got.tolist() == [1, 1]
    assert scores.tolist() == [1 / 61, 1 / 1]
    # settings as dicts are checked by the one checker; a bad one names its index
    with pytest.raises(rf.FusionError, match="k must be >= 0") as bad:
        trace.combine([{"k": 60.0}, {"k": -1.0}])
    assert bad.value.setting_index == 1 and bad.value.argument == "k"
    with pytest.raises(ValueError, match="method 'wsum' needs the trace's") as wsum:
        trace.combine([rf.Fusion(method="wsum", weights=[1.0])])
    assert wsum.value.setting_index == 0
    with pytest.raises(ValueError, match="method 'condorcet' is not scored from a trace"):
        trace.combine([rf.Fusion(method="condorcet", weights=[1.0])])
    with pytest.raises(rf.FusionError, match="weights has 2 values for 1 lists"):
        trace.combine([rf.Fusion(weights=[1.0, 1.0])])
    with pytest.raises(ValueError, match="counts\\[0\\] is 3"):
        _core._Trace(ids, [3], ranks)
    with pytest.raises(ValueError, match="shape"):
        _core._Trace(ids, [2], np.zeros((1, 3, 1), np.int32))
    with pytest.raises(TypeError, match="ranks must be an array of int32"):
        _core._Trace(ids, [2], ranks.astype(float))


# --- cross-validation -------------------------------------------------------------------------


def test_cross_validation_is_deterministic_and_adds_up(collections):
    files, qrels = collections("vaswani")
    kwargs = dict(method="wsum", norm="min-max", metric="nDCG@10", folds=5, seed=7)
    a = rankfusion.optimize(files, qrels, **kwargs)
    b = rankfusion.optimize(files, qrels, **kwargs)
    assert a.folds == b.folds and a.cv_score == b.cv_score
    queries = list(a.queries)
    n = len(queries)
    # the folds partition the queries, sizes within one of each other
    held = [q for f in a.folds for q in f.queries]
    assert sorted(held) == sorted(queries) and len(held) == n
    sizes = [len(f.queries) for f in a.folds]
    assert max(sizes) - min(sizes) <= 1
    position = {q: j for j, q in enumerate(queries)}
    held_out_values = []
    for f in a.folds:
        test = {position[q] for q in f.queries}
        train = [j for j in range(n) if j not in test]
        # the choice: the first setting with the best mean over the other folds
        means = [math.fsum(row[j] for j in train) / len(train) for row in a.per_query]
        assert f.choice_index == means.index(max(means))
        assert f.choice == a.settings[f.choice_index] and f.train_score == max(means)
        values = [a.per_query[f.choice_index][j] for j in sorted(test)]
        assert f.score == math.fsum(values) / len(values)
        held_out_values += values
    assert a.cv_score == math.fsum(held_out_values) / n
    assert abs(sum(len(f.queries) * f.score for f in a.folds) / n - a.cv_score) <= 1e-12
    c = rankfusion.optimize(files, qrels, **{**kwargs, "seed": 8})
    assert [f.queries for f in c.folds] != [f.queries for f in a.folds]


def test_folds_depend_on_the_seed_and_the_set_of_queries_only():
    queries = [f"q{i}" for i in range(50)]
    folds = dict(zip(queries, rankfusion.fold_of(queries, 4, 3).tolist()))
    shuffled = queries[:]
    random.Random(1).shuffle(shuffled)
    assert dict(zip(shuffled, rankfusion.fold_of(shuffled, 4, 3).tolist())) == folds
    assert sorted(list(folds.values()).count(f) for f in range(4)) == [12, 12, 13, 13]


# --- argument errors --------------------------------------------------------------------------

RUNS = [{"q": trec.Ranking(["a", "b"], [2.0, 1.0])}, {"q": trec.Ranking(["b"], [1.0])}]
QRELS = {"q": {"a": 1}}


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(runs="a.run"), TypeError, "runs must be a list"),
        (dict(runs=RUNS[:1]), ValueError, "at least 2 runs"),
        (dict(method="nope"), ValueError, "method must be one of"),
        (dict(metric="ndcg@10,map"), ValueError, "one measure"),
        (dict(metric="nope@3"), ValueError, "unknown metric"),
        (dict(metric="NumRet"), ValueError, "not a mean over queries"),
        (dict(grid={"x": None}), ValueError, "unknown parameter 'x'"),
        (dict(method="wsum", grid={"k": None}), ValueError, "k is not used by method 'wsum'"),
        (dict(method="sum"), ValueError, "no parameter to tune by default"),
        (dict(method="wsum", step=0.3), ValueError, "step must divide 1"),
        (dict(step=0.1), ValueError, "step is not used"),
        (dict(method="wsum", step=True), TypeError, "step must be a real number"),
        (dict(grid={"k": []}), ValueError, "grid\\['k'\\] is empty"),
        (dict(grid={"k": [-1]}), ValueError, "grid setting k=-1: k must be"),
        (dict(grid={"k": ["1"]}), TypeError, "grid\\['k'\\]\\[0\\] must be a real number"),
        (dict(grid={"weights": [[1.0]]}), ValueError, "has 1 weights for 2 runs"),
        (dict(method="sum", norm="max", grid={"norm": ["l2"]}), ValueError, "norm is given"),
        (dict(folds=1), ValueError, "folds must be between 2"),
        (dict(folds=2), ValueError, "folds must be between 2 and the 1 judged"),
        (dict(seed=True), TypeError, "seed must be an int"),
        (dict(qrels=[1]), TypeError, "qrels must be a path"),
        (dict(qrels={}), ValueError, "qrels is empty"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, match):
    call = {**dict(runs=RUNS, qrels=QRELS, method="rrf", metric="P@1"), **kwargs}
    with pytest.raises(error, match=match):
        rankfusion.optimize(call.pop("runs"), call.pop("qrels"), **call)


def test_integral_gains_of_any_type_and_others_named():
    """A qrels DataFrame gives numpy ints; a float column 1.0: both are gains, as the int they
    equal; anything else is a TypeError naming the judgment (pytrec_eval named nothing)."""
    import numpy as np

    runs = [
        {"1": trec.Ranking(["a", "b", "c"], [3.0, 2.0, 1.0])},
        {"1": trec.Ranking(["c", "b"], [2.0, 1.0])},
    ]
    plain = {"1": {"b": 2, "c": 1, "z": 0}}
    want = rankfusion.optimize(runs, plain, method="rrf", metric="ndcg@10")
    assert want.best_score > 0
    fused = trec.fuse(runs)
    expected = trec.evaluate(fused, plain, "ndcg@10,P@2")
    for gains in (
        [np.int64(2), np.int32(1), np.uint8(0)],
        [2.0, 1.0, 0.0],
        [np.float64(2.0), np.float32(1.0), -0.0],
    ):
        qrels = {"1": dict(zip(["b", "c", "z"], gains))}
        got = rankfusion.optimize(runs, qrels, method="rrf", metric="ndcg@10")
        assert got.scores == want.scores
        assert trec.evaluate(fused, qrels, "ndcg@10,P@2") == expected
    for gain, shown in (
        (1.5, "float 1.5"),
        ("1", "str '1'"),
        (True, "bool True"),
        (np.True_, "numpy.bool np.True_"),
        (math.nan, "float nan"),
        (np.float64(math.inf), "numpy.float64 np.float64(inf)"),
        (None, "NoneType None"),
    ):
        message = f"qrels['1']['c'] must be an integer gain, got {shown}"
        qrels = {"1": {"b": 1, "c": gain}}
        with pytest.raises(TypeError) as caught:
            rankfusion.optimize(runs, qrels, method="rrf", metric="ndcg@10")
        assert str(caught.value) == message
        with pytest.raises(TypeError) as caught:
            trec.evaluate(fused, qrels, "ndcg@10")
        assert str(caught.value) == message


def test_gains_beyond_what_trec_eval_evaluates_are_named(tmp_path, capsys):
    """trec_eval counts a query's judgments in an array of max gain + 1 entries and pytrec_eval
    reads gains as C ints: a gain of 2**32 scored every metric 0, 2**63 - 1 crashed the
    process, 2**63 raised a SystemError. Beyond trec.MAX_GAIN (10**6) in size, a gain is a
    ValueError naming it, wherever qrels are evaluated; up to it, it is evaluated."""
    runs = [
        {"1": trec.Ranking(["a", "b"], [2.0, 1.0])},
        {"1": trec.Ranking(["b", "a"], [2.0, 1.0])},
    ]
    fused = trec.fuse(runs)
    assert trec.MAX_GAIN == 10**6
    for gain in (10**6, -(10**6)):
        qrels = {"1": {"a": gain, "b": 1}}
        assert trec.evaluate(fused, qrels, "P@2")["P@2"] == (1.0 if gain > 0 else 0.5)
    run_file, other, qrels_file = tmp_path / "a.run", tmp_path / "b.run", tmp_path / "qrels.txt"
    run_file.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n")
    other.write_text("1 Q0 b 1 2.0 t\n1 Q0 a 2 1.0 t\n")
    for gain in (10**6 + 1, -(10**6) - 1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**64)):
        message = (
            f"qrels['1']['a'] must be a gain from -1000000 to 1000000 (what trec_eval "
            f"evaluates), got {gain}"
        )
        qrels = {"1": {"a": gain, "b": 1}}
        qrels_file.write_text(f"1 0 a {gain}\n1 0 b 1\n")
        tuned = dict(method="rrf", metric="ndcg@10")
        calls = [
            (trec.evaluate, (fused, qrels, "ndcg@10"), {}),
            (rankfusion.optimize, (runs, qrels), tuned),
            (rankfusion.optimize, (runs, str(qrels_file)), tuned),
            (rankfusion.compare, (runs, qrels), dict(metrics="ndcg@10")),
        ]
        for function, args, kwargs in calls:
            with pytest.raises(ValueError) as caught:
                function(*args, **kwargs)
            assert str(caught.value) == message
        for command in (
            ["fuse", run_file, other, "--qrels", qrels_file, "-o", tmp_path / "o.run"],
            ["compare", run_file, other, "--qrels", qrels_file],
            [
                "optimize",
                run_file,
                other,
                "--qrels",
                qrels_file,
                "--method",
                "rrf",
                "--metric",
                "P@1",
            ],
        ):
            code, _, err = run_cli([str(a) for a in command], capsys)
            assert (code, err) == (1, f"rankfusion {command[0]}: error: {message}\n")
        assert not (tmp_path / "o.run").exists()


def test_qrels_that_judge_nothing_of_the_runs_are_refused():
    """Qrels whose queries no run holds ('001' against '1'), or that judge no document, would
    make every setting score 0 and the "best" a pick of the grid's order: refused, naming
    both sides; a table of zeros where the queries do meet is chosen from with a warning."""
    runs = [{"1": trec.Ranking(["a", "b"], [2.0, 1.0])}, {"1": trec.Ranking(["b"], [1.0])}]
    with pytest.raises(ValueError) as caught:
        rankfusion.optimize(runs, {"001": {"a": 1}}, method="rrf", metric="ndcg@10")
    assert str(caught.value) == (
        "no judged query is in the runs: the qrels judge 1 query ('001'), the runs hold 1 "
        "query ('1'); every setting would score 0"
    )
    with pytest.raises(ValueError) as caught:
        rankfusion.optimize(runs, {"1": {}}, method="rrf", metric="ndcg@10")
    assert str(caught.value) == (
        "the qrels judge no document: their 1 query ('1') have no judgments; every setting "
        "would score 0"
    )
    with pytest.warns(RuntimeWarning, match="every setting scores 0 on every judged query"):
        r = rankfusion.optimize(runs, {"1": {"zz": 1}}, method="rrf", metric="ndcg@10")
    assert r.best_index == 0 and set(r.scores) == {0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a table with one non-zero value: no warning
        rankfusion.optimize(runs, {"1": {"b": 1}, "2": {"x": 1}}, method="rrf", metric="P@1")


def test_the_command_refuses_or_warns_as_optimize_does(tmp_path, capsys):
    run = tmp_path / "a.run"
    run.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("001 0 a 1\n")
    args = ["optimize", str(run), str(run), "--qrels", str(qrels), "--method", "rrf"]
    out = tmp_path / "best.run"
    code, _, err = run_cli([*args, "--metric", "P@1", "-o", str(out)], capsys)
    assert code == 1 and not out.exists()
    assert err == (
        "rankfusion optimize: error: no judged query is in the runs: the qrels judge 1 query "
        "('001'), the runs hold 1 query ('1'); every setting would score 0\n"
    )
    qrels.write_text("1 0 zz 1\n")
    code, stdout, err = run_cli([*args, "--metric", "P@1"], capsys)
    assert code == 0
    assert err == (
        "rankfusion: warning: every setting scores 0 on every judged query (P@1): the qrels "
        "give nothing to choose by, and the best is merely the first setting of the grid\n"
    )
    assert "best (in-sample): k=10  P@1 0.0000" in stdout
    code, _, err = run_cli([*args, "--metric", "P@1", "-q"], capsys)
    assert (code, err) == (0, "")


def test_a_bad_parquet_run_is_named_by_its_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    good, strings, nan = (tmp_path / f"{n}.parquet" for n in ("good", "strings", "nan"))
    pq.write_table(pa.table({"qid": ["q", "q"], "docid": ["a", "b"], "score": [2.0, 1.0]}), good)
    pq.write_table(pa.table({"qid": ["q"], "docid": ["a"], "score": ["2"]}), strings)
    pq.write_table(pa.table({"qid": ["q", "q"], "docid": ["a", "b"], "score": [1, math.nan]}), nan)
    with pytest.raises(TypeError) as caught:
        rankfusion.optimize([good, strings], QRELS, method="rrf", metric="P@1")
    assert str(caught.value) == f"{strings}: column 'score' must hold numbers, got string"
    with pytest.raises(ValueError) as caught:
        rankfusion.optimize([good, nan], QRELS, method="rrf", metric="P@1")
    assert str(caught.value) == f"{nan}, row 1, column 'score': score is NaN"


def test_a_query_that_cannot_be_fused_is_named():
    runs = [{"q": trec.Ranking(["a"], [math.inf])}, {"q": trec.Ranking(["a"], [1.0])}]
    with pytest.raises(ValueError, match="query 'q' \\(weights=.*\\): .*finite"):
        rankfusion.optimize(runs, {"q": {"a": 1}}, method="wsum", metric="P@1")


def test_the_python_example_of_the_docs_runs_as_written():
    """docs/optimize.md's Python block, run from the repository's root on the shipped runs:
    each print gives what its comment says (up to the comment's parenthesis)."""
    collection("cranfield")
    text = (ROOT / "docs" / "optimize.md").read_text()
    after = text[text.index("<!-- optimize-example -->") :]
    start = after.index("```python\n") + len("```python\n")
    block = after[start : after.index("```\n", start)]
    claims = [  # the comment, less a closing remark in words: "(in-sample)"
        re.sub(r" \([a-z -]+\)$", "", line.split("  # ", 1)[1])
        for line in block.splitlines()
        if line.startswith("print(")
    ]
    done = subprocess.run(
        [sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == claims


# --- the command ------------------------------------------------------------------------------


def run_cli(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_command_reports_and_writes_the_best_run(tmp_path, capsys):
    folder = collection("cranfield")
    third = write_noisy_run(str(folder / "minilm.run.gz"), str(tmp_path / "noisy.run"))
    files = [str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz"), third]
    qrels = str(folder / "qrels.txt")
    best, table = tmp_path / "best.run", tmp_path / "table.tsv"
    code, out, err = run_cli(
        [
            "optimize", *files, "--qrels", qrels, "--method", "wsum", "--norm", "min-max",
            "--metric", "ndcg@10", "--folds", "5", "-o", str(best), "--table", str(table), "-q",
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert "66 settings" in lines[0] and "225 judged queries" in lines[0]
    r = rankfusion.optimize(
        files, qrels, method="wsum", norm="min-max", metric="ndcg@10", folds=5, limit=1000
    )
    weights = ",".join(repr(w) for w in r.best["weights"])
    assert f"best (in-sample): weights={weights}  nDCG@10 {r.best_score:.4f}" in out
    assert f"cross-validated (5 folds, seed 0): nDCG@10 {r.cv_score:.4f}" in out
    rows = table.read_text().splitlines()
    assert rows[0] == "index\tweights\tnDCG@10" and len(rows) == 67
    assert [float(row.split("\t")[2]) for row in rows[1:]] == list(r.scores)
    # -o writes what `rankfusion fuse` writes with the chosen setting
    fused = tmp_path / "fused.run"
    code, _, err = run_cli(
        ["fuse", *files, "--method", "wsum", "--norm", "min-max", "--weights", weights,
         "-o", str(fused)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert best.read_bytes() == fused.read_bytes()


def test_a_negative_seed_is_one_rule_in_python_and_the_command(tmp_path, capsys):
    """Any integer seeds the folds: rankfusion.optimize(seed=-1) and --seed -1 alike, the
    same folds; a seed that is not an integer is refused by both."""
    folder = collection("cranfield")
    files = [str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")]
    qrels = str(folder / "qrels.txt")
    r = rankfusion.optimize(files, qrels, method="rrf", metric="P@5", folds=3, seed=-1, limit=1000)
    other = rankfusion.optimize(files, qrels, method="rrf", metric="P@5", folds=3, seed=1)
    assert [f.queries for f in r.folds] != [f.queries for f in other.folds]
    args = ["optimize", *files, "--qrels", qrels, "--method", "rrf", "--metric", "P@5"]
    code, out, err = run_cli([*args, "--folds", "3", "--seed", "-1", "-q"], capsys)
    assert code == 0, err
    assert f"cross-validated (3 folds, seed -1): P@5 {r.cv_score:.4f}" in out
    for f in r.folds:
        assert f"{len(f.queries)}  k={f.choice['k']}" in out
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main([*args, "--folds", "3", "--seed", "1.5"])
    assert exited.value.code == 2
    assert "argument --seed: not an integer: '1.5'" in capsys.readouterr().err
    with pytest.raises(TypeError, match="seed must be an int"):
        rankfusion.optimize(files, qrels, method="rrf", metric="P@5", seed=1.5)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--metric", "nope@3"], "--metric: unknown metric"),
        (["--metric", "map", "--grid", "k=1,2", "--method", "wsum"], "k is not used"),
        (["--metric", "map", "--method", "wsum", "--step", "0.3"], "--step must divide 1"),
        (["--metric", "map", "--grid", "k", "--grid", "k=2"], "--grid names k twice"),
        (["--metric", "map", "--folds", "1000"], "--folds 1000"),
        (["--metric", "map", "--lower-is-better", "true"], "--lower-is-better has 1 values"),
    ],
)
def test_command_usage_errors_exit_2(extra, message, capsys):
    folder = collection("cranfield")
    files = [str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")]
    args = ["optimize", *files, "--qrels", str(folder / "qrels.txt"), "--method", "rrf", *extra]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and message in err, err


@pytest.mark.parametrize(
    "args",
    [
        ["--grid", "x=1"],  # argparse: an unknown parameter
        ["--folds", "1"],
        ["--method", "rrf", "--metric", "map"],  # no --qrels
    ],
)
def test_command_bad_options_exit_2(args, tmp_path):
    run = tmp_path / "a.run"
    run.write_text("q Q0 d 1 1.0 t\n")
    done = subprocess.run(
        [sys.executable, "-m", "rankfusion", "optimize", str(run), str(run), *args],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr


def test_command_data_errors_exit_1_and_write_nothing(tmp_path, capsys):
    good = tmp_path / "good.run"
    good.write_text("q Q0 a 1 2.0 t\nq Q0 b 2 1.0 t\n")
    bad = tmp_path / "bad.run"
    bad.write_text("q Q0 a 1 2.0 t\nq Q0 b 2\n")
    inf = tmp_path / "inf.run"
    inf.write_text("q Q0 a 1 inf t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 a 1\n")
    out = tmp_path / "best.run"
    for runs, method in (([good, bad], "rrf"), ([good, inf], "wsum")):
        args = ["optimize", *map(str, runs), "--qrels", str(qrels), "--method", method]
        code, _, err = run_cli([*args, "--metric", "P@1", "-o", str(out)], capsys)
        assert code == 1, err
        assert not out.exists()
    assert "bad.run" in err or "inf" in err
