"""A server-grade store for hybrid search: PostgreSQL full-text search and pgvector.

``PostgresStore`` has the methods of ``SQLiteStore`` (``add``, ``add_documents``, ``delete``,
``get``, ``get_many``, ``live_ids``, ``keyword_search``, ``vector_search``, ``dim``, ``close``,
``with``), so switching backends is one line:

    store = PostgresStore("postgresql://app@db/search", dim=384)   # was SQLiteStore("docs.db")
    store.add_documents(ids, texts, embeddings, titles=titles)
    hits = rankfusion.hybrid_search(store, "wing flutter", query_vector, limit=10)

and one more, ``snapshot()``: ``hybrid_search`` runs both searches and the liveness check of their
candidates inside it, in ONE ``REPEATABLE READ`` read-only transaction, so every hit it returns
was live at one instant, whatever writers commit meanwhile (see docs/postgres.md).

The schema is made on demand (the first write creates it, an existing table is used as it is):
one table (``table``) with a generated ``tsvector`` column under a GIN index, a ``vector(dim)``
column under an HNSW index (``index="hnsw"``; ``index=None`` searches exactly), a soft-delete
column, and a one-row statistics table (``<table>_stats``: live documents, their tokens) kept by
statement triggers, from which keyword search computes BM25. Needs the ``vector`` extension
(created if missing: that takes the right to create it) and psycopg 3
(``pip install "rankfusion[postgres]"``).

Ids are ``int`` (64-bit) or ``str`` (without NUL), one kind per table: the first ids written
choose the column's type (``bigint`` or ``text``), and an id of the other kind is a
``TypeError`` when written, never found when read. Titles and texts are ``str`` without NUL
(PostgreSQL's ``text`` cannot hold it): anything else is a ``TypeError`` (NUL a ``ValueError``).

Errors from the server (a dropped connection, a statement that ran past ``statement_timeout``)
are psycopg's exceptions (``psycopg.OperationalError``, ``psycopg.errors.QueryCanceled``, ...),
raised as they come: nothing retries behind the caller's back.
"""

from __future__ import annotations

import json
import math
import operator
import os
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.pq import TransactionStatus
    from psycopg_pool import ConnectionPool
except ImportError as error:  # pragma: no cover -- the extra is missing
    raise ImportError(
        'rankfusion.postgres needs psycopg 3, psycopg-pool and pgvector: pip install "rankfusion[postgres]"'
    ) from error

from .sqlite_store import Document

__all__ = ["Document", "MetadataMatch", "PostgresStore"]

Metric = Literal["cosine", "l2", "ip"]

#: metric -> (pgvector operator, operator class, similarity from the operator's value)
_METRICS: dict[str, tuple[str, str, Callable[[float], float]]] = {
    "cosine": ("<=>", "vector_cosine_ops", lambda d: 1.0 - d),  # cosine similarity
    "l2": ("<->", "vector_l2_ops", operator.neg),  # minus the Euclidean distance
    "ip": ("<#>", "vector_ip_ops", operator.neg),  # the inner product (<#> is its negative)
}

_INT64 = (-(2**63), 2**63 - 1)
_LIMIT_MAX = _INT64[1]
_EF_SEARCH = (40, 1000)  # pgvector's default and largest hnsw.ef_search


def _check_text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
    if "\x00" in value:
        raise ValueError(f"{name} must not contain NUL (PostgreSQL text cannot hold it)")
    return value


def _id_kind(id: Any) -> str:
    """'text' for a str id, 'bigint' for an int one (numpy ints too, not bool); else TypeError."""
    if isinstance(id, str):
        return "text"
    if not isinstance(id, bool) and hasattr(type(id), "__index__"):
        return "bigint"
    raise TypeError(f"id must be an int or a str, got {type(id).__name__} {id!r}")


def _check_id(id: Any, kind: str) -> int | str:
    """A storable id of the table's kind."""
    got = _id_kind(id)
    if got != kind:
        want = "int" if kind == "bigint" else "str"
        raise TypeError(
            f"this table's ids are {want}s (column type {kind}), got {type(id).__name__} {id!r}"
        )
    if kind == "text":
        if "\x00" in id:
            raise ValueError(
                f"id must not contain NUL (PostgreSQL text cannot hold it), got {id!r}"
            )
        return str(id)
    n = operator.index(id)
    if not _INT64[0] <= n <= _INT64[1]:
        raise ValueError(f"id must fit in 64 bits, got {n}")
    return n


def _lookup_key(id: Any, kind: str | None) -> int | str | None:
    """The stored value an id equal to ``id`` (dict semantics) would have, or None when no id of
    the table can equal it: ``True`` and ``1.0`` find ``1``; ``"1"`` finds nothing among ints."""
    if kind == "text":
        return id if isinstance(id, str) and "\x00" not in id else None
    if kind == "bigint":
        if isinstance(id, float):
            return int(id) if id.is_integer() and _INT64[0] <= id <= _INT64[1] else None
        if not isinstance(id, str) and hasattr(type(id), "__index__"):
            n = operator.index(id)
            return n if _INT64[0] <= n <= _INT64[1] else None
    return None


def _lookup_keys(ids: Iterable[Hashable], kind: str | None) -> list[int | str]:
    if kind is None:
        return []
    ids = ids if type(ids) is list else list(ids)
    keys = [key for key in (_lookup_key(i, kind) for i in ids) if key is not None]
    return list(dict.fromkeys(keys))


def _limit(k: Any) -> int:
    """``k`` as a SQL LIMIT: an int (TypeError otherwise), capped at the largest bigint (no table
    holds more rows)."""
    if isinstance(k, bool) or not hasattr(type(k), "__index__"):
        raise TypeError(f"k must be an int, got {type(k).__name__} {k!r}")
    return min(operator.index(k), _LIMIT_MAX)


