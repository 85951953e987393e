"""The bad-input matrix for ``rrf``.

Each row is one bad call: the exception type the reference raises (the implementation must raise an
instance of it), and substrings the message must contain -- the argument or position it is about.
Every row is run against the implementation under test and the reference; no BaseException that is
not an Exception (PyO3's PanicException) may escape, and no input may be modified.
"""

from __future__ import annotations

import copy
import re
import struct
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest

import rankfusion as rf
from rankfusion import reference as ref

NAN = float("nan")
INF = float("inf")


class HashBoom(Exception):
    pass


class RaisingHash:
    """__hash__ raises; the exception object raised last is kept so the test can check identity."""

    raised = None

    def __hash__(self):
        exc = HashBoom("hash boom")
        RaisingHash.raised = exc
        raise exc

    def __repr__(self):
        return "RaisingHash()"


class EqBoom(Exception):
    pass


class RaisingEq:
    """Hashes like ``value`` (an int 7 or a str); comparing with anything raises."""

    raised = None

    def __init__(self, value=7):
        self.value = value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        exc = EqBoom("eq boom")
        RaisingEq.raised = exc
        raise exc

    def __repr__(self):
        return f"RaisingEq({self.value!r})"


class NoHash:
    __hash__ = None

    def __repr__(self):
        return "NoHash()"


def bad(id, lists, expected, needles, args=(), **kwargs):
    """A row: ``rrf(lists, *args, **kwargs)`` raises ``expected``; the message contains every needle
    (a str) or one of them (a tuple)."""
    needles = needles if isinstance(needles, list) else [needles]
    return pytest.param(lists, args, kwargs, expected, needles, id=id)


NO_LISTS = object()  # the call passes no lists at all
AB = [["a", "b"], ["b", "c"]]


class PLAIN_TYPE_ERROR(TypeError):
    """The table's tag for Python's own TypeError (a call's signature, ``hash`` of a tuple
    holding a list): raised as it is, not as rankfusion's FusionTypeError."""


