"""PostgresStore under concurrent writers and faults, against the real server (the session's
EmbeddedServer): searchers and writers at once, the server killed (SIGKILL to every process)
during a batched load, connections dropped mid-query, timeouts.

``RANKFUSION_PG_SOAK_SECONDS`` sets how long the concurrent test runs (default 5 s in the
suite; the figures in docs/postgres.md come from a 30 s run).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest

from rankfusion import hybrid_search
from rankfusion.postgres import PostgresStore

SOAK_SECONDS = float(os.environ.get("RANKFUSION_PG_SOAK_SECONDS", "5"))
WORDS = "wing flutter panel shell boundary layer heat transfer flow shock wave plate".split()

HISTORY = """
CREATE TABLE history (
    seq bigserial PRIMARY KEY,
    id bigint NOT NULL,
    text text NOT NULL,
    metadata jsonb,
    deleted boolean NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO history (id, text, metadata, deleted)
    VALUES (NEW.id, NEW.text, NEW.metadata, NEW.deleted);
    RETURN NULL;
END $$;
CREATE TRIGGER log_change AFTER INSERT OR UPDATE ON documents
    FOR EACH ROW EXECUTE FUNCTION log_change();
"""


def text_of(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))


def test_searchers_and_writers_at_once(pg_dsn):
    """8 threads run hybrid_search while 2 threads add, rewrite and delete documents. Every row
    change is logged, by a trigger, with the id of the transaction that made it; each search
    records its snapshot (pg_current_snapshot(), read by the vector index from the store's
    snapshot connection in mid-search). Afterwards, for every hit of every search: the row as
    that snapshot saw it (the last logged change whose transaction is visible in it) is live,
    and the hit's record is that row."""
    dim, n = 16, 400
    rng = np.random.default_rng(1)
    store = PostgresStore(pg_dsn, dim=dim, pool_size=12)
    store.add(-1, "bootstrap", np.ones(dim))  # makes the table, before the log exists
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(HISTORY)
    texts = [text_of(random.Random(i)) for i in range(n)]
    store.add_documents(list(range(n)), texts, rng.normal(size=(n, dim)), metadata=[{"v": 0}] * n)
    store.delete(-1)
    deadline = time.monotonic() + SOAK_SECONDS
    searches: list = []  # (snapshot, [(id, text, metadata)])
    errors: list = []
    writes = [0, 0]  # the writes each writer made (a delete of no live row is none)

    class RecordingVectors:
        filtering = "none"

        def vector_search(self, vector, k):
            conn = store.snapshot_connection  # hybrid_search's snapshot, mid-search
            local.snapshot = conn.execute("SELECT pg_current_snapshot()::text").fetchone()[0]
            return store.vector_search(vector, k)

    local = threading.local()
    vectors = RecordingVectors()

    def searcher(seed: int) -> None:
        r = random.Random(seed)
        try:
            while time.monotonic() < deadline:
                local.snapshot = None
                hits = hybrid_search(
                    store,
                    " ".join(r.choices(WORDS, k=3)),
                    np.random.default_rng(r.randrange(2**32)).normal(size=dim),
                    vector_index=vectors,
                    limit=10,
                    window=10,
                )
                assert local.snapshot is not None
                searches.append(
                    (local.snapshot, [(h.id, h.record.text, h.record.metadata) for h in hits])
                )
        except BaseException as error:  # noqa: BLE001 -- reported below
            errors.append(error)

    def writer(seed: int) -> None:
        r = random.Random(seed)
        version = 0
        try:
            while time.monotonic() < deadline:
                version += 1
                id = r.randrange(n + 100)  # the top 100 ids are new the first time
                if r.random() < 0.3:
                    if not store.delete(id):
                        continue  # not live: nothing written
                else:
                    store.add(
                        id,
                        text_of(r),
                        np.random.default_rng(r.randrange(2**32)).normal(size=dim),
                        metadata={"v": version, "writer": seed},
                    )
                writes[seed] += 1
        except BaseException as error:  # noqa: BLE001 -- reported below
            errors.append(error)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(8)]
    threads += [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SOAK_SECONDS + 120)
        assert not t.is_alive(), "a thread hangs"
    assert errors == []
    hits = [
        (i, snap, id, text, meta)
        for i, (snap, found) in enumerate(searches)
        for id, text, meta in found
    ]
    assert len(searches) > 50 and sum(writes) > 50 and len(hits) > 5 * len(searches)
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            """
            SELECT h.n, s.text, s.metadata, s.deleted
            FROM unnest(%s::int[], %s::text[], %s::bigint[]) AS h(n, snapshot, id)
            LEFT JOIN LATERAL (
                SELECT text, metadata, deleted FROM history
                WHERE history.id = h.id AND pg_visible_in_snapshot(xid, h.snapshot::pg_snapshot)
                ORDER BY seq DESC LIMIT 1
            ) s ON true
            ORDER BY h.n
            """,
            [list(range(len(hits))), [h[1] for h in hits], [h[2] for h in hits]],
        ).fetchall()
        changes = conn.execute("SELECT count(*) FROM history").fetchone()[0]
    assert len(rows) == len(hits) and changes == n + 1 + sum(writes)  # + the bootstrap's delete
    for (_, _, id, text, meta), (_, seen_text, seen_meta, deleted) in zip(hits, rows):
        assert deleted is False, f"hit {id} was deleted (or missing) at its search's snapshot"
        assert (text, meta) == (seen_text, seen_meta), f"hit {id}'s record is not its snapshot's"
    print(
        f"\n{SOAK_SECONDS:g}s: {len(searches)} hybrid searches ({len(hits)} hits checked), "
        f"{sum(writes)} writes"
    )
    store.close()


