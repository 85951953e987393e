"""The reference implementation: docs/semantics.md written as plain Python.

Read this file to learn what rankfusion computes. The Rust core (``rankfusion._core``) must return
exactly what these functions return -- the same keys, in the same order, with bit-identical float64
scores -- and raise the same exception types; the differential tests check that with Hypothesis.

Nothing here is optimised. Every step is written the way the contract states it. Sections:
result types; argument checking; Reciprocal Rank Fusion (``rrf``, ``rrf_many``, ``rrf_batch``);
candidate revalidation (``revalidate``, ``pool_size``, ``revalidate_batch``).
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Sequence

__all__ = [
    "BatchResult",
    "Contribution",
    "Hit",
    "Revalidated",
    "RevalidatedBatch",
    "canonical_sum",
    "pool_size",
    "revalidate",
    "revalidate_batch",
    "rrf",
    "rrf_batch",
    "rrf_many",
]

DUPLICATES = ("first", "sum", "error")
TIE_BREAKS = ("best_rank", "key")


# === Result types =================================================================================
# Tuples with names: each compares, hashes and unpacks as the tuple of its first fields; any
# further field (Hit.contributions, BatchResult.ranks) is an attribute only.


class Contribution(NamedTuple):
    """One counted occurrence of a key: ``weight / (k + rank)`` from list ``list_index``."""

    list_index: int
    rank: int
    weight: float
    contribution: float
    score: Optional[float] = None  # the list's own raw score, when the caller passed it

    def to_dict(self) -> dict:
        d = self._asdict()
        if self.score is None:
            del d["score"]
        return d


class Hit(tuple):
    """A fused hit: the tuple ``(key, score)``; ``contributions`` is None unless ``trace=True``."""

    def __new__(cls, key: Any, score: float, contributions: Optional[tuple] = None) -> Hit:
        hit = super().__new__(cls, (key, score))
        hit.contributions = contributions
        return hit

    key = property(operator.itemgetter(0))
    score = property(operator.itemgetter(1))

    def __reduce__(self):
        return (type(self), (self.key, self.score, self.contributions))

    def __repr__(self) -> str:
        traced = "" if self.contributions is None else f", contributions={self.contributions!r}"
        return f"Hit(key={self.key!r}, score={self.score!r}{traced})"

    def to_dict(self) -> dict:
        d = {"key": self.key, "score": self.score}
        if self.contributions is not None:
            d["contributions"] = [c.to_dict() for c in self.contributions]
        return d


class BatchResult(tuple):
    """The result of ``rrf_batch``: the tuple ``(ids, scores, counts)``.

    ``ids`` (Q, W) int64 padded with the pad value, ``scores`` (Q, W) float64 padded with NaN,
    ``counts`` (Q,) int64 real hits per row. With ``trace=True``: ``ranks`` (Q, W, L) int32, the
    best (first counted) rank of the hit in list l, 0 where absent, and ``contributions``
    (Q, W, L) float64, the canonical sum of the hit's contributions from list l (its one
    contribution unless duplicates="sum"), 0.0 where absent; both None otherwise.
    """

    def __new__(cls, ids, scores, counts, ranks=None, contributions=None) -> BatchResult:
        result = super().__new__(cls, (ids, scores, counts))
        result.ranks, result.contributions = ranks, contributions
        return result

    ids = property(operator.itemgetter(0))
    scores = property(operator.itemgetter(1))
    counts = property(operator.itemgetter(2))


class Revalidated(NamedTuple):
    """A live candidate: the tuple ``(id, record, score)``."""

    id: Any
    record: Any
    score: float

    def to_dict(self) -> dict:
        return self._asdict()


class RevalidatedBatch(NamedTuple):
    """The live candidates of a batch: ``ids`` (Q, W) int64 padded with the pad value,
    ``scores`` (Q, W) float64 padded with NaN, ``counts`` (Q,) int64 kept per row."""

    ids: Any
    scores: Any
    counts: Any


# === Argument checking ============================================================================
# Order matters: both implementations check the arguments in signature order, so that a call
# with several bad arguments raises the same exception from both. Nothing here reads a list item.


def _as_list(value: Any, name: str) -> list:
    """Any iterable but str/bytes/bytearray, materialised into a list (the input is not modified)."""
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(
            f"{name} must be a non-string iterable, got {type(value).__name__} {value!r}"
        )
    try:
        iterator = iter(value)
    except TypeError:
        raise TypeError(f"{name} must be iterable, got {type(value).__name__} {value!r}") from None
    return list(iterator)


def _real(value: Any, name: str, *, finite: bool = True) -> float:
    """A real number (int, float, numpy scalar, Fraction...; not bool) as a float64."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        x = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {value!r}") from None
    if finite and not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x


