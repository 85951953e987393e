"""Type stubs for the Rust core (``rankfusion._core``). Checked by ``mypy.stubtest`` in the tests."""

import sys
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Optional, TypedDict, final

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

import numpy as np
import numpy.typing as npt

__all__ = [
    "BatchResult",
    "Contribution",
    "Fusion",
    "Hit",
    "_fusion",
    "_METHOD_ROWS",
    "_NORM_ROWS",
    "_parse_qrels",
    "_RunFile",
    "_Trace",
    "_fuse_live_pairs",
    "_fuse_run_files",
    "_pairs_union",
    "_join_bytes",
    "_read_file",
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
    """What one list gave a hit: the tuple `(list_index, rank, weight, contribution, score)`.

    `rank` is the 1-based position in list `list_index` (0 for a list that does not hold the
    key but still gives it a value: borda's unranked share, a mean's zero); `score` the list's
    raw score (None where unknown) and `normalized` (an attribute, not unpacked) what the
    method's normalisation made of it. `Contribution(list_index, rank, weight, contribution,
    score=None, normalized=None)` checks them (list_index an int >= 0, rank an int >= 0, the
    others reals).
    """

    @property
    def list_index(self) -> int:
        """The list (0-based)."""
    @property
    def rank(self) -> int:
        """The 1-based rank in that list, 0 when the key is not in it."""
    @property
    def weight(self) -> float:
        """The list's weight."""
    @property
    def contribution(self) -> float:
        """The term the method adds (RRF: weight / (k + rank))."""
    @property
    def score(self) -> Optional[float]:
        """The list's own raw score for this item, when `scores=` was passed, else None."""
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
    """A fused hit: the tuple `(key, score)`; its trace (`contributions`, `factor`, `divisor`,
    `boost`) is None unless `trace=True`.

    `Hit(key, score, contributions=None, factor=None, divisor=None, boost=None)` checks its
    fields (a hashable key, real score/factor/divisor/boost, a tuple of Contribution).
    """

    @property
    def key(self) -> Any:
        """The key, as first met in the lists."""
    @property
    def score(self) -> float:
        """The fused score."""
    @property
    def contributions(self) -> Optional[tuple[Contribution, ...]]:
        """The key's `Contribution`s by list then rank, with trace=True."""
    @property
    def factor(self) -> Optional[float]:
        """What the method multiplied the sum of the contributions by (mnz's |present|, ...)."""
    @property
    def divisor(self) -> Optional[float]:
        """What the method divided it by (anz's |present|, a mean's weight sum, ...)."""
    @property
    def boost(self) -> Optional[float]:
        """What the boost added (`boost_weight * (v - min) / (max - min)`)."""
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

__all__ += ["_result", "_real", "_count", "_tuple", "_result_shapes"]

def _result(cls: type[Any], fields: Iterable[Any]) -> Any:
    """The result of type `cls` (a result type) with these fields, as they are: the checked
    constructor's last step (`Hit(...)`, rankfusion/_results.py). Fields left out are None.
    """

def _real(value: Any, name: str) -> float:
    """A real field of a result (`Hit.score`) as a float: the binding's conversion of a real, for
    the constructors of rankfusion/_results.py.
    """

def _count(value: Any, name: str) -> Any:
    """A count field of a result (`Contribution.rank`): an int >= 0, kept as given."""

def _tuple(value: Any, name: str) -> tuple[Any, ...]:
    """A tuple field of a result (`Hit.contributions`): any iterable but a str, as a tuple."""

def _result_shapes(
    ids: Sequence[int],
    scores: Sequence[int],
    counts: Sequence[int],
    traced: Sequence[tuple[str, Sequence[int]]],
) -> None:
    """The shapes of a batch result's arrays, as `crate::batch::check_result_shapes` checks them
    (`traced`: (name, shape) of each trace array given).
    """

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
    (`f(lists, scores=None, boost=None)`), on a batch of id arrays (`f.batch(ids, scores=None,
    pad=-1)`), or on many queries (`f.many(queries)`).

    Immutable, hashable, picklable; `repr()` and `Fusion(**f.to_dict())` give it back, and
    `f.replace(**changes)` a changed copy. Two fusions that compute the same are equal (a
    setting given at its default is the default).

    Settings (docs/semantics.md): `method` (default "rrf"; `rankfusion.METHODS` lists them),
    `norm` (a score-based method's normalisation, default "none"; `rankfusion.NORMS`), `k`
    (rrf's constant, default 60), `weights` (one finite real per list; weighted methods),
    `window` (only the first `window` items of each list are read), `duplicates` ("first",
    "sum", "error"), `tie_break` ("best_rank", "key"), `offset` and `limit` (the page),
    `min_score`, `normalize` (rrf only), `lower_is_better` (one bool per list: lists of
    distances), `phi` (rbc, needed), `gamma` (gmnz, needed), `sigma` (logn_isr, default 0.01),
    `boost_weight` (the weight of a call's `boost`), `trace` (every hit explained).

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
        """Fuses Q queries at once from id arrays: `ids` per list a 2-D integer array (Q, N_i)
        padded with `pad`, `scores` None or per list None or a real array of the same shape,
        `boost` a mapping id -> finite value. Row q of the result equals the fusion of row q of
        every list, bit for bit (docs/batch.md). Rows run in parallel on up to `threads` threads
        (default: every CPU) with the GIL released. Returns a `BatchResult`.
        """
    def many(
        self,
        queries: Iterable[Iterable[Iterable[Hashable]]],
        *,
        scores: Optional[Iterable[Any]] = None,
        threads: Optional[int] = None,
    ) -> list[list[Hit]]:
        """Fuses many queries of any keys: `[f(lists, scores=scores[q]) for q, lists in
        enumerate(queries)]`, one after the other (`threads` is only checked). An error of query
        q is located there (`queries[q]: ...`).
        """
    def check(self, n_lists: int) -> None:
        """Checks the settings against a call of `n_lists` lists, as every call does first: one
        weight and one `lower_is_better` flag per list, normalize's divisor. For callers that
        fuse many queries of the same lists (run files, tables) and want the error up front.
        """
    def to_dict(self) -> dict[str, Any]:
        """The settings that differ from the defaults (and `method`), as plain JSON-ready data:
        `Fusion(**f.to_dict()) == f`.
        """
    def replace(self, **changes: Any) -> Fusion:
        """A copy with some settings changed (checked as `Fusion(**f.to_dict(), **changes)`); a
        setting given as None goes back to its default.
        """
    @property
    def method(self) -> str:
        """The method's name."""
    @property
    def norm(self) -> Optional[str]:
        """The normalisation asked for (None: the method's own, or none)."""
    @property
    def norm_in_effect(self) -> str:
        """The normalisation in effect: the method's own, the one asked for, or "none"."""
    @property
    def k(self) -> float:
        """RRF's constant (60 unless given)."""
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
    def sigma(self) -> Optional[float]:
        """logn_isr's sigma (0.01 unless given); None for the other methods."""
    @property
    def boost_weight(self) -> Optional[float]: ...
    @property
    def trace(self) -> bool: ...
    @property
    def reads_scores(self) -> bool:
        """Whether a call needs scores for every list it reads (a score-based method whose
        normalisation reads them).
        """

def _fusion(settings: Mapping[str, Any]) -> Fusion:
    """`Fusion(**settings)`, for pickle."""

_METHOD_ROWS: tuple[
    tuple[str, str, bool, tuple[str, ...], Optional[str], bool, str, str, str, bool], ...
]
_NORM_ROWS: list[tuple[str, bool]]

def rrf(
    lists: Iterable[Iterable[Hashable]],
    *,
    scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
    **settings: Unpack[_RRFSettings],
) -> list[Hit]:
    """Reciprocal Rank Fusion of ranked lists (each best first): `Fusion(**settings)(lists,
    scores)` with RRF's settings (`k`, `weights`, `window`, `duplicates`, `tie_break`, `offset`,
    `limit`, `min_score`, `normalize`, `trace`: see `Fusion`).

    Every counted occurrence of a key at rank r (1-based position in the list as given) of list
    i contributes weights[i] / (k + r); a key's score is the sum of its contributions added in
    ascending order of value from 0.0, so list order never changes a score's bits. Hits are
    ordered by score descending, ties by first appearance in the interleaved scan (or by key
    with tie_break="key"). `scores` (per list None or raw scores aligned with it) are carried
    into traces only. Returns a list of `Hit`, best first. Errors: as `Fusion`'s; the whole
    contract: docs/semantics.md.
    """

def fuse(
    lists: Iterable[Iterable[Hashable]],
    *,
    scores: Optional[Iterable[Optional[Iterable[float]]]] = None,
    boost: Optional[Mapping[Any, float]] = None,
    **settings: Unpack[_FusionSettings],
) -> list[Hit]:
    """Fusion of ranked lists (each best first) by any method: `Fusion(**settings)(lists, scores,
    boost)` (the settings: see `Fusion`). Returns a list of `Hit`, best first.
    """

# --- Candidate revalidation ------------------------------------------------------------------------

__all__ += ["Revalidated", "RevalidatedBatch", "pool_size", "revalidate", "revalidate_batch"]

@final
class Revalidated(tuple[Any, Any, float]):
    """A live candidate: the tuple `(id, record, score)`."""

    @property
    def id(self) -> Any:
        """The candidate's id."""
    @property
    def record(self) -> Any:
        """The live record the lookup returned."""
    @property
    def score(self) -> float:
        """The candidate's score, as given."""
    def __new__(cls, id: Any, record: Any, score: float) -> Revalidated: ...
    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``id``, ``record`` and ``score``."""

@final
class RevalidatedBatch(tuple[Any, Any, Any]):
    """The live candidates of a batch: the tuple `(ids, scores, counts)`."""

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
    """How many candidates to ask a vector index for, to end with `limit` hits after filtering.

    `limit` when the index filters before the scan (`filtering == "pre"`); `limit * multiplier`
    for `"post"`, `"none"` and anything else, a non-str included (fail safe: widen the pool and
    filter in-engine). `limit` is an int >= 0 and `multiplier` an int >= 1 (bool rejected); the
    result is exact for any size.
    """

def revalidate(
    candidates: Iterable[tuple[Hashable, float]],
    lookup: Any,
    *,
    where: Optional[Callable[[Any], Any]] = None,
    limit: Optional[int] = None,
) -> list[Revalidated]:
    """The live candidates, as (id, record, score) triples, in input order (docs/semantics.md, "Candidate
    revalidation").

    - `candidates`: an iterable of (id, score) pairs, best first, as the index returned them
      (a Mapping is rejected: pass `mapping.items()`). Ids are hashable, with dict semantics
      (`1`, `1.0` and `True` are one id); scores are real numbers, carried as float and never
      compared, so NaN and infinities pass through.
    - `lookup`: an object with `get(id)` (a Mapping qualifies; a missing key drops the candidate)
      and optionally `get_many(ids)`. When `get_many` exists it is called ONCE with a fresh list of
      the unique ids in first-seen order and must return a Mapping id -> record or None (anything
      else is a TypeError: a bug of the lookup); ids it holds but nobody asked for are ignored. If
      it raises an `Exception`, `get` is called once per candidate instead, duplicates included; an
      `Exception` from `get` drops that candidate. BaseExceptions (KeyboardInterrupt, SystemExit)
      always propagate. A None record drops the candidate.
    - Every occurrence of a duplicate id is kept with its own score, in input order, never
      re-sorted; each result carries the candidate's own id object.
    - `where(record)`: the in-engine filter, called on each live record in input order; a falsy
      answer drops it, an exception propagates.
    - `limit`: None or an int >= 0; the walk (per-id `get` calls and `where` calls) stops once
      `limit` results are kept. No candidates, or `limit=0`: the lookup is not called at all.

    Bad arguments raise TypeError/ValueError naming the argument or the candidate's position,
    before the lookup is called.
    """

def revalidate_batch(
    ids: npt.ArrayLike,
    scores: npt.ArrayLike,
    is_live: Callable[[npt.NDArray[np.int64]], npt.ArrayLike],
    *,
    limit: Optional[int] = None,
    pad: int = -1,
) -> RevalidatedBatch:
    """The live candidates of Q queries at once (docs/semantics.md, "Candidate revalidation").

    - `ids`: (Q, P) integer array (or nested lists), padded with `pad`; int64 natively, other
      integer dtypes are converted (uint64 when every value fits in int64, else ValueError; bool
      is not an integer dtype: TypeError).
    - `scores`: (Q, P) real array (integer or float dtype), converted to float64; NaN is carried.
    - `is_live(ids)`: called ONCE with a 1-D int64 array of the batch's unique ids in first-seen
      order, row by row, pads never included; it returns a boolean array (dtype bool, else
      TypeError) of the same length (else ValueError). Not called when the batch holds no id or
      `limit` is 0; its exceptions propagate.
    - Row q keeps its live candidates in input order (duplicates included), truncated to `limit`.

    Returns `RevalidatedBatch(ids, scores, counts)`: ids (Q, W) int64 padded with `pad`, scores
    (Q, W) float64 padded with NaN, counts (Q,) int64. W is `min(limit, P)` with a limit, else
    the largest count. The plan and the per-row compaction run in Rust with the GIL released
    (the compaction in parallel); the inputs are copied first, never modified.
    """

# --- end of Candidate revalidation ----------------------------------------------------------------

# --- Batched fusion ----------------------------------------------------------------------------

@final
class BatchResult(tuple[Any, Any, Any]):
    """The result of `rrf_batch`, `fuse_batch` and `Fusion.batch`: the tuple `(ids, scores, counts)`; `ranks`, `contributions` and `normalized` (attributes, not unpacked) are (Q, W, L) arrays with trace=True, else None."""

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
        """(Q, W, L) float64 with trace=True: the hit's contribution from list l, 0.0 where absent."""
    @property
    def normalized(self) -> Optional[npt.NDArray[np.float64]]:
        """(Q, W, L) float64 with fuse_batch's trace: the hit's normalised value in list l."""
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
    """RRF of Q queries at once from id arrays: `Fusion(**settings).batch(lists, pad=pad,
    threads=threads)` with RRF's settings. Returns a `BatchResult` (without `normalized`).
    """

def fuse_batch(
    ids: Iterable[Any],
    scores: Optional[Iterable[Any]] = None,
    *,
    pad: int = -1,
    boost: Optional[Mapping[int, float]] = None,
    threads: Optional[int] = None,
    **settings: Unpack[_FusionSettings],
) -> BatchResult:
    """Fusion of Q queries at once by any method: `Fusion(**settings).batch(ids, scores, pad=pad,
    boost=boost, threads=threads)`. Returns a `BatchResult`.
    """

def rrf_many(
    queries: Iterable[Iterable[Iterable[Hashable]]],
    *,
    scores: Optional[Iterable[Any]] = None,
    threads: Optional[int] = None,
    **settings: Unpack[_RRFSettings],
) -> list[list[Hit]]:
    """`[rrf(lists, scores=scores[q], **settings) for q, lists in enumerate(queries)]` with the
    settings checked once: `Fusion(**settings).many(queries, scores=scores)`.
    """

# Private helpers of rankfusion.trec (not part of the API).
@final
class _RunFile:
    """A run file parsed for `_fuse_run_files`: its bytes and its queries as byte ranges of them,
    without a Python object per line. `len()` is its number of queries.
    """

    def __len__(self) -> int: ...
    def qids(self) -> list[str]:
        """The query ids in order of first appearance, decoded as `read_run` decodes them."""

def _parse_run_files(
    datas: Sequence[bytes], paths: Sequence[str], order: str, duplicates: str
) -> list[Any]:
    """Parses run files' bytes (decompressed), on the thread pool with the GIL released: per file,
    in order, a `_RunFile`, or the `TrecFormatError` (not raised) that `read_run` raises for it.
    Ctrl-C raises `KeyboardInterrupt` within milliseconds.
    `order` is "score" or "file", `duplicates` "error", "first" or "keep".
    """

def _fuse_run_files(files: Sequence[_RunFile], fusion: Fusion, *, tag: bytes) -> bytes:
    """The fused run of `files` (`_RunFile`s, in the order of the runs) as the bytes of its TREC
    lines: what `write_run(fuse(runs, ...), tag=tag)` writes for the same files read by
    `read_run`, with tie_break "best_rank", no offset, min_score, normalisation or boost (a huge
    window or limit means no bound). The fusion arguments are `rankfusion.fuse`'s, checked as it
    checks them; a score-based method reads the runs' scores. Fused on the thread pool with the
    GIL released. Raises ValueError as `fuse` does (the message prefixed with the query) for the
    first query that fails. Ctrl-C raises `KeyboardInterrupt` within milliseconds.
    """

def _read_file(
    path: str, piece: int, progress: Optional[Callable[[int], Any]] = None
) -> Optional[bytes]:
    """The bytes of the file at `path`, read `piece` bytes at a time with the GIL released, into
    one bytes object of the file's size (no copy, no second buffer): Ctrl-C is handled between
    pieces, and `progress(bytes_read)` called there (the GIL held) when given. None when the
    file's size changed while it was read (the caller reads it another way). OSError as
    `open()` and `read()` raise it.
    """

def _join_bytes(chunks: Sequence[bytes]) -> bytes:
    """`b"".join(chunks)`, copied with the GIL released and Ctrl-C checked between chunks: a file
    read in chunks (each read interruptible) becomes one bytes without a copy of hundreds of MB
    that nothing can interrupt (a file of 18 M lines is 0.7 GB).
    """

def _parse_run(
    data: bytes, path: str, order: str, duplicates: str
) -> list[tuple[str, list[str], list[float]]]:
    """Parses a run file's bytes (decompressed) into `[(qid, docids, scores), ...]`, queries in
    order of first appearance. `order` is "score" or "file", `duplicates` "error", "first" or
    "keep". Raises `rankfusion.trec.TrecFormatError(path, line, reason)` for a malformed file.
    """

def _parse_qrels(data: bytes, path: str, duplicates: str) -> dict[str, dict[str, int]]:
    """Parses a qrels file's bytes into `{qid: {docid: gain}}`. `duplicates` is "error", "first" or
    "keep" (every line: the last gain of a doc wins).
    Raises `rankfusion.trec.TrecFormatError(path, line, reason)` for a malformed file.
    """

def _run_lines(
    qid: str, docids: Sequence[Any], scores: Optional[Sequence[Any]], tag: str
) -> Optional[str]:
    """The TREC lines `qid Q0 docid rank score tag\\n` of one query, ranks 1..n, scores as Python's
    `repr` writes them: for a list of `Hit` (`scores` None), or for aligned doc ids and scores
    (lists or tuples; lines for the shorter's length, like zip).

    Returns None, writing nothing, for anything else: an item that is not a Hit, a doc id that
    is not an exact str or is empty or contains whitespace or a lone surrogate, a score that is
    not an exact float or is NaN (which the reader refuses). The caller then formats the query
    itself (converting, or raising the error that names the bad id or score). `qid` and `tag`
    are checked by the caller.
    """

# Private helpers of rankfusion.hybrid (not part of the API).
def _pairs_union(searches: Sequence[Any]) -> Optional[list[Any]]:
    """The ids of the candidates of every list in `searches`, each once, in first-seen order (dict
    semantics: 1, 1.0 and True are one id), when every list is a list of `(id, float)` 2-tuples
    and every id is hashable; else None (the caller checks the candidates the slow way, which
    names a bad one). An id's own exception other than TypeError propagates.
    """

def _fuse_live_pairs(
    searches: Sequence[Any], alive: Any, window: int, fusion: Fusion
) -> list[Hit] | None:
    """The fusion of the live candidates of each search: each list keeps, in order, its candidates
    whose id is `in alive`, up to `window` of them, and is fused as `fusion(ids, scores)` — the
    same hits, the same errors. None when a search is not a list of `(id, float)` 2-tuples, or no
    longer is (an id's `__eq__` changed it): the caller fuses the general way, which names the
    bad candidate.
    """

# Private helper of rankfusion.optimize (not part of the API).
@final
class _Trace:
    """A traced fusion of Q queries: `fuse_batch(..., trace=True)` with weight 1 for every list (so
    that every list is read), given as its `ids` (Q, W), `counts` (Q,), `ranks` (Q, W, L) and,
    for score-based methods, `normalized` (Q, W, L). See `combine`.
    """

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
        """Scores S settings (each a `Fusion`, or its settings as a dict) of the traced method from
        the trace, with the GIL released, on up to `threads` threads. Each row is cut at `cutoff`
        when given (its hits whose score as a C float is at least its cutoff-th's). Returns
        `(counts, ids, scores)`: counts (S, Q) int64, then the kept hits' ids and scores (int64,
        float64), setting after setting and row after row, each row in fuse's order. Errors: a
        setting that the checker refuses (FusionError / FusionTypeError), that is not scored
        from a trace (a method, norm or argument that needs the whole fusion), or that cannot be
        fused (FusionError at its row); the exception's `setting_index` attribute is its index.
        """

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
    """`(delta, p, effect_size, low, high, wins, ties, losses)`, arrays of T: the paired test of
    row t of `x` (the system's per-query values, (T, n) float64) against row t of `y` (the
    baseline's), drawing from stream `streams[t]` (uint64) of `seed`; on up to `threads` threads,
    with the GIL released. Undefined values are NaN. Errors: FusionTypeError / FusionError naming
    the argument (`x`, `y`, `streams`, `test`, `permutations`, `seed`, `confidence`, `threads`)
    for what the core refuses (docs/semantics.md, "Comparing runs"); a value that is not finite
    is located at `list` = its row and `rank` = its query + 1; KeyboardInterrupt (or what the
    SIGINT handler raises) when interrupted.
    """

def _correct(p: npt.NDArray[np.float64], method: str) -> npt.NDArray[np.float64]:
    """The family of p-values `p` (a 1-D float64 array) corrected by `method` (one of
    `_CORRECTIONS`), in order. Errors: FusionTypeError / FusionError naming `p` or `method`.
    """

def _row_means(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row's mean (its values added left to right from 0.0, over their number: ir-measures'
    mean) of a 2-D float64 array with at least one column. Errors: FusionTypeError /
    FusionError naming `values`.
    """

def _exact(n: int, permutations: int) -> bool:
    """Whether the randomization test of `n` queries with `permutations` enumerates every sign
    vector (`2**n <= permutations`).
    """

__all__ += [
    "_CORRECTIONS",
    "_MAX_PERMUTATIONS",
    "_TESTS",
    "_correct",
    "_exact",
    "_paired_tests",
    "_row_means",
]