def wait_for(predicate, timeout=30.0, step=0.01):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(step)


def test_kill_9_during_a_batched_load_is_all_or_nothing_per_batch(pg_server, pg_dsn):
    """Batches of 1,000 documents go in by add_documents (one COPY, one transaction each) until
    the server is killed -- every process of it, SIGKILL -- while a batch is being written.
    After a restart (crash recovery): every batch that returned is there in full, every other
    batch is there in full or not at all, the statistics row matches the rows, and the B-tree
    and GIN indexes pass amcheck; the HNSW index finds the rows exact search finds."""
    dim, size, batches = 32, 1000, 30
    rng = np.random.default_rng(2)
    store = PostgresStore(pg_dsn, dim=dim)
    returned: list[int] = []
    failure: list[BaseException] = []

    def load() -> None:
        try:
            for b in range(batches):
                ids = list(range(b * size, (b + 1) * size))
                store.add_documents(
                    ids,
                    [f"batch{b} " + text_of(random.Random(i)) for i in ids],
                    rng.normal(size=(size, dim)),
                    metadata=[{"batch": b}] * size,
                )
                returned.append(b)
        except psycopg.Error as error:
            failure.append(error)

    loader = threading.Thread(target=load)
    loader.start()
    with psycopg.connect(pg_server.dsn, autocommit=True) as watcher:

        def writing() -> bool:  # a batch past its first two, its COPY or INSERT running
            active = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND pid <> pg_backend_pid() "  # this query holds the words too
                "AND (query LIKE 'COPY%%' OR query LIKE '%%INSERT INTO%%')"
            ).fetchone()[0]
            return len(returned) >= 2 and active > 0

        wait_for(writing, step=0.001)
    pg_server.kill()
    loader.join(timeout=60)
    assert not loader.is_alive()
    assert len(failure) == 1 and len(returned) < batches  # it was killed mid-load
    store.close()
    pg_server.start()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        per_batch = dict(
            conn.execute(
                "SELECT (metadata->>'batch')::int, count(*) FROM documents GROUP BY 1"
            ).fetchall()
        )
        assert set(per_batch.values()) == {size}  # all or nothing, per batch
        assert set(returned) <= set(per_batch)  # what returned was committed, and survived
        assert set(per_batch) <= set(range(len(returned) + 1))
        live = conn.execute(
            "SELECT count(*), sum(length) FROM documents WHERE NOT deleted"
        ).fetchone()
        assert live == conn.execute("SELECT documents, tokens FROM documents_stats").fetchone()
        for index, check in conn.execute(
            "SELECT c.relname, CASE a.amname WHEN 'btree' THEN 'bt_index_check' "
            "WHEN 'gin' THEN 'gin_index_check' END FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
            "WHERE i.indrelid = 'documents'::regclass"
        ).fetchall():
            if check is not None:  # amcheck has no check for HNSW
                conn.execute(f"SELECT {check}(%s::regclass)", [index])
        by_gin = conn.execute(
            "SELECT count(*) FROM documents WHERE tsv @@ 'wing'::tsquery AND NOT deleted"
        ).fetchone()
        conn.execute("SET enable_bitmapscan = off")
        conn.execute("SET enable_indexscan = off")
        assert (
            by_gin
            == conn.execute(
                "SELECT count(*) FROM documents WHERE tsv @@ 'wing'::tsquery AND NOT deleted"
            ).fetchone()
        )
    with PostgresStore(pg_dsn) as after, PostgresStore(pg_dsn, index=None) as exact:
        assert len(after) == size * len(per_batch)
        for query in rng.normal(size=(10, dim)):
            found = after.vector_search(query, 10)
            assert len(found) == 10 and after.live_ids([i for i, _ in found]) == {
                i for i, _ in found
            }
            overlap = {i for i, _ in found} & {i for i, _ in exact.vector_search(query, 10)}
            assert len(overlap) >= 8
        after.add(10**6, "written after the crash", np.ones(dim))
        assert after.get(10**6).text == "written after the crash"


