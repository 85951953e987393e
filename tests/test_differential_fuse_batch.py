"""Differential tests of ``fuse_batch`` (Hypothesis).

- ``fuse_batch`` (core) equals ``reference.fuse_batch`` exactly, for every method and norm: the
  arrays (ids, scores, counts; with traces ranks, contributions and normalised values) bit for
  bit, or the same exception type and message. Id arrays of any integer dtype and layout, with
  pads trailing and inside rows (and pads that are also ids); score arrays of float or int dtype
  whose pad positions hold NaN (never read); a non-finite score at a real position (an error
  naming the row and the position); boosts with int and numpy integer keys; deliberate mistakes.
- Row q of ``fuse_batch`` equals the core's ``fuse`` on row q, bit for bit (rows whose pads are
  trailing).

CI runs the main property with RANKFUSION_MAX_EXAMPLES (.ci/run, "fusion methods differential").
"""

from __future__ import annotations

import numpy as np
import pytest
from _fusion_cases import (
    BAD_GAMMAS,
    BAD_PHIS,
    BAD_REALS,
    BAD_SIGMAS,
    BIG_GAMMAS,
    BOOST_VALUES,
    BOOST_WEIGHTS,
    COMBINATIONS,
    GAMMAS,
    K_VALUES,
    MEANS,
    PHIS,
    SCORE_SHAPES,
    SIGMAS,
    WEIGHTS,
    below,
    combination_id,
    examples_for,
    method_and_norm,
    pick,
    picks,
    reads_scores,
    sometimes,
)
from hypothesis import event, given, settings
from hypothesis import strategies as st

import rankfusion
from rankfusion import reference as ref

CORE = rankfusion.fuse_batch
REF = ref.fuse_batch
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def run(fn, ids, scores, kw, positional):
    try:
        if positional:
            return fn(ids, scores, **kw)
        return fn(ids, **({} if scores is None else {"scores": scores}), **kw)
    except Exception as exc:  # noqa: BLE001 -- the exception is the outcome
        return exc


def float_bits(array):
    """Float arrays as their bits: NaN == NaN, 0.0 != -0.0."""
    return np.ascontiguousarray(array, dtype=np.float64).view(np.uint64).tolist()


def assert_same_batch(got, want) -> None:
    assert isinstance(got, rankfusion.BatchResult), type(got)
    assert got.ids.dtype == np.int64 and got.ids.shape == want.ids.shape
    assert got.ids.tolist() == want.ids.tolist()
    assert got.scores.dtype == np.float64 and got.scores.shape == want.scores.shape
    assert float_bits(got.scores) == float_bits(want.scores)
    assert got.counts.dtype == np.int64 and got.counts.tolist() == want.counts.tolist()
    if want.ranks is None:
        assert got.ranks is None and got.contributions is None and got.normalized is None
        return
    assert got.ranks.dtype == np.int32 and got.ranks.shape == want.ranks.shape
    assert got.ranks.tolist() == want.ranks.tolist()
    for name in ("contributions", "normalized"):
        g, w = getattr(got, name), getattr(want, name)
        assert g.dtype == np.float64 and g.shape == w.shape, name
        assert float_bits(g) == float_bits(w), name


def assert_same_outcome(got, want, method) -> None:
    if isinstance(want, Exception):
        event(f"outcome: raises {type(want).__name__}")
        assert isinstance(got, Exception), f"the reference raised {want!r}; the core returned"
        assert type(got) is type(want) and str(got) == str(want), (got, want)
        return
    event(f"outcome: {min(int(want.counts.sum()), 3)}+ hits")
    assert not isinstance(got, Exception), f"the core raised {got!r}; the reference returned"
    assert_same_batch(got, want)


# --- strategies -----------------------------------------------------------------------------------

MIN_SCORES = st.one_of(st.floats(-2, 2), st.sampled_from([0.0, 0.5, 1.0, 2.0, 1 / 61]))
ID_DTYPES = ["int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", ">i8"]


@st.composite
def id_matrix(draw, n_queries, n_cols, alphabet, pad, interior_pads):
    """(Q, N) ids: each row some real entries, then pads; sometimes pads inside a row. With
    interior pads, real entries may equal the pad (they are holes too)."""
    ids = list(range(alphabet)) if interior_pads else [x for x in range(alphabet) if x != pad]
    rows, n_real = [], []
    for _ in range(n_queries):
        # mostly full rows
        real = n_cols if draw(st.booleans()) else below(draw, n_cols + 1)
        row = picks(draw, ids, real) + [pad] * (n_cols - real)
        if interior_pads and row and sometimes(draw, 3):
            for _ in range(1 + below(draw, 2)):
                row[below(draw, n_cols)] = pad
        rows.append(row)
        n_real.append(real)
    return np.array(rows, dtype=np.int64).reshape(n_queries, n_cols), n_real