CASES = [
    # --- lists ---
    bad("lists-not-iterable", 5, TypeError, "lists"),
    bad("lists-none", None, TypeError, "lists"),
    bad("lists-str", "abc", TypeError, "lists"),
    bad("lists-bytes", b"abc", TypeError, "lists"),
    bad("list-is-str", ["abc"], TypeError, "lists[0]"),
    bad("list-is-bytes", [["a"], b"ab"], TypeError, "lists[1]"),
    bad("list-is-bytearray", [["a"], bytearray(b"ab")], TypeError, "lists[1]"),
    bad("list-not-iterable", [["a"], 3], TypeError, "lists[1]"),
    bad("list-is-none", [["a"], ["b"], None], TypeError, "lists[2]"),
    bad("unhashable-list-key", [["a", ["b"]]], TypeError, "lists[0][1]"),
    bad("unhashable-dict-key", [["a"], ["b", "c", {"d": 1}]], TypeError, "lists[1][2]"),
    bad("unhashable-object-key", [[NoHash()]], TypeError, "lists[0][0]"),
    bad("unhashable-inside-tuple", [[(1, [2])]], PLAIN_TYPE_ERROR, ("lists[0][0]", "unhashable")),
    bad("missing-lists", NO_LISTS, PLAIN_TYPE_ERROR, "lists"),
    # --- the signature ---
    bad("k-positional", AB, PLAIN_TYPE_ERROR, "positional", args=(60,)),
    bad("unknown-keyword", AB, PLAIN_TYPE_ERROR, "bogus", bogus=1),
    # --- k ---
    bad("k-negative", AB, ValueError, "k", k=-1),
    bad("k-tiny-negative", AB, ValueError, "k", k=-1e-300),
    bad("k-nan", AB, ValueError, "k", k=NAN),
    bad("k-inf", AB, ValueError, "k", k=INF),
    bad("k-minus-inf", AB, ValueError, "k", k=-INF),
    bad("k-str", AB, TypeError, "k", k="60"),
    bad("k-bool", AB, TypeError, "k", k=True),
    bad("k-none", AB, TypeError, "k", k=None),
    bad("k-huge-int", AB, ValueError, "k", k=10**400),
    bad("k-decimal", AB, TypeError, "k", k=Decimal(60)),
    bad("k-complex", AB, TypeError, "k", k=1j),
    bad("k-numpy-bool", AB, TypeError, "k", k=np.True_),
    # --- weights ---
    bad("weights-too-short", AB, ValueError, "weights", weights=[1]),
    bad("weights-too-long", AB, ValueError, "weights", weights=[1, 1, 1]),
    bad("weights-for-no-lists", [], ValueError, "weights", weights=[1]),
    bad("weights-nan", AB, ValueError, "weights[1]", weights=[1, NAN]),
    bad("weights-inf", AB, ValueError, "weights[1]", weights=[1, INF]),
    bad("weights-minus-inf", AB, ValueError, "weights[0]", weights=[-INF, 1]),
    bad("weights-huge-int", AB, ValueError, "weights[1]", weights=[1, 10**400]),
    bad("weights-str-element", AB, TypeError, "weights[1]", weights=[1, "2"]),
    bad("weights-bool-element", AB, TypeError, "weights[1]", weights=[1, True]),
    bad("weights-none-element", AB, TypeError, "weights[0]", weights=[None, 1]),
    bad("weights-not-iterable", AB, TypeError, "weights", weights=5),
    bad("weights-str", AB, TypeError, "weights", weights="12"),
    bad("weights-numpy-nan", AB, ValueError, "weights[1]", weights=np.array([1.0, np.nan])),
    # --- window ---
    bad("window-zero", AB, ValueError, "window", window=0),
    bad("window-negative", AB, ValueError, "window", window=-1),
    bad("window-float", AB, TypeError, "window", window=1.5),
    bad("window-integral-float", AB, TypeError, "window", window=2.0),
    bad("window-bool", AB, TypeError, "window", window=True),
    bad("window-str", AB, TypeError, "window", window="3"),
    # --- duplicates ---
    bad("duplicates-unknown", AB, ValueError, "duplicates", duplicates="last"),
    bad("duplicates-wrong-case", AB, ValueError, "duplicates", duplicates="First"),
    bad("duplicates-int", AB, TypeError, "duplicates", duplicates=1),
    bad("duplicates-none", AB, TypeError, "duplicates", duplicates=None),
    bad("duplicates-bytes", AB, TypeError, "duplicates", duplicates=b"first"),
    # --- tie_break ---
    bad("tie_break-unknown", AB, ValueError, "tie_break", tie_break="score"),
    bad("tie_break-none", AB, TypeError, "tie_break", tie_break=None),
    bad("tie_break-int", AB, TypeError, "tie_break", tie_break=0),
    bad("tie_break-key-incomparable", [["a"], [1]], TypeError, ("not supported", "tie_break", "compar"), tie_break="key"),
    bad("tie_break-key-none-vs-int", [[None, "x"], [2, "y"]], TypeError, ("not supported", "tie_break", "compar"), tie_break="key"),
    # --- offset / limit ---
    bad("offset-negative", AB, ValueError, "offset", offset=-1),
    bad("offset-float", AB, TypeError, "offset", offset=1.5),
    bad("offset-none", AB, TypeError, "offset", offset=None),
    bad("offset-bool", AB, TypeError, "offset", offset=False),
    bad("limit-negative", AB, ValueError, "limit", limit=-1),
    bad("limit-str", AB, TypeError, "limit", limit="3"),
    bad("limit-float", AB, TypeError, "limit", limit=3.0),
    # --- min_score ---
    bad("min_score-nan", AB, ValueError, "min_score", min_score=NAN),
    bad("min_score-inf", AB, ValueError, "min_score", min_score=INF),
    bad("min_score-minus-inf", AB, ValueError, "min_score", min_score=-INF),
    bad("min_score-str", AB, TypeError, "min_score", min_score="x"),
    bad("min_score-bool", AB, TypeError, "min_score", min_score=True),
    # --- flags ---
    bad("normalize-str", AB, TypeError, "normalize", normalize="yes"),
    bad("normalize-int", AB, TypeError, "normalize", normalize=1),
    bad("normalize-none", AB, TypeError, "normalize", normalize=None),
    bad("trace-int", AB, TypeError, "trace", trace=1),
    bad("trace-none", AB, TypeError, "trace", trace=None),
    bad("trace-numpy-int", AB, TypeError, "trace", trace=np.int64(1)),
    # --- normalize with no usable maximum ---
    bad("normalize-no-positive-weight", AB, ValueError, "normalize", weights=[0, -1], normalize=True),
    bad("normalize-all-weights-zero", AB, ValueError, "normalize", weights=[0.0, -0.0], normalize=True),
    bad("normalize-maximum-underflows", [["a"]], ValueError, "normalize", k=1, weights=[5e-324], normalize=True),
    bad("normalize-maximum-overflows", AB, ValueError, "normalize", k=0, weights=[1e308, 1e308], normalize=True),
    # --- scores ---
    bad("scores-too-short", AB, ValueError, "scores", scores=[[1.0, 2.0]]),
    bad("scores-too-long", AB, ValueError, "scores", scores=[None, None, None]),
    bad("scores-inner-too-short", AB, ValueError, "scores[1]", scores=[[1.0, 2.0], [1.0]]),
    bad("scores-inner-too-long", AB, ValueError, "scores[0]", scores=[[1.0, 2.0, 3.0], None]),
    bad("scores-non-real", AB, TypeError, "scores[0][1]", scores=[[1.0, "x"], None]),
    bad("scores-bool", AB, TypeError, "scores[1][0]", scores=[None, [True, 1.0]]),
    bad("scores-huge-int", AB, ValueError, "scores[0][0]", scores=[[10**400, 1.0], None]),
    bad("scores-nan", AB, ValueError, "scores[1][0]", scores=[None, [float("nan"), 1.0]]),
    bad("scores-not-iterable", AB, TypeError, "scores", scores=5),
    bad("scores-inner-not-iterable", AB, TypeError, "scores[0]", scores=[5, None]),
    bad("scores-inner-str", AB, TypeError, "scores[1]", scores=[None, "ab"]),
    # --- duplicates="error" ---
    bad("duplicate-key", [["a", "b", "a"]], ValueError, ["lists[0]", "'a'"], duplicates="error"),
    bad("duplicate-key-second-list", [["a"], ["b", "c", "b"]], ValueError, ["lists[1]", "'b'"], duplicates="error"),
    bad("duplicate-equal-across-types", [[1, "x", 1.0]], ValueError, ["lists[0]", "1"], duplicates="error"),
    # --- scores that are not finite ---
    bad("score-overflow", [["x"], ["x"]], ValueError, "'x'", k=0, weights=[1e308, 1e308]),
    bad("score-overflow-negative", [["x"], ["x"]], ValueError, "'x'", k=0, weights=[-1e308, -1e308]),
    bad("score-overflow-sum", [["x", "x"]], ValueError, "'x'", k=0, weights=[1.7e308], duplicates="sum"),
    bad("normalized-score-overflow", [["a"], ["b"]], ValueError, "'b'", k=0, weights=[1e-300, -1e308], normalize=True),
    # --- exceptions raised by keys propagate unchanged ---
    bad("key-hash-raises", [["a", RaisingHash()]], HashBoom, "hash boom"),
    bad("key-eq-raises-on-collision", [[RaisingEq(), RaisingEq()]], EqBoom, "eq boom"),
    bad("key-eq-raises-on-int-collision", [[7], [RaisingEq(7)]], EqBoom, "eq boom"),
    bad("key-eq-raises-on-str-collision", [["a"], [RaisingEq("a")]], EqBoom, "eq boom"),
    # --- with several bad arguments, the first in signature order wins ---
    bad("order-k-before-weights", AB, TypeError, "k", k="x", weights=[NAN, 1]),
    bad("order-weights-before-window", AB, ValueError, "weights[0]", weights=[NAN, 1], window="x"),
    bad("order-window-before-duplicates", AB, ValueError, "window", window=0, duplicates=1),
    bad("order-limit-before-trace", AB, ValueError, "limit", limit=-1, trace="x"),
    # the settings (a Fusion's) are checked before the call's inputs: lists, scores, boost
    bad("order-settings-before-lists", [["a"], "b"], ValueError, "k", k=-1),
    bad("order-settings-before-scores", AB, TypeError, "trace", scores=[None], trace=1),
    bad("order-lists-before-scores", [["a"], "b"], TypeError, "lists[1]", scores=[None]),
    bad("order-arguments-before-keys", [[["unhashable"]]], ValueError, "k", k=-1),
    bad("order-unhashable-before-duplicate", [["a", "b", "a"], ["c", ["x"]]], TypeError, "lists[1][1]", duplicates="error"),
    bad("order-duplicate-before-unhashable", [["a", "a", "b"], ["c", "d", ["x"]]], ValueError, "lists[0]", duplicates="error"),
    # --- arguments are checked even when there is nothing to fuse ---
    bad("empty-input-bad-k", [], ValueError, "k", k=-1),
    bad("empty-lists-bad-window", [[], []], ValueError, "window", window=0),
    bad("empty-lists-bad-scores", [[]], ValueError, "scores[0]", scores=[[1.0]]),
]  # fmt: skip


