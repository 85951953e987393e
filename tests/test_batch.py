"""rrf_batch and rrf_many: the API, layouts and dtypes, the width rule, and every bad argument
(the core must raise what the reference raises: same type, same message)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rankfusion as rf
from rankfusion import reference as ref

A = np.array([[1, 2, 3, -1], [4, -1, 5, 6]], dtype=np.int64)
B = np.array([[3, 9], [5, 5]], dtype=np.int64)


def outcome(f, *args, **kwargs):
    try:
        result = f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome
        return type(e), str(e)
    return result


def plain(results):
    """Hits (core or reference classes) as plain data, per query."""
    return [
        [
            (
                type(h.key),
                h.key,
                h.score.hex(),
                None if h.contributions is None else [c.to_dict() for c in h.contributions],
            )
            for h in hits
        ]
        for hits in results
    ]


def same_batch(a, b) -> bool:
    fields = ("ids", "scores", "counts", "ranks", "contributions")
    return all(
        (getattr(a, f) is None and getattr(b, f) is None)
        or np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
        for f in fields
    )


# --- the result ------------------------------------------------------------------------------


def test_result_arrays_and_unpacking():
    r = rf.rrf_batch([A, B], trace=True)
    ids, scores, counts = r
    assert ids is r.ids and scores is r.scores and counts is r.counts
    assert len(r) == 3 and r[0] is r.ids and r[-1] is r.counts
    assert ids.dtype == np.int64 and scores.dtype == np.float64 and counts.dtype == np.int64
    assert r.ranks.dtype == np.int32 and r.contributions.dtype == np.float64
    assert ids.shape == scores.shape == (2, int(counts.max()))
    assert r.ranks.shape == r.contributions.shape == (2, ids.shape[1], 2)
    assert same_batch(r, ref.rrf_batch([A, B], trace=True))
    with pytest.raises(AttributeError):
        r.ids = None  # frozen
    assert "BatchResult(ids=" in repr(r)
    assert same_batch(pickle.loads(pickle.dumps(r)), r)
    plain = rf.rrf_batch([A, B])
    assert plain.ranks is None and plain.contributions is None


def test_row_equals_rrf_and_pads_do_not_shift_ranks():
    r = rf.rrf_batch([A, B], trace=True)
    # Row 1: list 0 = [4, pad, 5, 6]: 5 keeps rank 3.
    expected = rf.rrf([[4, 7, 5, 6], [5, 5]])  # 7 stands in the pad's place: same ranks
    hits = {h.key: h for h in expected}
    assert r.ids[1, 0] == 5
    assert r.ranks[1, 0].tolist() == [3, 1]
    assert r.scores[1, 0] == hits[5].score
    assert r.scores[1, 1] == hits[4].score  # 4 at rank 1 of list 0
    assert 7 not in r.ids[1].tolist()


def test_width_rule():
    assert rf.rrf_batch([A, B]).ids.shape == (2, 4)  # largest count of any row
    assert rf.rrf_batch([A, B], limit=2).ids.shape == (2, 2)
    assert rf.rrf_batch([A, B], limit=100).ids.shape == (2, 6)  # cap: 4 + 2 columns
    assert rf.rrf_batch([A, B], limit=100, window=1).ids.shape == (2, 2)
    assert rf.rrf_batch([A, B], limit=0).ids.shape == (2, 0)
    empty = np.full((3, 4), -1)
    r = rf.rrf_batch([empty])
    assert r.ids.shape == (3, 0) and r.counts.tolist() == [0, 0, 0]
    r = rf.rrf_batch([])
    assert r.ids.shape == (0, 0) and r.counts.shape == (0,)
    r = rf.rrf_batch([np.zeros((0, 5), dtype=np.int64)], trace=True)
    assert r.ids.shape == (0, 0) and r.ranks.shape == (0, 0, 1)
    r = rf.rrf_batch([np.zeros((2, 0), dtype=np.int64)])
    assert r.ids.shape == (2, 0)


def test_normalize_without_positive_weight():
    # An argument error, raised before any row is read: rows of pads only, no rows at all and
    # no lists at all fail like any other batch.
    cases = [
        ([np.full((2, 3), -1)], [-1.0]),
        ([np.array([[-1, -1], [1, -1]])], [-1.0]),
        ([np.zeros((0, 3), dtype=np.int64)], [0.0]),
        ([], None),
    ]
    for f in (rf.rrf_batch, ref.rrf_batch):
        for lists, weights in cases:
            with pytest.raises(ValueError, match="^normalize=True needs"):
                f(lists, weights=weights, normalize=True)


def test_errors_name_the_first_failing_row():
    a = np.array([[1, 2], [3, 3], [4, 4]])
    for f in (rf.rrf_batch, ref.rrf_batch):
        with pytest.raises(ValueError) as e:
            f([a], duplicates="error")
        assert str(e.value) == "row 1: lists[0] has the key 3 more than once (rank 2)"
    big = np.array([[1], [2]])
    for f in (rf.rrf_batch, ref.rrf_batch):
        with pytest.raises(ValueError, match=r"^row 0: the score of key 1 is not finite"):
            f([big, big], weights=[1e308, 1e308], k=0)


@pytest.mark.parametrize(
    "convert",
    [
        lambda a: a.astype(np.int8),
        lambda a: a.astype(np.int16),
        lambda a: a.astype(np.int32),
        lambda a: a.astype(">i8"),
        lambda a: a.astype(np.uint8),
        lambda a: a.astype(np.uint16),
        lambda a: a.astype(np.uint32),
        np.asfortranarray,
        lambda a: np.repeat(a, 3, axis=1)[:, ::3],
        lambda a: a[::-1][::-1],
        lambda a: np.ascontiguousarray(a[:, ::-1])[:, ::-1],
        lambda a: a.tolist(),
        lambda a: [tuple(row) for row in a.tolist()],
    ],
)
def test_dtypes_and_layouts(convert):
    a = np.array([[1, 2, 3, 100], [4, 100, 5, 6]], dtype=np.int64)
    b = np.array([[3, 9], [5, 5]], dtype=np.int64)
    expected = rf.rrf_batch([a, b], pad=100, trace=True)
    got = rf.rrf_batch([convert(a), b], pad=100, trace=True)
    assert same_batch(got, expected)
    assert same_batch(got, ref.rrf_batch([convert(a), b], pad=100, trace=True))


def test_lists_may_be_any_iterable_of_arrays():
    stacked = np.stack([A, A])  # (L, Q, N): iterates as L arrays
    assert same_batch(rf.rrf_batch(stacked), rf.rrf_batch([A, A]))
    assert same_batch(rf.rrf_batch(iter([A, B])), rf.rrf_batch([A, B]))


def test_inputs_are_not_modified_and_outputs_are_fresh():
    a, b = A.copy(), B.copy()
    a.setflags(write=False)
    r1 = rf.rrf_batch([a, b])
    r2 = rf.rrf_batch([a, b])
    assert np.array_equal(a, A) and np.array_equal(b, B)
    r1.ids[:] = 0
    assert not np.array_equal(r1.ids, r2.ids)


KEPT_CALLS = textwrap.dedent(
    """
    import sys
    import numpy as np
    import rankfusion as rf

    def fill_the_shelf():
        # Calls whose buffers (other ids, other scores) are kept for the calls below to reuse.
        rng = np.random.default_rng(1)
        ids = [rng.integers(0, 10**9, size=(700, 160)) for _ in range(3)]
        rf.fuse_batch(ids, [rng.random((700, 160)) for _ in ids], method="sum", threads=2)
        rf.rrf_batch(ids, threads=1)

    def calls():
        # Large enough that the input copies and the chunk buffers (64 KiB or more) are kept
        # between calls; sizes that shrink and grow, so kept buffers are reused partly filled.
        rng = np.random.default_rng(7)
        out = []
        for q, n in ((400, 120), (150, 90), (600, 150), (300, 60)):
            ids = [rng.integers(0, 2 * n, size=(q, n)) for _ in range(3)]
            ids[1][::7, 5:9] = -1
            scores = [np.sort(rng.normal(size=(q, n)), axis=1)[:, ::-1].copy() for _ in ids]
            for threads in (1, 2):
                r = rf.rrf_batch(ids, threads=threads)
                out += [r.ids, r.scores, r.counts]
                r = rf.fuse_batch(ids, scores, method="wsum", norm="z-score",
                                  weights=[0.5, 0.3, 0.2], threads=threads)
                out += [r.ids, r.scores, r.counts]
        return out

    if sys.argv[2] == "fill":
        fill_the_shelf()
    np.savez(sys.argv[1], *calls())
    """
)


def test_kept_buffers_carry_nothing_from_one_call_to_the_next(tmp_path):
    """The buffers kept between calls (RANKFUSION_KEEP_MB, docs/batch.md) change no result:
    the same calls in a process that keeps none, and in one that keeps them (after other calls
    have left buffers of other contents on the shelf), give the same arrays."""
    script = tmp_path / "kept.py"
    script.write_text(KEPT_CALLS)
    results = {}
    for keep, first in (("0", "-"), ("256", "fill")):
        path = tmp_path / f"kept_{keep}.npz"
        env = {**os.environ, "RANKFUSION_KEEP_MB": keep}
        subprocess.run(
            [sys.executable, str(script), str(path), first], env=env, check=True, timeout=120
        )
        with np.load(path) as data:
            results[keep] = [data[k] for k in data.files]
    assert len(results["0"]) == len(results["256"]) == 48
    for a, b in zip(results["0"], results["256"]):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def test_tie_break_key_for_int_ids():
    a = np.array([[5, 3], [9, 1]])
    b = np.array([[3, 5], [1, 9]])
    for f in (rf.rrf_batch, ref.rrf_batch):
        assert f([a, b]).ids.tolist() == [[5, 3], [9, 1]]
        assert f([a, b], tie_break="key").ids.tolist() == [[3, 5], [1, 9]]


def test_rrf_many_basic():
    queries = [[["a", "b"], ["b", "c"]], [[1, 2], [2, 3]], [[(1,), 2.0], [2]], []]
    got = rf.rrf_many(queries, trace=True)
    assert got == [rf.rrf(q, trace=True) for q in queries]
    assert plain(got) == plain(ref.rrf_many(queries, trace=True))
    assert rf.rrf_many([]) == []
    assert rf.rrf_many(iter(queries), limit=1) == [rf.rrf(q, limit=1) for q in queries]
    # Equal strings that are different objects are one key; the first object met is returned.
    s1, s2 = "xy", "".join(["x", "y"])  # noqa: FLY002 - a distinct object on purpose
    assert s1 is not s2
    [[hit]] = rf.rrf_many([[[s1], [s2]]])
    assert hit.key is s1


def test_rrf_many_scores_are_per_query():
    queries = [[["a", "b"]], [[1, 2], [2]]]
    scores = [[[9.0, 8.0]], None]
    got = rf.rrf_many(queries, scores=scores, trace=True)
    assert got[0][0].contributions[0].score == 9.0
    assert plain(got) == plain(ref.rrf_many(queries, scores=scores, trace=True))


def test_rrf_many_errors_name_the_query():
    queries = [[[1, 2]], [[1, 1]], [[[]]]]
    for f in (rf.rrf_many, ref.rrf_many):
        with pytest.raises(ValueError) as e:
            f(queries, duplicates="error")
        assert str(e.value) == "queries[1]: lists[0] has the key 1 more than once (rank 2)"
    # The first failing query wins, whatever kind of error comes later.
    for f in (rf.rrf_many, ref.rrf_many):
        with pytest.raises(TypeError, match=r"^queries\[2\]: lists\[0\]\[0\] is not hashable"):
            f(queries)

    class Boom(Exception):
        pass

    class Bad:
        def __hash__(self):
            raise Boom("no hash")

    for f in (rf.rrf_many, ref.rrf_many):  # a key's own exception propagates unchanged
        with pytest.raises(Boom, match="^no hash$"):
            f([[[1]], [[Bad()]]])


# --- bad arguments: every one, for both functions, core == reference --------------------------

BAD_BATCH = [
    ("lists", None),
    ("lists", "abc"),
    ("lists", 5),
    ("lists", [None]),
    ("lists", [np.array([[1.5]])]),
    ("lists", [np.array([[True]])]),
    ("lists", [np.array([[1]], dtype=np.uint64)]),
    ("lists", [np.array([[1]], dtype=object)]),
    ("lists", [np.array([1, 2])]),
    ("lists", [np.zeros((1, 1, 1), dtype=np.int64)]),
    ("lists", [np.array(3)]),
    ("lists", [[[1, 2], [3]]]),
    ("lists", [["a", "b"]]),
    ("lists", [A, B[:1]]),
    ("pad", None),
    ("pad", 1.5),
    ("pad", True),
    ("pad", 2**63),
    ("pad", -(2**63) - 1),
    ("k", -1),
    ("k", float("nan")),
    ("k", "60"),
    ("k", None),
    ("weights", [1.0]),
    ("weights", [1.0, float("inf")]),
    ("weights", [1.0, "x"]),
    ("weights", 3),
    ("weights", "ab"),
    ("window", 0),
    ("window", 1.0),
    ("duplicates", "all"),
    ("duplicates", 1),
    ("tie_break", "score"),
    ("tie_break", None),
    ("offset", -1),
    ("offset", None),
    ("limit", -1),
    ("limit", "3"),
    ("min_score", float("inf")),
    ("min_score", "0"),
    ("normalize", 1),
    ("normalize", None),
    ("trace", "yes"),
    ("threads", 0),
    ("threads", 1.5),
    ("threads", True),
]


@pytest.mark.parametrize(("name", "value"), BAD_BATCH)
def test_bad_rrf_batch_argument(name, value):
    kwargs = {"lists": [A, B], name: value}
    got = outcome(rf.rrf_batch, **kwargs)
    want = outcome(ref.rrf_batch, **kwargs)
    assert isinstance(want, tuple), f"the reference accepts {name}={value!r}"
    assert got == want
    assert issubclass(got[0], (TypeError, ValueError))


def test_bad_arguments_are_checked_in_signature_order():
    kwargs = {"lists": [np.array([[1.5]])], "k": -1, "threads": 0}
    assert outcome(rf.rrf_batch, **kwargs) == outcome(ref.rrf_batch, **kwargs)
    assert outcome(rf.rrf_batch, [A], k=-1, threads=0)[1].startswith("k ")
    # the settings (a Fusion's) come before the batch's own inputs (lists, pad, threads)
    assert outcome(rf.rrf_batch, [A], pad=None, k=-1)[1].startswith("k ")
    assert outcome(rf.rrf_batch, [A], pad=None, threads=0)[1].startswith("pad ")


BAD_MANY = [
    ("queries", None),
    ("queries", "abc"),
    ("queries", [5]),
    ("queries", ["ab"]),
    ("queries", [[5]]),
    ("queries", [[[1, [2]]]]),
    ("k", -1),
    ("k", None),
    ("weights", [1.0, 2.0]),
    ("weights", [float("nan")]),
    ("weights", 1),
    ("window", 0),
    ("duplicates", "x"),
    ("tie_break", 0),
    ("offset", -2),
    ("limit", 1.5),
    ("min_score", float("nan")),
    ("normalize", "no"),
    ("scores", 3),
    ("scores", [None, None]),
    ("scores", [[[1.0]]]),
    ("scores", [[["x", 2.0]]]),
    ("trace", 0),
    ("threads", -1),
    ("threads", "2"),
]


@pytest.mark.parametrize(("name", "value"), BAD_MANY)
def test_bad_rrf_many_argument(name, value):
    kwargs = {"queries": [[[1, 2]]], name: value}
    got = outcome(rf.rrf_many, **kwargs)
    want = outcome(ref.rrf_many, **kwargs)
    assert isinstance(want, tuple), f"the reference accepts {name}={value!r}"
    assert got == want
    assert issubclass(got[0], (TypeError, ValueError))


def test_keyword_arguments_are_checked_even_without_queries():
    for f in (rf.rrf_many, ref.rrf_many):
        with pytest.raises(ValueError, match="^k must be >= 0"):
            f([], k=-1)
        with pytest.raises(ValueError, match="^threads must be >= 1"):
            f([], threads=0)


def test_rrf_many_across_blocks():
    # More queries than one block (1024): results and the first error still in query order.
    queries = [[[q, q + 1, q + 2], [str(q), q + 1]] if q % 3 else [[q, q + 1]] for q in range(3000)]
    queries += [[["a", "b"], ["b"]]] * 500
    assert plain(rf.rrf_many(queries, trace=True)) == plain(
        [rf.rrf(q, trace=True) for q in queries]
    )
    bad = list(queries)
    bad[2500] = [[1, 1]]
    bad[2900] = [[[]]]
    for f in (rf.rrf_many, ref.rrf_many):
        with pytest.raises(ValueError, match=r"^queries\[2500\]: lists\[0\] has the key 1 more"):
            f(bad, duplicates="error")


def _misaligned(array):
    """The same values in a read-only view at an odd address (as a buffer sliced from a file)."""
    array = np.ascontiguousarray(array)
    view = np.frombuffer(b"\0" + array.tobytes(), dtype=array.dtype, offset=1)
    view = view.reshape(array.shape)
    assert not view.flags.aligned and view.flags.c_contiguous
    return view


def test_misaligned_arrays_read_as_aligned_ones():
    # numpy keeps a misaligned view as it is when asked for a contiguous array of its dtype;
    # the core reads a copy then (it refused it with a bare ValueError before).
    ids = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    other = np.array([[3, 9, 1], [6, 7, 4]], dtype=np.int64)
    scores = np.array([[3.0, 2.0, 1.0], [0.5, 0.25, 0.0]])
    for impl in (rf, ref):
        want = impl.fuse_batch([ids, other], [scores, scores], method="wsum", norm="min-max")
        got = impl.fuse_batch(
            [_misaligned(ids), other],
            [_misaligned(scores), scores],
            method="wsum",
            norm="min-max",
        )
        for field in ("ids", "scores", "counts"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
        live = lambda ids: ids % 2 == 1
        want = impl.revalidate_batch(ids, scores, live)
        got = impl.revalidate_batch(_misaligned(ids), _misaligned(scores), live)
        for field in ("ids", "scores", "counts"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