def as_id_dtype(draw, a, pad):
    """The same ids in another dtype or layout, when they fit."""
    how = pick(draw, ID_DTYPES + ["fortran", "strided", "list"])
    if how in ("fortran", "strided", "list"):
        if how == "fortran":
            return np.asfortranarray(a)
        if how == "strided":
            return np.repeat(a, 2, axis=1)[:, ::2]
        return a.tolist() if a.size else a
    info = np.iinfo(np.dtype(how))
    if a.size and (a.min() < info.min or a.max() > info.max):
        return a
    return a.astype(how)


@st.composite
def score_matrix(draw, ids, pad, shape_name, dtype, bad_real):
    """(Q, N) scores aligned with ``ids``: real positions from a score shape, pad positions NaN
    (or junk for int dtypes: never read); with ``bad_real`` one real position non-finite."""
    values = SCORE_SHAPES[shape_name]
    q, n = ids.shape
    out = np.full((q, n), np.nan)
    for r in range(q):
        for c in range(n):
            if ids[r, c] == pad:
                out[r, c] = pick(draw, [np.nan, np.nan, np.inf, -np.inf, 1e308, 0.0])
            else:
                out[r, c] = float(draw(values))
    real = np.argwhere(ids != pad)
    if bad_real and len(real):
        r, c = real[below(draw, len(real))]
        out[r, c] = pick(draw, [np.nan, np.inf, -np.inf])
    if dtype == "float32":
        with np.errstate(over="ignore"):
            return out.astype(np.float32)  # huge values become inf: errors at real positions
    if dtype in ("int64", "int32"):
        finite = np.where(np.isfinite(out), out, 0.0)
        return np.clip(np.trunc(finite), -(2**31), 2**31 - 1).astype(dtype)
    if dtype == "fortran":
        return np.asfortranarray(out)
    return out