def snapshot(x, depth=0):
    """An input's state without calling __eq__/__hash__: containers by identity and content."""
    if isinstance(x, (list, tuple)) and depth < 4:
        return (type(x), id(x), tuple(snapshot(v, depth + 1) for v in x))
    if isinstance(x, dict) and depth < 4:
        return (dict, id(x), tuple((id(k), snapshot(v, depth + 1)) for k, v in x.items()))
    if isinstance(x, (bytearray, np.ndarray)):
        return (type(x), id(x), bytes(x) if isinstance(x, bytearray) else x.tobytes())
    if type(x) is float:
        return (float, id(x), struct.pack("<d", x))
    return (type(x), id(x))


def raise_from(fn, lists, args, kwargs):
    """The exception ``fn`` raises (None if it returns). Catches BaseException on purpose: a panic
    or anything else that is not an Exception must not reach the caller."""
    before = (snapshot(lists), snapshot(kwargs))
    try:
        if lists is NO_LISTS:
            fn(*args, **kwargs)
        else:
            fn(lists, *args, **kwargs)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        assert isinstance(exc, Exception), (
            f"{type(exc).__module__}.{type(exc).__name__} escaped: {exc!r}"
        )
        assert (snapshot(lists), snapshot(kwargs)) == before, "an input was modified"
        return exc
    return None


