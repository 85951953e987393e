"""Type stubs for the Rust core (``rankfusion._core``). Checked by ``mypy.stubtest`` in the tests."""

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Optional, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "BatchResult",
    "Contribution",
    "Hit",
    "TrecFormatError",
    "_parse_qrels",
    "_RunFile",
    "_Trace",
    "_METHODS",
    "_NORMS",
    "_fuse_live_pairs",
    "_fuse_run_files",
    "_pairs_union",
    "_parse_run",
    "_parse_run_files",
    "_run_lines",
    "fuse",
    "rrf",
    "fuse_batch",
    "rrf_batch",
    "rrf_many",
]

@final
class Contribution(tuple[int, int, float, float, Optional[float]]):
    """What one list gave a hit: the tuple ``(list_index, rank, weight, contribution, score)``.

    ``rank`` is the 1-based position in list ``list_index`` (0 for a list that does not hold the
    key but still gives it a value: borda's unranked share, a mean's zero); ``score`` the list's
    raw score (None where unknown) and ``normalized`` (an attribute, not unpacked) what the
    method's normalisation made of it. ``Contribution(list_index, rank, weight, contribution,
    score=None, normalized=None)`` checks them (list_index an int >= 0, rank an int >= 0, the
    others reals).
    """

    @property
    def list_index(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def weight(self) -> float: ...
    @property
    def contribution(self) -> float: ...
    @property
    def score(self) -> Optional[float]:
        """The list's own raw score for this item, when ``scores=`` was passed."""
    @property
    def normalized(self) -> Optional[float]:
        """The value the normalisation gave it (score-based methods), else None."""
    def __new__(
        cls,
        list_index: int,
        rank: int,
        weight: float,
        contribution: float,
        score: Optional[float] = None,
        normalized: Optional[float] = None,
    ) -> Contribution: ...
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``score`` and ``normalized`` only where known."""

@final
class Hit(tuple[Any, float]):
    """A fused hit: the tuple ``(key, score)``; its trace (``contributions``, ``factor``,
    ``divisor``, ``boost``) is None unless ``trace=True``.

    ``Hit(key, score, contributions=None, factor=None, divisor=None, boost=None)`` checks its
    fields (a hashable key, real score/factor/divisor/boost, a tuple of Contribution).
    """

    @property
    def key(self) -> Any: ...
    @property
    def score(self) -> float: ...
    @property
    def contributions(self) -> Optional[tuple[Contribution, ...]]: ...
    @property
    def factor(self) -> Optional[float]:
        """What the method multiplied the sum of the contributions by (mnz's |present|, ...)."""
    @property
    def divisor(self) -> Optional[float]:
        """What the method divided it by (anz's |present|, a mean's weight sum, ...)."""
    @property
    def boost(self) -> Optional[float]:
        """What the boost added (``boost_weight * (v - min) / (max - min)``)."""
    def __new__(
        cls,
        key: Any,
        score: float,
        contributions: Optional[Iterable[Contribution]] = None,
        factor: Optional[float] = None,
        divisor: Optional[float] = None,
        boost: Optional[float] = None,
    ) -> Hit: ...
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: ``key``, ``score`` and, when traced, the rest of the trace."""

def rrf(
    lists: Iterable[Iterable[Hashable]],
    *,
    k: float = 60,
    weights: Optional[Iterable[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
    trace: bool = False,
) -> list[Hit]:
    """Reciprocal Rank Fusion of ranked lists (each best first).

    Every counted occurrence of a key at rank r (1-based position in the list as given) of list i
    contributes weights[i] / (k + r). A key's score is the sum of its contributions added in
    ascending order of value from 0.0, so list order never changes a score's bits. Hits are
    ordered by score descending; ties by first appearance in the interleaved scan (rank 1 of every
    list, then rank 2, ...) or, with tie_break="key", by the key ascending.

    Args:
        lists: iterables of hashable keys (dict semantics: 1, 1.0 and True are one key).
        k: finite real >= 0.
        weights: one finite real per list (default 1.0); a list of weight 0 is skipped entirely.
        window: read only the first `window` items of each list (int >= 1).
        duplicates: "first" (only the best occurrence in a list counts), "sum" (all count) or
            "error" (ValueError).
        tie_break: "best_rank" or "key".
        offset, limit: the page of the ordered hits (after min_score).
        min_score: drop hits whose returned score is below it.
        normalize: divide scores by the best possible score (sum of w/(k+1) over positive weights).
        scores: per list, its raw scores (reals, not NaN; or None for the list), aligned with the
            list; carried into traces only.
        trace: give every hit its contributions.

    Returns:
        A list of Hit, best first; a hit unpacks as (key, score).

    Raises:
        TypeError: an argument of the wrong type, an unhashable key, incomparable tied keys with
            tie_break="key". The message names the argument.
        ValueError: a wrong value (negative or non-finite k, weights of the wrong length or not
            finite, window < 1, negative offset/limit, unknown duplicates/tie_break, normalize
            without a positive weight, a repeated key with duplicates="error",
            a score overflowing to infinity).
        Exceptions raised by a key's __hash__ or __eq__ propagate unchanged. Empty input (no lists,
        or only empty lists) is not an error: it gives [].
    """

def fuse(
    lists: Iterable[Iterable[Hashable]],
    *,
    method: str = "rrf",
    norm: Optional[str] = None,
    k: float = 60,
    weights: Optional[Iterable[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
    lower_is_better: Optional[Iterable[bool]] = None,
    phi: Optional[float] = None,
    gamma: Optional[float] = None,
    sigma: Optional[float] = None,
    boost: Optional[Mapping[Any, float]] = None,
    boost_weight: Optional[float] = None,
    trace: bool = False,
) -> list[Hit]:
    """Fusion of ranked lists (each best first) by ``method``: RRF and the rank- and score-based
    methods of ranx, Elasticsearch, OpenSearch, Qdrant and Weaviate, traced.

    Every formula and edge case: docs/semantics.md, "Fusion methods". ``rrf(...)`` equals
    ``fuse(..., method="rrf")``.

    Args:
        lists: iterables of hashable keys, best first; a key's rank is its 1-based position.
        method: rank-based "rrf", "rbc", "isr", "log_isr", "logn_isr", "bordafuse",
            "condorcet"; score-based "sum", "wsum", "mnz", "anz", "gmnz", "max", "min", "med",
            "wmnz", "mixed", "dbsf", "relative_score", "arithmetic_mean", "geometric_mean",
            "harmonic_mean".
        norm: a score-based method's normalisation: "none", "min-max", "max", "sum",
            "z-score", "l2", "rank", "borda", "dbsf" (dbsf and relative_score have their own).
        k: rrf's constant. weights: one finite real per list, weighted methods only.
        window, duplicates, tie_break, offset, limit, min_score: as rrf's. normalize: rrf only.
        scores: per list its raw scores aligned with the list, or None: reals, not NaN,
            finite where the method reads them (score-based methods).
        lower_is_better: per list, True when its scores are distances.
        phi: rbc's persistence (0 <= phi < 1). gamma: gmnz's exponent. sigma: logn_isr's
            (0 <= sigma <= 1, default 0.01).
        boost, boost_weight: key -> finite value, and its weight (both or neither).
        trace: give every hit its contributions, factor, divisor and boost.

    Returns:
        A list of Hit, best first.

    Raises:
        TypeError / ValueError naming the argument, as rrf. A parameter given to a method that
        does not use it is a ValueError naming both; so is a score-based method without the
        scores it reads, and a fused, normalised or boosted score that is not finite.
    """

# --- Candidate revalidation ------------------------------------------------------------------------

__all__ += ["Revalidated", "RevalidatedBatch", "pool_size", "revalidate", "revalidate_batch"]

@final
class Revalidated(tuple[Any, Any, float]):
    """A live candidate: the tuple ``(id, record, score)``."""

    @property
    def id(self) -> Any: ...
    @property
    def record(self) -> Any: ...
    @property
    def score(self) -> float: ...
    def __new__(cls, id: Any, record: Any, score: float) -> Revalidated: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class RevalidatedBatch(tuple[Any, Any, Any]):
    """The live candidates of a batch: the tuple ``(ids, scores, counts)``."""

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """(Q, W) int64, padded with the pad value."""
    @property
    def scores(self) -> npt.NDArray[np.float64]:
        """(Q, W) float64, padded with NaN."""
    @property
    def counts(self) -> npt.NDArray[np.int64]:
        """(Q,) int64: the live candidates kept in each row."""
    def __new__(cls, ids: Any, scores: Any, counts: Any) -> RevalidatedBatch: ...

def pool_size(limit: int, filtering: str, multiplier: int = 3) -> int:
    """``limit`` for ``"pre"`` filtering, else ``limit * multiplier``."""

def revalidate(
    candidates: Iterable[tuple[Hashable, float]],
    lookup: Any,
    *,
    where: Optional[Callable[[Any], Any]] = None,
    limit: Optional[int] = None,
) -> list[Revalidated]:
    """The live candidates, as (id, record, score) triples, in input order."""

def revalidate_batch(
    ids: npt.ArrayLike,
    scores: npt.ArrayLike,
    is_live: Callable[[npt.NDArray[np.int64]], npt.ArrayLike],
    *,
    limit: Optional[int] = None,
    pad: int = -1,
) -> RevalidatedBatch:
    """The live candidates of Q queries at once: ONE ``is_live`` call for the whole batch."""

# --- end of Candidate revalidation ----------------------------------------------------------------

# --- Batched fusion ----------------------------------------------------------------------------

@final
class BatchResult(tuple[Any, Any, Any]):
    """The result of ``rrf_batch`` and ``fuse_batch``: the tuple ``(ids, scores, counts)``."""

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """(Q, W) int64, padded with the pad value."""
    @property
    def scores(self) -> npt.NDArray[np.float64]:
        """(Q, W) float64, padded with NaN."""
    @property
    def counts(self) -> npt.NDArray[np.int64]:
        """(Q,) int64: the number of real hits of each row."""
    @property
    def ranks(self) -> Optional[npt.NDArray[np.int32]]:
        """(Q, W, L) int32 with trace=True: the hit's best rank in list l, 0 where absent."""
    @property
    def contributions(self) -> Optional[npt.NDArray[np.float64]]:
        """(Q, W, L) float64 with trace=True: the hit's contribution from list l, 0.0 if absent."""
    @property
    def normalized(self) -> Optional[npt.NDArray[np.float64]]:
        """(Q, W, L) float64 with fuse_batch's trace: the normalised value in list l."""
    def __new__(
        cls,
        ids: Any,
        scores: Any,
        counts: Any,
        ranks: Any = None,
        contributions: Any = None,
        normalized: Any = None,
    ) -> BatchResult: ...

def rrf_batch(
    lists: Iterable[Any],
    *,
    pad: int = -1,
    k: float = 60,
    weights: Optional[Iterable[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    trace: bool = False,
    threads: Optional[int] = None,
) -> BatchResult:
    """RRF of Q queries at once over 2-D integer id arrays (Q, N_i) padded with ``pad``."""

def fuse_batch(
    ids: Iterable[Any],
    scores: Optional[Iterable[Any]] = None,
    *,
    pad: int = -1,
    method: str = "rrf",
    norm: Optional[str] = None,
    k: float = 60,
    weights: Optional[Iterable[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    lower_is_better: Optional[Iterable[bool]] = None,
    phi: Optional[float] = None,
    gamma: Optional[float] = None,
    sigma: Optional[float] = None,
    boost: Optional[Mapping[int, float]] = None,
    boost_weight: Optional[float] = None,
    trace: bool = False,
    threads: Optional[int] = None,
) -> BatchResult:
    """``fuse`` of Q queries at once over 2-D integer id arrays (Q, N_i) padded with ``pad``
    and, per list, None or a (Q, N_i) real score array: row q equals ``fuse`` of row q."""

def rrf_many(
    queries: Iterable[Iterable[Iterable[Hashable]]],
    *,
    k: float = 60,
    weights: Optional[Iterable[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    scores: Optional[Iterable[Any]] = None,
    trace: bool = False,
    threads: Optional[int] = None,
) -> list[list[Hit]]:
    """``[rrf(lists, **kwargs) for lists in queries]`` in one call, in parallel."""

_METHODS: tuple[str, ...]  # the fusion methods' names, as `fuse` accepts them
_NORMS: tuple[str, ...]  # the normalisations' names

class TrecFormatError(ValueError):
    """A run or qrels file that cannot be read: names the file and, where it applies, the line.

    Attributes: ``path`` (the file as given), ``line`` (1-based line number, or None when the
    problem is the file as a whole, e.g. it is empty or its gzip data are corrupt) and ``reason``.
    """

    path: str
    line: Optional[int]
    reason: str
    def __init__(self, path: Any, line: Optional[int], reason: str) -> None: ...

# Private helpers of rankfusion.trec (not part of the API).
@final
class _RunFile:
    """A run file parsed for ``_fuse_run_files``: its bytes and its queries' byte ranges."""

    def __len__(self) -> int: ...
    def qids(self) -> list[str]:
        """The query ids in order of first appearance, decoded as ``read_run`` decodes them."""

def _parse_run_files(
    datas: Sequence[bytes], paths: Sequence[str], order: str, duplicates: str
) -> list[Any]:
    """Per file, in order, a ``_RunFile`` or the ``TrecFormatError`` ``read_run`` raises."""

def _fuse_run_files(
    files: Sequence[_RunFile],
    *,
    method: str = "rrf",
    norm: Optional[str] = None,
    k: float = 60,
    weights: Optional[Sequence[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    limit: Optional[int] = None,
    lower_is_better: Optional[Sequence[bool]] = None,
    phi: Optional[float] = None,
    gamma: Optional[float] = None,
    sigma: Optional[float] = None,
    tag: bytes,
) -> bytes:
    """The bytes ``write_run(fuse(runs, ...), tag=tag)`` writes for the runs ``files`` hold."""

def _parse_run(
    data: bytes, path: str, order: str, duplicates: str
) -> list[tuple[str, list[str], list[float]]]: ...
def _parse_qrels(data: bytes, path: str, duplicates: str) -> dict[str, dict[str, int]]: ...
def _run_lines(
    qid: str, docids: Sequence[Any], scores: Optional[Sequence[Any]], tag: str
) -> Optional[str]: ...

# Private helpers of rankfusion.hybrid (not part of the API).
def _pairs_union(searches: Sequence[Any]) -> Optional[list[Any]]:
    """The ids of every search's candidates, each once, in first-seen order, when every search
    is a list of ``(id, float)`` tuples with hashable ids; else None."""

def _fuse_live_pairs(
    searches: Sequence[Any],
    alive: Any,
    window: int,
    *,
    k: float,
    weights: Optional[Sequence[float]],
    limit: Optional[int],
    trace: bool,
) -> list[Hit]:
    """``rrf`` of each search's candidates whose id is ``in alive``, up to ``window`` per list."""

# Private helper of rankfusion.optimize (not part of the API).
@final
class _Trace:
    """A traced fusion of Q queries held in the core: ``fuse_batch(..., trace=True)`` with
    weight 1 for every list, as its ``ids`` (Q, W), ``counts`` (Q,), ``ranks`` (Q, W, L) and,
    for score-based methods, ``normalized`` (Q, W, L) (copied in). ValueError for arrays whose
    shapes do not agree, TypeError for a wrong dtype."""

    def __new__(
        cls,
        ids: npt.ArrayLike,
        counts: npt.ArrayLike,
        ranks: npt.ArrayLike,
        normalized: Optional[npt.ArrayLike] = None,
    ) -> _Trace: ...
    def combine(
        self,
        method: str,
        norm: Optional[str],
        weights: Optional[npt.ArrayLike],
        values: Optional[npt.ArrayLike],
        *,
        limit: Optional[int] = None,
        cutoff: Optional[int] = None,
        threads: Optional[int] = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """S settings of ``method`` scored from the trace, with the GIL released: ``weights``
        (S, L) (None: 1.0 each), ``values`` (S,) the method's k, phi, gamma or sigma. Returns
        ``(counts (S, Q), ids, scores)``: each setting's rows as ``fuse_batch`` fuses them (same
        order, same bits), each cut at ``cutoff`` (its hits whose score as a C float is at least
        its cutoff-th's) when given. ValueError ``"settings[s]: ..."`` for the first setting
        that ``fuse`` refuses or that cannot be scored from a trace."""

# Private helpers of rankfusion.compare (not part of the API; rust/py/compare.rs).
_TESTS: tuple[str, ...]  # the paired tests' names
_CORRECTIONS: tuple[str, ...]  # the corrections' names
_MAX_PERMUTATIONS: int

def _paired_tests(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    streams: npt.NDArray[np.uint64],
    *,
    test: str,
    permutations: int,
    seed: int,
    confidence: float,
    threads: Optional[int] = None,
) -> tuple[npt.NDArray[Any], ...]:
    """``(delta, p, effect_size, low, high, wins, ties, losses)``: the paired test of row t of
    ``x`` against row t of ``y``, drawing from stream ``streams[t]`` (NaN where undefined)."""

def _correct(p: npt.NDArray[np.float64], method: str) -> npt.NDArray[np.float64]:
    """The family ``p`` corrected by ``method``."""

def _row_means(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row's values added left to right from 0.0, over their number."""

def _exact(n: int, permutations: int) -> bool:
    """Whether the randomization test of n queries enumerates every sign vector."""

__all__ += [
    "_CORRECTIONS",
    "_MAX_PERMUTATIONS",
    "_TESTS",
    "_correct",
    "_exact",
    "_paired_tests",
    "_row_means",
]