def _integer(value: Any, name: str, minimum: int) -> int:
    """An integer (anything with __index__, not bool) that is >= minimum."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    n = operator.index(value)
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return n


def _choice(value: Any, name: str, choices: tuple) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {choices}, got {type(value).__name__} {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def _int64(value: Any, name: str) -> int:
    """An integer (anything with __index__, not bool) that fits in int64."""
    n = _integer(value, name, -(2**63))
    if n > 2**63 - 1:
        raise ValueError(f"{name} must fit in int64, got {n}")
    return n


def _pair(value: Any, name: str) -> list:
    """One candidate: an iterable of exactly two items (str/bytes are not pairs)."""
    bad = f"{name} must be an (id, score) pair, got {type(value).__name__} {value!r}"
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(bad)
    try:
        iterator = iter(value)
    except TypeError:
        raise TypeError(bad) from None
    pair = list(iterator)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an (id, score) pair, got {len(pair)} items")
    return pair


def _id_matrix(value: Any, name: str) -> Any:
    """A 2-D integer array whose dtype widens to int64 without loss, as an int64 copy.

    Not an ndarray: converted by ``numpy.asarray`` (a ragged nesting is a ValueError). Accepted
    dtypes: int8..int64 and uint8..uint32 (uint64 and bool are not: a TypeError), any layout.
    """
    import numpy as np

    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except ValueError as e:
            raise ValueError(f"{name} is not a 2-D integer array: {e}") from None
    dtype = value.dtype
    if dtype.kind not in "iu" or not np.can_cast(dtype, np.int64, casting="safe"):
        raise TypeError(f"{name} must be an integer array that widens to int64, got dtype {dtype}")
    if value.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (queries, candidates), got shape {value.shape}"
        )
    return value.astype(np.int64)


def _matrix(value: Any, name: str, kinds: str, what: str):
    """A 2-D numpy array whose dtype kind is one of ``kinds`` (checked before the shape)."""
    import numpy as np

    try:
        array = np.asarray(value)
    except ValueError as e:  # a ragged nested list
        raise ValueError(f"{name} must be a 2-D array: {e}") from None
    dtype = array.dtype
    if dtype.kind not in kinds:
        raise TypeError(f"{name} must be {what}, got dtype {dtype}")
    if array.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (queries, candidates), got shape {array.shape}"
        )
    return array


@dataclass(frozen=True)
class _Options:
    """The checked keyword arguments that rrf, rrf_batch and rrf_many share."""

    k: float
    weights: Optional[list]  # None only in rrf_many, where each query has its own list count
    window: Optional[int]
    duplicates: str
    tie_break: str
    offset: int
    limit: Optional[int]
    min_score: Optional[float]
    normalize: bool
    # normalize=True: the largest score a key could reach with duplicates="first" (None when
    # normalize=False, or in rrf_many before a query's number of lists is known).
    best_possible: Optional[float] = None


def _best_possible(weights: list, k: float) -> float:
    """normalize=True's divisor: the values w / (k + 1) of the lists of positive weight, added like
    a score. Checked before any list item is read, whether or not the lists hold any item."""
    if not any(w > 0 for w in weights):
        raise ValueError("normalize=True needs at least one list with a positive weight")
    best_possible = canonical_sum(w / (k + 1) for w in weights if w > 0)
    if not (best_possible > 0 and math.isfinite(best_possible)):  # under- or overflow
        raise ValueError(f"normalize=True: the largest possible score is {best_possible}")
    return best_possible


def _options(
    n: Optional[int], k, weights, window, duplicates, tie_break, offset, limit, min_score, normalize
) -> _Options:
    """Checks k .. normalize in signature order; ``n`` is the number of lists weights must match."""
    k = _real(k, "k")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k!r}")
    if weights is None:
        weights = None if n is None else [1.0] * n
    else:
        weights = _as_list(weights, "weights")
        if n is not None and len(weights) != n:
            raise ValueError(f"weights has {len(weights)} values for {n} lists")
        weights = [_real(w, f"weights[{i}]") for i, w in enumerate(weights)]
    if window is not None:
        window = _integer(window, "window", 1)
    duplicates = _choice(duplicates, "duplicates", DUPLICATES)
    tie_break = _choice(tie_break, "tie_break", TIE_BREAKS)
    offset = _integer(offset, "offset", 0)
    if limit is not None:
        limit = _integer(limit, "limit", 0)
    if min_score is not None:
        min_score = _real(min_score, "min_score")
    normalize = _flag(normalize, "normalize")
    best_possible = _best_possible(weights, k) if normalize and weights is not None else None
    return _Options(
        k,
        weights,
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
        best_possible,
    )


# === Reciprocal Rank Fusion =======================================================================


def canonical_sum(values: Iterable[float]) -> float:
    """The canonical sum: ascending order of value, from 0.0, one float64 addition at a time.

    Because the order depends only on the values, any permutation of the same values (lists given
    in another order, say) gives bit-identical results.
    """
    total = 0.0
    for v in sorted(values):
        total += v
    return total


def _sorted_by_key(tied: Iterable[tuple]) -> list:
    """Tied (sum, Hit) pairs by key, ascending. Only tied keys are ever compared."""
    try:
        return sorted(tied, key=lambda pair: pair[1].key)
    except TypeError as e:
        raise TypeError(f"tie_break='key': tied keys cannot be compared ({e})") from e


def rrf(
    lists: Iterable[Iterable[Hashable]],
    *,
    k: float = 60,
    weights: Optional[Sequence[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    scores: Optional[Sequence[Optional[Sequence[float]]]] = None,
    trace: bool = False,
) -> list:
    """Reciprocal Rank Fusion of ranked lists (best first). See docs/semantics.md and ``rankfusion.rrf``."""
    # 1. Arguments, in signature order.
    lists = [_as_list(lst, f"lists[{i}]") for i, lst in enumerate(_as_list(lists, "lists"))]
    n = len(lists)
    options = _options(
        n, k, weights, window, duplicates, tie_break, offset, limit, min_score, normalize
    )
    raw_scores: list = [None] * n
    if scores is not None:
        scores = _as_list(scores, "scores")
        if len(scores) != n:
            raise ValueError(f"scores has {len(scores)} entries for {n} lists")
        for i, s in enumerate(scores):
            if s is None:
                continue
            s = _as_list(s, f"scores[{i}]")
            if len(s) != len(lists[i]):
                raise ValueError(f"scores[{i}] has {len(s)} values for {len(lists[i])} keys")
            raw_scores[i] = [_real(x, f"scores[{i}][{j}]") for j, x in enumerate(s)]
    trace = _flag(trace, "trace")
    return _fuse(lists, options, raw_scores, trace)


def _fuse(lists: list, o: _Options, raw_scores: list, trace: bool, is_hole=None) -> list:
    """Steps 2-6 of rrf on checked arguments. ``is_hole(item)`` marks items that are not keys
    (rrf_batch's pads): skipped like any item, so they never shift the ranks behind them."""
    k, weights = o.k, o.weights
    if is_hole is None:
        is_hole = lambda item: False  # noqa: E731

    # 2. The interleaved scan: rank 1 of list 0, rank 1 of list 1, ..., rank 2 of list 0, ...
    #    A list of weight 0 is skipped entirely, and only the first `window` items are read.
    #    A key's position in `found` (a dict keeps insertion order) is its first appearance.
    read = [i for i in range(len(lists)) if weights[i] != 0]
    depth = max((len(lists[i]) for i in read), default=0)
    if o.window is not None:
        depth = min(depth, o.window)
    found: dict = {}  # key -> [first key object met, list of Contribution]
    for position in range(depth):
        rank = position + 1  # ranks are positions in the list as given: skipping never shifts them
        for i in read:
            if position >= len(lists[i]):
                continue
            key = lists[i][position]
            if is_hole(key):
                continue
            if not isinstance(key, Hashable):
                raise TypeError(f"lists[{i}][{position}] is not hashable: {key!r}")
            entry = found.setdefault(key, [key, []])  # dict semantics: 1 == 1.0 == True
            if o.duplicates != "sum" and any(c.list_index == i for c in entry[1]):
                if o.duplicates == "error":
                    raise ValueError(f"lists[{i}] has the key {key!r} more than once (rank {rank})")
                continue  # "first": only the best (first) occurrence counts
            w = weights[i]
            raw = raw_scores[i][position] if raw_scores[i] is not None else None
            entry[1].append(Contribution(i, rank, w, w / (k + rank), raw))

    # 3. Scores: contributions added in ascending order of value; never inf or NaN.
    #    With normalize=True the hit shows sum / best_possible, but the order below still uses
    #    the sum itself, so normalising never reorders hits (two sums can round to one quotient).
    hits = []  # (sum, Hit)
    for key, contributions in found.values():
        total = canonical_sum(c.contribution for c in contributions)
        if not math.isfinite(total):
            raise ValueError(f"the score of key {key!r} is not finite ({total}): weights too large")
        score = total
        if o.normalize:
            score = total / o.best_possible
            if not math.isfinite(score):
                raise ValueError(f"the normalized score of key {key!r} is not finite ({score})")
        contributions.sort(key=lambda c: (c.list_index, c.rank))
        hits.append((total, Hit(key, score, tuple(contributions) if trace else None)))

    # 4. min_score drops hits below it (compared with the score as returned).
    if o.min_score is not None:
        hits = [(total, h) for total, h in hits if h.score >= o.min_score]

    # 5. Order: sum descending. Python's sort is stable, so tied hits stay in first-appearance
    #    order; with tie_break="key" each group of tied sums is sorted by key, ascending.
    hits.sort(key=lambda pair: -pair[0])
    if o.tie_break == "key":
        groups = itertools.groupby(hits, key=lambda pair: pair[0])
        hits = [pair for _, group in groups for pair in _sorted_by_key(group)]

    # 6. The page.
    end = None if o.limit is None else o.offset + o.limit
    return [h for _, h in hits[o.offset : end]]


def rrf_batch(
    lists: Iterable[Any],
    *,
    pad: int = -1,
    k: float = 60,
    weights: Sequence[float] | None = None,
    window: int | None = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: int | None = None,
    min_score: float | None = None,
    normalize: bool = False,
    trace: bool = False,
    threads: int | None = None,
) -> BatchResult:
    """RRF of Q queries at once: row q of the result is ``rrf`` of row q of every list.

    Each list is a 2-D integer array (Q, N_i); an entry equal to ``pad`` is skipped without
    shifting ranks. Width W: with limit=None the largest count of any row; with a limit,
    min(limit, cap) where cap = sum of min(N_i, window) over the lists of non-zero weight (the most
    keys a row can hold). An error in row q is raised as "row q: <rrf's message>", the first row
    in order that has one. ``threads`` only bounds the parallelism of the core; here it is checked.
    """
    import numpy as np

    # 1. Arguments, in signature order.
    arrays = []
    for i, value in enumerate(_as_list(lists, "lists")):
        array = _id_matrix(value, f"lists[{i}]")
        if arrays and array.shape[0] != arrays[0].shape[0]:
            raise ValueError(
                f"lists[{i}] has {array.shape[0]} rows (queries), lists[0] has {arrays[0].shape[0]}"
            )
        arrays.append(array)
    n = len(arrays)
    n_queries = arrays[0].shape[0] if arrays else 0
    pad = _int64(pad, "pad")
    o = _options(n, k, weights, window, duplicates, tie_break, offset, limit, min_score, normalize)
    trace = _flag(trace, "trace")
    if threads is not None:
        _integer(threads, "threads", 1)

    # 2. Every row on its own, in order, as rrf with pads for holes; the first error wins.
    pages = []
    for q in range(n_queries):
        rows = [a[q].tolist() for a in arrays]
        try:
            pages.append(_fuse(rows, o, [None] * n, True, is_hole=lambda x: x == pad))
        except ValueError as e:
            raise ValueError(f"row {q}: {e}") from None

    # 3. The arrays.
    if o.limit is None:
        width = max((len(p) for p in pages), default=0)
    else:
        cap = sum(
            min(a.shape[1], o.window or a.shape[1]) for a, w in zip(arrays, o.weights) if w != 0
        )
        width = min(o.limit, cap)
    ids = np.full((n_queries, width), pad, dtype=np.int64)
    scores = np.full((n_queries, width), np.nan, dtype=np.float64)
    counts = np.array([len(p) for p in pages], dtype=np.int64)
    ranks = np.zeros((n_queries, width, n), dtype=np.int32) if trace else None
    contributions = np.zeros((n_queries, width, n), dtype=np.float64) if trace else None
    for q, page in enumerate(pages):
        for j, hit in enumerate(page):
            ids[q, j] = hit.key
            scores[q, j] = hit.score
            if trace:
                for i in range(n):
                    mine = [c for c in hit.contributions if c.list_index == i]
                    if mine:
                        ranks[q, j, i] = mine[0].rank  # the first counted = the best rank
                        contributions[q, j, i] = canonical_sum(c.contribution for c in mine)
    return BatchResult(ids, scores, counts, ranks, contributions)


def rrf_many(
    queries: Iterable[Iterable[Iterable[Hashable]]],
    *,
    k: float = 60,
    weights: Sequence[float] | None = None,
    window: int | None = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: int | None = None,
    min_score: float | None = None,
    normalize: bool = False,
    scores: Sequence[Any] | None = None,
    trace: bool = False,
    threads: int | None = None,
) -> list:
    """``[rrf(lists, **kwargs) for lists in queries]``, with the keyword arguments checked once.

    ``weights`` applies to every query (one per list: a query with another number of lists is a
    ValueError); ``scores``, when given, holds one entry per query, passed as that query's
    ``scores``. A TypeError/ValueError of query q reads "queries[q]: <rrf's message>"; exceptions
    raised by the keys themselves (their __hash__ or __eq__) propagate unchanged.
    """
    queries = _as_list(queries, "queries")
    o = _options(
        None, k, weights, window, duplicates, tie_break, offset, limit, min_score, normalize
    )
    if scores is not None:
        scores = _as_list(scores, "scores")
        if len(scores) != len(queries):
            raise ValueError(f"scores has {len(scores)} entries for {len(queries)} queries")
    trace = _flag(trace, "trace")
    if threads is not None:
        _integer(threads, "threads", 1)
    results = []
    for q, lists in enumerate(queries):
        try:
            hits = rrf(
                lists,
                k=o.k,
                weights=o.weights,
                window=o.window,
                duplicates=o.duplicates,
                tie_break=o.tie_break,
                offset=o.offset,
                limit=o.limit,
                min_score=o.min_score,
                normalize=o.normalize,
                scores=None if scores is None else scores[q],
                trace=trace,
            )
        except (TypeError, ValueError) as e:
            if type(e) not in (TypeError, ValueError):
                raise  # raised by a key (or a list's iterator): unchanged
            raise type(e)(f"queries[{q}]: {e}") from None
        results.append(hits)
    return results


# === Candidate revalidation =======================================================================
# A vector index returns (id, score) candidates that may be stale (soft-deleted, missing, failing
# a filter the index could not apply); revalidation hydrates them against the live store in one
# batched call and keeps their order.


def pool_size(limit: int, filtering: str, multiplier: int = 3) -> int:
    """How many candidates to ask a vector index for, to end with ``limit`` after filtering.

    ``limit`` when the index filters before the scan (``"pre"``); ``limit * multiplier`` for
    ``"post"``, ``"none"`` and anything else (fail safe: widen the pool, filter in-engine).
    ``limit`` is an int >= 0, ``multiplier`` an int >= 1.
    """
    limit = _integer(limit, "limit", 0)
    multiplier = _integer(multiplier, "multiplier", 1)
    if isinstance(filtering, str) and filtering == "pre":
        return limit
    return limit * multiplier


def revalidate(
    candidates: Iterable[tuple[Hashable, float]],
    lookup: Any,
    *,
    where: Callable[[Any], Any] | None = None,
    limit: int | None = None,
) -> list:
    """The live candidates, as (id, record, score) triples, in input order. See docs/semantics.md.

    candidates are (id, score) pairs, never a Mapping; ids are hashable;
    scores are real numbers carried as float (NaN included), never compared. ``lookup`` needs
    ``get`` (a Mapping has one); ``get_many`` must return a Mapping (TypeError otherwise: a bug of
    the lookup, not a failure to fall back on). ``where`` gets the record; its exceptions
    propagate. ``limit`` is None or an int >= 0, and the walk stops once ``limit`` are kept.
    """
    # 1. Arguments, in signature order.
    if isinstance(candidates, Mapping):
        raise TypeError(
            "candidates must be an iterable of (id, score) pairs, not a mapping "
            f"({type(candidates).__name__}): pass mapping.items()"
        )
    ids, scores = [], []
    for i, candidate in enumerate(_as_list(candidates, "candidates")):
        id, score = _pair(candidate, f"candidates[{i}]")
        if not isinstance(id, Hashable):
            raise TypeError(f"candidates[{i}][0] is not hashable: {id!r}")
        ids.append(id)
        scores.append(_real(score, f"candidates[{i}][1]", finite=False))  # carried, never compared
    get = getattr(lookup, "get", None)
    if not callable(get):
        raise TypeError(
            f"lookup must have a get(id) method (or be a Mapping), got {type(lookup).__name__}"
        )
    get_many = getattr(lookup, "get_many", None)
    if get_many is not None and not callable(get_many):
        raise TypeError(f"lookup.get_many must be callable, got {type(get_many).__name__}")
    if where is not None and not callable(where):
        raise TypeError(f"where must be callable or None, got {type(where).__name__} {where!r}")
    if limit is not None:
        limit = _integer(limit, "limit", 0)

    # 2. The plan: the ids de-duplicated in first-seen order (dict semantics: 1 == 1.0 == True).
    unique = list(dict.fromkeys(ids))
    if not unique or limit == 0:
        return []  # nothing to look up: the lookup is not called at all

    # 3. Batch path: ONE call with the unique ids. An Exception raised by it falls back to the
    #    per-id path; a BaseException (KeyboardInterrupt, SystemExit) propagates.
    record_of = None
    if get_many is not None:
        try:
            found = get_many(list(unique))
        except Exception:  # noqa: BLE001, S110 -- any Exception falls back to get()
            pass
        else:
            if not isinstance(found, Mapping):
                raise TypeError(
                    "lookup.get_many must return a mapping id -> record or None, "
                    f"got {type(found).__name__}"
                )
            record_of = {u: found.get(u) for u in unique}  # ids nobody asked for are ignored

    # 4. The rebuild, in input order: every occurrence of a duplicate keeps its own score. The
    #    per-id path calls get() once per candidate; an exception or None drops the candidate.
    #    `where` is called on each live record in turn; the walk stops once `limit` are kept.
    out = []
    for id, score in zip(ids, scores):
        if record_of is not None:
            record = record_of[id]
        else:
            try:
                record = get(id)
            except Exception:  # noqa: BLE001, S112 -- an erroring id is dropped
                continue
        if record is None:
            continue
        if where is not None and not where(record):
            continue
        out.append(Revalidated(id, record, score))
        if len(out) == limit:
            break
    return out


def revalidate_batch(
    ids: Any, scores: Any, is_live: Any, *, limit: int | None = None, pad: int = -1
):
    """The live candidates of Q queries at once. See docs/semantics.md and ``rankfusion.revalidate_batch``.

    ids of any integer dtype whose values fit in int64; scores of any integer or
    float dtype, as float64; ``is_live`` must answer a bool array of one entry per id and is not
    called when there is no id or ``limit`` is 0; the width is ``min(limit, P)``, or the largest
    count without a limit.
    """
    import numpy as np

    # 1. Arguments, in signature order.
    ids = _matrix(ids, "ids", "iu", "an integer array (an integer dtype that fits in int64)")
    if ids.dtype == np.uint64 and ids.size and ids.max() > 2**63 - 1:
        raise ValueError(f"ids must fit in int64, got {ids.max()!r}")
    scores = _matrix(scores, "scores", "iuf", "a real array (integer or float dtype)")
    if scores.shape != ids.shape:
        raise ValueError(f"scores has shape {scores.shape} but ids has shape {ids.shape}")
    if not callable(is_live):
        raise TypeError(f"is_live must be callable, got {type(is_live).__name__} {is_live!r}")
    if limit is not None:
        limit = _integer(limit, "limit", 0)
    if isinstance(pad, bool) or not hasattr(type(pad), "__index__"):
        raise TypeError(f"pad must be an int, got {type(pad).__name__} {pad!r}")
    pad = operator.index(pad)
    if not -(2**63) <= pad < 2**63:
        raise ValueError(f"pad must fit in int64, got {pad}")
    rows = ids.astype(np.int64).tolist()
    score_rows = scores.astype(np.float64).tolist()

    # 2. ONE is_live call with the unique ids of the whole batch, first seen row by row; pads are
    #    never passed. No ids (or limit=0): no call.
    unique = list(dict.fromkeys(x for row in rows for x in row if x != pad))
    alive = set()
    if unique and limit != 0:
        answer = np.asarray(is_live(np.array(unique, dtype=np.int64)))
        if answer.dtype != np.bool_:
            raise TypeError(f"is_live must return a boolean array, got dtype {answer.dtype}")
        if answer.shape != (len(unique),):
            raise ValueError(
                f"is_live must return one bool per id ({len(unique)}), got shape {answer.shape}"
            )
        alive = {x for x, ok in zip(unique, answer.tolist()) if ok}

    # 3. Row q keeps its live candidates in input order, truncated to limit.
    kept = [
        [(x, s) for x, s in zip(row, row_scores) if x != pad and x in alive][:limit]
        for row, row_scores in zip(rows, score_rows)
    ]

    # 4. Padded like rrf_batch: ids with the pad value, scores with NaN. The width is the limit
    #    (at most the number of candidates per row), or the largest count without one.
    n_rows, n_cols = ids.shape
    width = min(limit, n_cols) if limit is not None else max(map(len, kept), default=0)
    out_ids = np.full((n_rows, width), pad, dtype=np.int64)
    out_scores = np.full((n_rows, width), np.nan)
    counts = np.zeros(n_rows, dtype=np.int64)
    for q, row in enumerate(kept):
        counts[q] = len(row)
        out_ids[q, : len(row)] = [x for x, _ in row]
        out_scores[q, : len(row)] = [s for _, s in row]
    return RevalidatedBatch(out_ids, out_scores, counts)
