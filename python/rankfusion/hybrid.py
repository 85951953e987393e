"""Hybrid search: a keyword list and a vector list, revalidated against the live store, fused
by any fusion of the package (Reciprocal Rank Fusion by default).

The pipeline is a small composition of the package's functions, over three protocols any backend
can implement (``rankfusion.sqlite_store.SQLiteStore`` implements all three):

1. pool sizing: each index is asked for ``pool_size(window, index.filtering, multiplier)``
   candidates -- ``window`` when it filters before the scan, wider otherwise;
2. the searches: keyword (e.g. BM25) and vector (e.g. cosine similarity), best first, both run
   before anything is checked;
3. one snapshot: the union of both candidate lists is checked against the store in ONE batched
   lookup, so every hit returned was live at one instant (a document deleted while the other
   search ran never comes back through either list). Without ``where`` it is an ids-only
   question (``store.live_ids``, when the store has it: no record is built); with ``where``, or
   a store without ``live_ids``, the records of the union (``store.get_many``, else ``get`` per
   id). Each list keeps its order, drops its stale candidates (soft-deleted, missing) and the
   records ``where`` rejects -- the in-engine filter -- and is truncated to ``window``;
4. the fusion of the two lists (a ``rankfusion.Fusion``: RRF by default; ``wsum`` over
   ``min-max`` is Elasticsearch's linear retriever, ``dbsf`` Qdrant's); each hit keeps its raw
   per-list scores (BM25 score, similarity) in its trace and carries its record. After an ids-only check only the hits returned are hydrated
   (one more batched call); a hit deleted between the check and that call is left out, never
   returned without its record.

A store may offer one more method, ``snapshot()``: a context manager inside which every read of
the store made by this thread sees one consistent state of it (``PostgresStore``: one
``REPEATABLE READ`` read-only transaction). ``hybrid_search`` then runs everything above -- both
searches, the liveness check, the hydration -- inside it, so "live at one instant" holds across
the searches too: a hit is returned only if it was live at the snapshot, and its record is the
row as it was then, whatever writers commit meanwhile. (The snapshot covers the store's own
methods: a ``keyword_index`` or ``vector_index`` that is another object searches outside it.)
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from ._core import Contribution, Fusion, _fuse_live_pairs, _pairs_union, pool_size, revalidate

__all__ = [
    "LISTS",
    "HybridHit",
    "KeywordIndex",
    "RecordStore",
    "VectorIndex",
    "hybrid_search",
]

#: The fused lists, by ``list_index``: 0 is the keyword list, 1 the vector list.
LISTS = ("keyword", "vector")

Where = Callable[[Any], Any]

_first = operator.itemgetter(0)
_second = operator.itemgetter(1)


@runtime_checkable
class KeywordIndex(Protocol):
    """Ranks documents for a text query.

    ``filtering`` says how it applies a ``where`` predicate: ``"pre"`` (before selecting the top
    k: k matching hits), ``"post"`` (after: possibly fewer) or ``"none"`` (it cannot); anything
    else counts as ``"none"``. An index that declares ``"pre"`` or ``"post"`` receives ``where=``.
    """

    filtering: str

    def keyword_search(self, text: str, k: int) -> Sequence[tuple[Hashable, float]]:
        """At most ``k`` (id, score) pairs, best first (higher score = better)."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Ranks documents by similarity to a query vector. ``filtering`` as for ``KeywordIndex``."""

    filtering: str

    def vector_search(self, vector: Any, k: int) -> Sequence[tuple[Hashable, float]]:
        """At most ``k`` (id, similarity) pairs, best first."""
        ...


@runtime_checkable
class RecordStore(Protocol):
    """The live store: ``get(id)`` is the record of an id, or None (missing, soft-deleted).

    Two batch methods are used when present (neither is required):

    - ``live_ids(ids)``: the live ids among ``ids`` (any iterable of them, e.g. a set; ids
      compare as dict keys do), without building records: ``hybrid_search``'s one liveness
      check of both candidate lists when there is no ``where``;
    - ``get_many(ids)``: a mapping id -> record of the live ones, ONE call for any number of
      ids (see ``rankfusion.revalidate``): the records of the hits returned, or of every
      candidate when ``where`` needs them or the store has no ``live_ids``.
    """

    def get(self, id: Hashable) -> Any | None: ...