def assert_message(exc, needles) -> None:
    message = str(exc)
    for needle in needles:
        options = needle if isinstance(needle, tuple) else (needle,)
        assert any(option in message for option in options), f"{needle!r} not in {message!r}"


def test_the_matrix_is_big_enough():
    assert len(CASES) >= 45
    assert len({case.id for case in CASES}) == len(CASES)


# The table's TypeError and ValueError are rankfusion's own: FusionTypeError and FusionError,
# which subclass them; PLAIN_TYPE_ERROR is Python's TypeError; any other type is raised as it is.
OURS = {TypeError: rf.FusionTypeError, ValueError: rf.FusionError, PLAIN_TYPE_ERROR: TypeError}


@pytest.mark.parametrize("lists, args, kwargs, expected, needles", CASES)
def test_reference_raises(ref_rrf, lists, args, kwargs, expected, needles):
    """The table is what the reference does: exactly this type (ours), and the message names the
    argument."""
    exc = raise_from(ref_rrf, lists, args, kwargs)
    assert exc is not None, "the reference did not raise"
    assert type(exc) is OURS.get(expected, expected), (
        f"the reference raised {exc!r}, the table says {expected.__name__}"
    )
    assert_message(exc, needles)


@pytest.mark.parametrize("lists, args, kwargs, expected, needles", CASES)
def test_bad_input(rrf, lists, args, kwargs, expected, needles):
    exc = raise_from(rrf, lists, args, kwargs)
    assert exc is not None, f"no exception; want {expected.__name__}"
    assert type(exc) is OURS.get(expected, expected), (
        f"raised {type(exc).__name__}: {exc}; want {expected.__name__}"
    )
    assert_message(exc, needles)


