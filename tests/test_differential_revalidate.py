"""Differential tests: ``revalidate``, ``revalidate_batch`` and ``pool_size`` of the Rust core
against the reference, with Hypothesis.

Both implementations must return the same triples (the very same id and record objects, scores
with the same bits) and make the same calls to the lookup, ``where`` and ``is_live`` (same
arguments, same order); or both must raise, the core an instance of the reference's exception type.

``RANKFUSION_MAX_EXAMPLES`` sets the number of examples (default 300), e.g.
    RANKFUSION_MAX_EXAMPLES=20000 pytest tests/test_differential_revalidate.py
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import rankfusion
from rankfusion import reference

EXAMPLES = settings(
    max_examples=int(os.environ.get("RANKFUSION_MAX_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def outcome(fn, *args, **kwargs):
    try:
        return "ok", fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 -- compared below, KeyboardInterrupt included
        return "raised", e


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def check_same_exception(core, ref):
    kind_c, c = core
    kind_r, r = ref
    assert kind_c == kind_r, (core, ref)
    if kind_r == "raised":
        assert isinstance(c, type(r)), (c, r)
    return kind_r == "ok"


# --- revalidate -----------------------------------------------------------------------------------

# Ids: small ints (often repeated), the cross-type equal 1 / 1.0 / True, strings, tuples, None.
ids = st.one_of(
    st.integers(0, 6),
    st.sampled_from([1.0, True, False, 2**70, -1, "a", "b", ("t", 1), None, frozenset({2})]),
)
real_scores = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6),
    st.just(np.float32(0.5)),
)
candidates = st.lists(
    st.tuples(ids, real_scores).map(list) | st.tuples(ids, real_scores), max_size=12
)


class Rows(Mapping):
    """A Mapping that is not a dict, returned by some get_many."""

    def __init__(self, rows):
        self._rows = rows

    def __getitem__(self, key):
        return self._rows[key]

    def __iter__(self):
        return iter(self._rows)

    def __len__(self):
        return len(self._rows)


class Lookup:
    """A store scripted by ``fates`` (id -> fate) and ``batch``: "none" (get only), "dict",
    "mapping", "raises", "interrupt", "list" (a wrong return type). Logs every call."""

    def __init__(self, fates, batch, extra):
        self.fates = fates
        self.batch = batch
        self.extra = extra
        self.records = {}
        self.log = []
        if batch != "none":
            self.get_many = self._get_many

    def record(self, id):
        # One record object per id (per Lookup), so identity can be compared within a run.
        key = (type(id).__name__, repr(id))
        return self.records.setdefault(key, {"id": repr(id)})

    def get(self, id):
        self.log.append(("get", id))
        fate = self.fates.get(id, "missing")
        if fate == "raises":
            raise LookupError(id)
        if fate == "live":
            return self.record(id)
        return None

    def _get_many(self, asked):
        self.log.append(("get_many", list(asked)))
        if self.batch == "raises":
            raise ConnectionError("batch failed")
        if self.batch == "interrupt":
            raise KeyboardInterrupt
        if self.batch == "list":
            return [self.record(i) for i in asked]
        found = {}
        for i in asked:
            fate = self.fates.get(i, "missing")
            if fate == "live":
                found[i] = self.record(i)
            elif fate in ("none", "raises"):
                found[i] = None
        for i in self.extra:
            found[i] = self.record(i)
        return Rows(found) if self.batch == "mapping" else found


class Where:
    def __init__(self, mode):
        self.mode = mode
        self.log = []

    def __call__(self, record):
        self.log.append(record["id"])
        if self.mode == "raises" and len(self.log) == 2:
            raise ArithmeticError("where failed")
        return hash(record["id"]) % 3 != 0 if self.mode != "all" else 1


@st.composite
def revalidate_calls(draw):
    cands = draw(candidates)
    fates = {}
    for id, _ in cands:  # an id left out is unknown to the store: "missing"
        fates[id] = draw(st.sampled_from(["live", "live", "live", "none", "missing", "raises"]))
    batch = draw(
        st.sampled_from(
            ["none"] * 4 + ["dict"] * 6 + ["mapping"] * 2 + ["raises"] * 2 + ["list", "interrupt"]
        )
    )
    extra = draw(st.lists(st.integers(7, 9), max_size=2))
    where = draw(st.sampled_from([None, None, None, "all", "some", "raises"]))
    limit = draw(st.none() | st.none() | st.integers(0, 6))
    return cands, fates, batch, extra, where, limit


def run_revalidate(impl, cands, fates, batch, extra, where, limit):
    lookup = Lookup(fates, batch, extra)
    predicate = Where(where) if where else None
    result = outcome(impl.revalidate, cands, lookup, where=predicate, limit=limit)
    return result, lookup, predicate


def same_call_logs(core_lookup, ref_lookup):
    assert len(core_lookup.log) == len(ref_lookup.log)
    for (kc, ac), (kr, ar) in zip(core_lookup.log, ref_lookup.log):
        assert kc == kr
        if kc == "get_many":
            assert len(ac) == len(ar) and all(x is y for x, y in zip(ac, ar)), (ac, ar)
        else:
            assert ac is ar


@EXAMPLES
@given(revalidate_calls())
def test_revalidate_matches_reference(call):
    core, core_lookup, core_where = run_revalidate(rankfusion, *call)
    ref, ref_lookup, ref_where = run_revalidate(reference, *call)
    same_call_logs(core_lookup, ref_lookup)
    event(f"revalidate: {ref[0]}, {len(ref[1]) if ref[0] == 'ok' else type(ref[1]).__name__}")
    if core_where is not None:
        assert core_where.log == ref_where.log
    if not check_same_exception(core, ref):
        return
    out_c, out_r = core[1], ref[1]
    assert type(out_c) is list
    assert len(out_c) == len(out_r)
    for c, r in zip(out_c, out_r):
        assert type(c) is rankfusion.Revalidated
        assert c.id is r.id
        assert c.record == r.record
        assert type(c.score) is float and bits(c.score) == bits(r.score)
    # Records are the objects the lookup handed out: shared exactly where the reference shares.
    for i, (ci, ri) in enumerate(zip(out_c, out_r)):
        for cj, rj in zip(out_c[:i], out_r[:i]):
            assert (ci.record is cj.record) == (ri.record is rj.record)


# Bad input: anything may be wrong. Both must raise the same type (or both succeed).
odd_values = st.sampled_from(
    [None, True, 1.5, -1, 0, 2, "x", b"x", [1], {1: 2}, (1,), (1, 2, 3), object(), math.nan]
)


@EXAMPLES
@given(
    cands=st.one_of(
        candidates,
        odd_values,
        st.lists(
            st.one_of(st.tuples(ids, real_scores), odd_values, st.tuples(odd_values, odd_values))
        ),
    ),
    lookup=st.sampled_from(["dict", "object", None, 5, "str", []]),
    where=st.one_of(st.none(), odd_values, st.just(bool)),
    limit=st.one_of(st.none(), odd_values, st.integers(-3, 3)),
)
def test_revalidate_bad_input_matches_reference(cands, lookup, where, limit):
    def make_lookup():
        if lookup == "dict":
            return {1: "one", 2: None, "a": "A"}
        if lookup == "object":
            return Lookup({1: "live", 2: "raises"}, "dict", [])
        return lookup

    core = outcome(rankfusion.revalidate, cands, make_lookup(), where=where, limit=limit)
    ref = outcome(reference.revalidate, cands, make_lookup(), where=where, limit=limit)
    if check_same_exception(core, ref):
        assert [(c.id, c.record, bits(c.score)) for c in core[1]] == [
            (r.id, r.record, bits(r.score)) for r in ref[1]
        ]


@EXAMPLES
@given(
    limit=st.one_of(st.integers(-2, 10**25), odd_values),
    filtering=st.one_of(st.sampled_from(["pre", "post", "none", "PRE", "", None, 3]), odd_values),
    multiplier=st.one_of(st.just("default"), st.integers(-1, 10**20), odd_values),
)
def test_pool_size_matches_reference(limit, filtering, multiplier):
    args = (limit, filtering) if multiplier == "default" else (limit, filtering, multiplier)
    core = outcome(rankfusion.pool_size, *args)
    ref = outcome(reference.pool_size, *args)
    if check_same_exception(core, ref):
        assert type(core[1]) is int and core[1] == ref[1]


# --- revalidate_batch -----------------------------------------------------------------------------

PADS = (-1, 0, 3, -(2**63), 2**63 - 1)


@st.composite
def batch_calls(draw):
    n_rows = draw(st.integers(0, 6))
    n_cols = draw(st.integers(0, 7))
    pad = draw(st.sampled_from(PADS))
    # Few distinct ids, the pad among them, so rows repeat ids, hold pads and may be all dead.
    pool = draw(
        st.lists(
            st.one_of(st.integers(-3, 12), st.sampled_from([2**63 - 1, -(2**63), 2**40])),
            min_size=1,
            max_size=6,
        )
    )
    pool.append(pad)
    ids = np.array(
        draw(st.lists(st.sampled_from(pool), min_size=n_rows * n_cols, max_size=n_rows * n_cols)),
        dtype=np.int64,
    ).reshape(n_rows, n_cols)
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint32, np.int8, np.uint64]))
    if np.all((ids >= np.iinfo(dtype).min) & (ids <= np.iinfo(dtype).max)):
        ids = ids.astype(dtype)
    score_values = st.floats(allow_nan=True, allow_infinity=True, width=64)
    scores = np.array(
        draw(st.lists(score_values, min_size=n_rows * n_cols, max_size=n_rows * n_cols)),
        dtype=np.float64,
    ).reshape(n_rows, n_cols)
    with np.errstate(over="ignore"):  # float32 overflows to inf: fine, carried
        scores = scores.astype(draw(st.sampled_from([np.float64, np.float32])))
    live_salt = draw(st.integers(0, 3))
    limit = draw(st.one_of(st.none(), st.integers(0, n_cols + 2)))
    transpose = draw(st.booleans())  # a non-contiguous view
    if transpose:
        ids, scores = ids.T.copy().T, scores.T.copy().T
    return ids, scores, live_salt, limit, pad


class IsLive:
    def __init__(self, salt, answer="ok"):
        self.salt = salt
        self.answer = answer
        self.calls = []

    def __call__(self, unique):
        self.calls.append(unique.copy())
        live = (unique % 4 != self.salt) & (unique % 3 != 0)
        if self.answer == "list":
            return live.tolist()
        if self.answer == "short":
            return live[:-1]
        if self.answer == "int":
            return live.astype(np.int8)
        return live


def same_array(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == np.float64:
        assert a.tobytes() == b.tobytes() or np.array_equal(a, b, equal_nan=True)
    else:
        assert np.array_equal(a, b)


@EXAMPLES
@given(batch_calls(), st.sampled_from(["ok", "ok", "list", "short", "int"]))
def test_revalidate_batch_matches_reference(call, answer):
    ids, scores, salt, limit, pad = call
    before = ids.copy(), scores.copy()
    live_c, live_r = IsLive(salt, answer), IsLive(salt, answer)
    core = outcome(rankfusion.revalidate_batch, ids, scores, live_c, limit=limit, pad=pad)
    ref = outcome(reference.revalidate_batch, ids, scores, live_r, limit=limit, pad=pad)
    assert len(live_c.calls) == len(live_r.calls) <= 1
    event(f"batch: {len(live_r.calls)} call, {ref[0]}")
    for a, b in zip(live_c.calls, live_r.calls):
        same_array(a, b)
        assert pad not in a.tolist()
    np.testing.assert_array_equal(ids, before[0])
    np.testing.assert_array_equal(scores, before[1])
    if not check_same_exception(core, ref):
        return
    out_c, out_r = core[1], ref[1]
    assert type(out_c) is rankfusion.RevalidatedBatch
    for a, b in zip(out_c, out_r):
        same_array(a, b)
    assert np.array_equal(out_c.scores, out_r.scores, equal_nan=True)
    # The scores with the same bits: compare through float64 bytes, NaN payloads included.
    assert out_c.scores.tobytes() == out_r.scores.tobytes()


@EXAMPLES
@given(
    ids=st.one_of(
        st.sampled_from([[[1, 2]], [[1, 2], [3]], [1, 2], [[[1]]], "ab", None, [["a"]], [[1.5]]]),
        st.just(np.zeros((2, 2), dtype=np.uint64)),
        st.just(np.full((2, 2), 2**64 - 1, dtype=np.uint64)),
        st.just(np.zeros((2, 2), dtype=bool)),
    ),
    scores=st.sampled_from([[[0.5, 0.25]], [[0.5]], [[1, 2]], [["x", "y"]], None, [[True, False]]]),
    is_live=st.sampled_from([None, "ok", "list", "short", "int", 3]),
    limit=st.one_of(st.none(), odd_values),
    pad=st.one_of(st.just(-1), odd_values, st.sampled_from([2**63, -(2**63) - 1])),
)
def test_revalidate_batch_bad_input_matches_reference(ids, scores, is_live, limit, pad):
    def live():
        return IsLive(0, is_live) if isinstance(is_live, str) else is_live

    core = outcome(rankfusion.revalidate_batch, ids, scores, live(), limit=limit, pad=pad)
    ref = outcome(reference.revalidate_batch, ids, scores, live(), limit=limit, pad=pad)
    if check_same_exception(core, ref):
        for a, b in zip(core[1], ref[1]):
            same_array(a, b)