@dataclass(frozen=True)
class HybridHit:
    """A fused hit: its id, fused score and live record. Unpacks as ``id, score``.

    ``contributions`` (with ``trace=True``) holds one ``Contribution`` per list that found it,
    ``list_index`` 0 for the keyword list and 1 for the vector list (see ``LISTS``), with its rank
    and its raw score in that list (the BM25 score, the similarity).
    """

    id: Hashable
    score: float
    record: Any
    contributions: tuple[Contribution, ...] | None = None

    def __iter__(self):
        return iter((self.id, self.score))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index):
        return (self.id, self.score)[index]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data without the record: {"id", "score"} and, when traced, the
        contributions, each named by its list ("keyword" or "vector")."""
        d: dict[str, Any] = {"id": self.id, "score": self.score}
        if self.contributions is not None:
            d["contributions"] = [
                {"list": LISTS[c.list_index], **c.to_dict()} for c in self.contributions
            ]
        return d


_new = object.__new__


def _hit(id: Hashable, score: float, record: Any, contributions: Any) -> HybridHit:
    """``HybridHit(id, score, record, contributions)``, the same instance, built at half the
    cost: its fields are set in one ``__dict__`` update instead of the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field)."""
    hit = _new(HybridHit)
    hit.__dict__.update(id=id, score=score, record=record, contributions=contributions)
    return hit


def _count(value: Any, name: str) -> int:
    """An int >= 0 (not bool)."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    n = operator.index(value)
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return n


class _Ids:
    """A lookup that finds nothing and keeps the ids ``revalidate`` asks it for: the candidates'
    ids, checked (pairs, hashable ids, real scores) and de-duplicated in first-seen order."""

    def __init__(self) -> None:
        self.ids: list = []

    def get(self, id: Hashable) -> None:
        return None

    def get_many(self, ids: list) -> dict:
        self.ids = ids
        return {}


def _union(searches: list) -> list:
    """The ids of the candidates of every list, each once, in first-seen order (dict semantics),
    checked (pairs, hashable ids, real scores) by ``revalidate``, which raises the error that
    names a bad one. (Lists of (id, float) tuples, as the indexes of this package return them,
    take ``_pairs_union`` instead: the same ids, one pass.)"""
    union: dict = {}
    for candidates in searches:
        ids = _Ids()
        revalidate(candidates, ids)
        union.update(dict.fromkeys(ids.ids))
    return list(union)


def _records(store: Any, ids: list) -> dict:
    """The live records of ``ids``, by id, looked up as ``revalidate`` looks them up: ONE
    ``get_many(ids)`` call when the store has it (an Exception from it falls back to ``get``;
    anything but a mapping is a TypeError), else ``get`` per id (an id whose ``get`` raises is
    left out, as one that returns None)."""
    get_many = getattr(store, "get_many", None)
    if callable(get_many):
        try:
            found = get_many(ids)
        except Exception:  # noqa: BLE001 -- as revalidate: fall back to get()
            pass
        else:
            if not isinstance(found, Mapping):
                raise TypeError(
                    "store.get_many must return a mapping id -> record or None, "
                    f"got {type(found).__name__}"
                )
            return {
                id: record for id, record in zip(ids, map(found.get, ids)) if record is not None
            }
    records = {}
    for id in ids:
        try:
            record = store.get(id)
        except Exception:  # noqa: BLE001, S112 -- as revalidate: an erroring id is dropped
            continue
        if record is not None:
            records[id] = record
    return records


_F = TypeVar("_F", bound=Callable[..., Any])


def _in_snapshot(search: _F) -> _F:
    """``search(store, ...)`` inside ``store.snapshot()`` when the store has that method (see
    the module's docstring), else as it is."""

    @functools.wraps(search)
    def wrapper(store: Any, *args: Any, **kwargs: Any) -> Any:
        snapshot = getattr(store, "snapshot", None)
        if not callable(snapshot):
            return search(store, *args, **kwargs)
        with snapshot():
            return search(store, *args, **kwargs)

    return cast("_F", wrapper)