def test_exceptions_subclass_typeerror_or_valueerror(rrf):
    for call, expected in [
        (lambda: rrf(AB, k=-1), ValueError),
        (lambda: rrf(AB, k="x"), TypeError),
        (lambda: rrf([["a", ["b"]]]), TypeError),
        (lambda: rrf([["a", "a"]], duplicates="error"), ValueError),
    ]:
        with pytest.raises(expected):
            call()


def test_key_hash_exception_propagates_unchanged(rrf):
    key = RaisingHash()
    RaisingHash.raised = None
    with pytest.raises(HashBoom) as info:
        rrf([["a"], [key]])
    assert info.value is RaisingHash.raised
    assert type(info.value) is HashBoom and info.value.args == ("hash boom",)


def test_key_eq_exception_propagates_unchanged(rrf):
    RaisingEq.raised = None
    with pytest.raises(EqBoom) as info:
        rrf([[7, RaisingEq(7)]])
    assert info.value is RaisingEq.raised
    assert type(info.value) is EqBoom and info.value.args == ("eq boom",)


def test_same_object_twice_is_not_compared(rrf, ref_rrf):
    """Identity first, as in a dict: the same object repeated never calls __eq__."""
    key = RaisingEq()
    for fn in (ref_rrf, rrf):
        hits = fn([[key], [key]], k=0)
        assert len(hits) == 1 and hits[0].key is key and hits[0].score == 0.0 + 1 / 1 + 1 / 1
        with pytest.raises(ValueError):
            fn([[key, "b", key]], duplicates="error")


def test_bad_keys_are_not_read_in_weight_zero_lists_or_beyond_the_window(rrf, ref_rrf):
    for fn in (ref_rrf, rrf):
        assert [h.key for h in fn([["a"], [RaisingHash(), NoHash(), ["x"]]], weights=[1, 0])] == [
            "a"
        ]
        assert [h.key for h in fn([["a", RaisingHash()], ["b", ["x"]]], window=1)] == ["a", "b"]
        first = RaisingEq()
        hits = fn([["a", first, RaisingEq()]], window=2)  # the second RaisingEq is never compared
        assert len(hits) == 2 and hits[0].key == "a" and hits[1].key is first


def test_nothing_is_returned_half_way(rrf):
    """An error found late (the second list's duplicate) still raises: no partial result."""
    lists = [list(range(100)), list(range(50)) + [7]]
    with pytest.raises(ValueError):
        rrf(lists, duplicates="error")
    assert lists == [list(range(100)), list(range(50)) + [7]]