@st.composite
def batch_calls(draw, mistakes=True, interior_pads=True, combination=None):
    """(ids, scores, kwargs, positional, method, n_real): a ``fuse_batch`` call for a method and
    norm drawn first (or given: ``combination``); with ``mistakes``, now and then a bad argument
    or a bad score."""

    def mistake(one_in: int) -> bool:
        return mistakes and sometimes(draw, one_in)

    method, norm = combination or draw(method_and_norm(mistakes))
    m = rankfusion.reference.METHODS[method]
    n_lists = pick(draw, [2, 1, 3, 2, 4, 2, 3, 0])
    n_queries = pick(draw, [2, 1, 3, 5, 2, 4, 3, 0])
    alphabet = pick(draw, [4, 8, 40])
    pad = pick(draw, [-1, -1, -1, 0, 3, INT64_MIN, INT64_MAX])
    ids, n_real = [], []
    for _ in range(n_lists):
        n_cols = pick(draw, [3, 1, 5, 6, 2, 4, 0])
        a, real = draw(id_matrix(n_queries, n_cols, alphabet, pad, interior_pads))
        ids.append(a)
        n_real.append(real)
    kw: dict = {"method": method}
    if norm is not None or sometimes(draw, 4):
        kw["norm"] = norm
    if pad != -1 or sometimes(draw, 4):
        kw["pad"] = pad
    reading = reads_scores(method, norm)

    scores = None
    if reading and not mistake(20) or not reading and sometimes(draw, 4):
        shape_name = pick(draw, ["ties", "floats", "ints", "huge"])
        scores = []
        for a in ids:
            dtype = pick(draw, ["float64", "float64", "float32", "int64", "int32", "fortran"])
            scores.append(draw(score_matrix(a, pad, shape_name, dtype, mistake(12))))
        if n_lists and mistake(15):
            scores[below(draw, n_lists)] = None
        if n_lists and mistake(25):  # another shape
            i = below(draw, n_lists)
            scores[i] = np.zeros((n_queries, ids[i].shape[1] + 1))
        if mistake(30):
            scores = scores + [None]

    if m.weighted and draw(st.booleans()) or not m.weighted and mistake(15):
        values = WEIGHTS
        if method in MEANS and not mistake(5):
            values = [w for w in WEIGHTS if not (isinstance(w, (int, float)) and w < 0)]
        kw["weights"] = picks(draw, values, n_lists)
    if method == "rrf" and draw(st.booleans()) or method != "rrf" and mistake(25):
        kw["k"] = pick(draw, K_VALUES)
    if method == "rrf" and sometimes(draw, 4) or method != "rrf" and mistake(30):
        kw["normalize"] = True
    for name, own, good, bad, needed in (
        ("phi", "rbc", PHIS, BAD_PHIS, True),
        ("gamma", "gmnz", GAMMAS, BAD_GAMMAS, True),
        ("sigma", "logn_isr", SIGMAS, BAD_SIGMAS, False),
    ):
        if method == own:
            if mistake(6):
                kw[name] = pick(draw, bad)
            elif not needed and draw(st.booleans()):
                pass
            elif not mistake(12):
                kw[name] = pick(draw, good + (BIG_GAMMAS if name == "gamma" else []))
        elif mistake(30):
            kw[name] = pick(draw, good)
    if reading and sometimes(draw, 3) or not reading and mistake(25):
        kw["lower_is_better"] = picks(draw, [False, True], n_lists + int(mistake(10)))

    if sometimes(draw, 4):
        kw["window"] = pick(draw, [1, 2, 3, 5, 10**30])
    if draw(st.booleans()):
        kw["duplicates"] = pick(draw, ["first", "sum", "sum", "error"])
    if draw(st.booleans()):
        kw["tie_break"] = "key"
    if sometimes(draw, 4):
        kw["offset"] = pick(draw, [1, 0, 2, 5])
    if sometimes(draw, 3):
        kw["limit"] = pick(draw, [2, 1, 5, 0, 10**30])
    if sometimes(draw, 5):
        kw["min_score"] = draw(MIN_SCORES)

    # boost: ids as Python ints and numpy integers; ids that are not fused; equal values
    if sometimes(draw, 4):
        key_kinds = [int, int, np.int64, np.int32, np.uint8]
        boost: dict = {}
        for key in [below(draw, alphabet) for _ in range(below(draw, 6))]:
            kind = pick(draw, key_kinds)
            boost[kind(key)] = pick(draw, BOOST_VALUES)
        if sometimes(draw, 3):
            boost[pick(draw, [alphabet + 1, 2**70, -(2**70), INT64_MIN])] = pick(draw, BOOST_VALUES)
        if boost and sometimes(draw, 4):
            boost = dict.fromkeys(boost, pick(draw, BOOST_VALUES))
        if mistake(10):
            boost[pick(draw, ["1", 1.0, True, (1,), None])] = 1.0
        if mistake(15):
            boost[0] = pick(draw, BAD_REALS)
        kw["boost"] = boost
        if not mistake(10):
            kw["boost_weight"] = pick(draw, BOOST_WEIGHTS)
        if not mistakes:
            kw.pop("normalize", None)
    elif mistake(30):
        kw["boost_weight"] = pick(draw, BOOST_WEIGHTS)

    if draw(st.booleans()):
        kw["trace"] = True
    if sometimes(draw, 3):
        kw["threads"] = pick(draw, [1, 2, 3] + ([0, -1, "2", True] if mistake(5) else []))

    # other dtypes and layouts of the same ids (after the scores: those follow the int64 ids)
    ids = [as_id_dtype(draw, a, pad) for a in ids]
    if mistakes and n_lists and mistake(20):
        ids[below(draw, n_lists)] = pick(
            draw,
            [
                np.zeros((n_queries + 1, 2), dtype=np.int64),  # another number of rows
                np.zeros(3, dtype=np.int64),  # 1-D
                np.zeros((n_queries, 2)),  # float ids
                np.zeros((n_queries, 2), dtype=np.uint64),
                np.zeros((n_queries, 2), dtype=bool),
            ],
        )
    positional = scores is not None and draw(st.booleans())
    return ids, scores, kw, positional, method, n_real


# --- the properties -------------------------------------------------------------------------------


def copies(ids, scores):
    def copy(x):
        return x.copy() if isinstance(x, np.ndarray) else x

    return [copy(a) for a in ids], None if scores is None else [copy(s) for s in scores]


@pytest.mark.parametrize("method, norm", COMBINATIONS, ids=combination_id)
def test_fuse_batch_matches_reference(method, norm):
    """The main property, for every method and norm (each pair its share of the examples):
    valid or not."""

    @settings(max_examples=examples_for(method, norm, settings().max_examples))
    @given(batch_calls(combination=(method, norm)))
    def check(call):
        ids, scores, kw, positional, method, _ = call
        before = copies(ids, scores)
        want = run(REF, ids, scores, kw, positional)
        got = run(CORE, ids, scores, kw, positional)
        assert_same_outcome(got, want, method)
        after = copies(ids, scores)
        for x, y in zip(before[0] + (before[1] or []), after[0] + (after[1] or [])):
            if isinstance(x, np.ndarray):  # no input is modified
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes()

    check()


