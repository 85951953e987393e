"""Differential tests of the batched functions (Hypothesis).

- ``rrf_batch`` (core) equals ``reference.rrf_batch`` exactly: the arrays bit for bit, or the same
  exception type and message;
- every row of ``rrf_batch`` equals ``rrf`` (the core and the reference) on that row when the row's
  pads are trailing (a FAISS-style row), exactly;
- ``rrf_many`` equals ``[rrf(q, ...) for q in queries]`` and ``reference.rrf_many`` exactly.

The number of examples comes from RANKFUSION_MAX_EXAMPLES (default 200), set here rather than in a
shared conftest.py.
"""

from __future__ import annotations

import os
import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankfusion as rf
from rankfusion import reference as ref

MAX_EXAMPLES = int(os.environ.get("RANKFUSION_MAX_EXAMPLES", "200"))
SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PAD = -1


def run(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception itself is the result
        return e


def same_exception(a, b) -> bool:
    return type(a) is type(b) and str(a) == str(b)


def bits(array):
    """Float arrays as their bits, so that NaN == NaN and 0.0 != -0.0."""
    return None if array is None else np.ascontiguousarray(array).view(np.uint64).tolist()


def assert_same_batch(a, b):
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert same_exception(a, b), (a, b)
        return
    assert a.ids.dtype == np.int64 and a.ids.shape == b.ids.shape
    assert a.ids.tolist() == b.ids.tolist()
    assert a.scores.dtype == np.float64 and bits(a.scores) == bits(b.scores)
    assert a.counts.dtype == np.int64 and a.counts.tolist() == b.counts.tolist()
    if b.ranks is None:
        assert a.ranks is None and a.contributions is None
    else:
        assert a.ranks.dtype == np.int32 and a.ranks.shape == b.ranks.shape
        assert a.ranks.tolist() == b.ranks.tolist()
        assert a.contributions.dtype == np.float64
        assert bits(a.contributions) == bits(b.contributions)


def hits(result):
    """A list of hits as plain data: key type, key, score bits, contributions."""
    if isinstance(result, Exception):
        return result
    return [
        (
            type(h.key),
            h.key,
            struct.pack("<d", h.score),
            None
            if h.contributions is None
            else [
                (c.list_index, c.rank, c.weight.hex(), c.contribution.hex(), c.score)
                for c in h.contributions
            ],
        )
        for h in result
    ]


def same_hits(a, b) -> bool:
    if isinstance(a, Exception) or isinstance(b, Exception):
        return same_exception(a, b)
    return hits(a) == hits(b)


@st.composite
def rows_of(draw, n_queries: int, n_cols: int, alphabet: int, interior_pads: bool):
    """One (Q, N) list: each row has some real entries, then pads (FAISS), sometimes pads inside."""
    rows = []
    for _ in range(n_queries):
        n_real = draw(st.integers(0, n_cols))
        row = [draw(st.integers(0, alphabet - 1)) for _ in range(n_real)] + [PAD] * (
            n_cols - n_real
        )
        if interior_pads and row:
            for i in draw(st.lists(st.integers(0, n_cols - 1), max_size=2)):
                row[i] = PAD
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(n_queries, n_cols)


@st.composite
def kwargs_for(draw, n_lists: int, tie_break: bool = True):
    kw = {}
    if draw(st.booleans()):
        kw["k"] = draw(st.sampled_from([0, 0.5, 1, 60, 2.5e-3]))
    if draw(st.booleans()):
        kw["weights"] = draw(
            st.lists(
                st.sampled_from([0, 1, -1, 0.5, 2.0, 5e-324, 1e-300, 1e308]),
                min_size=n_lists,
                max_size=n_lists,
            )
        )
    if draw(st.integers(0, 3)) == 0:
        kw["window"] = draw(st.integers(1, 5))
    kw["duplicates"] = draw(st.sampled_from(["first", "sum", "error"]))
    if tie_break and draw(st.integers(0, 2)) == 0:
        kw["tie_break"] = "key"
    if draw(st.integers(0, 3)) == 0:
        kw["offset"] = draw(st.integers(0, 3))
    if draw(st.integers(0, 2)) == 0:
        kw["limit"] = draw(st.integers(0, 5))
    if draw(st.integers(0, 3)) == 0:
        kw["min_score"] = draw(st.sampled_from([0.0, 0.02, -1.0, 0.5]))
    if draw(st.integers(0, 3)) == 0:
        kw["normalize"] = True
    kw["trace"] = draw(st.booleans())
    return kw


@st.composite
def batches(draw, interior_pads: bool):
    n_lists = draw(st.integers(0, 4))
    n_queries = draw(st.integers(0, 5))
    alphabet = draw(st.sampled_from([3, 8, 40]))
    lists = [
        draw(rows_of(n_queries, draw(st.integers(0, 7)), alphabet, interior_pads))
        for _ in range(n_lists)
    ]
    # Other dtypes and layouts of the same values.
    for i, a in enumerate(lists):
        how = draw(st.sampled_from(["int64", "int32", "int16", "fortran", "strided", "bigendian"]))
        if how in ("int32", "int16"):
            lists[i] = a.astype(how)
        elif how == "fortran":
            lists[i] = np.asfortranarray(a)
        elif how == "strided":
            wide = np.repeat(a, 2, axis=1)
            lists[i] = wide[:, ::2]
        elif how == "bigendian":
            lists[i] = a.astype(">i8")
    return lists, draw(kwargs_for(n_lists))


@SETTINGS
@given(batches(interior_pads=True), st.sampled_from([None, 1, 2]))
def test_rrf_batch_equals_reference(batch, threads):
    lists, kw = batch
    before = [a.copy() for a in lists]
    a = run(rf.rrf_batch, lists, threads=threads, **kw)
    b = run(ref.rrf_batch, lists, threads=threads, **kw)
    assert_same_batch(a, b)
    for x, y in zip(lists, before):
        assert np.array_equal(x, y)  # no input is modified


@SETTINGS
@given(batches(interior_pads=False))
def test_every_row_equals_rrf_on_that_row(batch):
    lists, kw = batch
    result = run(rf.rrf_batch, lists, **kw)
    n_queries = lists[0].shape[0] if lists else 0
    if isinstance(result, Exception) and not str(result).startswith("row "):
        # An argument error (normalize=True without a positive weight): rrf raises it too, for
        # every row, whatever the row holds.
        assert kw.get("normalize") is True, result
        for q in range(n_queries):
            row = [[int(x) for x in a[q] if x != PAD] for a in lists]
            expected = run(rf.rrf, row, **kw)
            assert type(expected) is type(result) and str(expected) == str(result)
        return
    for q in range(n_queries):
        row = [[int(x) for x in a[q] if x != PAD] for a in lists]  # pads are trailing only
        expected = run(rf.rrf, row, **kw)
        assert same_hits(expected, run(ref.rrf, row, **kw))
        if isinstance(result, Exception):
            if isinstance(expected, Exception):
                assert type(expected) is type(result)
                assert str(result) == f"row {q}: {expected}"
                break
            continue  # a later row fails; this one must not
        assert not isinstance(expected, Exception), expected
        count = int(result.counts[q])
        assert count == len(expected)
        assert result.ids[q, :count].tolist() == [h.key for h in expected]
        assert bits(result.scores[q, :count]) == bits(np.array([h.score for h in expected]))
        assert (result.ids[q, count:] == PAD).all()
        assert np.isnan(result.scores[q, count:]).all()
        if kw["trace"]:
            for j, h in enumerate(expected):
                # Per list: the best rank, and the canonical sum of that list's contributions.
                by_list: dict = {}
                for c in h.contributions:
                    by_list.setdefault(c.list_index, []).append(c)
                for i in range(len(lists)):
                    mine = by_list.get(i, [])
                    rank = min((c.rank for c in mine), default=0)
                    total = ref.canonical_sum(c.contribution for c in mine)
                    assert result.ranks[q, j, i] == rank
                    assert result.contributions[q, j, i].hex() == total.hex()
    else:
        assert not isinstance(result, Exception), (
            f"rrf_batch raised {result!r}, no row fails in rrf"
        )


KEYS = {
    "int": st.integers(0, 9),
    "str": st.sampled_from(list("abcdefg") + ["", "é", "ab"]),
    "mixed": st.sampled_from([1, 1.0, True, 2, "2", (1, 2), 2**70, -3, "a", None]),
    "bigint": st.sampled_from([2**63 - 1, -(2**63), 2**64, 0, 1]),
}


@st.composite
def many(draw):
    queries = []
    for _ in range(draw(st.integers(0, 6))):
        keys = KEYS[draw(st.sampled_from(sorted(KEYS)))]
        n_lists = draw(st.integers(0, 3))
        queries.append([draw(st.lists(keys, max_size=6)) for _ in range(n_lists)])
    kw = draw(kwargs_for(draw(st.integers(0, 3))))
    if draw(st.integers(0, 3)) == 0:  # raw scores per query
        kw["scores"] = [
            None if draw(st.booleans()) else [[0.5 * j for j in range(len(lst))] for lst in q]
            for q in queries
        ]
    return queries, kw


@SETTINGS
@given(many(), st.sampled_from([None, 1, 2]))
def test_rrf_many_equals_a_loop_of_rrf(case, threads):
    queries, kw = case
    got = run(rf.rrf_many, queries, threads=threads, **kw)
    want = run(ref.rrf_many, queries, threads=threads, **kw)
    if isinstance(want, Exception) or isinstance(got, Exception):
        assert same_exception(got, want), (got, want)
        return
    assert len(got) == len(want) == len(queries)
    scores = kw.pop("scores", None)
    for q, (g, w) in enumerate(zip(got, want)):
        assert same_hits(g, w)
        loop = run(rf.rrf, queries[q], scores=None if scores is None else scores[q], **kw)
        assert same_hits(g, loop)