def test_inputs_unchanged_after_errors(rrf):
    lists = [["a", "b", "a"], ("c",), np.array([1, 2, 3])]
    weights = [1.0, 2.0, NAN]
    scores = [[1.0, 2.0, 3.0], None, [0.5, 0.25, 0.125]]
    saved = copy.deepcopy((lists[:2], weights[:2], scores))
    saved_array = lists[2].copy()
    for kwargs in (
        {"weights": weights},
        {"duplicates": "error"},
        {"scores": scores, "window": 0},
        {"scores": scores, "normalize": True, "weights": [0, 0, -1.0]},
    ):
        with pytest.raises((TypeError, ValueError)):
            rrf(lists, **kwargs)
        assert copy.deepcopy((lists[:2], weights[:2], scores)) == saved
        assert np.array_equal(lists[2], saved_array) and lists[2].dtype == saved_array.dtype
        assert struct.pack("<d", weights[2]) == struct.pack("<d", NAN)


@pytest.mark.parametrize("impl", [rf, ref], ids=["core", "reference"])
def test_infinite_raw_scores_are_carried_by_rank_methods_and_refused_by_score_methods(impl):
    """A run file may hold inf scores (read_run accepts them): RRF never reads a raw score, so its
    trace carries it as given; a score-based method reads it, so it must be finite. NaN is never a
    score."""
    inf = float("inf")
    hits = impl.rrf([["a", "b"], ["b"]], scores=[[inf, 1.0], [-inf]], trace=True)
    assert [(h.key, [c.score for c in h.contributions]) for h in hits] == [
        ("b", [1.0, -inf]),
        ("a", [inf]),
    ]
    with pytest.raises(ValueError, match=r"scores\[0\]\[1\] must be finite, got -inf"):
        impl.fuse([["a", "b"]], method="sum", norm="min-max", scores=[[1.0, -inf]])
    with pytest.raises(ValueError, match=r"scores\[0\]\[0\] must not be NaN"):
        impl.rrf([["a"]], scores=[[float("nan")]])
    ids = np.array([[1, 2, -1]])
    with pytest.raises(ValueError, match=r"row 0: scores\[0\]\[1\] must be finite, got inf"):
        impl.fuse_batch([ids], [np.array([[1.0, inf, np.nan]])], method="max")
    result = impl.fuse_batch([ids], [np.array([[1.0, inf, np.nan]])], trace=True)
    assert result.ids.tolist() == [[1, 2]] and result.normalized.tolist() == [[[0.0], [0.0]]]


@pytest.mark.parametrize("impl", [rf, ref], ids=["core", "reference"])
def test_masked_arrays_are_refused_naming_the_argument(impl):
    """A masked array's mask would be ignored (the core read the hidden entries as ids): both
    implementations refuse it with the same TypeError."""
    ids = np.ma.array([[1, 2, 3]], mask=[[0, 1, 0]])
    scores = np.ma.array([[1.0, 2.0, 3.0]], mask=[[0, 1, 0]])
    plain = np.array([[2, 3, 4]])
    calls = {
        "lists[0]": lambda: impl.rrf_batch([ids, plain]),
        "ids[1]": lambda: impl.fuse_batch([plain, ids]),
        "scores[0]": lambda: impl.fuse_batch([plain], [scores], method="sum"),
        "ids": lambda: impl.revalidate_batch(
            ids, np.zeros((1, 3)), lambda i: np.ones(len(i), bool)
        ),
        "scores": lambda: impl.revalidate_batch(plain, scores, lambda i: np.ones(len(i), bool)),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"^{re.escape(name)} is a masked array; its mask"):
            call()


def test_plain_arrays_do_not_import_numpy_ma():
    """The core's masked-array check imports nothing: before numpy.ma is imported no masked
    array exists, so plain arrays are fused without importing it (a first call would pay for
    the import)."""
    code = (
        "import sys, numpy as np, rankfusion as rf\n"
        "ids = np.array([[1, 2, -1]])\n"
        "rf.rrf_batch([ids, ids])\n"
        "rf.fuse_batch([ids], [np.array([[1.0, 0.5, 0.0]])], method='sum')\n"
        "rf.revalidate_batch(ids, np.zeros((1, 3)), lambda i: np.ones(len(i), bool))\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
