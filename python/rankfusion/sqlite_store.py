"""An embedded store for hybrid search: SQLite (the stdlib ``sqlite3``), no server to start.

One database holds the documents, with a soft-delete column; an FTS5 index ranks them for a text
query with ``bm25()``; their float32 embeddings are stored as BLOBs and searched exactly with numpy.
``get_many`` answers any number of ids with ONE SQL statement that skips soft-deleted rows, which
is what ``rankfusion.revalidate`` needs; ``live_ids`` answers which ids are live in one statement
that reads only the ids, which is how ``rankfusion.hybrid_search`` checks its candidates.

    store = SQLiteStore("docs.db")
    store.add_documents(ids, texts, embeddings, titles=titles)
    hits = rankfusion.hybrid_search(store, "wing flutter", query_vector, limit=10)

Ids are ``int`` (64-bit) or ``str`` without NUL characters, and keep their type: ``1`` and ``"1"``
are different documents. (SQLite's JSON functions, which carry ``get_many``'s ids in one statement,
end a string at NUL, so such an id could be stored but never found by ``get_many``: ``add``
rejects it.) A search asked for more results than there are (``k`` of any size, even beyond 64
bits) returns them all.
"""

from __future__ import annotations

import json
import operator
import re
import sqlite3
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

__all__ = ["Document", "SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    rowid INTEGER PRIMARY KEY,
    id NOT NULL UNIQUE,                 -- no declared type: an int stays an int, a str a str
    title TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    metadata TEXT,                      -- JSON object, or NULL
    embedding BLOB,                     -- float32, native byte order, or NULL
    deleted INTEGER NOT NULL DEFAULT 0  -- soft delete: 1 hides the row from every read
);
-- which ids are live, answered from the index alone (live_ids)
CREATE INDEX IF NOT EXISTS documents_live ON documents (id, deleted);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(title, text, tokenize = '{tokenize}');
"""

_COLUMNS = "id, title, text, metadata"

_TERM = re.compile(r"\w+")

_INT64 = (-(2**63), 2**63 - 1)
_SQL_LIMIT_MAX = _INT64[1]  # the largest LIMIT SQLite takes: no table holds more rows


@dataclass(frozen=True)
class Document:
    """A live document, as ``get`` and ``get_many`` return it (the embedding is not loaded)."""

    id: int | str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


_new = object.__new__


def _new_document(id: int | str, title: str, text: str, metadata: dict) -> Document:
    """``Document(id, title, text, metadata)``, the same instance, built at a third of the cost:
    its fields are set in one ``__dict__`` update instead of the frozen dataclass's ``__init__``
    (one ``object.__setattr__`` per field). Hydrating a search's hits builds many of them."""
    document = _new(Document)
    document.__dict__.update(id=id, title=title, text=text, metadata=metadata)
    return document


def _document(row: tuple) -> Document:
    id, title, text, metadata = row
    return _new_document(id, title, text, json.loads(metadata) if metadata else {})


def _documents(rows: list) -> dict:
    """Documents by id from rows of ``_COLUMNS``: the metadata of all of them parsed by one
    ``json.loads`` (of a JSON array of the stored objects), twice as fast as one call each."""
    metadata = json.loads("[" + ",".join([row[3] or "null" for row in rows]) + "]")
    return {
        id: _new_document(id, title, text, meta or {})
        for (id, title, text, _), meta in zip(rows, metadata)
    }


def _check_id(id: Any) -> int | str:
    """A storable id: a str without NUL, or an int (numpy ints included, bool not) that fits in
    64 bits."""
    if isinstance(id, str):
        if "\x00" in id:
            raise ValueError(
                f"id must not contain NUL (SQLite's JSON functions end it there), got {id!r}"
            )
        return str(id)
    if not isinstance(id, bool) and hasattr(type(id), "__index__"):
        n = operator.index(id)
        if _INT64[0] <= n <= _INT64[1]:
            return n
        raise ValueError(f"id must fit in 64 bits, got {n}")
    raise TypeError(f"id must be an int or a str, got {type(id).__name__} {id!r}")


def _lookup_id(id: Any) -> int | str | None:
    """The SQL value that an id equal to ``id`` (dict semantics) is stored under, or None when no
    stored id can equal it: ``True`` and ``1.0`` find the document ``1``, as a dict would."""
    if isinstance(id, str):
        return None if "\x00" in id else str(id)
    if isinstance(id, float):
        return int(id) if id.is_integer() and _INT64[0] <= id <= _INT64[1] else None
    if hasattr(type(id), "__index__"):
        n = operator.index(id)
        return n if _INT64[0] <= n <= _INT64[1] else None
    return None


