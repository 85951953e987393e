"""Hybrid search: a keyword list and a vector list, revalidated against the live store, fused
with Reciprocal Rank Fusion.

The pipeline is a small composition of the package's functions, over three protocols any backend
can implement (``rankfusion.sqlite_store.SQLiteStore`` implements all three):

1. pool sizing: each index is asked for ``pool_size(window, index.filtering, multiplier)``
   candidates -- ``window`` when it filters before the scan, wider otherwise;
2. the searches: keyword (e.g. BM25) and vector (e.g. cosine similarity), best first;
3. revalidation: each list is hydrated against the store in one batched call, keeping its order
   and dropping stale candidates (soft-deleted, missing) and records ``where`` rejects -- the
   in-engine filter -- then truncated to ``window``;
4. RRF of the two lists; each hit keeps its raw per-list scores (BM25 score, similarity) in its
   trace and carries its record.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._core import Contribution, pool_size, revalidate, rrf

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
    """The live store: the record of an id, or None (missing, soft-deleted). A ``get_many(ids)``
    method returning a mapping id -> record is used when present: ONE call per list (see
    ``rankfusion.revalidate``)."""

    def get(self, id: Hashable) -> Any | None: ...


@dataclass(frozen=True)
class HybridHit:
    """A fused hit: its id, RRF score and live record. Unpacks as ``id, score``.

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


def _count(value: Any, name: str) -> int:
    """An int >= 0 (not bool)."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    n = operator.index(value)
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return n


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
    k: float = 60,
    weights: Sequence[float] | None = None,
    multiplier: int = 3,
    trace: bool = False,
) -> list[HybridHit]:
    """Hybrid search: RRF of the keyword list for ``text`` and the vector list for ``vector``,
    both revalidated against ``store``.

    - ``keyword_index`` and ``vector_index`` default to ``store`` (an object implementing all
      three protocols, such as ``SQLiteStore``). ``text=None`` or ``vector=None`` skips that list.
    - ``window`` (default ``limit``): how many live candidates of each list enter the fusion
      (Elasticsearch's ``rank_window_size``); each index is asked for
      ``pool_size(window, index.filtering, multiplier)`` candidates.
    - ``where(record)``: the in-engine filter, applied to both lists during revalidation (and
      handed to indexes that declare ``"pre"`` or ``"post"`` filtering).
    - ``k`` and ``weights`` (keyword, vector) are RRF's; ``limit`` cuts the fused hits.
    - ``trace=True`` keeps each hit's contributions, with the raw per-list scores.
    """
    keywords: Any = store if keyword_index is None else keyword_index
    vectors: Any = store if vector_index is None else vector_index
    # Bad arguments fail before any search: rrf and pool_size check theirs on empty input.
    rrf([[], []], k=k, weights=weights, limit=_count(limit, "limit"), trace=trace)
    pool_size(0, "none", multiplier)
    window = limit if window is None else _count(window, "window")
    if where is not None and not callable(where):
        raise TypeError(f"where must be callable or None, got {type(where).__name__} {where!r}")

    lists: list[list] = []
    for query, index, method in (
        (text, keywords, "keyword_search"),
        (vector, vectors, "vector_search"),
    ):
        if query is None or window == 0:
            lists.append([])
            continue
        filtering = getattr(index, "filtering", "none")
        pool = pool_size(window, filtering, multiplier)
        search = getattr(index, method)
        if where is not None and isinstance(filtering, str) and filtering in ("pre", "post"):
            candidates = search(query, pool, where=where)  # the index applies the filter too
        else:
            candidates = search(query, pool)
        lists.append(revalidate(candidates, store, where=where, limit=window))

    records: dict = {}
    for live in lists:
        for id, record, _ in live:
            records.setdefault(id, record)
    hits = rrf(
        [[r.id for r in live] for live in lists],
        k=k,
        weights=weights,
        limit=limit,
        scores=[[r.score for r in live] for live in lists],
        trace=trace,
    )
    return [HybridHit(h.key, h.score, records[h.key], h.contributions) for h in hits]
