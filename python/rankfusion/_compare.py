"""Comparing runs: ``rankfusion.compare`` and ``rankfusion.compare_per_query`` (and
``rankfusion compare``).

Each run is evaluated per query by ir-measures (pytrec_eval: trec_eval's definitions) over the
judged queries; then each tested (system, baseline, metric) gets a paired test -- the
randomization (sign-flip permutation) test, the paired t-test or the paired bootstrap -- an
effect size, an interval of the mean difference and its wins, ties and losses, in the Rust core
(rust/stats/: the tests in parallel with the GIL released, Ctrl-C honoured); the family's
p-values are corrected together (Holm by default). The result, a :class:`Comparison`, is data
first (``.pairs``, ``.per_query``, ``to_json()``) and renders as a table, LaTeX, a
self-contained HTML report and matplotlib figures (``rankfusion._report``). docs/compare.md says
what each test assumes; docs/semantics.md ("Comparing runs") defines every number, and
``rankfusion.reference.compare_per_query`` computes the same bits in plain Python.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
from collections.abc import Iterable, Mapping
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, trec
from .errors import FusionError, FusionTypeError

__all__ = ["CORRECTIONS", "TESTS", "ComparedPair", "Comparison", "compare", "compare_per_query"]

TESTS: Tuple[str, ...] = tuple(_core._TESTS)
CORRECTIONS: Tuple[str, ...] = tuple(_core._CORRECTIONS)
MAX_PERMUTATIONS: int = _core._MAX_PERMUTATIONS


class ComparedPair(NamedTuple):
    """One test of a comparison: ``system`` against ``baseline`` (run names) on ``metric``.

    ``delta`` = system mean - baseline mean; ``p`` the test's two-sided p-value; ``p_corrected``
    the p-value corrected over the whole family tested; ``significant`` = ``p_corrected <=
    alpha``; ``effect_size`` the paired Cohen's d (the mean of the per-query differences over
    their standard deviation; None when they have none); ``ci`` the ``(low, high)`` interval of
    the mean difference at the comparison's confidence (Student's t for the randomization and
    t tests, the bootstrap's percentiles for the bootstrap; None with one query); ``wins``,
    ``ties``, ``losses`` the queries where the system scores above, equal to, below the
    baseline."""

    system: str
    baseline: str
    metric: str
    delta: float
    p: float
    p_corrected: float
    significant: bool
    effect_size: Optional[float]
    ci: Optional[Tuple[float, float]]
    wins: int
    ties: int
    losses: int


class Comparison:
    """The result of :func:`compare` / :func:`compare_per_query`.

    Data: ``names`` (the runs, in order; ``letters`` gives each its table letter), ``metrics``,
    ``queries`` (in the order of the per-query values), ``per_query[metric][name]`` (``{qid:
    value}``), ``means[metric][name]``, ``pairs`` (a :class:`ComparedPair` per test, pair after
    pair, each pair's metrics in order), ``baseline`` (its name, or None), and the settings
    (``test``, ``permutations``, ``seed``, ``correction``, ``alpha``, ``confidence``;
    ``exact``: the randomization test enumerated every sign vector).

    Renderings: ``str()`` / :meth:`table` (text), :meth:`to_json`, :meth:`to_latex`,
    :meth:`to_html` (a self-contained report) and :meth:`plot` (matplotlib figures; the
    ``report`` extra).
    """

    def __init__(
        self,
        *,
        names: Sequence[str],
        metrics: Sequence[str],
        queries: Sequence[Any],
        per_query: Dict[str, Dict[str, Dict[Any, float]]],
        means: Dict[str, Dict[str, float]],
        pairs: List[ComparedPair],
        baseline: Optional[str],
        settings: Dict[str, Any],
    ) -> None:
        self.names: Tuple[str, ...] = tuple(names)
        self.metrics: Tuple[str, ...] = tuple(metrics)
        self.queries: Tuple[Any, ...] = tuple(queries)
        self.per_query = per_query
        self.means = means
        self.pairs = pairs
        self.baseline = baseline
        self.test: str = settings["test"]
        self.permutations: int = settings["permutations"]
        self.seed: int = settings["seed"]
        self.correction: str = settings["correction"]
        self.alpha: float = settings["alpha"]
        self.confidence: float = settings["confidence"]
        self.exact: bool = settings["exact"]
        self.letters: Dict[str, str] = {name: _letter(i) for i, name in enumerate(self.names)}

    def __repr__(self) -> str:
        return (
            f"<Comparison of {len(self.names)} runs on {len(self.queries)} queries, "
            f"{len(self.pairs)} tests ({self.test}, {self.correction})>"
        )

    def __str__(self) -> str:
        return self.table()

    def better_than(self, metric: str, name: str) -> List[str]:
        """The runs that run ``name`` is significantly better than on ``metric``: those of its
        tested pairs (either side) whose corrected p-value is at most alpha and whose mean is
        below its own."""
        out = []
        for r in self.pairs:
            if r.metric != metric or not r.significant:
                continue
            if r.system == name and r.delta > 0:
                out.append(r.baseline)
            elif r.baseline == name and r.delta < 0:
                out.append(r.system)
        return sorted(set(out), key=self.names.index)

    def settings(self) -> Dict[str, Any]:
        """The settings of the comparison, as :meth:`to_json` writes them."""
        return {
            "test": self.test,
            "permutations": self.permutations,
            "seed": self.seed,
            "correction": self.correction,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "exact": self.exact,
        }

    def to_dict(self) -> Dict[str, Any]:
        """Everything, as plain Python values (what :meth:`to_json` writes)."""
        return {
            **self.settings(),
            "runs": list(self.names),
            "baseline": self.baseline,
            "metrics": list(self.metrics),
            "queries": [str(q) for q in self.queries],
            "means": self.means,
            "pairs": [
                {**r._asdict(), "ci": None if r.ci is None else list(r.ci)} for r in self.pairs
            ],
            "per_query": {
                m: {name: {str(q): v for q, v in values.items()} for name, values in runs.items()}
                for m, runs in self.per_query.items()
            },
        }

    def to_json(self, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> str:
        """The comparison as JSON (:meth:`to_dict`; undefined values are null); written to
        ``path`` too when given."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def table(self) -> str:
        """The text table: each run's means with superscripts (the letters of the runs it is
        significantly better than), then one line per test."""
        from . import _report

        return _report.text(self)

    def to_latex(self) -> str:
        """A LaTeX table of the means with superscripts (booktabs), and one of the tests."""
        from . import _report

        return _report.latex(self)

    def to_html(self, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> str:
        """The report: one self-contained HTML page (no network: figures as inline SVG images)
        with the tables and, per tested pair and metric, the per-query differences sorted, their
        distribution, and the queries with the largest wins and losses. Written to ``path`` too
        when given. Needs matplotlib (the ``report`` extra)."""
        from . import _report

        text = _report.html(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def plot(
        self,
        system: Optional[str] = None,
        baseline: Optional[str] = None,
        metric: Optional[str] = None,
    ) -> List[Any]:
        """matplotlib figures, one per tested pair and metric (those matching the arguments
        given): the per-query differences sorted (wins above, losses below) and their
        distribution. Needs matplotlib (the ``report`` extra)."""
        from . import _report

        return [
            _report.figure(self, r)
            for r in self.pairs
            if (system is None or r.system == system)
            and (baseline is None or r.baseline == baseline)
            and (metric is None or r.metric == metric)
        ]


def _letter(i: int) -> str:
    """a, b, ..., z, aa, ab, ...: the table letter of run i."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


# --- argument checks (the reference's, in its order, with its messages and fields) ----------
# Each bad argument is a FusionTypeError (a TypeError) or FusionError (a ValueError) whose
# ``argument`` names it; a per-query value's error has the query's id as ``qid``, an item of
# ``pairs`` or ``names`` its index as ``list``.


def _bad_type(message: str, argument: str, **fields: Any) -> FusionTypeError:
    return FusionTypeError(message, argument=argument, **fields)


def _bad_value(message: str, argument: str, **fields: Any) -> FusionError:
    return FusionError(message, argument=argument, **fields)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _as_list(value: Any, name: str, argument: str, **fields: Any) -> List[Any]:
    if isinstance(value, (str, bytes, bytearray)):
        raise _bad_type(
            f"{name} must be a non-string iterable, got {_describe(value)}", argument, **fields
        )
    try:
        iterator = iter(value)
    except TypeError:
        raise _bad_type(
            f"{name} must be iterable, got {_describe(value)}", argument, **fields
        ) from None
    return list(iterator)


def _real(value: Any, name: str, argument: str, **fields: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _bad_type(f"{name} must be a real number, got {_describe(value)}", argument, **fields)
    try:
        x = float(value)
    except OverflowError:
        raise _bad_value(f"{name} must be finite, got {value!r}", argument, **fields) from None
    if not math.isfinite(x):
        raise _bad_value(f"{name} must be finite, got {x!r}", argument, **fields)
    return x


def _integer(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise _bad_type(f"{name} must be an int, got {_describe(value)}", name)
    n = operator.index(value)
    if n < minimum:
        raise _bad_value(f"{name} must be >= {minimum}, got {n}", name)
    return n


def _choice(value: Any, name: str, choices: Tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise _bad_type(f"{name} must be one of {choices}, got {_describe(value)}", name)
    if value not in choices:
        raise _bad_value(f"{name} must be one of {choices}, got {value!r}", name)
    return value


def _table(per_query: Any) -> Tuple[List[str], List[str], List[Any], np.ndarray]:
    """(metrics, names, queries, values (metrics x runs x queries) float64)."""
    arg = "per_query"
    if not isinstance(per_query, Mapping):
        raise _bad_type(
            "per_query must be a mapping {metric: {name: {qid: value}}}, got "
            f"{type(per_query).__name__}",
            arg,
        )
    if not per_query:
        raise _bad_value("per_query has no metric", arg)
    metrics = [str(m) for m in per_query]
    names: Optional[List[str]] = None
    queries: Optional[List[Any]] = None
    rows: List[List[float]] = []
    for metric, runs in zip(metrics, per_query.values()):
        if not isinstance(runs, Mapping):
            raise _bad_type(
                f"per_query[{metric!r}] must be a mapping {{name: {{qid: value}}}}, got "
                f"{type(runs).__name__}",
                arg,
            )
        if names is None:
            names = [str(name) for name in runs]
            if len(names) < 2:
                raise _bad_value(f"compare needs at least two runs, got {len(names)}", arg)
            if len(set(names)) != len(names):
                raise _bad_value(f"run names must be distinct, got {names}", arg)
        elif [str(name) for name in runs] != names:
            raise _bad_value(f"per_query[{metric!r}] has other runs than the first metric", arg)
        for name, scores in zip(names, runs.values()):
            where = f"per_query[{metric!r}][{name!r}]"
            if isinstance(scores, Mapping):
                pairs = list(scores.items())
            elif isinstance(scores, (str, bytes)) or not isinstance(scores, Iterable):
                raise _bad_type(
                    f"{where} must be a mapping {{qid: value}} or a sequence of values, got "
                    f"{type(scores).__name__}",
                    arg,
                )
            else:
                pairs = list(enumerate(scores))
            if queries is None:
                queries = [q for q, _ in pairs]
                if not queries:
                    raise _bad_value(f"{where} has no query", arg)
            got = dict(pairs)
            if len(got) != len(queries) or any(q not in got for q in queries):
                raise _bad_value(f"{where} does not hold the same queries as the first run", arg)
            rows.append([_real(got[q], where, arg, qid=q) for q in queries])
    assert names is not None and queries is not None  # per_query is not empty
    values = np.array(rows, dtype=np.float64).reshape(len(metrics), len(names), len(queries))
    return metrics, names, queries, values


def _run_index(value: Any, names: List[str], name: str, argument: str, **fields: Any) -> int:
    if isinstance(value, str):
        if value not in names:
            raise _bad_value(f"{name} {value!r} is not one of the runs {names}", argument, **fields)
        return names.index(value)
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise _bad_type(
            f"{name} must be a run's name (str) or index (int), got {_describe(value)}",
            argument,
            **fields,
        )
    i = operator.index(value)
    if not 0 <= i < len(names):
        raise _bad_value(
            f"{name} must be a run's name or an index below {len(names)}, got {i}",
            argument,
            **fields,
        )
    return i


def _tested_pairs(names: List[str], baseline: Any, pairs: Any) -> List[Tuple[int, int]]:
    if baseline is not None and pairs is not None:
        raise _bad_value("give baseline or pairs, not both", "pairs")
    if baseline is not None:
        b = _run_index(baseline, names, "baseline", "baseline")
        return [(s, b) for s in range(len(names)) if s != b]
    if pairs is None:
        return [(j, i) for i in range(len(names)) for j in range(i + 1, len(names))]
    out = []
    for k, pair in enumerate(_as_list(pairs, "pairs", "pairs")):
        where = f"pairs[{k}]"
        items = _as_list(pair, where, "pairs", list=k)
        if len(items) != 2:
            raise _bad_value(
                f"{where} must be a (system, baseline) pair, got {len(items)} items",
                "pairs",
                list=k,
            )
        s, b = (_run_index(v, names, where, "pairs", list=k) for v in items)
        if s == b:
            raise _bad_value(f"{where} compares {names[s]!r} with itself", "pairs", list=k)
        out.append((s, b))
    if not out:
        raise _bad_value("pairs is empty: nothing to compare", "pairs")
    return out


def _settings(
    test: Any, permutations: Any, seed: Any, correction: Any, alpha: Any, confidence: Any
) -> Dict[str, Any]:
    test = _choice(test, "test", TESTS)
    permutations = _integer(permutations, "permutations", 1)
    if permutations > MAX_PERMUTATIONS:
        raise _bad_value(f"permutations must be at most 2**40, got {permutations}", "permutations")
    seed = _integer(seed, "seed", 0)
    if seed >= 2**64:
        raise _bad_value(f"seed must be below 2**64, got {seed}", "seed")
    correction = _choice(correction, "correction", CORRECTIONS)
    alpha = _real(alpha, "alpha", "alpha")
    if not 0.0 <= alpha <= 1.0:
        raise _bad_value(f"alpha must be between 0 and 1, got {alpha!r}", "alpha")
    confidence = _real(confidence, "confidence", "confidence")
    if not 0.0 < confidence < 1.0:
        raise _bad_value(
            f"confidence must be between 0 and 1 (exclusive), got {confidence!r}", "confidence"
        )
    return {
        "test": test,
        "permutations": permutations,
        "seed": seed,
        "correction": correction,
        "alpha": alpha,
        "confidence": confidence,
    }


def _check_queries(settings: Dict[str, Any], n: int) -> None:
    if settings["test"] == "t" and n < 2:
        raise _bad_value(f"the t-test needs at least 2 queries, got {n}", "test")


def _check_threads(threads: Any) -> Optional[int]:
    if threads is None:
        return None
    return _integer(threads, "threads", 1)


# --- the tests ------------------------------------------------------------------------------


def compare_per_query(
    per_query: Mapping[Any, Mapping[Any, Any]],
    *,
    baseline: Any = None,
    pairs: Optional[Iterable[Tuple[Any, Any]]] = None,
    test: str = "randomization",
    permutations: int = 100_000,
    seed: int = 0,
    correction: str = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    progress: Union[bool, Dict[str, Any]] = False,
    threads: Optional[int] = None,
) -> Comparison:
    """Paired significance tests of per-query metric values: :func:`compare` without the
    evaluation.

    ``per_query`` is ``{metric: {name: values}}`` (``Comparison.per_query`` has that shape),
    ``values`` a mapping ``{qid: value}`` or a sequence of values (its queries are then its
    positions); every run of every metric must hold the same queries, taken in the order of
    the first. The other arguments are :func:`compare`'s. Raises ``rankfusion.FusionTypeError``
    (a TypeError) / ``FusionError`` (a ValueError) whose ``argument`` names a bad argument
    (``"per_query"``: fewer than two runs, runs or queries that differ between metrics or runs,
    a value that is not a finite real number, located at its query as ``qid``; ``"pairs"``, an
    item's index as ``list``; ``"test"``: the t-test with one query; ...), checked in the
    reference's order with its messages; KeyboardInterrupt (Ctrl-C) stops the tests within
    about 100 ms.
    """
    metrics, names, queries, values = _table(per_query)
    tested = _tested_pairs(names, baseline, pairs)
    settings = _settings(test, permutations, seed, correction, alpha, confidence)
    _check_queries(settings, len(queries))
    threads = _check_threads(threads)
    bar = trec._progress_bar(progress, len(tested) * len(metrics), "testing", "test")
    try:
        base = None if baseline is None else names[tested[0][1]]
        return _compare(metrics, names, queries, values, tested, base, settings, threads, bar)
    finally:
        if bar is not None:
            bar.close()


def _compare(
    metrics: List[str],
    names: List[str],
    queries: List[Any],
    values: np.ndarray,
    tested: List[Tuple[int, int]],
    baseline: Optional[str],
    settings: Dict[str, Any],
    threads: Optional[int],
    bar: Any,
) -> Comparison:
    """The family's tests, pair after pair and each pair's metrics in order (test t draws from
    stream t), in chunks of tests between which the progress bar moves; then the correction."""
    n_metrics, n_runs, n = values.shape
    systems = np.array([s for s, _ in tested for _ in metrics], dtype=np.intp)
    baselines = np.array([b for _, b in tested for _ in metrics], dtype=np.intp)
    which = np.tile(np.arange(n_metrics), len(tested))
    x = np.ascontiguousarray(values[which, systems])
    y = np.ascontiguousarray(values[which, baselines])
    streams = np.arange(len(systems), dtype=np.uint64)
    chunk = max(8, 4 * (threads or os.cpu_count() or 1))
    parts = []
    for start in range(0, len(streams), chunk):
        part = slice(start, start + chunk)
        parts.append(
            _core._paired_tests(
                x[part],
                y[part],
                streams[part],
                test=settings["test"],
                permutations=settings["permutations"],
                seed=settings["seed"],
                confidence=settings["confidence"],
                threads=threads,
            )
        )
        if bar is not None:
            bar.update(len(streams[part]))
    delta, p, effect, low, high, wins, ties, losses = (
        np.concatenate([part[i] for part in parts]).tolist() for i in range(8)
    )
    corrected = _core._correct(np.asarray(p, dtype=np.float64), settings["correction"]).tolist()
    records = [
        ComparedPair(
            system=names[systems[t]],
            baseline=names[baselines[t]],
            metric=metrics[which[t]],
            delta=delta[t],
            p=p[t],
            p_corrected=corrected[t],
            significant=corrected[t] <= settings["alpha"],
            effect_size=None if math.isnan(effect[t]) else effect[t],
            ci=None if math.isnan(low[t]) else (low[t], high[t]),
            wins=wins[t],
            ties=ties[t],
            losses=losses[t],
        )
        for t in range(len(streams))
    ]
    row_means = _core._row_means(values.reshape(n_metrics * n_runs, n)).reshape(n_metrics, n_runs)
    return Comparison(
        names=names,
        metrics=metrics,
        queries=queries,
        per_query={
            m: {name: dict(zip(queries, values[i, j].tolist())) for j, name in enumerate(names)}
            for i, m in enumerate(metrics)
        },
        means={
            m: {name: float(row_means[i, j]) for j, name in enumerate(names)}
            for i, m in enumerate(metrics)
        },
        pairs=records,
        baseline=baseline,
        settings={
            **settings,
            "exact": settings["test"] == "randomization"
            and _core._exact(n, settings["permutations"]),
        },
    )


# --- runs and qrels -------------------------------------------------------------------------


def _measures(metrics: Any) -> List[Tuple[str, Any]]:
    """(name, ir-measures measure) of each metric: a name such as ``"ndcg@10,map"`` (or a
    list of names and measures), each a mean over queries."""
    if isinstance(metrics, str):
        items: List[Any] = [m for m in metrics.split(",") if m.strip()]
    elif isinstance(metrics, Iterable):
        items = list(metrics)
    else:
        raise _bad_type(
            f"metrics must be a metric name, or a sequence of names or ir-measures measures, "
            f"got {type(metrics).__name__}",
            "metrics",
        )
    if not items:
        raise _bad_value("metrics is empty", "metrics")
    from ._optimize import _measure

    out: List[Tuple[str, Any]] = []
    for i, item in enumerate(items):
        try:
            measure = _measure(item.strip() if isinstance(item, str) else item)
        except TypeError as e:  # not a name nor a measure (ir-measures' own errors are kept)
            raise _bad_type(str(e), "metrics", list=i) from None
        except ValueError as e:  # an unknown name, several measures, not a mean
            raise _bad_value(str(e), "metrics", list=i) from None
        name = item.strip() if isinstance(item, str) else str(measure)
        if any(name == n or measure == m for n, m in out):
            raise _bad_value(f"metric {name!r} is given twice", "metrics", list=i)
        out.append((name, measure))
    return out


def _run_names(runs: Sequence[Any], names: Any) -> List[str]:
    if names is not None:
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise _bad_type(f"names must be a sequence of str, got {type(names).__name__}", "names")
        given: List[str] = list(names)
        if len(given) != len(runs):
            raise _bad_value(f"names has {len(given)} names for {len(runs)} runs", "names")
        for i, name in enumerate(given):
            if not isinstance(name, str):
                raise _bad_type(
                    f"names[{i}] must be a str, got {type(name).__name__}", "names", list=i
                )
        if len(set(given)) != len(given):
            raise _bad_value(f"run names must be distinct, got {given}", "names")
        return given
    out = [
        os.path.basename(os.fspath(r)) if isinstance(r, (str, os.PathLike)) else f"run{i + 1}"
        for i, r in enumerate(runs)
    ]
    if len(set(out)) != len(out):  # same file names in different folders: the paths as given
        out = [
            os.fspath(r) if isinstance(r, (str, os.PathLike)) else out[i]
            for i, r in enumerate(runs)
        ]
    if len(set(out)) != len(out):
        raise _bad_value(f"two runs have the same name {out}: give names=", "names")
    return out


def compare(
    runs: Sequence[Any],
    qrels: Any,
    *,
    metrics: Union[str, Sequence[Any]] = ("ndcg@10",),
    names: Optional[Sequence[str]] = None,
    baseline: Any = None,
    pairs: Optional[Iterable[Tuple[Any, Any]]] = None,
    test: str = "randomization",
    permutations: int = 100_000,
    seed: int = 0,
    correction: str = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    progress: Union[bool, Dict[str, Any]] = False,
    threads: Optional[int] = None,
) -> Comparison:
    """Compare runs on relevance judgments with paired significance tests.

    - ``runs``: two or more runs, each a path (a TREC run, plain or gzip'd, or Parquet by its
      ``.parquet``/``.pq`` name), a run mapping (``{qid: Ranking}`` or ``{qid: {docid:
      score}}``) or a table with the columns of a ``rankfusion.frame`` preset. Names: ``names``,
      else a path's file name (the paths as given when two file names are the same), else
      ``run1``, ``run2``, ...
    - ``qrels``: a path or ``{qid: {docid: gain}}``. The queries compared are the qrels', in
      their order (a file's: the order of its lines; the per-query values and the random sign
      vectors follow it); a judged query that a run lacks scores the measure's default (0), as
      ``trec_eval -c``.
    - ``metrics``: ``"ndcg@10,map"`` or a sequence of names or ir-measures measures, each a
      mean over queries; computed per query by ir-measures. Keys of the result as given.
    - Which tests: every run against ``baseline`` (a name or an index into ``runs``), the
      ``pairs`` given (``(system, baseline)`` names or indices), or by default every pair of
      runs i < j, as run j against run i; each for every metric. That family is what
      ``correction`` corrects.
    - ``test``: ``"randomization"`` (paired sign-flip permutation test of the mean difference,
      two-sided; p = (b + 1) / (permutations + 1) from ``permutations`` random sign vectors, or
      exact, over all 2**n, when 2**n <= permutations), ``"t"`` (the paired t-test:
      ``scipy.stats.ttest_rel``'s p) or ``"bootstrap"`` (``permutations`` paired resamples:
      percentile interval and p). ``seed``: 0 <= seed < 2**64; test t of the family draws from
      its own stream (docs/semantics.md), so results do not depend on threads.
    - ``correction``: ``"none"``, ``"bonferroni"``, ``"holm"`` or ``"bh"`` (Benjamini-Hochberg),
      statsmodels' ``multipletests`` arithmetic; ``significant`` is ``p_corrected <= alpha``.
    - ``confidence``: of the interval of the mean difference (t, or the bootstrap's).
    - ``progress``: a tqdm bar on stderr (True or a dict of tqdm arguments); ``threads``: an
      upper bound on the threads of the tests (default: all cores).

    Returns a :class:`Comparison`. Raises ``rankfusion.FusionTypeError`` / ``FusionError`` (a
    TypeError / ValueError) whose ``argument`` names a bad argument (``runs``, ``names``,
    ``metrics``, ``baseline``, ``pairs``, ``test``, ``permutations``, ``seed``, ``correction``,
    ``alpha``, ``confidence``, ``threads``; an item of ``names``, ``metrics`` or ``pairs`` as
    ``list``), checked before any run is read; what the readers raise for bad files or qrels,
    ImportError without ir-measures; KeyboardInterrupt (Ctrl-C) stops the tests within about 100 ms.
    """
    if isinstance(runs, (str, bytes, os.PathLike)) or not isinstance(runs, Sequence):
        raise _bad_type(f"runs must be a sequence of runs, got {type(runs).__name__}", "runs")
    if len(runs) < 2:
        raise _bad_value(f"compare needs at least two runs, got {len(runs)}", "runs")
    run_names = _run_names(runs, names)
    measures = _measures(metrics)
    tested = _tested_pairs(run_names, baseline, pairs)
    settings = _settings(test, permutations, seed, correction, alpha, confidence)
    threads = _check_threads(threads)

    from ._optimize import _as_run, _qrels

    judged = _qrels(qrels)
    queries = list(judged)
    _check_queries(settings, len(queries))
    n_tests = len(tested) * len(measures)
    bar = trec._progress_bar(progress, len(runs) + n_tests, "evaluating", "step")
    try:
        values = _evaluate(runs, judged, queries, measures, bar, _as_run)
        if bar is not None:
            bar.set_description("testing")
        base = None if baseline is None else run_names[tested[0][1]]
        return _compare(
            [name for name, _ in measures], run_names, queries, values, tested, base, settings,
            threads, bar,
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()


def _evaluate(
    runs: Sequence[Any],
    judged: Dict[str, Dict[str, int]],
    queries: List[str],
    measures: List[Tuple[str, Any]],
    bar: Any,
    as_run: Any,
) -> np.ndarray:
    """values[metric, run, query] by ir-measures; the measure's default where a run lacks a
    judged query."""
    import ir_measures

    evaluator = ir_measures.evaluator([m for _, m in measures], judged)
    where = {m: i for i, (_, m) in enumerate(measures)}
    index = {q: j for j, q in enumerate(queries)}
    values = np.empty((len(measures), len(runs), len(queries)))
    for i, (_, m) in enumerate(measures):
        values[i] = float(m.DEFAULT)
    for r, run in enumerate(runs):
        ranked = trec.to_dict(as_run(run, r, "score", "first"))
        for metric in evaluator.iter_calc(ranked):
            j = index.get(metric.query_id)
            if j is not None:
                values[where[metric.measure], r, j] = metric.value
        if bar is not None:
            bar.update(1)
    return values
