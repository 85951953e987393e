"""Threads and processes: the GIL is released, concurrent calls agree with sequential ones, an
input mutated meanwhile cannot corrupt a call, `threads=` bounds the pool, and a fork after a
parallel call does not hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import rankfusion as rf


def make_lists(n_queries: int, depth: int, n_lists: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    universe = int(depth * 1.6)  # ~30-50% overlap between lists
    lists = []
    for _ in range(n_lists):
        a = np.argsort(rng.random((n_queries, universe)), axis=1)[:, :depth].astype(np.int64)
        a[:, depth - depth // 10 :] = -1  # FAISS-style padding at the end
        lists.append(a)
    return lists


def same(a, b) -> bool:
    return (
        np.array_equal(a.ids, b.ids)
        and np.array_equal(a.scores, b.scores, equal_nan=True)
        and np.array_equal(a.counts, b.counts)
    )


def test_the_gil_is_released_during_rrf_batch():
    lists = make_lists(4000, 500)
    started, done = threading.Event(), threading.Event()
    elapsed = []

    def work():
        started.set()
        t = time.perf_counter()
        rf.rrf_batch(lists, threads=1)
        elapsed.append(time.perf_counter() - t)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    ticks = 0
    while not done.is_set():
        ticks += 1  # pure Python: runs only while the worker does not hold the GIL
    worker.join()
    # A call that held the GIL throughout would leave this loop a handful of switch intervals.
    assert elapsed[0] > 0.02, "the call is too short to tell"
    assert ticks > 10_000, (ticks, elapsed)


@pytest.mark.parametrize("n_threads", [8])
def test_concurrent_calls_equal_sequential_calls(n_threads):
    inputs = [make_lists(300, 64, n_lists=1 + i % 3, seed=i) for i in range(n_threads)]
    expected_batch = [rf.rrf_batch(x) for x in inputs]
    rows = [[a[0][a[0] != -1].tolist() for a in x] for x in inputs]
    expected_rrf = [rf.rrf(r) for r in rows]
    results: dict = {}
    barrier = threading.Barrier(n_threads)

    def work(i):
        barrier.wait()
        out = []
        for _ in range(5):
            out.append((rf.rrf_batch(inputs[i], threads=2), rf.rrf(rows[i])))
        results[i] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(n_threads):
        for batch, hits in results[i]:
            assert same(batch, expected_batch[i])
            assert hits == expected_rrf[i]


def test_concurrent_mutation_cannot_corrupt_a_call():
    # Another thread flips the rows of an input between two states while calls run. Each row
    # write is atomic under the GIL (100 int64: numpy keeps the GIL for copies that small; a bulk
    # numpy copy of a large array releases it, and then any reader can see a half-written array).
    # The call copies its input while holding the GIL, so every row it fuses is one state or the
    # other, never a row changed while it was being read.
    state_a = make_lists(2000, 100, n_lists=1, seed=1)[0]
    state_b = make_lists(2000, 100, n_lists=1, seed=2)[0]
    other = make_lists(2000, 100, n_lists=1, seed=3)[0]
    want = [rf.rrf_batch([state_a, other]), rf.rrf_batch([state_b, other])]
    shared = state_a.copy()
    stop = threading.Event()

    def mutate():
        while not stop.is_set():
            for state in (state_b, state_a):
                for r in range(len(shared)):
                    shared[r] = state[r]

    def row(result, q):
        n = result.counts[q]
        return result.ids[q, :n].tolist(), result.scores[q, :n].tolist()

    mutator = threading.Thread(target=mutate)
    mutator.start()
    try:
        for _ in range(10):
            got = rf.rrf_batch([shared, other], threads=2)
            for q in range(len(shared)):
                assert row(got, q) in (row(want[0], q), row(want[1], q)), q
    finally:
        stop.set()
        mutator.join()


def test_threads_bounds_and_environment(monkeypatch):
    lists = make_lists(3000, 50)
    expected = rf.rrf_batch(lists, threads=1)
    for threads in (1, 2, 3, 64):
        assert same(rf.rrf_batch(lists, threads=threads), expected)
    monkeypatch.setenv("RAYON_NUM_THREADS", "1")
    assert same(rf.rrf_batch(lists), expected)
    monkeypatch.setenv("RAYON_NUM_THREADS", "not a number")
    assert same(rf.rrf_batch(lists), expected)
    queries = [[[str(x) for x in a[q] if x != -1] for a in lists] for q in range(200)]
    assert rf.rrf_many(queries, threads=2) == rf.rrf_many(queries, threads=1)


FORK_SCRIPT = textwrap.dedent(
    """
    import multiprocessing as mp
    import numpy as np
    import rankfusion as rf

    rng = np.random.default_rng(0)
    lists = [rng.integers(0, 300, size=(4000, 100)) for _ in range(2)]

    def child(i):
        r = rf.rrf_batch(lists, threads=2)  # the parent's pool has no threads here
        m = rf.rrf_many([[[1, 2], [2, 3]]] * 2000, threads=2)
        return int(r.counts.sum()) + len(m)

    if __name__ == "__main__":
        parent = rf.rrf_batch(lists, threads=2)  # builds the pool before the fork
        rf.rrf_many([[["a"], ["b"]]] * 5000, threads=2)
        ctx = mp.get_context("fork")
        with ctx.Pool(2) as pool:
            got = pool.map(child, range(4))
        assert got == [int(parent.counts.sum()) + 2000] * 4, got
        pid = __import__("os").fork()
        if pid == 0:
            r = rf.rrf_batch(lists, threads=2)
            __import__("os")._exit(0 if np.array_equal(r.ids, parent.ids) else 1)
        _, status = __import__("os").waitpid(pid, 0)
        assert status == 0, status
        print("fork ok")
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method is for Linux")
def test_fork_after_a_parallel_call_does_not_hang(tmp_path):
    script = tmp_path / "fork_check.py"
    script.write_text(FORK_SCRIPT)
    # A session of its own, so that on a hang the script and its forked children are all killed.
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("a process forked after a parallel call hung")
    assert proc.returncode == 0, err
    assert "fork ok" in out
