"""Tuning a fusion on relevance judgments: ``rankfusion.optimize`` (and ``rankfusion optimize``).

Every setting of an exact grid (weight vectors as integer compositions, or k / phi / gamma /
sigma / norm values) fuses the runs and is scored per query against the qrels by ir-measures
(pytrec_eval: trec_eval's definitions). The best setting is the first of the grid with the
highest mean; with ``folds`` the queries are split into folds and each fold is scored with the
setting chosen on the others, so the figure a paper quotes is not the one the setting was chosen
on. See docs/optimize.md.

How: the runs are read, doc-coded and ranked once (``rankfusion.frame``'s path: int code
matrices and aligned raw score matrices). For rrf, rbc, logn_isr, gmnz, wsum, relative_score,
mixed and wmnz (tuning their weights and k / phi / sigma / gamma, with ``duplicates="first"`` and
a norm other than borda) the runs are then fused once, traced, with every run read
(``_core._Trace``: each document's rank and normalised value in each run), and every setting is
scored from that trace in the core (rust/optimize.rs), batch by batch with the GIL released,
bit for bit as ``fuse`` scores it. Any other grid fuses the runs whole for each setting
(``fuse_batch`` per block of queries). Each setting's output becomes the ``{qid: {docid:
score}}`` that pytrec_eval (through ir-measures) evaluates, and is dropped: memory holds the
input matrices, the trace, a batch of settings' hits and a (settings x queries) table of
per-query values. For a measure that reads only the top c documents (nDCG@c, P@c, R@c, AP@c,
Success@c without judged_only) each query's list is cut, before evaluation, after the c-th
document and any documents tied with it: trec_eval ranks by score and then doc id, so its top c
of the cut list are its top c of the whole list. trec_eval (pytrec_eval) holds scores as C
floats, so "tied" means equal as float32.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import numbers
import os
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import MappingProxyType
from typing import (
    Any,
    Deque,
    Dict,
    Generator,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from . import _core, trec
from ._core import Fusion
from ._tables import METHODS
from .errors import FusionError, FusionTypeError

__all__ = ["DEFAULT_GRIDS", "MAX_SETTINGS", "FoldResult", "OptimizeResult", "optimize"]

DEFAULT_GRIDS: Mapping[str, Tuple[float, ...]] = MappingProxyType(
    {
        "k": tuple(range(10, 101, 10)),
        "phi": tuple(i / 100 for i in range(1, 100)),  # rbc needs phi < 1
        "gamma": tuple(i / 100 for i in range(1, 101)),
        "sigma": tuple(i / 100 for i in range(1, 101)),
    }
)
"""The grids a parameter gets when it is tuned without values: ranx's (``optimize_fusion``):
k 10, 20, ..., 100; phi, gamma and sigma 0.01, 0.02, ..., 1.0 (phi stops at 0.99: rbc needs
phi < 1). Each value is ``i / 100`` (the double nearest the decimal), not an accumulated sum."""

MAX_SETTINGS = 1_000_000
"""A grid of more settings than this is a ValueError (raise it by tuning fewer parameters at
once, or with a coarser ``step``)."""

_SCALARS = ("k", "phi", "gamma", "sigma")
_TUNABLE = ("k", "weights", "phi", "gamma", "sigma", "norm")
# Measures whose value for a query depends only on the first `cutoff` documents of its ranking
# (trec_eval's P_c, ndcg_cut_c, recall_c, map_cut_c, success_c).
_PREFIX_MEASURES = ("nDCG", "P", "R", "AP", "Success")

Setting = Dict[str, Any]


@dataclass(frozen=True)
class FoldResult:
    """One fold of the cross-validation.

    ``queries``: the fold's queries (held out); ``choice``: the setting chosen on the other
    folds' queries (the first best of the grid there), ``choice_index`` its position in the
    grid, ``train_score`` its mean there; ``score``: its mean on the held-out queries.
    """

    index: int
    queries: Tuple[str, ...]
    choice: Setting
    choice_index: int
    train_score: float
    score: float


@dataclass(frozen=True, eq=False)
class OptimizeResult:
    """What :func:`optimize` found.

    - ``settings``: every setting tried, in grid order (``{"weights": (0.2, 0.7, 0.1)}``,
      ``{"k": 60}``, ...); ``scores[i]``: the mean of the metric over ``queries`` with
      ``settings[i]``; ``per_query[i, j]``: its value for ``queries[j]`` (read-only array).
    - ``best_index``: the first setting of the grid with the highest score (``best``,
      ``best_score``); ``ties``: how many settings share that score.
    - With folds: ``folds`` (one :class:`FoldResult` each) and ``cv_score``, the mean over all
      queries of each query's held-out value, which is ``sum(len(f.queries) * f.score) /
      len(queries)``. Without: None for both.
    - ``fusion()``: the :class:`rankfusion.Fusion` of a setting (the best by default), to pass
      to ``rankfusion.trec.fuse`` / ``rankfusion.frame.fuse`` or call; ``options()``: its
      settings as keyword arguments.
    """

    method: str
    norm: Optional[str]
    metric: str
    queries: Tuple[str, ...]
    settings: Tuple[Setting, ...]
    scores: Tuple[float, ...]
    per_query: np.ndarray
    best_index: int
    ties: int
    folds: Optional[Tuple[FoldResult, ...]]
    cv_score: Optional[float]
    seed: int
    fixed: Mapping[str, Any]

    @property
    def best(self) -> Setting:
        """The chosen setting: the first of the grid with the highest mean."""
        return self.settings[self.best_index]

    @property
    def best_score(self) -> float:
        """The chosen setting's mean over every query (the in-sample figure)."""
        return self.scores[self.best_index]

    def fusion(self, index: Optional[int] = None) -> Fusion:
        """The :class:`rankfusion.Fusion` of ``settings[index]`` (default: the best)."""
        return Fusion(**self.options(index))

    def options(self, index: Optional[int] = None) -> Dict[str, Any]:
        """``Fusion``'s settings for ``settings[index]`` (default: the best)."""
        setting = self.best if index is None else self.settings[index]
        out: Dict[str, Any] = {"method": self.method}
        if self.norm is not None:
            out["norm"] = self.norm
        out.update(self.fixed)
        out.update(setting)
        return out

    def table(self) -> List[Dict[str, Any]]:
        """One row per setting, in grid order: its parameters and ``score``."""
        return [{**s, "score": v} for s, v in zip(self.settings, self.scores)]


