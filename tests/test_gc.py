"""Large pages of hits are made without the cyclic collector's automatic collections (which
would walk every container of the process, the caller's long lists too, while the call can
neither progress nor handle Ctrl-C), and the collector's state is left as it was."""

from __future__ import annotations

import gc
import threading

import pytest

import rankfusion as rf

N = 200_000  # keys: a page of hits well above the size from which collection is paused


@pytest.fixture
def collections():
    """The generations of the collections that the test's own thread runs while its calls run
    (not those of other threads: a Dask cluster left by an earlier test allocates now and then,
    and collects in its own thread while the call has released the GIL)."""
    seen: list[int] = []
    test_thread = threading.get_ident()

    def count(phase, info):
        if phase == "start" and threading.get_ident() == test_thread:
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)


@pytest.mark.parametrize(
    "call",
    [
        lambda keys: rf.rrf([keys, keys[::-1]]),
        lambda keys: rf.fuse(
            [keys, keys[::-1]],
            scores=[[float(N - i) for i in range(N)]] * 2,
            method="sum",
            norm="z-score",
        ),
    ],
    ids=["rrf", "fuse"],
)
def test_a_large_page_runs_no_collection(collections, call):
    keys = [f"d{i}" for i in range(N)]
    hits = call(keys)
    assert len(hits) == N
    assert collections == []


def test_the_collectors_state_is_restored():
    keys = list(range(N))
    assert gc.isenabled()
    rf.rrf([keys])
    assert gc.isenabled()
    gc.disable()
    try:
        rf.rrf([keys])
        assert not gc.isenabled()
    finally:
        gc.enable()