def _lookup_keys(ids: Iterable[Hashable]) -> list:
    """The SQL values of ``ids`` (see ``_lookup_id``), leaving out those no stored id can equal.
    Exact str or int ids (the usual case) are checked as a whole, not one by one."""
    ids = ids if type(ids) is list else list(ids)
    kinds: set = set(map(type, ids))
    if kinds == {str}:
        if "\x00" not in "".join(cast("list[str]", ids)):
            return ids
    elif kinds == {int}:
        if _INT64[0] <= min(ids) and max(ids) <= _INT64[1]:
            return ids
    return [k for k in map(_lookup_id, ids) if k is not None]


def fts_query(text: str, *, stopwords: Iterable[str] = ()) -> str:
    """An FTS5 query matching any term of ``text``: each term quoted (an FTS5 string, so operators
    and punctuation in user text are inert), the terms OR-ed. Empty when ``text`` has no term."""
    stop = set(stopwords)
    terms = [t for t in _TERM.findall(text.lower()) if t not in stop]
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class SQLiteStore:
    """Documents in SQLite: a keyword index (FTS5, ``bm25()``), a vector index (exact, numpy) and a
    record store (``get``/``get_many``/``live_ids``, soft deletes), in one file or in memory.

    It implements the ``KeywordIndex``, ``VectorIndex`` and ``RecordStore`` protocols of
    ``rankfusion.hybrid``. Both searches declare ``filtering = "none"``: they cannot apply a Python
    predicate, so the pipeline widens the pool and filters in-engine. Both skip soft-deleted rows,
    but a row can be deleted between a search and the hydration of its hits: revalidation is what
    drops it.

    ``tokenize`` is the FTS5 tokenizer (Porter stemming over unicode61 by default); ``stopwords``
    are query terms left out of keyword searches.
    """

    filtering = "none"

    def __init__(
        self,
        path: str = ":memory:",
        *,
        tokenize: str = "porter unicode61 remove_diacritics 2",
        stopwords: Iterable[str] = (),
    ) -> None:
        if "'" in tokenize:
            raise ValueError(f"tokenize must not contain a quote, got {tokenize!r}")
        self.connection = sqlite3.connect(path)
        self.stopwords = frozenset(stopwords)
        with self.connection:
            self.connection.executescript(_SCHEMA.format(tokenize=tokenize))
        self._generation = 0  # bumped by every write through this object
        # (stamp, ids, matrix, rowids): the embedded documents, and every live id -> its rowid
        self._vectors: tuple[Any, list, np.ndarray, dict] | None = None

    # --- writing --------------------------------------------------------------------------------

    def add(
        self,
        id: int | str,
        text: str,
        embedding: Any = None,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Adds one document, or replaces the document with this id (live again if deleted).
        The id is an int that fits in 64 bits (ValueError otherwise) or a str without NUL
        (ValueError); anything else is a TypeError."""
        self.add_documents(
            [id],
            [text],
            None if embedding is None else [embedding],
            titles=[title],
            metadata=[metadata],
        )

    def add_documents(
        self,
        ids: Sequence[int | str],
        texts: Sequence[str],
        embeddings: Any = None,
        *,
        titles: Sequence[str] | None = None,
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> None:
        """Adds (or replaces) documents in one transaction, all or none. ``embeddings``: None or
        (n, dim) floats, stored as float32; every embedding of the store has the same dimension.
        Ids as for ``add``."""
        n = len(ids)
        checked = [_check_id(i) for i in ids]
        if len(set(checked)) != n:
            raise ValueError("ids must be unique")
        titles = [""] * n if titles is None else list(titles)
        metadata = [None] * n if metadata is None else list(metadata)
        if len(texts) != n or len(titles) != n or len(metadata) != n:
            raise ValueError("ids, texts, titles and metadata must have the same length")
        blobs: list[bytes | None] = [None] * n
        if embeddings is not None:
            matrix = np.asarray(embeddings, dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[0] != n:
                raise ValueError(f"embeddings must have shape ({n}, dim), got {matrix.shape}")
            if not np.isfinite(matrix).all():
                raise ValueError("embeddings must be finite")
            dim = self.dim
            if dim is not None and matrix.shape[1] != dim:
                raise ValueError(f"embeddings have dimension {matrix.shape[1]}, the store {dim}")
            blobs = [np.ascontiguousarray(row).tobytes() for row in matrix]
        rows = [
            (
                i,
                str(title),
                str(text),
                None if meta is None else json.dumps(dict(meta)),
                blob,
            )
            for i, text, title, meta, blob in zip(checked, texts, titles, metadata, blobs)
        ]
        with self.connection:
            cursor = self.connection.cursor()
            for row in rows:
                cursor.execute(
                    "INSERT INTO documents (id, title, text, metadata, embedding, deleted) "
                    "VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT (id) DO UPDATE SET "
                    "title = excluded.title, text = excluded.text, metadata = excluded.metadata, "
                    "embedding = excluded.embedding, deleted = 0",
                    row,
                )
                (rowid,) = cursor.execute(
                    "SELECT rowid FROM documents WHERE id = ?", (row[0],)
                ).fetchone()
                cursor.execute("DELETE FROM documents_fts WHERE rowid = ?", (rowid,))
                cursor.execute(
                    "INSERT INTO documents_fts (rowid, title, text) VALUES (?, ?, ?)",
                    (rowid, row[1], row[2]),
                )
        self._generation += 1

    def delete(self, id: Hashable) -> bool:
        """Soft-deletes a document: every read skips it from now on. True if it was live."""
        key = _lookup_id(id)
        if key is None:
            return False
        with self.connection:
            cursor = self.connection.execute(
                "UPDATE documents SET deleted = 1 WHERE id = ? AND deleted = 0", (key,)
            )
        self._generation += 1
        return cursor.rowcount > 0

    # --- the record store -----------------------------------------------------------------------

    def get(self, id: Hashable) -> Document | None:
        """The live document with this id, or None (missing or soft-deleted)."""
        key = _lookup_id(id)
        if key is None:
            return None
        row = self.connection.execute(
            f"SELECT {_COLUMNS} FROM documents WHERE id = ? AND deleted = 0", (key,)
        ).fetchone()
        return None if row is None else _document(row)

    def get_many(self, ids: Iterable[Hashable]) -> dict[int | str, Document]:
        """The live documents among ``ids``, by id, with ONE SQL statement whatever their number
        (the ids travel as one JSON parameter). Missing and soft-deleted ids are left out.

        After a vector search, while nothing has changed (one ``PRAGMA data_version`` says so;
        see ``_stamp``), the rows it found live are read by rowid, which is faster."""
        keys = _lookup_keys(ids)
        if not keys:
            return {}
        live = self._live_rowids()
        if live is not None:
            # Nothing changed since the last vector search read which rows are live: read those
            # rows by rowid, faster than by id (up to 500 of them as parameters, faster still;
            # in ascending order, faster again: SQLite walks the table's B-tree forward).
            rowids = [rowid for rowid in map(live.get, keys) if rowid is not None]
            if not rowids:
                return {}
            rowids.sort()
            if len(rowids) <= 500:
                where = f"rowid IN ({','.join('?' * len(rowids))})"
                rows = self.connection.execute(
                    f"SELECT {_COLUMNS} FROM documents WHERE {where}", rowids
                )
            else:
                rows = self.connection.execute(
                    f"SELECT {_COLUMNS} FROM documents "
                    "WHERE rowid IN (SELECT value FROM json_each(?))",
                    (json.dumps(rowids),),
                )
        else:
            rows = self.connection.execute(
                f"SELECT {_COLUMNS} FROM documents "
                "WHERE deleted = 0 AND id IN (SELECT value FROM json_each(?))",
                (json.dumps(keys),),
            )
        return _documents(rows.fetchall())

    def live_ids(self, ids: Iterable[Hashable]) -> set[int | str]:
        """The live ids among ``ids`` (as stored: ``1.0`` finds ``1``), with ONE SQL statement
        that reads only the ids (from an index): no document is built. It is how
        ``hybrid_search`` checks the candidates of both its lists at one instant.

        After a vector search, while nothing has changed (one ``PRAGMA data_version`` says so;
        see ``_stamp``), the ids it read as live are the answer instead: what the statement
        would return, at this instant, without running it."""
        keys = _lookup_keys(ids)
        if not keys:
            return set()
        live = self._live_rowids()
        if live is not None:
            return live.keys() & keys
        rows = self.connection.execute(
            "SELECT id FROM documents WHERE deleted = 0 AND id IN (SELECT value FROM json_each(?))",
            (json.dumps(keys),),
        )
        return {row[0] for row in rows}

    def __len__(self) -> int:
        """The number of live documents."""
        return self.connection.execute(
            "SELECT count(*) FROM documents WHERE deleted = 0"
        ).fetchone()[0]

    # --- the keyword index ----------------------------------------------------------------------

    def keyword_search(self, text: str, k: int) -> list[tuple[int | str, float]]:
        """The ``k`` best live documents for ``text`` by FTS5's BM25, as (id, score) pairs, best
        first. The score is ``-bm25()``, so higher is better; ties go to the earlier-added
        document. Any term of ``text`` may match (the terms are quoted and OR-ed: user text is never
        parsed as FTS5 syntax). A ``k`` larger than the store (of any size) returns every match."""
        k = min(operator.index(k), _SQL_LIMIT_MAX)
        query = fts_query(text, stopwords=self.stopwords)
        if not query or k <= 0:
            return []
        rows = self.connection.execute(
            "SELECT d.id, bm25(documents_fts) AS rank FROM documents_fts "
            "JOIN documents d ON d.rowid = documents_fts.rowid "
            "WHERE documents_fts MATCH ? AND d.deleted = 0 ORDER BY rank, d.rowid LIMIT ?",
            (query, k),
        )
        return [(id, -rank) for id, rank in rows]

    # --- the vector index -----------------------------------------------------------------------

    @property
    def dim(self) -> int | None:
        """The dimension of the stored embeddings; None before the first one."""
        row = self.connection.execute(
            "SELECT length(embedding) FROM documents WHERE embedding IS NOT NULL LIMIT 1"
        ).fetchone()
        return None if row is None else row[0] // 4

    def _stamp(self) -> tuple:
        """Changes whenever the data may have: a write through this object or its connection
        (``total_changes``), a commit by another connection (``PRAGMA data_version``)."""
        (data_version,) = self.connection.execute("PRAGMA data_version").fetchone()
        return (self._generation, self.connection.total_changes, data_version)

    def _snapshot(self) -> tuple[list, np.ndarray]:
        """The ids and the (n, dim) float32 matrix of the live embedded documents, cached until
        the data change (see ``_stamp``); the rowid of every live document's id is kept beside
        them (for ``live_ids`` and ``get_many``), read by the same statement."""
        stamp = self._stamp()
        if self._vectors is None or self._vectors[0] != stamp:
            rows = self.connection.execute(
                "SELECT id, rowid, embedding FROM documents WHERE deleted = 0 ORDER BY rowid"
            ).fetchall()
            rowids = {row[0]: row[1] for row in rows}
            rows = [row for row in rows if row[2] is not None]
            ids = [row[0] for row in rows]
            dim = len(rows[0][2]) // 4 if rows else 0
            matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32)
            # A copy the array owns: BLAS is ~25x slower on the read-only view of a bytes object.
            self._vectors = (stamp, ids, matrix.reshape(len(rows), dim).copy(), rowids)
        return self._vectors[1], self._vectors[2]

    def _live_rowids(self) -> dict | None:
        """Every live id -> its rowid, as the last vector search read them, if nothing has
        changed since (then exactly what the table says now); else None."""
        if self._vectors is not None and self._vectors[0] == self._stamp():
            return self._vectors[3]
        return None

    def vector_search(self, vector: Any, k: int) -> list[tuple[int | str, float]]:
        """The ``k`` live documents whose embeddings have the largest dot product with ``vector``
        (cosine similarity for normalised embeddings), exactly, as (id, similarity) pairs, best
        first; ties go to the earlier-added document. A ``k`` larger than the store (of any size)
        returns them all."""
        k = operator.index(k)
        ids, matrix = self._snapshot()
        if k <= 0 or not ids:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != matrix.shape[1]:
            raise ValueError(f"vector has dimension {query.shape[0]}, the store {matrix.shape[1]}")
        if not np.isfinite(query).all():
            raise ValueError("vector must be finite")
        similarity = matrix @ query
        k = min(k, len(ids))
        # The k best by (similarity descending, position): every value above the k-th largest,
        # then the tied values in position order.
        kth = np.partition(similarity, len(ids) - k)[len(ids) - k]
        above = np.flatnonzero(similarity > kth)
        tied = np.flatnonzero(similarity == kth)[: k - len(above)]
        top = np.concatenate([above, tied])
        top = top[np.lexsort((top, -similarity[top]))]
        return list(zip([ids[i] for i in top.tolist()], similarity[top].tolist()))

    # --- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> SQLiteStore:  # noqa: PYI034 -- typing.Self is 3.11+
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