# --- the grid ---------------------------------------------------------------------------------


def _takes(method: str, name: str) -> bool:
    spec = METHODS[method]
    if name == "weights":
        return bool(spec.weighted)
    if name == "norm":
        return spec.kind == "score" and spec.norm is None
    return name in spec.params


def _compositions(total: int, parts: int) -> Iterator[Tuple[int, ...]]:
    """Every vector of ``parts`` non-negative ints summing to ``total``, lexicographically
    ascending."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _step_units(step: Any) -> int:
    """``m`` with ``step == 1 / m``: the number of steps in 1."""
    if isinstance(step, bool) or not isinstance(step, numbers.Real):
        raise TypeError(f"step must be a real number, got {type(step).__name__} {step!r}")
    value = float(step)
    if not (math.isfinite(value) and 0 < value <= 1):
        raise ValueError(f"step must be in (0, 1], got {step!r}")
    units = round(1 / value)
    if units < 1 or abs(units * value - 1) > 1e-9:
        raise ValueError(
            f"step must divide 1 into whole steps (0.5, 0.25, 0.2, 0.1, 0.05, ...), got {step!r}"
        )
    return units


def _count_compositions(units: int, parts: int) -> int:
    return math.comb(units + parts - 1, parts - 1)


def _real(value: Any, what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {type(value).__name__} {value!r}")
    return value.item() if isinstance(value, np.generic) else value


def _grid_values(
    name: str, values: Any, n_runs: int, units: Optional[int]
) -> Union[List[Any], Tuple[int, int]]:
    """The values of one tuned parameter; ``(units, n_runs)`` stands for the weight
    compositions (generated lazily)."""
    if values is None:
        if name == "weights":
            assert units is not None
            return (units, n_runs)
        if name == "norm":
            raise ValueError("grid['norm'] needs the norms to try (it has no default grid)")
        return list(DEFAULT_GRIDS[name])
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(
            f"grid[{name!r}] must be a list of values or None, got {type(values).__name__}"
        )
    out: List[Any] = []
    for i, value in enumerate(values):
        what = f"grid[{name!r}][{i}]"
        if name == "norm":
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a norm name (str), got {type(value).__name__}")
            out.append(value)
        elif name == "weights":
            if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
                raise TypeError(f"{what} must be a list of {n_runs} weights")
            weights = tuple(float(_real(w, f"{what}[{j}]")) for j, w in enumerate(value))
            if len(weights) != n_runs:
                raise ValueError(f"{what} has {len(weights)} weights for {n_runs} runs")
            out.append(weights)
        else:
            out.append(_real(value, what))
    if not out:
        raise ValueError(f"grid[{name!r}] is empty")
    return out


def _weights_of(units: int, n_runs: int) -> Iterator[Tuple[float, ...]]:
    for parts in _compositions(units, n_runs):
        yield tuple(p / units for p in parts)


class _Grid:
    """The settings: the product of each tuned parameter's values, the first parameter
    varying slowest (``itertools.product``), in the order the grid names them."""

    def __init__(self, names: List[str], values: List[Any], description: str) -> None:
        self.names = names
        self.values = values
        self.description = description
        self.size = 1
        for v in values:
            self.size *= _count_compositions(*v) if isinstance(v, tuple) else len(v)

    def __iter__(self) -> Iterator[Setting]:
        axes = [_weights_of(*v) if isinstance(v, tuple) else v for v in self.values]
        for combo in itertools.product(*axes):
            yield dict(zip(self.names, combo))


def _build_grid(method: str, norm: Optional[str], grid: Any, step: Any, n_runs: int) -> _Grid:
    if grid is None:
        tuned = [n for n in _SCALARS if _takes(method, n)] or (
            ["weights"] if _takes(method, "weights") else []
        )
        if not tuned:
            raise ValueError(
                f"method {method!r} has no parameter to tune by default: pass grid= "
                "(for example {'norm': ['min-max', 'z-score']})"
                if _takes(method, "norm")
                else f"method {method!r} has no parameter to tune"
            )
        spec: Mapping[str, Any] = {tuned[0]: None}
    elif isinstance(grid, Mapping):
        spec = grid
        if not spec:
            raise ValueError("grid is empty: name at least one parameter to tune")
    else:
        raise TypeError(
            f"grid must be a mapping of parameter names to values, got {type(grid).__name__}"
        )
    names: List[str] = []
    for name in spec:
        if not isinstance(name, str):
            raise TypeError(f"grid's keys must be parameter names, got {name!r}")
        if name not in _TUNABLE:
            raise ValueError(f"grid: unknown parameter {name!r} (one of {', '.join(_TUNABLE)})")
        if not _takes(method, name):
            raise ValueError(f"grid: {name} is not used by method {method!r}")
        names.append(name)
    if "norm" in names and norm is not None:
        raise ValueError("norm is given and tuned (grid['norm']): give one or the other")
    compositions = "weights" in names and spec["weights"] is None
    if step is not None and not compositions:
        raise ValueError("step is not used: the grid has no weights to build (grid['weights'])")
    units = _step_units(0.1 if step is None else step) if compositions else None
    values = [_grid_values(n, spec[n], n_runs, units) for n in names]
    parts = []
    for name, v in zip(names, values):
        if isinstance(v, tuple):
            step_text = repr(0.1 if step is None else float(step))
            parts.append(
                f"weights: every vector of {n_runs} multiples of {step_text} summing to 1 "
                f"({_count_compositions(*v)})"
            )
        else:
            parts.append(f"{name}: {len(v)} values")
    g = _Grid(names, values, "; ".join(parts))
    if g.size > MAX_SETTINGS:
        raise ValueError(
            f"the grid has {g.size:,} settings, more than {MAX_SETTINGS:,}: tune fewer "
            "parameters at once or use a coarser step"
        )
    return g


# --- folds ------------------------------------------------------------------------------------


def fold_of(queries: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """The fold (0..folds-1) of each query: the queries ordered by the BLAKE2b hash of
    ``"{seed}:{qid}"`` (ties by qid), then dealt round-robin, so fold sizes differ by at most
    one and a query's fold depends only on the seed and the set of queries, not on their order
    or on the platform."""
    keys = sorted(
        range(len(queries)),
        key=lambda i: (
            hashlib.blake2b(f"{seed}:{queries[i]}".encode("utf-8", "surrogateescape")).digest(),
            queries[i],
        ),
    )
    out = np.empty(len(queries), np.int64)
    out[keys] = np.arange(len(queries)) % folds
    return out


def _first_best(means: np.ndarray) -> int:
    """The first index of the largest value (ties: the first in grid order)."""
    return int(np.argmax(means))  # numpy returns the first occurrence of the maximum


def _mean(values: np.ndarray) -> float:
    return math.fsum(values.tolist()) / len(values)


# --- inputs -----------------------------------------------------------------------------------


def _measure(metric: Any) -> Any:
    if isinstance(metric, str):
        measures = trec.parse_metrics(metric)
        if len(measures) != 1:
            raise ValueError(f"metric must name one measure, got {metric!r}")
        measure = measures[0]
    else:
        import ir_measures

        if not isinstance(metric, ir_measures.Measure):
            raise TypeError(
                f"metric must be a measure name (str) or an ir_measures measure, got "
                f"{type(metric).__name__}"
            )
        measure = metric
    from ir_measures.measures.base import MeanAgg

    if not isinstance(measure.aggregator(), MeanAgg):
        raise ValueError(f"metric {measure} is not a mean over queries: it cannot be optimized")
    return measure


def _qrels(qrels: Any) -> trec.Qrels:
    if isinstance(qrels, (str, os.PathLike)):
        return trec._int_gains(trec.read_qrels(qrels))  # (its gains checked as evaluated)
    if not isinstance(qrels, Mapping):
        raise TypeError(
            f"qrels must be a path or a mapping {{qid: {{docid: gain}}}}, got "
            f"{type(qrels).__name__}"
        )
    out: trec.Qrels = {}
    for qid, judged in qrels.items():
        if not isinstance(judged, Mapping):
            raise TypeError(f"qrels[{qid!r}] must be a mapping {{docid: gain}}")
        out[str(qid)] = {str(d): trec._gain(g, qid, d) for d, g in judged.items()}
    if not out:
        raise ValueError("qrels is empty: no query to evaluate")
    return out


def _as_run(run: Any, i: int, order: str, read_duplicates: str) -> Mapping[str, Any]:
    """A run as ``{qid: Ranking}``: a file read by ``trec.read_run`` (Parquet by
    ``rankfusion.frame``), a mapping of rankings as given, ``{qid: {docid: score}}`` ranked, a
    table as ``frame.to_run`` reads it."""
    if isinstance(run, (str, os.PathLike)):
        name = os.fspath(run).lower()
        if name.endswith((".parquet", ".pq")):
            from . import frame

            table, path = frame.read_table(run), os.fspath(run)  # errors name the file
            return frame._to_run(table, path, "qid", "docid", "score", order, read_duplicates)
        return trec.read_run(
            run,
            order="file" if order == "file" else "score",
            duplicates="error" if read_duplicates == "error" else "keep",
        )
    if isinstance(run, Mapping):
        first = next(iter(run.values()), None)
        if isinstance(first, Mapping):
            return trec.from_dict(run, order="score" if order == "score" else "insertion")
        for qid, ranking in run.items():
            if not hasattr(ranking, "docids") or not hasattr(ranking, "scores"):
                raise TypeError(
                    f"runs[{i}][{qid!r}] must be a Ranking (docids, scores) or a mapping "
                    f"{{docid: score}}, got {type(ranking).__name__}"
                )
        return run
    from . import frame

    table = frame._as_table(run, f"runs[{i}]")
    columns = frame.columns_of(table.schema)
    return frame.to_run(
        table,
        query=columns["query"],
        doc=columns["doc"],
        score=columns["score"],
        order=order,
        duplicates=read_duplicates,
    )


def _shown_ids(ids: Sequence[Any], n: int = 5) -> str:
    """``3 queries ('1', '2', '3')``: how many, and the first ``n``."""
    shown = ", ".join(map(repr, ids[:n])) + (", ..." if len(ids) > n else "")
    return f"{len(ids)} quer{'y' if len(ids) == 1 else 'ies'} ({shown})"


def _check_judged(judged: trec.Qrels, present: Sequence[str], runs: Sequence[Any]) -> None:
    """A ValueError when no setting could score anything but 0 for want of judgments: the
    qrels judge no document, or no query that the runs hold (``'001'`` against ``'1'``)."""
    if not any(judged.values()):
        raise ValueError(
            f"the qrels judge no document: their {_shown_ids(list(judged))} have no "
            "judgments; every setting would score 0"
        )
    if not any(judged[q] for q in present):
        held: Dict[str, None] = {}
        for run in runs:
            held.update(dict.fromkeys(run))
        with_judgments = [q for q in judged if judged[q]]
        raise ValueError(
            f"no judged query is in the runs: the qrels judge {_shown_ids(with_judgments)}, "
            f"the runs hold {_shown_ids(list(held))}; every setting would score 0"
        )


def _all_zero(result: "OptimizeResult") -> Optional[str]:
    """What to say when every setting scores 0 on every query (the best is then chosen by
    nothing but its place in the grid), else None."""
    if result.per_query.size and not result.per_query.any():
        return (
            f"every setting scores 0 on every judged query ({result.metric}): the qrels give "
            "nothing to choose by, and the best is merely the first setting of the grid"
        )
    return None


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    return int(seed)


def _check_folds(folds: Any, n_queries: int) -> Optional[int]:
    if folds is None:
        return None
    if isinstance(folds, bool) or not isinstance(folds, numbers.Integral):
        raise TypeError(f"folds must be an int or None, got {type(folds).__name__} {folds!r}")
    k = int(folds)
    if not 2 <= k <= n_queries:
        raise ValueError(f"folds must be between 2 and the {n_queries} judged queries, got {k}")
    return k


# --- evaluation -------------------------------------------------------------------------------


class _Evaluator:
    """Per-query values of one measure over the judged queries, by ir-measures.

    Where ir-measures computes the measure with one pytrec_eval ``RelevanceEvaluator`` (every
    measure of trec_eval's), that evaluator's ``evaluate`` is called directly: the same values
    that ir-measures' ``iter_calc`` yields from it, without a ``Metric`` object per query."""

    def __init__(self, measure: Any, qrels: trec.Qrels, queries: Sequence[str]) -> None:
        import ir_measures

        self.evaluator = ir_measures.evaluator([measure], qrels)
        self.default = float(measure.DEFAULT)
        self.index = {q: j for j, q in enumerate(queries)}
        self.n = len(queries)
        cutoff = measure["cutoff"] if "cutoff" in measure.params else None
        prefix = (
            measure.NAME in _PREFIX_MEASURES
            and isinstance(cutoff, int)
            and cutoff >= 1
            and not measure["judged_only"]
            and ir_measures.pytrec_eval.supports(measure)
        )
        self.cutoff: Optional[int] = cutoff if prefix else None
        self.direct = _pytrec_eval_of(self.evaluator)

    def __call__(self, run: Dict[str, Dict[str, float]]) -> np.ndarray:
        out = np.full(self.n, self.default)
        index = self.index
        if self.direct is not None:
            evaluate, name = self.direct
            for qid, values in evaluate(run).items():
                j = index.get(qid)
                if j is not None:
                    out[j] = values[name]
            return out
        for m in self.evaluator.iter_calc(run):
            j = index.get(m.query_id)
            if j is not None:
                out[j] = m.value
        return out


def _pytrec_eval_of(evaluator: Any) -> Optional[Tuple[Any, str]]:
    """``(evaluate, name)`` when ir-measures' ``evaluator`` runs one pytrec_eval evaluator for
    one trec_eval measure (``name``), else None (and ``iter_calc`` is used)."""
    from ir_measures.providers.pytrec_eval_provider import PytrecEvalEvaluator

    invokers = getattr(evaluator, "invokers", None)
    if type(evaluator) is not PytrecEvalEvaluator or not isinstance(invokers, list):
        return None
    if len(invokers) != 1:
        return None
    measures = getattr(invokers[0], "measure_map", None)
    evaluate = getattr(getattr(invokers[0], "evaluator", None), "evaluate", None)
    if not isinstance(measures, dict) or len(measures) != 1 or evaluate is None:
        return None
    return evaluate, next(iter(measures))


def _cut_short(result: Any, cutoff: int, depth: int) -> np.ndarray:
    """The rows of a BatchResult fused with ``limit=depth`` whose ``depth``-th hit ties (as
    float32, as trec_eval compares) with their ``cutoff``-th: their lists may go on with more
    ties, so they need the whole fusion."""
    counts = np.asarray(result.counts)
    if result.scores.shape[1] < depth:
        return np.empty(0, np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        single = result.scores.astype(np.float32)
        tied = (counts >= depth) & (single[:, depth - 1] >= single[:, cutoff - 1])
    return np.flatnonzero(tied)


def _ranked_dicts(
    result: Any, names: np.ndarray, cutoff: Optional[int]
) -> Iterator[Tuple[int, Dict[str, float]]]:
    """``(row, {docid: fused score})`` for each row of a BatchResult, cut after the ``cutoff``-th
    document and those tied with it as trec_eval sees them (hits come by score, descending;
    their float32 values, which trec_eval compares, then descend too)."""
    ids, scores, counts = result.ids, result.scores, np.asarray(result.counts)
    width = ids.shape[1]
    keep = np.arange(width)[None, :] < counts[:, None]
    if cutoff is not None and width > cutoff:
        # trec_eval holds scores as C floats: doubles that round to the same float32 tie there
        # (and go by doc id), so the cut compares float32 values
        with np.errstate(over="ignore", invalid="ignore"):  # huge scores, NaN in the pads
            single = scores.astype(np.float32)
            threshold = np.where(counts > cutoff, single[:, cutoff - 1], -np.inf)
            keep &= single >= threshold[:, None]
    kept = keep.sum(axis=1)
    docs = names[ids[keep]].tolist()
    values = scores[keep].tolist()
    a = 0
    for row, n in enumerate(kept.tolist()):
        yield row, dict(zip(docs[a : a + n], values[a : a + n]))
        a += n


# --- the runs as matrices ---------------------------------------------------------------------

# A block of queries fused in one call holds about this many cells (queries x widest row).
_BLOCK_CELLS = 1 << 22

Block = Tuple[List[str], List[np.ndarray], List[np.ndarray]]


def _matrices(
    runs: Sequence[Mapping[str, Any]], queries: List[str]
) -> Tuple[List[str], List[Block]]:
    """The runs' rankings of ``queries`` as fuse_batch's input, read once: per block of queries
    of similar size, one (rows, N_i) int64 code matrix per run, padded with -1, and the raw
    scores aligned with it (NaN in the pads); ``names[code]`` is the doc id of a code (a doc
    has one code in every run and query)."""
    empty = trec.Ranking([], [])
    rankings = [[run.get(qid, empty) for qid in queries] for run in runs]  # [run][query]
    # codes in order of first appearance, query by query, run by run
    seen = itertools.chain.from_iterable(r.docids for row in zip(*rankings) for r in row)
    names = list(dict.fromkeys(seen))
    code = {d: c for c, d in enumerate(names)}
    lens = np.array([[len(r.docids) for r in per_run] for per_run in rankings], np.int64)
    lens = lens.reshape(len(runs), len(queries))
    size = lens.sum(axis=0)
    by_size = np.argsort(size, kind="stable").tolist()
    blocks: List[Block] = []
    a = 0
    while a < len(by_size):  # the largest b with (b - a) * size of the b-th query <= cells
        b = a + 1
        while b < len(by_size) and (b + 1 - a) * max(int(size[by_size[b]]), 1) <= _BLOCK_CELLS:
            b += 1
        rows = sorted(by_size[a:b])
        ids, raw = [], []
        for i, per_run in enumerate(rankings):
            n = lens[i, rows]
            width = int(n.max(initial=0))
            total = int(n.sum())
            docs = itertools.chain.from_iterable(per_run[j].docids for j in rows)
            scores = itertools.chain.from_iterable(per_run[j].scores for j in rows)
            filled = np.arange(width)[None, :] < n[:, None]  # row-major: the rows' items in order
            m = np.full((len(rows), width), -1, np.int64)
            m[filled] = np.fromiter(map(code.__getitem__, docs), np.int64, total)
            r = np.full((len(rows), width), np.nan)
            r[filled] = np.fromiter(scores, np.float64, total)
            ids.append(m)
            raw.append(r)
        blocks.append(([queries[j] for j in rows], ids, raw))
        a = b
    return names, blocks


def pool_threads(threads: Optional[int]) -> int:
    """The threads to use: ``threads``, else ``RAYON_NUM_THREADS`` when set to a positive
    number (as the core reads it), else every CPU."""
    if threads is not None:
        return int(threads)
    env = os.environ.get("RAYON_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else os.cpu_count() or 1


# --- the search -------------------------------------------------------------------------------


def optimize(
    runs: Sequence[Any],
    qrels: Any,
    *,
    method: str,
    norm: Optional[str] = None,
    metric: Any,
    step: Optional[float] = None,
    grid: Optional[Mapping[str, Any]] = None,
    folds: Optional[int] = None,
    seed: int = 0,
    window: Optional[int] = None,
    duplicates: str = "first",
    lower_is_better: Optional[Sequence[bool]] = None,
    limit: Optional[int] = None,
    order: str = "score",
    progress: Union[bool, Any] = False,
    threads: Optional[int] = None,
) -> OptimizeResult:
    """Grid-search a fusion's parameters on relevance judgments; optionally cross-validate.

    - ``runs``: the runs to fuse (two or more, in a fixed order: weights follow it), each a
      path (a TREC run, plain or gzip'd, or Parquet by its ``.parquet``/``.pq`` name), a run
      mapping (``rankfusion.trec.read_run``'s ``{qid: Ranking}`` or ``{qid: {docid: score}}``)
      or a table with the columns of a ``rankfusion.frame`` preset. Each query's documents are
      ranked by score, ties by doc id descending (trec_eval's order; ``order="file"``: as given).
    - ``qrels``: a path or ``{qid: {docid: gain}}``. The queries evaluated are the qrels'; a
      judged query that no run has scores the measure's default (0), as ``trec_eval -c``.
    - ``method``, ``norm``: as ``rankfusion.fuse``. ``metric``: one measure (``"ndcg@10"``,
      ``"map"``, ``"P@5"``, an ir-measures measure...), computed per query by ir-measures
      (pytrec_eval where it provides the measure); its mean over the queries is the score.
    - ``grid``: ``{parameter: values}`` over ``k``, ``weights``, ``phi``, ``gamma``, ``sigma``,
      ``norm`` (those the method takes); ``None`` values mean the default grid: for weights
      every vector of multiples of ``step`` (default 0.1; ``1 / step`` must be whole) summing
      to 1, for the others :data:`DEFAULT_GRIDS`. The settings are the product, the first
      parameter varying slowest; weight vectors lexicographically ascending. ``grid=None``
      tunes the method's own parameter (rrf: k, rbc: phi, gmnz: gamma, logn_isr: sigma) or,
      for the other weighted methods, the weights.
    - ``folds``: K >= 2 for K-fold cross-validation over the judged queries, folded by
      :func:`fold_of` with ``seed``.
    - ``window``, ``duplicates``, ``lower_is_better``: fixed fusion arguments, as ``fuse``'s;
      ``limit``: each fused list is cut to ``limit`` before it is evaluated (as a run file
      written with that limit would be).
    - ``progress``: a tqdm bar on stderr (True or a dict of tqdm arguments); ``threads``: as
      ``fuse_batch``'s.

    Ties in the mean go to the first setting in grid order (ranx's ``optimize_fusion`` takes
    the last); when every setting scores 0 on every query a RuntimeWarning says that the
    best was chosen by nothing. Raises ValueError when the qrels judge no document, or no query
    that a run holds (``'001'`` against ``'1'``: every setting would score 0), TypeError /
    ValueError naming a bad argument (every setting of the grid is
    checked as ``fuse`` checks it, before any is fused), what the readers raise for bad files
    (``TrecFormatError``, ``frame.TableError``), ValueError ``"query 'q' (setting): ..."`` for
    a query that a setting cannot fuse (its message is ``fuse``'s: a score that overflows, a raw
    score that is not finite), ImportError without ir-measures or pyarrow.

    Each setting's fused lists are exactly ``fuse``'s with that setting (same documents, order
    and score bits). Grids of rrf, rbc, logn_isr, gmnz, wsum, relative_score, mixed and wmnz over
    their weights and k / phi / sigma / gamma (``duplicates="first"``, any norm but borda) are
    scored from one traced fusion of the runs in the core; other grids fuse each setting whole.
    See docs/optimize.md.
    """
    plan = _plan(
        runs, method, norm, metric, step, grid, seed, order, window, duplicates,
        lower_is_better, limit,
    )  # fmt: skip
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
        raise TypeError(f"threads must be an int or None, got {type(threads).__name__}")
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    judged = _qrels(qrels)
    result = _search(plan, runs, judged, _check_folds(folds, len(judged)), progress, threads)
    zero = _all_zero(result)
    if zero is not None:
        warnings.warn(zero, RuntimeWarning, stacklevel=2)
    return result


class _Plan(NamedTuple):
    """Checked arguments: the measure, the grid and its settings, the fixed fusion arguments."""

    method: str
    norm: Optional[str]
    measure: Any
    grid: _Grid
    settings: List[Setting]
    fixed: Dict[str, Any]
    seed: int
    order: str

    def fusion(self, setting: Setting, **changes: Any) -> Fusion:
        """The fusion of a grid setting (with ``changes``)."""
        norm = {} if self.norm is None else {"norm": self.norm}
        return Fusion(**{"method": self.method, **norm, **self.fixed, **setting, **changes})


def _plan(
    runs: Any,
    method: Any,
    norm: Any,
    metric: Any,
    step: Any,
    grid: Any,
    seed: Any,
    order: Any,
    window: Any,
    duplicates: Any,
    lower_is_better: Any,
    limit: Any,
) -> _Plan:
    """Every argument but the data checked, each setting of the grid as a ``Fusion`` of the
    runs."""
    if isinstance(runs, (str, bytes, os.PathLike)) or not isinstance(runs, Sequence):
        raise TypeError(f"runs must be a list of runs, got {type(runs).__name__}")
    n_runs = len(runs)
    if n_runs < 2:
        raise ValueError(f"runs must hold at least 2 runs to fuse, got {n_runs}")
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, got {type(method).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {method!r}")
    measure = _measure(metric)
    g = _build_grid(method, norm, grid, step, n_runs)
    seed = _check_seed(seed)
    trec._check_choice(order, "order", ("score", "file"))
    fixed: Dict[str, Any] = {}
    if window is not None:
        fixed["window"] = window
    if duplicates != "first":
        fixed["duplicates"] = duplicates
    if lower_is_better is not None:
        fixed["lower_is_better"] = lower_is_better
    if limit is not None:
        fixed["limit"] = limit
    if isinstance(lower_is_better, np.ndarray):
        fixed["lower_is_better"] = lower_is_better.tolist()
    elif lower_is_better is not None:
        fixed["lower_is_better"] = list(lower_is_better)
    plan = _Plan(method, norm, measure, g, [], fixed, seed, order)
    for setting in g:
        try:
            plan.fusion(setting).check(n_runs)
        except (FusionError, FusionTypeError) as e:
            raise e.located(setting=_shown(setting)) from None
        plan.settings.append(setting)
    return plan


def _shown(setting: Setting) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in setting.items())


def _search(
    plan: _Plan,
    runs: Sequence[Any],
    judged: trec.Qrels,
    n_folds: Optional[int],
    progress: Union[bool, Any],
    threads: Optional[int],
) -> OptimizeResult:
    """Reads the runs once, fuses and evaluates every setting, then cross-validates."""
    method, settings, fixed = plan.method, plan.settings, plan.fixed
    queries = list(judged)

    read_duplicates = "error" if fixed.get("duplicates") == "error" else "keep"
    rankings = [_as_run(r, i, plan.order, read_duplicates) for i, r in enumerate(runs)]
    present = [q for q in queries if any(q in r for r in rankings)]
    _check_judged(judged, present, rankings)
    names, blocks = _matrices(rankings, present)
    del rankings
    doc_ids = np.array(names, dtype=object)

    evaluate = _Evaluator(plan.measure, judged, queries)
    per_query = np.empty((len(settings), len(queries)))
    traces = _traces(plan, blocks, threads) if _traceable(plan) else None
    if traces is not None:
        fused = _traced_runs(plan, blocks, traces, doc_ids, evaluate.cutoff, threads)
    else:
        fused = _fused_runs(plan, blocks, doc_ids, evaluate.cutoff, threads)
    bar = trec._progress_bar(progress, len(settings), "optimizing", unit="setting")
    try:
        for i, run in enumerate(fused):
            per_query[i] = evaluate(run)
            if bar is not None:
                bar.update(1)
    finally:
        fused.close()
        if bar is not None:
            bar.close()
    per_query.flags.writeable = False

    means = np.array([_mean(v) for v in per_query])
    best = _first_best(means)
    ties = int(np.count_nonzero(means == means[best]))
    fold_results: Optional[Tuple[FoldResult, ...]] = None
    cv_score: Optional[float] = None
    if n_folds is not None:
        assignment = fold_of(queries, n_folds, plan.seed)
        held_out = np.empty(len(queries))
        out = []
        for f in range(n_folds):
            test = assignment == f
            train_means = np.array([_mean(v[~test]) for v in per_query])
            choice = _first_best(train_means)
            held_out[test] = per_query[choice, test]
            out.append(
                FoldResult(
                    index=f,
                    queries=tuple(q for q, t in zip(queries, test.tolist()) if t),
                    choice=settings[choice],
                    choice_index=choice,
                    train_score=float(train_means[choice]),
                    score=_mean(per_query[choice, test]),
                )
            )
        fold_results = tuple(out)
        cv_score = _mean(held_out)
    return OptimizeResult(
        method=method,
        norm=plan.norm,
        metric=str(plan.measure),
        queries=tuple(queries),
        settings=tuple(settings),
        scores=tuple(means.tolist()),
        per_query=per_query,
        best_index=best,
        ties=ties,
        folds=fold_results,
        cv_score=cv_score,
        seed=plan.seed,
        fixed=MappingProxyType(fixed),
    )


# The methods whose settings are scored from one traced fusion of the runs (rust/optimize.rs),
# and the parameter each tunes besides the weights.
_TRACED: Mapping[str, Optional[str]] = MappingProxyType(
    {
        name: next((p for p in row.params if p != "normalize"), None)
        for name, row in METHODS.items()
        if row.traced
    }
)
# A batch of settings scored at once holds at most about this many hits.
_BATCH_HITS = 1 << 20


def _traceable(plan: _Plan) -> bool:
    """Whether every setting of the grid can be scored from one traced fusion: a method of
    ``_TRACED`` tuning only its weights and its parameter, one counted occurrence per document
    and run, and a normalisation of each list on its own (not borda)."""
    if plan.method not in _TRACED:
        return False
    tuned = {"weights", _TRACED[plan.method]}
    return (
        set(plan.grid.names) <= tuned
        and plan.fixed.get("duplicates", "first") == "first"
        and plan.norm != "borda"
    )


def _traces(
    plan: _Plan, blocks: List[Block], threads: Optional[int]
) -> Optional[List[Tuple[Any, int]]]:
    """Per block, the runs fused once with every run read (weight 1 each), traced and kept in
    the core (``_core._Trace``): each run's rank and normalised value of every document; and
    the number of documents fused (the most a setting keeps). None when that fusion fails (a run that some settings do not read may hold what only a read
    run cannot, an infinite score): every setting is then fused whole, and raises its own
    error."""
    method = plan.method
    traced: Dict[str, Any] = {"limit": None, "trace": True}
    if METHODS[method].weighted:
        traced["weights"] = [1.0] * len(blocks[0][1]) if blocks else None
    if method == "rbc":
        traced["phi"] = 0.5  # any valid value: the trace does not depend on it
    if method == "gmnz":
        traced["gamma"] = 1.0
    fusion = plan.fusion({}, **traced)
    score_based = METHODS[method].kind == "score"
    traces = []
    for _, ids, raw in blocks:
        try:
            result = fusion.batch(
                ids, raw if fusion.reads_scores else None, threads=pool_threads(threads)
            )
        except FusionError:
            return None
        normalized = result.normalized if score_based else None
        trace = _core._Trace(result.ids, result.counts, result.ranks, normalized)
        traces.append((trace, int(np.asarray(result.counts).sum())))
    return traces


def _traced_runs(
    plan: _Plan,
    blocks: List[Block],
    traces: List[Tuple[Any, int]],
    names: np.ndarray,
    cutoff: Optional[int],
    threads: Optional[int],
) -> Generator[Dict[str, Dict[str, float]], None, None]:
    """Each setting's fused run ``{qid: {docid: score}}`` (cut at ``cutoff``, see
    ``_ranked_dicts``), in grid order, scored from the traces in batches of settings: the next
    batch is scored in the core (the GIL released) while this one is evaluated. Memory: two
    batches' hits (about ``_BATCH_HITS`` each at most; this one's also as Python lists) and one
    setting's run as dicts."""
    settings = plan.settings
    hits = sum(n for _, n in traces)  # each setting's most hits: the traced fusion's
    size = max(1, min(len(settings), _BATCH_HITS // max(hits, 1)))
    batches = [settings[a : a + size] for a in range(0, len(settings), size)]
    # one batch: scored on every thread, then evaluated; more: the next batch is scored on all
    # threads but this one, which evaluates
    core_threads = pool_threads(threads) if len(batches) == 1 else max(1, pool_threads(threads) - 1)

    def combine(batch: List[Setting]) -> List[Tuple[Any, Any, Any]]:
        fusions = [plan.fusion(s) for s in batch]
        out = []
        for (qids, _, _), (trace, _) in zip(blocks, traces):
            try:
                out.append(trace.combine(fusions, cutoff=cutoff, threads=core_threads))
            except (FusionError, FusionTypeError) as e:
                setting = batch[e.setting_index]  # type: ignore[attr-defined]
                raise _query_error(e, qids, names, setting) from None
        return out

    pool = ThreadPoolExecutor(1, thread_name_prefix="rankfusion-optimize")
    try:
        pending = pool.submit(combine, batches[0]) if len(batches) > 1 else None
        for b, batch in enumerate(batches):
            combined = combine(batch) if pending is None else pending.result()
            if b + 1 < len(batches):
                pending = pool.submit(combine, batches[b + 1])
            # per block, its (docid, score) pairs, setting after setting, row after row
            parts = [
                (qids, counts.tolist(), zip(names[ids].tolist(), scores.tolist()))
                for (qids, _, _), (counts, ids, scores) in zip(blocks, combined)
            ]
            del combined
            for s in range(len(batch)):
                run: Dict[str, Dict[str, float]] = {}
                for qids, counts, pairs in parts:
                    for qid, n in zip(qids, counts[s]):
                        run[qid] = dict(itertools.islice(pairs, n))
                yield run
    except BaseException:  # interrupted, closed: what runs finishes on its own, unwaited for
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _fused_runs(
    plan: _Plan,
    blocks: List[Block],
    names: np.ndarray,
    cutoff: Optional[int],
    threads: Optional[int],
) -> Generator[Dict[str, Dict[str, float]], None, None]:
    """Each setting's fused run, in grid order, each setting fused whole by ``fuse_batch`` on
    worker threads (one core each) a few settings ahead of the evaluation, which runs on the
    calling thread (ir-measures holds the GIL): memory holds at most those settings' outputs."""
    fixed = plan.fixed
    # A measure of the top c reads each query's first c fused documents and those tied with
    # them: the core ranks only the first `depth` (a partial sort), and the rare query whose
    # depth-th document still ties with its c-th is fused again whole.
    limit = fixed.get("limit")
    depth = None if cutoff is None else cutoff + max(cutoff, 16)
    if depth is not None and limit is not None and limit <= depth:
        depth = None  # the lists are short already

    def fuse_setting(setting: Setting) -> List[Tuple[List[str], Any]]:
        """Every block of queries fused with ``setting`` (the GIL released in the core); rows
        fused again whole come after their block."""
        fusion = plan.fusion(setting)
        cut = fusion if depth is None else fusion.replace(limit=depth)
        scores = fusion.reads_scores
        out = []
        for qids, ids, raw in blocks:
            try:
                result = cut.batch(ids, raw if scores else None, threads=1)
                out.append((qids, result))
                if depth is None:
                    continue
                assert cutoff is not None
                again = _cut_short(result, cutoff, depth)
                if len(again):
                    result = fusion.batch(
                        [m[again] for m in ids],
                        [m[again] for m in raw] if scores else None,
                        threads=1,
                    )
                    out.append(([qids[j] for j in again.tolist()], result))
            except FusionError as e:
                raise _query_error(e, qids, names, setting) from None
        return out

    workers = max(1, pool_threads(threads) - 1)
    ahead = workers + 1
    pool = ThreadPoolExecutor(workers, thread_name_prefix="rankfusion-optimize")
    try:
        pending: Deque[Any] = deque()
        upcoming = iter(plan.settings)
        for setting in itertools.islice(upcoming, ahead):
            pending.append(pool.submit(fuse_setting, setting))
        while pending:
            fused = pending.popleft().result()
            for setting in itertools.islice(upcoming, 1):
                pending.append(pool.submit(fuse_setting, setting))
            run: Dict[str, Dict[str, float]] = {}
            for qids, result in fused:
                for row, ranking in _ranked_dicts(result, names, cutoff):
                    run[qids[row]] = ranking  # a row fused again whole comes later
            del fused
            yield run
    except BaseException:  # interrupted, closed: what runs finishes on its own, unwaited for
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _query_error(e: FusionError, qids: List[str], names: Any, setting: Setting) -> FusionError:
    """A fusion's error at row r of a block as the error of its query (``qids[r]``) and grid
    setting, with the doc id ``names[code]`` for the doc code it names."""
    if e.row is None:
        return e.located(setting=_shown(setting))
    key = {} if e.key is None else {"key": names[e.key]}
    return e.located(row=None, qid=qids[e.row], setting=_shown(setting), **key)
