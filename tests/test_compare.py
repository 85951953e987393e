"""``rankfusion.compare`` against its anchors, on the shipped Cranfield and Vaswani runs (BM25,
MiniLM, their RRF fusion and a third run made from MiniLM, tests/_third_run.py):

- the paired t-test's p-value and interval equal ``scipy.stats.ttest_rel``'s to 1e-12;
- the corrections equal ``statsmodels.stats.multitest.multipletests``' (exactly), and so do the
  verdicts;
- the exact randomization test equals a brute-force enumeration of every sign vector (exact
  integer sums, in Gray-code order) for n <= 20;
- with 100,000 permutations on the 225 Cranfield queries the p-value is within 3 sigma of
  Monte Carlo error of ranx's Fisher randomization test run with 100,000 permutations;
- the means equal ir-measures' ``calc_aggregate``;

and the API's behaviour: names, baselines, pairs, JSON, tables, the report's HTML, threads.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import rankfusion
from rankfusion import _core, reference, trec

sys.path.insert(0, str(Path(__file__).parent))
from _third_run import write_fused_run, write_noisy_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("ndcg@10", "map", "recall@100")


@pytest.fixture(scope="module")
def runs_of(tmp_path_factory):
    """``runs_of(name)``: the four runs of a collection (paths) and its qrels."""
    made = {}

    def get(name):
        if name not in made:
            folder = ROOT / "data" / name
            out = tmp_path_factory.mktemp(name)
            bm25, minilm = str(folder / "bm25.run.gz"), str(folder / "minilm.run.gz")
            fused = write_fused_run([bm25, minilm], str(out / "rrf.run"))
            noisy = write_noisy_run(minilm, str(out / "noisy.run"))
            made[name] = ([bm25, minilm, fused, noisy], str(folder / "qrels.txt"))
        return made[name]

    return get


@pytest.fixture(scope="module", params=["cranfield", "vaswani"])
def t_comparison(request, runs_of):
    runs, qrels = runs_of(request.param)
    return rankfusion.compare(runs, qrels, metrics=METRICS, test="t", correction="none")


def arrays(cmp, r):
    queries = cmp.queries
    x = np.array([cmp.per_query[r.metric][r.system][q] for q in queries])
    y = np.array([cmp.per_query[r.metric][r.baseline][q] for q in queries])
    return x, y


def test_t_test_p_and_interval_equal_scipys(t_comparison):
    stats = pytest.importorskip("scipy.stats")
    cmp = t_comparison
    assert len(cmp.pairs) == 6 * 3
    for r in cmp.pairs:
        x, y = arrays(cmp, r)
        want = stats.ttest_rel(x, y)
        if (x == y).all():  # scipy: 0 / 0, nan; rankfusion: no difference, p = 1
            assert math.isnan(want.pvalue) and r.p == 1.0 and r.effect_size is None
            assert r.ci == (0.0, 0.0)
            continue
        assert abs(r.p - want.pvalue) <= 1e-12, (r, want)
        assert math.isclose(r.p, want.pvalue, rel_tol=1e-12), (r, want)
        ci = want.confidence_interval(0.95)
        assert abs(r.ci[0] - ci.low) <= 1e-12 and abs(r.ci[1] - ci.high) <= 1e-12, (r, ci)
        assert r.p_corrected == r.p  # correction "none"
        d = x - y
        assert math.isclose(r.effect_size, d.mean() / d.std(ddof=1), rel_tol=1e-12)
        assert (r.wins, r.ties, r.losses) == (
            int((x > y).sum()),
            int((x == y).sum()),
            int((x < y).sum()),
        )


def test_means_equal_ir_measures(t_comparison, runs_of):
    ir_measures = pytest.importorskip("ir_measures")
    cmp = t_comparison
    name = "cranfield" if len(cmp.queries) == 225 else "vaswani"
    runs, qrels = runs_of(name)
    judged = trec.read_qrels(qrels)
    for path, run_name in zip(runs, cmp.names):
        run = trec.to_dict(trec.read_run(path))
        assert set(run) >= set(judged)  # every judged query is ranked: no default 0s
        for metric in METRICS:
            measure = trec.parse_metrics(metric)[0]
            want = ir_measures.calc_aggregate([measure], judged, run)[measure]
            assert cmp.means[metric][run_name] == want, (metric, run_name)
    for r in cmp.pairs:
        assert r.delta == cmp.means[r.metric][r.system] - cmp.means[r.metric][r.baseline]


def test_corrections_equal_statsmodels(runs_of):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    runs, qrels = runs_of("cranfield")
    base = rankfusion.compare(runs, qrels, metrics=METRICS, permutations=20_000, correction="none")
    family = np.array([r.p for r in base.pairs])
    rng = np.random.default_rng(5)
    families = [
        family,
        rng.random(40),
        rng.choice([0.001, 0.01, 0.02, 0.04, 0.5, 1.0], size=25),  # ties
        np.array([0.03]),
        rng.random(7) ** 6,
    ]
    names = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh"}
    for p in families:
        for ours, theirs in names.items():
            for alpha in (0.05, 0.01, 0.2):
                reject, corrected, *_ = multitest.multipletests(p, alpha=alpha, method=theirs)
                got = _core._correct(p, ours)
                assert got.tolist() == corrected.tolist(), (ours, p)
                assert ((got <= alpha) == reject).all(), (ours, alpha, p)
        assert _core._correct(p, "none").tolist() == p.tolist()
    # The comparison corrects its family with the same arithmetic, and decides by it.
    for method, theirs in names.items():
        cmp = rankfusion.compare_per_query(
            base.per_query, correction=method, permutations=20_000, alpha=0.05
        )
        assert [r.p for r in cmp.pairs] == family.tolist()  # the same streams: the same p
        reject, corrected, *_ = multitest.multipletests(family, alpha=0.05, method=theirs)
        assert [r.p_corrected for r in cmp.pairs] == corrected.tolist()
        assert [r.significant for r in cmp.pairs] == reject.tolist()


def brute_force(d: list) -> float:
    """The exact randomization p-value by enumeration: every sign vector's sum in exact integer
    arithmetic (the values scaled to a common power-of-two denominator), one sign flipped at a
    time (Gray code); the share of sums at least as far from 0 as the observed one."""
    ratios = [v.as_integer_ratio() for v in d]
    scale = max(den for _, den in ratios)
    ints = [num * (scale // den) for num, den in ratios]
    total = sum(ints)
    observed = abs(total)
    signs = [1] * len(d)
    count = 1  # the observed vector
    for k in range(1, 2 ** len(d)):
        j = (k & -k).bit_length() - 1  # the bit that changes in Gray code
        total -= 2 * signs[j] * ints[j]
        signs[j] = -signs[j]
        count += abs(total) >= observed
    return count / 2 ** len(d)


@pytest.mark.parametrize("name", ["cranfield", "vaswani"])
def test_exact_randomization_is_the_enumeration(runs_of, name):
    runs, qrels = runs_of(name)
    cmp = rankfusion.compare(runs, qrels, metrics=("ndcg@10", "recall@100"), permutations=10)
    checked = 0
    for n in (1, 2, 7, 12, 16, 20):
        for r in cmp.pairs[:: 3 if n == 20 else 1]:
            x, y = arrays(cmp, r)
            first = {"m": {"x": x[:n].tolist(), "y": y[:n].tolist()}}
            got = rankfusion.compare_per_query(first, baseline="y", permutations=2**n)
            assert got.exact
            d = [a - b for a, b in zip(x[:n].tolist(), y[:n].tolist())]
            assert got.pairs[0].p == brute_force(d), (n, r.system, r.baseline, r.metric)
            checked += 1
    assert checked > 50


def test_randomization_agrees_with_ranx_fisher_test(runs_of):
    fisher = pytest.importorskip("ranx.statistical_tests").fisher_randomization_test
    runs, qrels = runs_of("cranfield")
    cmp = rankfusion.compare(runs[:3], qrels, metrics=METRICS, permutations=100_000)
    assert not cmp.exact and len(cmp.queries) == 225
    b = 100_000
    checked = []
    for r in cmp.pairs:
        x, y = arrays(cmp, r)
        if not 0.01 < r.p < 0.99:
            continue  # both are 1e-5 or 1 there; the interesting p-values are in between
        theirs, _ = fisher(y, x, b, 0.05, 42)
        mean_p = (r.p + theirs) / 2
        sigma = math.sqrt(mean_p * (1 - mean_p) * 2 / b)  # of the difference of two estimates
        assert abs(r.p - theirs) <= 3 * sigma + 1 / (b + 1), (r, theirs, sigma)
        checked.append((r.metric, r.p, theirs))
    assert len(checked) >= 3, checked


def test_results_do_not_depend_on_threads_or_chunks(runs_of):
    runs, qrels = runs_of("vaswani")
    one = rankfusion.compare(runs, qrels, metrics=METRICS, permutations=3000, threads=1)
    two = rankfusion.compare(runs, qrels, metrics=METRICS, permutations=3000, threads=2)
    assert one.pairs == two.pairs
    # ... and equal the reference's on the same values (225 Cranfield-size queries are slow in
    # the reference: Vaswani's 93, few permutations).
    for test in ("randomization", "t", "bootstrap"):
        got = rankfusion.compare_per_query(one.per_query, test=test, permutations=200, seed=9)
        want = reference.compare_per_query(one.per_query, test=test, permutations=200, seed=9)
        assert [tuple(r) for r in got.pairs] == [tuple(r) for r in want]
        other = rankfusion.compare_per_query(one.per_query, test=test, permutations=200, seed=10)
        if test != "t":
            assert [r.p for r in other.pairs] != [r.p for r in got.pairs]


def test_the_family_names_and_baselines(runs_of):
    runs, qrels = runs_of("vaswani")
    cmp = rankfusion.compare(runs[:3], qrels, metrics="ndcg@10,map", permutations=1000)
    assert cmp.names == ("bm25.run.gz", "minilm.run.gz", "rrf.run")
    assert cmp.metrics == ("ndcg@10", "map")
    assert [(r.system, r.baseline, r.metric) for r in cmp.pairs] == [
        ("minilm.run.gz", "bm25.run.gz", "ndcg@10"),
        ("minilm.run.gz", "bm25.run.gz", "map"),
        ("rrf.run", "bm25.run.gz", "ndcg@10"),
        ("rrf.run", "bm25.run.gz", "map"),
        ("rrf.run", "minilm.run.gz", "ndcg@10"),
        ("rrf.run", "minilm.run.gz", "map"),
    ]
    assert cmp.baseline is None and cmp.letters == {
        "bm25.run.gz": "a",
        "minilm.run.gz": "b",
        "rrf.run": "c",
    }
    by_name = rankfusion.compare(runs[:3], qrels, baseline="rrf.run", permutations=1000)
    by_index = rankfusion.compare(runs[:3], qrels, baseline=2, permutations=1000)
    assert by_name.pairs == by_index.pairs and by_name.baseline == "rrf.run"
    assert [(r.system, r.baseline) for r in by_name.pairs] == [
        ("bm25.run.gz", "rrf.run"),
        ("minilm.run.gz", "rrf.run"),
    ]
    given = rankfusion.compare(
        runs[:3], qrels, pairs=[("rrf.run", 0), (2, "minilm.run.gz")], permutations=1000
    )
    assert [(r.system, r.baseline) for r in given.pairs] == [
        ("rrf.run", "bm25.run.gz"),
        ("rrf.run", "minilm.run.gz"),
    ]
    # Runs as dicts: run1, run2, ... or names=; the same values as the files.
    dicts = [trec.to_dict(trec.read_run(p)) for p in runs[:2]]
    as_dicts = rankfusion.compare(dicts, qrels, permutations=1000)
    assert as_dicts.names == ("run1", "run2")
    files = rankfusion.compare(runs[:2], qrels, permutations=1000)
    assert [r[3:] for r in as_dicts.pairs] == [r[3:] for r in files.pairs]
    named = rankfusion.compare(dicts, qrels, names=["lexical", "dense"], permutations=1000)
    assert named.names == ("lexical", "dense")
    # A run that lacks judged queries scores 0 on them (trec_eval -c).
    partial = dict(list(dicts[1].items())[:50])
    cut = rankfusion.compare([dicts[0], partial], qrels, permutations=1000)
    missing = [q for q in cut.queries if q not in partial]
    assert missing and all(cut.per_query["ndcg@10"]["run2"][q] == 0.0 for q in missing)
    assert cut.queries == tuple(trec.read_qrels(qrels))


@pytest.mark.parametrize(
    "call, error, argument, where, message",
    [
        (lambda r, q: rankfusion.compare(r[:1], q), "value", "runs", {}, "at least two runs"),
        (lambda r, q: rankfusion.compare(r[0], q), "type", "runs", {}, "runs must be a sequence"),
        (
            lambda r, q: rankfusion.compare(r, q, metrics="ndcg@10,nope"),
            "value", "metrics", {"list": 1}, "unknown metric",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, metrics="ndcg@10,ndcg@10"),
            "value", "metrics", {"list": 1}, "given twice",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, metrics=3),
            "type", "metrics", {}, "metrics must be a metric name",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, baseline="x"),
            "value", "baseline", {}, "baseline 'x' is not one of the runs",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, names=["a"]),
            "value", "names", {}, "names has 1 names for 4 runs",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, names=["a", "b", 3, "d"]),
            "type", "names", {"list": 2}, r"names\[2\] must be a str",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, pairs=[(0, 1), (2, 2)]),
            "value", "pairs", {"list": 1}, r"pairs\[1\] compares",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, test="wilcoxon"),
            "value", "test", {}, "test must be one of",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, permutations=0),
            "value", "permutations", {}, "permutations must be >= 1",
        ),
        (
            lambda r, q: rankfusion.compare(r, q, threads="2"),
            "type", "threads", {}, "threads must be an int",
        ),
        (
            lambda r, q: rankfusion.compare([r[0], r[0]], q),
            "value", "names", {}, "two runs have the same name",
        ),
    ],
)  # fmt: skip
def test_bad_arguments(runs_of, call, error, argument, where, message):
    """FusionError / FusionTypeError naming the argument (and the item), before any run is read
    (the qrels are read after the checks: a missing file is not reached)."""
    runs, qrels = runs_of("vaswani")
    kind = rankfusion.FusionTypeError if error == "type" else rankfusion.FusionError
    with pytest.raises(kind, match=message) as raised:
        call(runs, "no-such-qrels.txt")
    e = raised.value
    assert e.argument == argument
    assert {name: getattr(e, name) for name in where} == where


def test_the_cores_errors_name_their_argument():
    """The private helpers' errors go through the binding's one error mapping: our classes, the
    argument, the item of a value that is not finite."""
    x = np.array([[0.1, 0.2], [0.3, np.nan]])
    y = np.zeros((2, 2))
    streams = np.arange(2, dtype=np.uint64)
    kw = dict(test="randomization", permutations=10, seed=0, confidence=0.95)
    with pytest.raises(rankfusion.FusionError) as raised:
        _core._paired_tests(x, y, streams, **kw)
    e = raised.value
    assert (e.argument, e.list, e.rank, e.reason) == ("x", 1, 2, "x[1][1] must be finite, got nan")
    bad = [
        ({"x": [[0.1]]}, rankfusion.FusionTypeError, "x"),
        ({"x": x.T}, rankfusion.FusionError, "x"),  # not C-contiguous
        ({"y": np.zeros((2, 3))}, rankfusion.FusionError, "y"),
        ({"streams": streams[:1]}, rankfusion.FusionError, "streams"),
        ({"streams": np.arange(2)}, rankfusion.FusionTypeError, "streams"),
        ({"test": "wilcoxon"}, rankfusion.FusionError, "test"),
        ({"test": 1}, rankfusion.FusionTypeError, "test"),
        ({"permutations": 0}, rankfusion.FusionError, "permutations"),
        ({"permutations": -1}, rankfusion.FusionError, "permutations"),
        ({"seed": 2**64}, rankfusion.FusionError, "seed"),
        ({"seed": 1.0}, rankfusion.FusionTypeError, "seed"),
        ({"confidence": 1.0}, rankfusion.FusionError, "confidence"),
        ({"confidence": "0.9"}, rankfusion.FusionTypeError, "confidence"),
        ({"threads": 0}, rankfusion.FusionError, "threads"),
    ]
    good = {"x": np.zeros((2, 2)), "y": y, "streams": streams, **kw}
    for change, kind, argument in bad:
        args = {**good, **change}
        with pytest.raises(kind) as raised:
            _core._paired_tests(args.pop("x"), args.pop("y"), args.pop("streams"), **args)
        assert raised.value.argument == argument, (change, raised.value)
    with pytest.raises(rankfusion.FusionError) as raised:
        _core._correct(np.array([0.5]), "fdr")
    assert raised.value.argument == "method"
    with pytest.raises(rankfusion.FusionError) as raised:
        _core._row_means(np.zeros((2, 0)))
    assert raised.value.argument == "values"


def test_json_and_tables(runs_of):
    runs, qrels = runs_of("vaswani")
    cmp = rankfusion.compare(runs[:3], qrels, metrics="ndcg@10,map", permutations=2000)
    data = json.loads(cmp.to_json())
    assert data == json.loads(json.dumps(cmp.to_dict()))
    assert data["runs"] == list(cmp.names) and data["metrics"] == list(cmp.metrics)
    assert len(data["pairs"]) == len(cmp.pairs)
    for record, r in zip(data["pairs"], cmp.pairs):
        assert record["p"] == r.p and record["p_corrected"] == r.p_corrected
        assert record["ci"] == list(r.ci) and record["effect_size"] == r.effect_size
        assert record["wins"] + record["ties"] + record["losses"] == len(cmp.queries)
    assert data["per_query"]["map"]["rrf.run"] == {
        str(q): v for q, v in cmp.per_query["map"]["rrf.run"].items()
    }
    text = str(cmp)
    assert text.startswith("3 runs, 93 queries; randomization test, 2,000 random sign vectors")
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("system"))
    assert len(lines[header + 1 : header + 1 + len(cmp.pairs)]) == 6
    for line, r in zip(lines[header + 1 :], cmp.pairs):
        assert f"{r.delta:+.4f}" in line and f"{r.wins}/{r.ties}/{r.losses}" in line
        assert line.split()[-5].endswith("*") == r.significant
    # Superscripts: a run's letters of the runs it beats significantly.
    for metric in cmp.metrics:
        for name in cmp.names:
            for other in cmp.better_than(metric, name):
                assert cmp.means[metric][name] > cmp.means[metric][other]
    latex = cmp.to_latex()
    assert latex.count(r"\begin{tabular}") == 2 and "rrf.run" in latex
    assert latex.count(r"\\") == 1 + 3 + 1 + 6


def test_the_report_is_self_contained(runs_of, tmp_path):
    pytest.importorskip("matplotlib")
    runs, qrels = runs_of("vaswani")
    cmp = rankfusion.compare(runs[:3], qrels, baseline=0, permutations=2000)
    path = tmp_path / "report.html"
    page = cmp.to_html(path)
    assert path.read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert sources and all(s.startswith(("data:", "#")) for s in sources), sources
    images = re.findall(r'<img [^>]*src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert len(images) == len(cmp.pairs) == 2
    for r in cmp.pairs:
        assert f"{r.system} vs " in page and f"{r.delta:+.4f}" in page
    figures = cmp.plot(metric="ndcg@10")
    assert len(figures) == 2 and len(figures[0].axes) == 2
    assert cmp.plot(system="nope") == []


def test_a_progress_bar_counts_the_tests():
    out = io.StringIO()
    per_query = {"m": {"a": [0.1, 0.5, 0.3], "b": [0.2, 0.4, 0.3], "c": [0.0, 0.9, 0.1]}}
    options = {"file": out, "delay": 0, "mininterval": 0}
    cmp = rankfusion.compare_per_query(per_query, permutations=100, progress=options)
    assert len(cmp.pairs) == 3
    assert "testing" in out.getvalue() and "3/3" in out.getvalue()