def blocked(store_call, dsn):
    """Runs ``store_call`` while another connection holds an ACCESS EXCLUSIVE lock on the
    table, so that the call's statement waits on the server; returns (future, locker)."""
    locker = psycopg.connect(dsn)
    locker.execute("LOCK TABLE documents IN ACCESS EXCLUSIVE MODE")
    executor = ThreadPoolExecutor(1)
    future = executor.submit(store_call)
    executor.shutdown(wait=False)
    return future, locker


def waiting_backend(dsn) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        pid = []

        def found():
            pid[:] = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchall()
            return bool(pid)

        wait_for(found)
        return pid[0][0]


def small_store(dsn, **kwargs) -> PostgresStore:
    store = PostgresStore(dsn, dim=3, **kwargs)
    store.add_documents([1, 2], ["wing flutter", "shell buckling"], np.eye(3)[:2])
    return store


def test_a_backend_terminated_mid_query_is_a_clear_error(pg_dsn):
    store = small_store(pg_dsn)
    future, locker = blocked(lambda: store.keyword_search("wing", 5), pg_dsn)
    try:
        pid = waiting_backend(pg_dsn)
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(psycopg.OperationalError, match="terminating connection"):
            future.result(timeout=30)
    finally:
        locker.close()
    assert store.keyword_search("wing", 5)[0][0] == 1  # the pool replaced the connection
    store.close()


def test_a_statement_past_statement_timeout_is_cancelled(pg_dsn):
    store = small_store(pg_dsn, statement_timeout=1.0)
    started = time.monotonic()
    future, locker = blocked(lambda: hybrid_search(store, "wing", [1, 0, 0]), pg_dsn)
    try:
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            future.result(timeout=30)
        assert time.monotonic() - started < 10
    finally:
        locker.close()
    assert [h.id for h in hybrid_search(store, "wing", [1, 0, 0])] == [1, 2]
    store.close()


def test_the_server_killed_mid_query_is_a_clear_error_then_a_reconnect(pg_server, pg_dsn):
    store = small_store(pg_dsn)
    future, locker = blocked(lambda: hybrid_search(store, "wing", [1, 0, 0]), pg_dsn)
    try:
        waiting_backend(pg_dsn)
        pg_server.kill()
        with pytest.raises(psycopg.OperationalError):
            future.result(timeout=30)
    finally:
        locker.close()
        pg_server.start()
    wait_for(lambda: _hybrid_ok(store), timeout=60, step=0.2)  # the pool reconnects
    store.close()


def _hybrid_ok(store) -> bool:
    try:
        return [h.id for h in hybrid_search(store, "wing", [1, 0, 0])] == [1, 2]
    except psycopg.OperationalError:
        return False


def test_a_server_that_never_answers_is_a_connect_timeout(pg_server, pg_dsn):
    small_store(pg_dsn).close()
    postmaster = pg_server.pid()
    os.kill(postmaster, signal.SIGSTOP)  # accepts on its socket (the kernel does), answers never
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(1) as executor:
            future = executor.submit(PostgresStore, pg_dsn, connect_timeout=2)
            with pytest.raises(psycopg.OperationalError, match="timeout"):
                future.result(timeout=60)
        assert time.monotonic() - started < 30
    finally:
        os.kill(postmaster, signal.SIGCONT)
    with PostgresStore(pg_dsn) as store:
        assert len(store) == 2