@_in_snapshot
def hybrid_search(
    store: RecordStore,
    text: str | None,
    vector: Any | None,
    *,
    keyword_index: KeywordIndex | None = None,
    vector_index: VectorIndex | None = None,
    limit: int = 10,
    window: int | None = None,
    where: Where | None = None,
    multiplier: int = 3,
    fusion: Fusion | None = None,
    **settings: Any,
) -> list[HybridHit]:
    """Hybrid search: the fusion of the keyword list for ``text`` and the vector list for
    ``vector``, both revalidated against ``store``.

    - ``keyword_index`` and ``vector_index`` default to ``store`` (an object implementing all
      three protocols, such as ``SQLiteStore``). ``text=None`` or ``vector=None`` skips that list.
    - ``window`` (default ``limit``): how many live candidates of each list enter the fusion
      (Elasticsearch's ``rank_window_size``); each index is asked for
      ``pool_size(window, index.filtering, multiplier)`` candidates.
    - ``where(record)``: the in-engine filter, applied to both lists during revalidation (and
      handed to indexes that declare ``"pre"`` or ``"post"`` filtering).
    - ``fusion``: a ``rankfusion.Fusion`` (default: RRF, k=60), or its settings as keyword
      arguments (``k``, ``weights`` — keyword, vector —, ``method="wsum", norm="min-max"``,
      ``trace=True``...). Its lists are the keyword list (0) and the vector list (1); its
      ``limit`` is ``limit`` (the fused hits are cut there).
    - ``trace=True`` keeps each hit's contributions, with the raw per-list scores.
    - ``limit``, ``window`` and ``multiplier`` are ints of any size: a huge one means no bound.

    Both searches run first; then the union of their candidates is checked against ``store``
    in one batched lookup (``live_ids`` when the store has it and there is no ``where``, else
    the records by ``get_many``), so every hit returned was live at one instant. With the
    ids-only check, the hits returned are then hydrated by one more batched call, and a hit
    deleted in between is left out rather than returned without its record.
    """
    keywords: Any = store if keyword_index is None else keyword_index
    vectors: Any = store if vector_index is None else vector_index
    # Bad arguments fail before any search.
    if fusion is None:
        fusion = Fusion(**settings)
    elif settings:
        raise TypeError(f"give a Fusion or its settings, not both (got {sorted(settings)})")
    elif not isinstance(fusion, Fusion):
        raise TypeError(f"fusion must be a rankfusion.Fusion, got {type(fusion).__name__}")
    limit = _count(limit, "limit")
    limit = limit if limit <= 2**63 - 1 else 2**64 - 1  # (beyond: no bound, as Fusion stores it)
    if fusion.limit != limit:
        fusion = fusion.replace(limit=limit)
    fusion.check(len(LISTS))
    pool_size(0, "none", multiplier)
    window = limit if window is None else _count(window, "window")
    if where is not None and not callable(where):
        raise TypeError(f"where must be callable or None, got {type(where).__name__} {where!r}")
    if not callable(getattr(store, "get", None)):
        raise TypeError(f"store must have a get(id) method, got {type(store).__name__}")

    searches: list = []
    for query, index, method in (
        (text, keywords, "keyword_search"),
        (vector, vectors, "vector_search"),
    ):
        if query is None or window == 0:
            searches.append([])
            continue
        filtering = getattr(index, "filtering", "none")
        pool = pool_size(window, filtering, multiplier)
        search = getattr(index, method)
        if where is not None and isinstance(filtering, str) and filtering in ("pre", "post"):
            searches.append(search(query, pool, where=where))  # the index applies the filter too
        else:
            searches.append(search(query, pool))

    # One snapshot: the liveness (or the records) of both lists' candidates in ONE lookup.
    union = _pairs_union(searches)  # lists of (id, float) tuples: their ids, in one pass
    tuple_pairs = union is not None
    if union is None:
        union = _union(searches)
    live_ids = getattr(store, "live_ids", None)
    records: Mapping | None = None  # the records of the union, when looked up
    if where is None and callable(live_ids):
        alive: Any = live_ids(union) if union else ()
        if not isinstance(alive, (set, frozenset, dict)):
            alive = set(alive)
    else:
        alive = records = _records(store, union) if union else {}
    hits = None
    if where is None and tuple_pairs:
        # (id, float) tuples and no `where`: each list keeps its live candidates, in order, up
        # to `window`, and the two are fused, in one call (None: an id's `__eq__` changed a list)
        hits = _fuse_live_pairs(searches, alive, window, fusion)
    if hits is None:
        lookup = records if records is not None else dict.fromkeys(alive, True)
        lists = [
            [(r.id, r.score) for r in revalidate(c, lookup, where=where, limit=window)]
            for c in searches
        ]
        hits = fusion(
            [list(map(_first, live)) for live in lists],
            [list(map(_second, live)) for live in lists],
        )
    keys = [h.key for h in hits]
    if records is None:  # the ids-only check: the records of the hits returned, and only those
        records = _records(store, keys) if keys else {}
    return [
        _hit(key, h.score, record, h.contributions)
        for key, h, record in zip(keys, hits, map(records.get, keys))
        if record is not None
    ]