def _json_equal(stored: Any, wanted: Any) -> bool:
    """JSON equality of a stored metadata value and a scalar, as jsonb compares them: a bool only
    equals a bool, null only null, numbers by value, strings by value, nothing else equal."""
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return type(stored) is bool and type(wanted) is bool and stored == wanted
    if wanted is None or stored is None:
        return wanted is None and stored is None
    if isinstance(wanted, str) or isinstance(stored, str):
        return isinstance(stored, str) and isinstance(wanted, str) and stored == wanted
    if isinstance(wanted, (int, float)) and isinstance(stored, (int, float)):
        return bool(stored == wanted)
    return False


class MetadataMatch:
    """A filter that runs in SQL: the documents whose metadata hold every given key with an
    equal JSON scalar (``metadata @> '{"lang": "en"}'``). Values are str, int, finite float,
    bool or None; a bool matches only a bool and None only null, numbers match by value (``1``
    matches ``1.0``), and a key absent from a document never matches.

    It is also the same predicate in Python, ``match(record) -> bool``, so ``hybrid_search(...,
    where=MetadataMatch(lang="en"))`` filters in SQL inside the searches and again, identically,
    in-engine. ``TypeError``/``ValueError`` for keys that are not str, other values, NaN, NUL."""

    def __init__(self, fields: Mapping[str, Any] | None = None, /, **more: Any) -> None:
        merged = {**(fields or {}), **more}
        for key, value in merged.items():
            if not isinstance(key, str):
                raise TypeError(f"metadata keys must be str, got {type(key).__name__} {key!r}")
            if not (value is None or isinstance(value, (str, bool, int, float))):
                raise TypeError(
                    f"metadata value of {key!r} must be a JSON scalar (str, int, float, bool or "
                    f"None), got {type(value).__name__}"
                )
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"metadata value of {key!r} must be finite, got {value!r}")
        self.fields: dict[str, Any] = merged
        self.json = json.dumps(merged, allow_nan=False)
        if "\\u0000" in self.json:
            raise ValueError("metadata keys and values must not contain NUL")

    def __call__(self, record: Any) -> bool:
        metadata = getattr(record, "metadata", None) or {}
        return all(
            key in metadata and _json_equal(metadata[key], value)
            for key, value in self.fields.items()
        )

    def __repr__(self) -> str:
        return f"MetadataMatch({self.fields!r})"