@given(batch_calls(mistakes=False))
def test_fuse_batch_valid_calls_match_reference(call):
    ids, scores, kw, positional, method, _ = call
    want = run(REF, ids, scores, kw, positional)
    got = run(CORE, ids, scores, kw, positional)
    assert_same_outcome(got, want, method)


def row_of(ids, scores, q, pad):
    """Row q as ``fuse``'s lists and scores (pads trailing: dropping them shifts no rank)."""
    lists, row_scores = [], []
    for i, a in enumerate(np.asarray(x, dtype=np.int64) for x in ids):
        row = a[q].tolist()
        keep = [j for j, x in enumerate(row) if x != pad]
        assert keep == list(range(len(keep))), "pads must be trailing here"
        lists.append([row[j] for j in keep])
        if scores is not None:
            s = scores[i]
            row_scores.append(
                None if s is None else [float(x) for x in np.asarray(s, np.float64)[q][keep]]
            )
    return lists, (None if scores is None else row_scores)


@given(batch_calls(mistakes=False, interior_pads=False))
def test_every_row_equals_fuse_on_that_row(call):
    ids, scores, kw, positional, method, _ = call
    result = run(CORE, ids, scores, kw, positional)
    pad = kw.get("pad", -1)
    fuse_kw = {k: v for k, v in kw.items() if k not in ("pad", "threads")}
    n_queries = np.asarray(ids[0]).shape[0] if ids else 0
    rows = [row_of(ids, scores, q, pad) for q in range(n_queries)]

    def fuse_row(q):
        lists, row_scores = rows[q]
        try:
            return rankfusion.fuse(lists, scores=row_scores, **fuse_kw)
        except Exception as exc:  # noqa: BLE001
            return exc

    if isinstance(result, Exception):
        event(f"batch raised {type(result).__name__}")
        message = str(result)
        if not message.startswith("row "):  # an argument error: every row's fuse raises it
            for q in range(n_queries):
                expected = fuse_row(q)
                assert type(expected) is type(result) and str(expected) == message
            return
        failing = int(message.split(":")[0][4:])
        for q in range(failing):
            assert not isinstance(fuse_row(q), Exception), f"row {q} fails in fuse"
        expected = fuse_row(failing)
        assert type(expected) is type(result), (expected, result)
        assert f"row {failing}: {expected}" == message
        return
    event(f"batch of {n_queries} rows")
    n_lists = len(ids)
    for q in range(n_queries):
        hits = fuse_row(q)
        assert not isinstance(hits, Exception), f"row {q}: fuse raised {hits!r}"
        count = int(result.counts[q])
        assert count == len(hits)
        assert result.ids[q, :count].tolist() == [h.key for h in hits]
        assert float_bits(result.scores[q, :count]) == float_bits([h.score for h in hits])
        assert (result.ids[q, count:] == pad).all()
        assert np.isnan(result.scores[q, count:]).all()
        if not kw.get("trace"):
            assert result.ranks is None and result.normalized is None
            continue
        for j, h in enumerate(hits):
            for i in range(n_lists):
                # per list: the best (first) counted occurrence's rank and normalised value,
                # and the canonical sum of the list's contributions; zeros where absent
                mine = [c for c in h.contributions if c.list_index == i]
                rank = mine[0].rank if mine else 0
                total = ref.canonical_sum(c.contribution for c in mine)
                normalized = mine[0].normalized if mine and mine[0].normalized is not None else 0
                assert result.ranks[q, j, i] == rank
                assert float_bits(result.contributions[q, j, i]) == float_bits(total)
                assert float_bits(result.normalized[q, j, i]) == float_bits(float(normalized))
        assert (result.ranks[q, count:] == 0).all()
        assert float_bits(result.contributions[q, count:]) == float_bits(
            np.zeros_like(result.contributions[q, count:])
        )
        assert float_bits(result.normalized[q, count:]) == float_bits(
            np.zeros_like(result.normalized[q, count:])
        )


def test_nan_at_pads_is_never_read_but_at_a_real_position_is_an_error():
    ids = [np.array([[1, 2, -1], [3, -1, -1]])]
    scores = [np.array([[2.0, 1.0, np.nan], [np.inf, np.nan, np.nan]])]
    for fn in (CORE, REF):
        try:
            fn(ids, scores, method="sum", norm="min-max")
        except ValueError as exc:
            assert str(exc) == "row 1: scores[0][0] must be finite, got inf"
        else:
            raise AssertionError(f"{fn} accepted an infinite score")
    scores[0][1, 0] = 5.0
    got, want = CORE(ids, scores, method="sum"), REF(ids, scores, method="sum")
    assert_same_batch(got, want)
    assert got.ids.tolist() == [[1, 2], [3, -1]]
    assert float_bits(got.scores) == float_bits([[2.0, 1.0], [5.0, np.nan]])
