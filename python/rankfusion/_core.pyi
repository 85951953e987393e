"""Type stubs for the Rust core (``rankfusion._core``). Checked by ``mypy.stubtest`` in the tests."""

import sys
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Optional, TypedDict, final

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

import numpy as np
import numpy.typing as npt

__all__ = [
    "METHODS",
    "NORMS",
    "BatchResult",
    "Contribution",
    "Fusion",
    "Hit",
    "MethodInfo",
    "NormInfo",
    "_fusion",
    "_parse_qrels",
    "_RunFile",
    "_Trace",
    "_fuse_live_pairs",
    "_fuse_run_files",
    "_pairs_union",
    "_join_bytes",
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

class _RRFSettings(TypedDict, total=False):
    """The settings of the RRF functions (``rrf``, ``rrf_batch``, ``rrf_many``): see ``Fusion``."""

    k: float
    weights: Optional[Iterable[float]]
    window: Optional[int]
    duplicates: str
    tie_break: str
    offset: int
    limit: Optional[int]
    min_score: Optional[float]
    normalize: bool
    trace: bool

class _FusionSettings(_RRFSettings, total=False):
    """The settings of a fusion (``Fusion(**settings)``, ``fuse``, ``fuse_batch``): see ``Fusion``."""

    method: str
    norm: Optional[str]
    lower_is_better: Optional[Iterable[bool]]
    phi: Optional[float]
    gamma: Optional[float]
    sigma: Optional[float]
    boost_weight: Optional[float]

@final
class Fusion:
    """The settings of a fusion, checked once when it is made: call it on one query's lists
    (``f(lists, scores=None, boost=None)``), on a batch of id arrays (``f.batch(ids, scores=None,
    pad=-1)``), or on many queries (``f.many(queries)``).

    Immutable, hashable, picklable; ``repr()`` and ``Fusion(**f.to_dict())`` give it back, and
    ``f.replace(**changes)`` a changed copy. Two fusions that compute the same are equal (a
    setting given at its default is the default).

    Settings (docs/semantics.md): ``method`` (default "rrf"; ``rankfusion.METHODS`` lists them),
    ``norm`` (a score-based method's normalisation, default "none"; ``rankfusion.NORMS``), ``k``
    (rrf's constant, default 60), ``weights`` (one finite real per list; weighted methods),
    ``window`` (only the first ``window`` items of each list are read), ``duplicates``
    ("first", "sum", "error"), ``tie_break`` ("best_rank", "key"), ``offset`` and ``limit``
    (the page), ``min_score``, ``normalize`` (rrf only), ``lower_is_better`` (one bool per
    list: lists of distances), ``phi`` (rbc, needed), ``gamma`` (gmnz, needed), ``sigma``
    (logn_isr, default 0.01), ``boost_weight`` (the weight of a call's ``boost``), ``trace``
    (every hit explained).

    Raises FusionTypeError (a TypeError) or FusionError (a ValueError) naming the first bad
    setting, in the order above; a setting the method does not use is an error naming both.
    """

    def __new__(cls, **settings: Unpack[_FusionSettings]) -> Fusion: ...
    def __call__(
        self,
        lists: Iterable[Iterable[Hashable]],
        scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
        boost: Optional[Mapping[Any, float]] = None,
    ) -> list[Hit]:
        """Fuses one query: ``lists`` (iterables of hashable keys, best first), ``scores`` (per
        list None or its raw scores, aligned with it: needed where the method reads them,
        carried into traces otherwise), ``boost`` (key -> finite value, with ``boost_weight``).
        Returns the page of ``Hit``s, best first. Errors: FusionTypeError / FusionError naming
        the input (lists, their number against the settings, scores, boost, in that order);
        exceptions raised by the keys themselves propagate unchanged."""
    def batch(
        self,
        ids: Iterable[Any],
        scores: Optional[Iterable[Any]] = None,
        *,
        pad: int = -1,
        boost: Optional[Mapping[int, float]] = None,
        threads: Optional[int] = None,
    ) -> BatchResult:
        """Fuses Q queries of 2-D integer id arrays (Q, N_i) padded with ``pad`` (and per list
        None or a real score array of the same shape): row q of the result equals the fusion
        of row q of every list, bit for bit. Rows run in parallel on up to ``threads`` threads
        with the GIL released. An error of row q is located there (``row q: ...``)."""
    def many(
        self,
        queries: Iterable[Iterable[Iterable[Hashable]]],
        *,
        scores: Optional[Iterable[Any]] = None,
        threads: Optional[int] = None,
    ) -> list[list[Hit]]:
        """``[f(lists, scores=scores[q]) for q, lists in enumerate(queries)]``; an error of
        query q is located there (``queries[q]: ...``)."""
    def check(self, n_lists: int) -> None:
        """Checks the settings against a call of ``n_lists`` lists, as every call does first."""
    def to_dict(self) -> dict[str, Any]:
        """The settings that differ from the defaults (and ``method``), JSON-ready."""
    def replace(self, **changes: Any) -> Fusion:
        """A copy with some settings changed; a setting given as None goes back to its default."""
    @property
    def method(self) -> str: ...
    @property
    def norm(self) -> Optional[str]:
        """The normalisation asked for (None: the method's own, or none)."""
    @property
    def norm_in_effect(self) -> str:
        """The normalisation in effect: the method's own, the one asked for, or "none"."""
    @property
    def k(self) -> float: ...
    @property
    def weights(self) -> Optional[tuple[float, ...]]: ...
    @property
    def window(self) -> Optional[int]: ...
    @property
    def duplicates(self) -> str: ...
    @property
    def tie_break(self) -> str: ...
    @property
    def offset(self) -> int: ...
    @property
    def limit(self) -> Optional[int]: ...
    @property
    def min_score(self) -> Optional[float]: ...
    @property
    def normalize(self) -> bool: ...
    @property
    def lower_is_better(self) -> Optional[tuple[bool, ...]]: ...
    @property
    def phi(self) -> Optional[float]: ...
    @property
    def gamma(self) -> Optional[float]: ...
    @property
    def sigma(self) -> Optional[float]: ...
    @property
    def boost_weight(self) -> Optional[float]: ...
    @property
    def trace(self) -> bool: ...
    @property
    def reads_scores(self) -> bool:
        """Whether a call needs scores for every list it reads."""

def _fusion(settings: Mapping[str, Any]) -> Fusion: ...

@final
class MethodInfo:
    """One row of ``METHODS``: what a method reads, takes and computes."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str:
        """ "rank" (its values come from the ranks) or "score" (from the lists' scores)."""
    @property
    def weighted(self) -> bool: ...
    @property
    def params(self) -> tuple[str, ...]:
        """The parameters it takes besides the weights."""
    @property
    def norm(self) -> Optional[str]:
        """The normalisation it applies itself, or None."""
    @property
    def fills(self) -> bool:
        """Whether a list that does not hold a key still gives it a term."""
    @property
    def term(self) -> str:
        """What one occurrence adds (``w`` weight, ``v`` normalised value, ``r`` rank)."""
    @property
    def combine(self) -> str:
        """How a key's terms become its score."""
    @property
    def anchor(self) -> str: ...
    @property
    def traced(self) -> bool:
        """Whether ``rankfusion.optimize`` scores its settings from one traced fusion (a sum of
        terms of one list's rank or value each, perhaps times a factor of the lists holding
        the key)."""

@final
class NormInfo:
    """One row of ``NORMS``."""

    @property
    def name(self) -> str: ...
    @property
    def reads_scores(self) -> bool: ...

METHODS: MappingProxyType[str, MethodInfo]
"""The fusion methods by name (read-only)."""
NORMS: MappingProxyType[str, NormInfo]
"""The normalisations by name (read-only)."""

def rrf(
    lists: Iterable[Iterable[Hashable]],
    *,
    scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
    **settings: Unpack[_RRFSettings],
) -> list[Hit]:
    """Reciprocal Rank Fusion of ranked lists (each best first): ``Fusion(**settings)(lists,
    scores)`` with RRF's settings (see ``Fusion``).

    Every counted occurrence of a key at rank r (1-based position in the list as given) of list
    i contributes weights[i] / (k + r); a key's score is the sum of its contributions added in
    ascending order of value from 0.0, so list order never changes a score's bits. Hits are
    ordered by score descending, ties by first appearance in the interleaved scan (or by key
    with tie_break="key"). ``scores`` are carried into traces only. Returns a list of ``Hit``,
    best first. Errors: as ``Fusion``'s; the whole contract: docs/semantics.md.
    """

def fuse(
    lists: Iterable[Iterable[Hashable]],
    *,
    scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
    boost: Optional[Mapping[Any, float]] = None,
    **settings: Unpack[_FusionSettings],
) -> list[Hit]:
    """Fusion of ranked lists (each best first) by any method: ``Fusion(**settings)(lists,
    scores, boost)`` (see ``Fusion``). Returns a list of ``Hit``, best first."""

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
    threads: Optional[int] = None,
    **settings: Unpack[_RRFSettings],
) -> BatchResult:
    """RRF of Q queries at once over 2-D integer id arrays (Q, N_i) padded with ``pad``:
    ``Fusion(**settings).batch(lists, pad=pad, threads=threads)`` (without ``normalized``)."""

def fuse_batch(
    ids: Iterable[Any],
    scores: Optional[Iterable[Any]] = None,
    *,
    pad: int = -1,
    boost: Optional[Mapping[int, float]] = None,
    threads: Optional[int] = None,
    **settings: Unpack[_FusionSettings],
) -> BatchResult:
    """``Fusion(**settings).batch(ids, scores, pad=pad, boost=boost, threads=threads)``: row q
    equals ``fuse`` of row q."""

def rrf_many(
    queries: Iterable[Iterable[Iterable[Hashable]]],
    *,
    scores: Optional[Iterable[Any]] = None,
    threads: Optional[int] = None,
    **settings: Unpack[_RRFSettings],
) -> list[list[Hit]]:
    """``Fusion(**settings).many(queries, scores=scores)``: ``[rrf(lists, **settings) for lists
    in queries]`` with the settings checked once."""

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

def _fuse_run_files(files: Sequence[_RunFile], fusion: Fusion, *, tag: bytes) -> bytes:
    """The bytes ``write_run(fuse(runs, fusion), tag=tag)`` writes for the runs ``files`` hold."""

def _join_bytes(chunks: Sequence[bytes]) -> bytes:
    """``b"".join(chunks)``, copied with the GIL released and Ctrl-C checked between chunks."""

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

def _fuse_live_pairs(searches: Sequence[Any], alive: Any, window: int, fusion: Fusion) -> list[Hit]:
    """``fusion`` of each search's candidates whose id is ``in alive``, up to ``window`` per
    list."""

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
        settings: Sequence[Any],
        *,
        cutoff: Optional[int] = None,
        threads: Optional[int] = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """S settings (each a ``Fusion`` of the traced method, or its settings as a dict) scored
        from the trace, with the GIL released. Returns ``(counts (S, Q), ids, scores)``: each
        setting's rows as ``Fusion.batch`` fuses them (same order, same bits), each cut at
        ``cutoff`` (its hits whose score as a C float is at least its cutoff-th's) when given.
        A setting that the checker refuses, that cannot be scored from a trace, or that cannot be
        fused raises FusionError / FusionTypeError with ``setting_index`` set to its index."""

# Private helpers of rankfusion.compare (not part of the API; rust/py/compare.rs). Their
# argument errors are FusionTypeError / FusionError naming the argument, as the API's.
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
) -> tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]:
    """``(delta, p, effect_size, low, high, wins, ties, losses)``: the paired test of row t of
    ``x`` (T, n) against row t of ``y``, drawing from stream ``streams[t]`` of ``seed``, with
    the GIL released (NaN where undefined: docs/semantics.md, "Comparing runs"). FusionTypeError
    for an argument of a wrong type; FusionError for a value the core refuses (shapes that do
    not agree, ``permutations`` outside 1..2**40, ``confidence`` outside (0, 1), the t-test with
    one query; a value that is not finite, at ``list`` = its row and ``rank`` = its query + 1);
    KeyboardInterrupt when interrupted."""

def _correct(p: npt.NDArray[np.float64], method: str) -> npt.NDArray[np.float64]:
    """The family ``p`` corrected by ``method`` (one of ``_CORRECTIONS``), in order."""

def _row_means(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row's values added left to right from 0.0, over their number. FusionError when
    ``values`` has no columns."""

def _exact(n: int, permutations: int) -> bool:
    """Whether the randomization test of n queries enumerates every sign vector
    (``2**n <= permutations``)."""

__all__ += [
    "_CORRECTIONS",
    "_MAX_PERMUTATIONS",
    "_TESTS",
    "_correct",
    "_exact",
    "_paired_tests",
    "_row_means",
]