class PostgresStore:
    """Documents in PostgreSQL: a keyword index (full-text search ranked by BM25), a vector index
    (pgvector, HNSW or exact) and a record store (``get``/``get_many``/``live_ids``, soft
    deletes), over a table made on demand.

    ``dsn_or_connection``: a connection string (the store opens a ``psycopg_pool.ConnectionPool``
    of up to ``pool_size`` connections, with ``connect_timeout`` and ``statement_timeout`` in
    seconds, and closes it in ``close()``), a ``psycopg_pool.ConnectionPool`` or a
    ``psycopg.Connection`` of yours (used as they are, never closed by the store; a single
    connection serves one thread at a time). Connections get pgvector's type adapters.

    - ``table``: the table's name in the connection's ``search_path``; ``<table>_stats`` and the
      indexes are named after it.
    - ``dim``: the embeddings' dimension; None takes it from the first embeddings written (or an
      existing table's column).
    - ``metric``: ``"cosine"`` (``<=>``; similarity = 1 - cosine distance = the cosine),
      ``"l2"`` (``<->``; similarity = minus the Euclidean distance) or ``"ip"`` (``<#>``;
      similarity = the inner product). Higher is better in every case.
    - ``text_config``: the text search configuration of the ``tsvector`` column and of queries.
    - ``index``: ``"hnsw"`` (an HNSW index over the live rows; searched with
      ``hnsw.ef_search = clamp(k, 40, 1000)`` and ``hnsw.iterative_scan = strict_order``, so a
      search returns ``k`` rows when there are that many, in exact distance order among those
      it found) or None (exact: every live row's distance, ties to the earlier-added row).
    - ``stopwords``: query words left out of keyword searches besides ``text_config``'s own
      stop words (as ``SQLiteStore``'s ``stopwords``).
    - ``k1``, ``b``: BM25's parameters.
    - ``pool_size``, ``connect_timeout``, ``statement_timeout`` (seconds; None: the server's):
      the pool the store opens for a connection string (libpq counts ``connect_timeout`` in
      whole seconds, at least 2). Ignored for a pool or a connection of yours.

    ``filtering`` is ``"pre"`` (exact search) or ``"post"`` (HNSW): the searches take
    ``hybrid_search``'s ``where`` -- a ``MetadataMatch`` as a SQL ``WHERE``, any other predicate
    in Python over the ranked rows -- and the pipeline applies it again to the records in-engine
    (inside the snapshot). See ``filtering`` and docs/postgres.md.
    """

    def __init__(
        self,
        dsn_or_connection: str | psycopg.Connection[Any] | ConnectionPool,
        *,
        table: str = "documents",
        dim: int | None = None,
        metric: Metric = "cosine",
        text_config: str = "english",
        index: Literal["hnsw"] | None = "hnsw",
        stopwords: Iterable[str] = (),
        k1: float = 1.2,
        b: float = 0.75,
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = 60.0,
    ) -> None:
        if metric not in _METRICS:
            raise ValueError(f"metric must be one of {sorted(_METRICS)}, got {metric!r}")
        if index not in ("hnsw", None):
            raise ValueError(f"index must be 'hnsw' or None, got {index!r}")
        if not isinstance(table, str) or not table or len(table.encode()) > 40:
            raise ValueError(f"table must be a non-empty str of at most 40 bytes, got {table!r}")
        if dim is not None:
            if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
                raise TypeError(f"dim must be an int or None, got {type(dim).__name__} {dim!r}")
            dim = operator.index(dim)
            if not 1 <= dim <= 16000:  # pgvector's largest vector
                raise ValueError(f"dim must be between 1 and 16000, got {dim}")
        for name, value in (("k1", k1), ("b", b)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be between 0 and 1, got {b!r}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be an int >= 1, got {pool_size!r}")
        for name, value in (
            ("connect_timeout", connect_timeout),
            ("statement_timeout", statement_timeout),
        ):
            if value is None and name == "statement_timeout":
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
        self.table = table
        self.metric: Metric = metric
        self.text_config = _check_text(text_config, "text_config")
        self.index = index
        self.stopwords = frozenset(stopwords)
        self.k1 = float(k1)
        self.b = float(b)
        self._dim = dim
        self._kind: str | None = None  # the id column's type, once the table exists
        self._local = threading.local()  # .conn: this thread's snapshot connection
        self._lock = threading.RLock()  # a single connection of the caller's: one thread at a time
        # the connections given pgvector's adapters
        self._registered: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        self._pool: ConnectionPool[Any] | None = None
        self._connection: psycopg.Connection[Any] | None = None
        self._owns_pool = False
        if isinstance(dsn_or_connection, str):
            options: dict[str, Any] = {
                "autocommit": True,
                "connect_timeout": max(1, math.ceil(connect_timeout)),
            }
            if statement_timeout is not None:
                # added to the DSN's own options (or PGOPTIONS'), which a keyword would replace
                given = conninfo_to_dict(dsn_or_connection).get("options")
                given = os.environ.get("PGOPTIONS", "") if given is None else given
                timeout = f"-c statement_timeout={int(statement_timeout * 1000)}"
                options["options"] = f"{given} {timeout}".strip()
            self._ensure_extension(dsn_or_connection, options)
            self._pool = ConnectionPool(
                dsn_or_connection,
                min_size=1,
                max_size=pool_size,
                kwargs=options,
                timeout=connect_timeout + (statement_timeout or 0),
                open=True,
            )
            self._owns_pool = True
        elif isinstance(dsn_or_connection, ConnectionPool):
            self._pool = dsn_or_connection
        elif isinstance(dsn_or_connection, psycopg.Connection):
            self._connection = dsn_or_connection
        else:
            raise TypeError(
                "dsn_or_connection must be a str, a psycopg.Connection or a "
                f"psycopg_pool.ConnectionPool, got {type(dsn_or_connection).__name__}"
            )
        try:
            self._names()
            self._read_schema()
        except BaseException:
            self.close()
            raise

    # --- connections and transactions -----------------------------------------------------------

    @staticmethod
    def _ensure_extension(dsn: str, options: dict[str, Any]) -> None:
        """``CREATE EXTENSION IF NOT EXISTS vector`` (pgvector's adapters need its types)."""
        with psycopg.connect(dsn, **options) as conn:
            installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            if installed.fetchone() is None:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    @contextmanager
    def _checkout(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for this thread alone: the pool's, or the caller's one under the lock;
        given pgvector's adapters the first time the store sees it."""
        if self._pool is not None:
            with self._pool.connection() as conn:
                self._register(conn)
                yield conn
            return
        own = self._connection
        if own is None:
            raise RuntimeError("the store is closed")
        with self._lock:
            self._register(own)
            yield own

    def _register(self, conn: psycopg.Connection[Any]) -> None:
        if conn in self._registered:
            return
        with conn.transaction():  # leaves no transaction of ours open
            installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            if installed.fetchone() is None:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
        self._registered.add(conn)

    @contextmanager
    def _reading(self, transaction: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """The connection to read with: this thread's snapshot's, else one checked out for the
        call (its statements each in their own transaction, or in one with ``transaction``)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self._checkout() as conn:
            if transaction or not conn.autocommit:
                with conn.transaction():
                    yield conn
            else:
                yield conn

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection inside a new read-write transaction, committed at the end of the block
        (rolled back if it raises): every write is all or nothing."""
        if getattr(self._local, "conn", None) is not None and self._pool is None:
            raise RuntimeError(
                "cannot write inside snapshot() on a store over one connection: its read-only "
                "transaction holds the connection"
            )
        with self._checkout() as conn:
            if conn.info.transaction_status != TransactionStatus.IDLE:
                raise RuntimeError("the connection is inside a transaction of its own")
            with conn.transaction():
                yield conn

    @contextmanager
    def snapshot(self) -> Iterator[PostgresStore]:
        """While the block runs, every read of this store in this thread (searches, ``get``,
        ``get_many``, ``live_ids``, ``len``) runs in ONE ``REPEATABLE READ, READ ONLY``
        transaction: they all see the database as it was at its first statement, whatever other
        transactions commit meanwhile. ``hybrid_search`` opens one around each search. Nested
        blocks share the outer one; writes go on their own connection (a store over a single
        connection of yours refuses them inside the block: ``RuntimeError``).

        Yields the store. Raises ``RuntimeError`` if a connection of yours is already inside a
        transaction (its isolation level could not be set)."""
        if getattr(self._local, "conn", None) is not None:
            yield self
            return
        with self._checkout() as conn:
            if conn.info.transaction_status != TransactionStatus.IDLE:
                raise RuntimeError(
                    "snapshot() needs a connection outside any transaction: the snapshot is a "
                    "REPEATABLE READ transaction of its own"
                )
            saved = (conn.isolation_level, conn.read_only)
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            try:
                with conn.transaction():
                    self._local.conn = conn
                    self._local.seen = set()  # ids the searches found live in this snapshot
                    try:
                        yield self
                    finally:
                        self._local.conn = None
                        self._local.seen = None
            finally:
                if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
                    conn.isolation_level, conn.read_only = saved

    @property
    def snapshot_connection(self) -> psycopg.Connection[Any] | None:
        """The connection of this thread's open ``snapshot()`` (None outside one): run your own
        queries on it to read the same snapshot as the store's methods."""
        return getattr(self._local, "conn", None)

    # --- schema ---------------------------------------------------------------------------------

    def _names(self) -> None:
        t = self.table
        self._t = sql.Identifier(t)
        self._stats = sql.Identifier(f"{t}_stats")
        self._count_fn = sql.Identifier(f"{t}_count")
        self._tokens_fn = sql.Identifier(f"{t}_tokens")
        op, opclass, similarity = _METRICS[self.metric]
        self._op = sql.SQL(op)
        self._opclass = sql.SQL(opclass)
        self._similarity = similarity
        self._hnsw = sql.Identifier(f"{t}_{self.metric}_hnsw")

    def _read_schema(self) -> None:
        """The id column's type and the embedding's dimension of an existing table (nothing when
        there is none yet); a table made for another text configuration is a ValueError."""
        with self._reading() as conn:
            row = conn.execute(
                """
                SELECT format_type(a.atttypid, a.atttypmod), e.atttypmod, s.config
                FROM pg_attribute a
                JOIN pg_attribute e ON e.attrelid = a.attrelid AND e.attname = 'embedding'
                LEFT JOIN LATERAL (
                    SELECT pg_get_expr(d.adbin, d.adrelid) AS config FROM pg_attrdef d
                    JOIN pg_attribute g ON g.attrelid = d.adrelid AND g.attnum = d.adnum
                    WHERE d.adrelid = a.attrelid AND g.attname = 'tsv'
                ) s ON true
                WHERE a.attrelid = to_regclass(%s) AND a.attname = 'id'
                """,
                [sql.Identifier(self.table).as_string(conn)],
            ).fetchone()
        if row is None:
            return
        kind, typmod, config = row
        self._kind = "bigint" if kind == "bigint" else "text"
        if typmod is not None and typmod > 0:
            if self._dim is not None and self._dim != typmod:
                raise ValueError(f"dim is {self._dim}, the table's embeddings have {typmod}")
            self._dim = typmod
        if config is not None and f"'{self.text_config}'::regconfig" not in config:
            raise ValueError(
                f"table {self.table!r} was made for another text configuration ({config}), "
                f"not {self.text_config!r}"
            )
        if self.index == "hnsw" and self._dim is not None:
            with self._writing() as conn:
                self._create_hnsw(conn)

    def _create_hnsw(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding {}) WHERE NOT deleted"
            ).format(self._hnsw, self._t, self._opclass)
        )

    def _create(self, conn: psycopg.Connection[Any], kind: str, dim: int) -> None:
        """Creates the table, its indexes, the statistics table and its triggers (if missing),
        under a transaction-level advisory lock, so concurrent first writers make it once."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"rankfusion:{self.table}"])
        row = conn.execute("SELECT to_regclass(%s)", [self._t.as_string(conn)]).fetchone()
        exists = None if row is None else row[0]
        if exists is None:
            config = sql.Literal(self.text_config)
            document = sql.SQL("to_tsvector({}::regconfig, title || ' ' || text)").format(config)
            statements = [
                # tokens in a tsvector: its positions (to_tsvector keeps up to 256 per lexeme)
                sql.SQL(
                    "CREATE OR REPLACE FUNCTION {}(tsvector) RETURNS integer LANGUAGE sql "
                    "IMMUTABLE STRICT PARALLEL SAFE AS "
                    "$$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1) $$"
                ).format(self._tokens_fn),
                sql.SQL(
                    """
                    CREATE TABLE {t} (
                        pk bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        id {kind} NOT NULL UNIQUE,
                        title text NOT NULL DEFAULT '',
                        text text NOT NULL DEFAULT '',
                        metadata jsonb,
                        embedding vector({dim}),
                        deleted boolean NOT NULL DEFAULT false,
                        tsv tsvector GENERATED ALWAYS AS ({document}) STORED,
                        length integer GENERATED ALWAYS AS ({tokens}({document})) STORED
                    )
                    """
                ).format(
                    t=self._t,
                    kind=sql.SQL(kind),
                    dim=sql.Literal(dim),
                    document=document,
                    tokens=self._tokens_fn,
                ),
                sql.SQL("CREATE INDEX {} ON {} USING gin (tsv) WHERE NOT deleted").format(
                    sql.Identifier(f"{self.table}_tsv"), self._t
                ),
                sql.SQL("CREATE INDEX {} ON {} (id) WHERE NOT deleted").format(
                    sql.Identifier(f"{self.table}_live"), self._t
                ),
                sql.SQL(
                    "CREATE TABLE {} (one boolean PRIMARY KEY DEFAULT true CHECK (one), "
                    "documents bigint NOT NULL, tokens bigint NOT NULL)"
                ).format(self._stats),
                sql.SQL("INSERT INTO {} (documents, tokens) VALUES (0, 0)").format(self._stats),
                sql.SQL(
                    """
                    CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$
                    DECLARE
                        n bigint := 0; l bigint := 0; dn bigint; dl bigint;
                    BEGIN
                        IF TG_OP = 'TRUNCATE' THEN
                            UPDATE {stats} SET documents = 0, tokens = 0;
                            RETURN NULL;
                        END IF;
                        IF TG_OP IN ('INSERT', 'UPDATE') THEN
                            SELECT count(*), coalesce(sum(length), 0) INTO dn, dl
                            FROM new_rows WHERE NOT deleted;
                            n := n + dn; l := l + dl;
                        END IF;
                        IF TG_OP IN ('UPDATE', 'DELETE') THEN
                            SELECT count(*), coalesce(sum(length), 0) INTO dn, dl
                            FROM old_rows WHERE NOT deleted;
                            n := n - dn; l := l - dl;
                        END IF;
                        IF n <> 0 OR l <> 0 THEN
                            UPDATE {stats} SET documents = documents + n, tokens = tokens + l;
                        END IF;
                        RETURN NULL;
                    END $$
                    """
                ).format(fn=self._count_fn, stats=self._stats),
            ]
            for event, referencing in (
                ("INSERT", "NEW TABLE AS new_rows"),
                ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
                ("DELETE", "OLD TABLE AS old_rows"),
            ):
                statements.append(
                    sql.SQL(
                        "CREATE TRIGGER {} AFTER {} ON {} REFERENCING {} "
                        "FOR EACH STATEMENT EXECUTE FUNCTION {}()"
                    ).format(
                        sql.Identifier(f"{self.table}_count_{event.lower()}"),
                        sql.SQL(event),
                        self._t,
                        sql.SQL(referencing),
                        self._count_fn,
                    )
                )
            statements.append(
                sql.SQL(
                    "CREATE TRIGGER {} AFTER TRUNCATE ON {} FOR EACH STATEMENT EXECUTE FUNCTION {}()"
                ).format(sql.Identifier(f"{self.table}_count_truncate"), self._t, self._count_fn)
            )
            for statement in statements:
                conn.execute(statement)
        if self.index == "hnsw":
            self._create_hnsw(conn)

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
        Ids, texts and embeddings as for ``add_documents``."""
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
        """Adds (or replaces) documents in ONE transaction, all or none: the rows are streamed
        to the server by one binary ``COPY`` into a temporary table, then moved into the table by
        one ``INSERT ... ON CONFLICT (id) DO UPDATE`` (a replaced document keeps its place in
        tie order and is live again).

        - ``ids``: unique, all ``int`` (fitting in 64 bits) or all ``str`` (without NUL), of the
          table's kind once it exists; a bool, float or other type is a ``TypeError``.
        - ``texts``, ``titles`` (default ``""``): ``str`` without NUL (``TypeError`` /
          ``ValueError``).
        - ``embeddings``: None or (n, dim) finite floats, stored as float32 (a ``ValueError``
          for another shape or dimension, NaN or infinity). The first write makes the table and
          needs ``dim`` (from the store or these embeddings).
        - ``metadata``: None or a JSON object per document (finite numbers, no NUL).

        Every argument is checked before anything is sent: a bad one leaves the table as it
        was."""
        n = len(ids)
        if len(texts) != n:
            raise ValueError("ids, texts, titles and metadata must have the same length")
        titles = [""] * n if titles is None else list(titles)
        metadata = [None] * n if metadata is None else list(metadata)
        if len(titles) != n or len(metadata) != n:
            raise ValueError("ids, texts, titles and metadata must have the same length")
        if n == 0:
            return
        kind = self._kind or _id_kind(ids[0])
        checked = [_check_id(i, kind) for i in ids]
        if len(set(checked)) != n:
            raise ValueError("ids must be unique")
        texts = [_check_text(t, f"texts[{i}]") for i, t in enumerate(texts)]
        titles = [_check_text(t, f"titles[{i}]") for i, t in enumerate(titles)]
        documents: list[str | None] = []
        for i, meta in enumerate(metadata):
            if meta is None:
                documents.append(None)
                continue
            if not isinstance(meta, Mapping):
                raise TypeError(
                    f"metadata[{i}] must be a mapping or None, got {type(meta).__name__}"
                )
            try:
                encoded = json.dumps(dict(meta), allow_nan=False)
            except (TypeError, ValueError) as error:
                raise type(error)(f"metadata[{i}] is not a JSON object: {error}") from None
            if "\\u0000" in encoded:
                raise ValueError(f"metadata[{i}] must not contain NUL (jsonb cannot hold it)")
            documents.append(encoded)
        vectors: list[Any] = [None] * n
        dim = self._dim
        if embeddings is not None:
            try:
                matrix = np.asarray(embeddings, dtype=np.float32)
            except (TypeError, ValueError) as error:
                raise ValueError(f"embeddings must be (n, dim) numbers: {error}") from None
            if matrix.ndim != 2 or matrix.shape[0] != n:
                raise ValueError(f"embeddings must have shape ({n}, dim), got {matrix.shape}")
            if not np.isfinite(matrix).all():
                raise ValueError("embeddings must be finite (no NaN or infinity)")
            if dim is not None and matrix.shape[1] != dim:
                raise ValueError(f"embeddings have dimension {matrix.shape[1]}, the store {dim}")
            if not 1 <= matrix.shape[1] <= 16000:
                raise ValueError(f"embeddings must have 1 to 16000 dimensions, got {matrix.shape}")
            dim = matrix.shape[1]
            vectors = list(np.ascontiguousarray(matrix))
        if dim is None:
            raise ValueError(
                "the store's dimension is unknown: pass dim= to PostgresStore or embeddings to "
                "the first add_documents"
            )
        stage = sql.Identifier("rankfusion_stage")
        with self._writing() as conn:
            if self._kind is None or self._dim is None:
                self._create(conn, kind, dim)
            conn.execute(
                sql.SQL(
                    "CREATE TEMPORARY TABLE {} (id {}, title text, text text, metadata text, "
                    "embedding vector) ON COMMIT DROP"
                ).format(stage, sql.SQL(kind))
            )
            with conn.cursor() as cursor:
                with cursor.copy(
                    sql.SQL(
                        "COPY {} (id, title, text, metadata, embedding) FROM STDIN (FORMAT BINARY)"
                    ).format(stage)
                ) as copy:
                    copy.set_types([kind, "text", "text", "text", "vector"])
                    for row in zip(checked, titles, texts, documents, vectors):
                        copy.write_row(row)
            conn.execute(
                sql.SQL(
                    """
                    INSERT INTO {t} (id, title, text, metadata, embedding, deleted)
                    SELECT id, title, text, metadata::jsonb, embedding, false FROM {stage}
                    ON CONFLICT (id) DO UPDATE SET title = excluded.title, text = excluded.text,
                        metadata = excluded.metadata, embedding = excluded.embedding,
                        deleted = false
                    """
                ).format(t=self._t, stage=stage)
            )
        self._kind, self._dim = kind, dim

    def delete(self, id: Hashable) -> bool:
        """Soft-deletes a document: every read skips it from now on. True if it was live."""
        key = _lookup_key(id, self._kind)
        if key is None:
            return False
        with self._writing() as conn:
            cursor = conn.execute(
                sql.SQL("UPDATE {} SET deleted = true WHERE id = %s AND NOT deleted").format(
                    self._t
                ),
                [key],
            )
            return cursor.rowcount > 0

    # --- the record store -----------------------------------------------------------------------

    def _array(self, keys: list[int | str]) -> sql.Composable:
        return sql.SQL("%s::bigint[]" if self._kind == "bigint" else "%s::text[]")

    def get(self, id: Hashable) -> Document | None:
        """The live document with this id, or None (missing or soft-deleted)."""
        key = _lookup_key(id, self._kind)
        if key is None:
            return None
        with self._reading() as conn:
            row = conn.execute(
                sql.SQL(
                    "SELECT id, title, text, metadata FROM {} WHERE id = %s AND NOT deleted"
                ).format(self._t),
                [key],
            ).fetchone()
        return None if row is None else Document(row[0], row[1], row[2], row[3] or {})

    def get_many(self, ids: Iterable[Hashable]) -> dict[int | str, Document]:
        """The live documents among ``ids``, by id, with ONE statement whatever their number
        (``id = ANY(%s)``, the ids as one array parameter). Missing and soft-deleted ids, and ids
        no stored id can equal, are left out."""
        keys = _lookup_keys(ids, self._kind)
        if not keys:
            return {}
        with self._reading() as conn:
            rows = conn.execute(
                sql.SQL(
                    "SELECT id, title, text, metadata FROM {} WHERE id = ANY({}) AND NOT deleted"
                ).format(self._t, self._array(keys)),
                [keys],
            ).fetchall()
        return {row[0]: Document(row[0], row[1], row[2], row[3] or {}) for row in rows}

    def _found(self, hits: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """A search's hits, noted as live in this thread's snapshot (if one is open)."""
        seen = getattr(self._local, "seen", None)
        if seen is not None:
            seen.update(id for id, _ in hits)
        return hits

    def live_ids(self, ids: Iterable[Hashable]) -> set[int | str]:
        """The live ids among ``ids`` (as stored: ``1.0`` finds ``1``), with ONE statement
        (``id = ANY(%s)``) that reads only the ids, from the index of the live rows' ids: no
        document is built. ``hybrid_search`` checks the candidates of both lists with it.

        Inside a ``snapshot()``, the ids this store's searches returned in it are live at that
        snapshot -- they were read live in it, and a REPEATABLE READ snapshot does not move --
        so only the other ids are asked about (none, when ``hybrid_search`` checks the
        candidates of the store's own searches): the answer the statement would give."""
        keys = _lookup_keys(ids, self._kind)
        seen = getattr(self._local, "seen", None)
        known: set[int | str] = set()
        if seen:
            known = {key for key in keys if key in seen}
            keys = [key for key in keys if key not in seen]
        if not keys:
            return known
        with self._reading() as conn:
            rows = conn.execute(
                sql.SQL("SELECT id FROM {} WHERE id = ANY({}) AND NOT deleted").format(
                    self._t, self._array(keys)
                ),
                [keys],
            ).fetchall()
        return known | {row[0] for row in rows}

    def __len__(self) -> int:
        """The number of live documents."""
        if self._kind is None:
            return 0
        with self._reading() as conn:
            row = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE NOT deleted").format(self._t)
            ).fetchone()
        return 0 if row is None else int(row[0])

    # --- filters ----------------------------------------------------------------------------

    @property
    def filtering(self) -> str:
        """How the searches apply a ``where`` filter (see ``rankfusion.hybrid``): ``"pre"``
        with ``index=None`` -- the filter is part of the search (a SQL ``WHERE`` for a
        ``MetadataMatch``; any other predicate is applied in Python to the ranked rows as a
        server-side cursor streams them), so a search returns ``k`` matching documents when
        there are that many; ``"post"`` with ``index="hnsw"``: pgvector applies a ``WHERE`` to
        the rows the HNSW index yields, and its iterative scan (``strict_order``) keeps the index
        yielding until ``k`` rows match or ``hnsw.max_scan_tuples`` rows (20,000 by default)
        have been visited -- so a very selective filter can return fewer than ``k``. Keyword
        search filters before its top ``k`` either way (BM25's statistics stay the whole
        table's)."""
        return "pre" if self.index is None else "post"

    def _filter(
        self, where: Any
    ) -> tuple[sql.Composable | None, dict[str, Any], Callable[[Any], Any] | None]:
        """(a SQL condition on the table aliased ``f``, its parameters, a Python predicate)."""
        if where is None:
            return None, {}, None
        if isinstance(where, MetadataMatch):
            return sql.SQL("f.metadata @> %(match)s::jsonb"), {"match": where.json}, None
        if callable(where):
            return None, {}, where
        raise TypeError(f"where must be callable or None, got {type(where).__name__} {where!r}")

    def _stream(
        self,
        conn: psycopg.Connection[Any],
        statement: sql.Composed,
        params: dict[str, Any],
        predicate: Callable[[Any], Any],
        k: int,
    ) -> list[tuple[Any, Any]]:
        """The first ``k`` rows (id, value) of ``statement`` -- (id, value, title, text,
        metadata) rows -- whose document satisfies ``predicate``, read by a server-side cursor
        in growing batches (the statement runs once, inside the caller's transaction)."""
        found: list[tuple[Any, Any]] = []
        batch = max(min(k, 1000), 50)
        with conn.cursor(name=f"rankfusion_{threading.get_ident()}") as cursor:
            cursor.execute(statement, params)
            while len(found) < k:
                rows = cursor.fetchmany(batch)
                for id, value, title, text, metadata in rows:
                    if predicate(Document(id, title, text, metadata or {})):
                        found.append((id, value))
                        if len(found) == k:
                            break
                if len(rows) < batch:
                    break
                batch = min(2 * batch, 10_000)
        return found

    # --- the keyword index ----------------------------------------------------------------------

    def keyword_sql(self, where: sql.Composable | None = None) -> sql.Composed:
        """The keyword search as one SQL statement, with the parameters ``config``, ``text``,
        ``stopwords``, ``k1``, ``b`` and ``k``: (id, pk, score) rows, best first. The query's
        terms are the lexemes of ``to_tsvector(config, text)`` (stemmed, the configuration's stop
        words and ``stopwords`` left out), OR-ed; every live document holding one is scored by
        BM25 (Lucene's idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``) from its term frequencies
        (the positions of the lexeme in its ``tsvector``), its length (tokens) and the
        statistics table (N live documents, their mean length); ties go to the earlier-added
        document (``pk``). ``where``: a condition on the table aliased ``f``, applied after
        scoring (the statistics stay the whole table's), before the ``LIMIT``."""
        join: sql.Composable = sql.SQL("")
        if where is not None:
            join = sql.SQL("JOIN {t} f ON f.pk = m.pk AND ({where})").format(t=self._t, where=where)
        return sql.SQL(
            r"""
            WITH terms AS (
                SELECT lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(text)s))
                EXCEPT
                SELECT lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(stopwords)s))
            ), query AS (
                SELECT array_agg(lexeme) AS lexemes,
                       string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''')
                                  || '''', ' | ')::tsquery AS tsquery
                FROM terms
            ), matches AS (
                -- the query's lexemes of each live document holding one: its tsvector with
                -- their positions weighted A, filtered to weight A (our column has only D)
                SELECT d.pk, d.id, d.length, u.lexeme, cardinality(u.positions) AS tf
                FROM {t} d CROSS JOIN query q
                CROSS JOIN LATERAL unnest(ts_filter(setweight(d.tsv, 'A', q.lexemes), '{{a}}')) u
                WHERE d.tsv @@ (SELECT tsquery FROM query) AND NOT d.deleted
            ), df AS (
                SELECT lexeme, count(*) AS df FROM matches GROUP BY lexeme
            )
            SELECT m.id, m.pk, sum(
                ln(1.0::float8 + (s.documents - df.df + 0.5::float8) / (df.df + 0.5::float8))
                * m.tf * (%(k1)s::float8 + 1.0::float8)
                / (m.tf + %(k1)s::float8 * (1.0::float8 - %(b)s::float8 + %(b)s::float8 * m.length
                   / (s.tokens::float8 / nullif(s.documents, 0))))
            ) AS score
            FROM matches m JOIN df USING (lexeme) CROSS JOIN {stats} s {join}
            GROUP BY m.pk, m.id
            ORDER BY score DESC, m.pk
            LIMIT %(k)s
            """
        ).format(t=self._t, stats=self._stats, join=join)

    def _keyword_params(self, text: str, k: int | None) -> dict[str, Any]:
        return {
            "config": self.text_config,
            "text": text.replace("\x00", " "),
            "stopwords": " ".join(sorted(self.stopwords)).replace("\x00", " "),
            "k1": self.k1,
            "b": self.b,
            "k": k,
        }

    def keyword_search(
        self, text: str, k: int, *, where: Callable[[Any], Any] | None = None
    ) -> list[tuple[int | str, float]]:
        """The ``k`` best live documents for ``text`` by BM25 (see ``keyword_sql``), as (id,
        score) pairs, best first (higher is better). User text is never parsed as query syntax:
        its words are stemmed and OR-ed; a NUL separates words. A text of no term (empty, only
        punctuation or stop words) or ``k <= 0`` returns []; a ``k`` larger than the store (of
        any size) returns every match. ``text`` must be a str (``TypeError``).

        ``where``: only documents it accepts (see ``filtering``): a ``MetadataMatch`` becomes a
        SQL condition; any other callable is called with each ranked document (a ``Document``)
        until ``k`` are accepted."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__} {text!r}")
        k = _limit(k)
        condition, extra, predicate = self._filter(where)
        if k <= 0 or self._kind is None:
            return []
        params = {**self._keyword_params(text, k), **extra}
        if predicate is None:
            with self._reading() as conn:
                rows = conn.execute(self.keyword_sql(condition), params).fetchall()
            return self._found([(row[0], row[2]) for row in rows])
        params["k"] = None  # LIMIT NULL: every match, streamed
        statement = sql.SQL(
            "SELECT r.id, r.score, f.title, f.text, f.metadata FROM ({ranked}) r "
            "JOIN {t} f ON f.pk = r.pk ORDER BY r.score DESC, r.pk"
        ).format(ranked=self.keyword_sql(), t=self._t)
        with self._reading(transaction=True) as conn:
            return self._found(self._stream(conn, statement, params, predicate, k))

    # --- the vector index -----------------------------------------------------------------------

    @property
    def dim(self) -> int | None:
        """The dimension of the stored embeddings; None before the table exists (unless given)."""
        return self._dim

    def vector_sql(self, where: sql.Composable | None = None) -> sql.Composed:
        """The vector search as one SQL statement, with the parameters ``vector`` and ``k``:
        (id, pk, distance) rows, nearest first, over the live rows with an embedding (and
        ``where``, a condition on the table aliased ``f``). With ``index="hnsw"`` the inner
        ``ORDER BY distance LIMIT k`` is what the HNSW index answers (ties among the rows it
        found then go to the earlier-added one); with ``index=None`` every distance is computed
        and ties go to the earlier-added row."""
        condition = sql.SQL("") if where is None else sql.SQL("AND ({})").format(where)
        if self.index == "hnsw":
            return sql.SQL(
                """
                SELECT id, pk, distance FROM (
                    SELECT f.id, f.pk, f.embedding {op} %(vector)s AS distance FROM {t} f
                    WHERE NOT f.deleted AND f.embedding IS NOT NULL {condition}
                    ORDER BY f.embedding {op} %(vector)s LIMIT %(k)s
                ) nearest ORDER BY distance, pk
                """
            ).format(t=self._t, op=self._op, condition=condition)
        # exact: every distance, computed apart (a MATERIALIZED CTE) so that the planner never
        # takes an HNSW index of the table (another store's) for the ORDER BY: it would return
        # what the index yields, at most hnsw.ef_search rows
        return sql.SQL(
            """
            WITH scored AS MATERIALIZED (
                SELECT f.id, f.pk, f.embedding {op} %(vector)s AS distance FROM {t} f
                WHERE NOT f.deleted AND f.embedding IS NOT NULL {condition}
            )
            SELECT id, pk, distance FROM scored ORDER BY distance, pk LIMIT %(k)s
            """
        ).format(t=self._t, op=self._op, condition=condition)

    def _query_vector(self, vector: Any) -> np.ndarray:
        try:
            query = np.asarray(vector, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError) as error:
            raise ValueError(f"vector must be numbers: {error}") from None
        if self._dim is not None and query.shape[0] != self._dim:
            raise ValueError(f"vector has dimension {query.shape[0]}, the store {self._dim}")
        if not np.isfinite(query).all():
            raise ValueError("vector must be finite (no NaN or infinity)")
        return query

    def _hnsw_settings(self, conn: psycopg.Connection[Any], k: int) -> None:
        """This transaction's HNSW search settings (``set_config(..., true)``: local to it)."""
        ef_search = min(max(k, _EF_SEARCH[0]), _EF_SEARCH[1])
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', 'strict_order', true)",
            [str(ef_search)],
        )

    def vector_search(
        self, vector: Any, k: int, *, where: Callable[[Any], Any] | None = None
    ) -> list[tuple[int | str, float]]:
        """The ``k`` live documents nearest ``vector`` by ``metric``, as (id, similarity) pairs,
        best first: similarity = 1 - cosine distance (``"cosine"``), minus the Euclidean
        distance (``"l2"``) or the inner product (``"ip"``), computed by pgvector from the
        stored float32 values (in float8). Exact with ``index=None``, approximate with HNSW (see
        ``vector_sql``). A ``k`` larger than the store (of any size) returns them all. A vector of
        another dimension, or with NaN or infinity, is a ``ValueError``.

        ``where``: only documents it accepts, as for ``keyword_search`` (see ``filtering`` for
        what HNSW does to it)."""
        k = _limit(k)
        query = self._query_vector(vector)
        condition, extra, predicate = self._filter(where)
        if k <= 0 or self._kind is None:
            return []
        hnsw = self.index == "hnsw"
        similarity = self._similarity
        params = {"vector": query, "k": k, **extra}
        with self._reading(transaction=hnsw or predicate is not None) as conn:
            if hnsw:
                self._hnsw_settings(conn, k)
            if predicate is None:
                rows = conn.execute(self.vector_sql(condition), params).fetchall()
                return self._found([(row[0], similarity(row[2])) for row in rows])
            if hnsw:  # what the index yields, in its order, as long as the cursor reads
                statement = sql.SQL(
                    "SELECT f.id, f.embedding {op} %(vector)s AS distance, f.title, f.text, "
                    "f.metadata FROM {t} f WHERE NOT f.deleted AND f.embedding IS NOT NULL "
                    "ORDER BY f.embedding {op} %(vector)s"
                ).format(op=self._op, t=self._t)
            else:  # every distance (see vector_sql), ties to the earlier-added row
                statement = sql.SQL(
                    "SELECT r.id, r.distance, f.title, f.text, f.metadata FROM ({ranked}) r "
                    "JOIN {t} f ON f.pk = r.pk ORDER BY r.distance, r.pk"
                ).format(ranked=self.vector_sql(), t=self._t)
                params["k"] = None  # LIMIT NULL
            found = self._stream(conn, statement, params, predicate, k)
        return self._found([(id, similarity(distance)) for id, distance in found])

    # --- the one-statement SQL RRF (a peer to compare with) -------------------------------------

    def sql_rrf(
        self, text: str, vector: Any, *, k: float = 60, window: int = 10, limit: int = 10
    ) -> list[tuple[int | str, float]]:
        """Reciprocal Rank Fusion in ONE SQL statement, as people write it for hybrid search in
        Postgres: two CTEs (this store's ``keyword_sql`` and ``vector_sql``, ``window`` rows
        each, numbered by ``row_number()``), a ``FULL OUTER JOIN`` on the id, ``1/(k + rank)``
        summed in float8, best first; ties go to the id met first in the interleaved order
        (keyword rank 1, vector rank 1, keyword rank 2, ...), as ``rankfusion.rrf`` breaks them.
        No traces, no records, no revalidation: a peer for tests and benchmarks. (id, score)
        pairs."""
        window, limit = _limit(window), _limit(limit)
        query = self._query_vector(vector)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__} {text!r}")
        if self._kind is None or window <= 0 or limit <= 0:
            return []
        statement = sql.SQL(
            """
            WITH keyword AS (
                SELECT id, row_number() OVER (ORDER BY score DESC, pk) AS rank
                FROM ({keyword}) kw
            ), vector AS (
                SELECT id, row_number() OVER (ORDER BY distance, pk) AS rank
                FROM ({vector}) vs
            )
            SELECT coalesce(keyword.id, vector.id) AS id,
                   coalesce(1.0::float8 / (%(rrf_k)s::float8 + keyword.rank), 0.0::float8)
                   + coalesce(1.0::float8 / (%(rrf_k)s::float8 + vector.rank), 0.0::float8)
                   AS score
            FROM keyword FULL OUTER JOIN vector ON keyword.id = vector.id
            ORDER BY score DESC,
                     least(coalesce(2 * keyword.rank - 2, 'Infinity'::float8),
                           coalesce(2 * vector.rank - 1, 'Infinity'::float8))
            LIMIT %(limit)s
            """
        ).format(keyword=self.keyword_sql(), vector=self.vector_sql())
        params = self._keyword_params(text, window)
        params.update(vector=query, rrf_k=float(k), limit=limit)
        with self._reading(transaction=True) as conn:
            if self.index == "hnsw":
                self._hnsw_settings(conn, window)
            rows = conn.execute(statement, params).fetchall()
        return [(row[0], row[1]) for row in rows]

    # --- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the pool the store opened (a connection or pool of yours stays open)."""
        if self._owns_pool and self._pool is not None:
            self._pool.close()
        self._pool = None
        self._connection = None

    def __enter__(self) -> PostgresStore:  # noqa: PYI034 -- typing.Self is 3.11+
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
