"""Differential tests: the implementation under test against the reference, with Hypothesis.

Both must return the same keys (same type and value; the very same object for keys that are not an
exact int, str, float or numpy scalar), in the same order, with bit-identical scores and contributions; or both
must raise, the implementation an instance of the reference's exception type.

CI runs the main property with many examples:
    RANKFUSION_MAX_EXAMPLES=20000 pytest tests/test_differential_rrf.py -k test_rrf_matches_reference
"""

from __future__ import annotations

import copy
import math
import struct
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from _keys import Folded
from hypothesis import currently_in_test_context, event, given
from hypothesis import strategies as st

# --- key types ---------------------------------------------------------------------------------


class HashBoom(Exception):
    pass


class RaisingHash:
    def __hash__(self):
        raise HashBoom("no hash for you")

    def __repr__(self):
        return "RaisingHash()"


class EqBoom(Exception):
    pass


class RaisingEq:
    """Hashes like the int 3 (and like each other); comparing raises."""

    def __hash__(self):
        return hash(3)

    def __eq__(self, other):
        raise EqBoom("no eq for you")

    def __repr__(self):
        return "RaisingEq()"


NAN = float("nan")  # one object: the same key wherever it appears (dict identity first)

BIG_INTS = [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**64 + 1, 10**30, -(10**30)]
EQUAL_NUMBERS = [
    0, 0.0, -0.0, False, 1, 1.0, True, 2, 2.0, 0.5, Fraction(1, 2), np.int64(1), np.float64(1.0),
    np.int32(2), Fraction(1, 1), 2**64, float(2**64),
]  # fmt: skip
# Equal to some EQUAL_NUMBERS, but `Decimal(1) < np.int64(2)` raises while `np.int64(2) >
# Decimal(1)` does not: no total order, so they stay out of the tie_break="key" families.
DECIMALS = [Decimal("0.5"), Decimal(1), Decimal(2)]
TEXT_ALPHABET = "aAbBsS\u00df\u00e9\u00c9\u4e2d\U0001f600\x00"

small_ints = st.integers(-3, 6)
big_ints = st.one_of(small_ints, st.sampled_from(BIG_INTS), st.integers(-(2**80), 2**80))
plain_text = st.one_of(
    st.text(alphabet=TEXT_ALPHABET, max_size=3),
    st.sampled_from(["\ud800", "a\udfff", "\udc00\ud800", "caf\u00e9", "CAF\u00c9"]),
)
text = st.one_of(plain_text, plain_text.map(Folded))
int_tuples = st.tuples(st.integers(0, 2), st.text(alphabet="ab", max_size=1))
numbers = st.one_of(
    st.sampled_from(EQUAL_NUMBERS),
    st.floats(-2, 2, allow_nan=False),
    small_ints,
)
nans = st.one_of(st.just(NAN), st.builds(float, st.just("nan")))
mixed_tuples = st.tuples(
    st.sampled_from([0, 1, 1.0, True, "a", None]), st.sampled_from([(), ("b",), 2])
)
incomparable = st.one_of(
    small_ints, st.text(alphabet="ab", max_size=2), st.just(None), st.just(b"a")
)
mixed = st.one_of(
    small_ints, big_ints, text, int_tuples, numbers, nans, mixed_tuples, incomparable,
    st.sampled_from(DECIMALS), st.just(frozenset({1})), st.just(frozenset()), st.just(("t",)),
)  # fmt: skip
bad_keys = st.one_of(
    st.builds(list),  # unhashable
    st.builds(dict),
    st.builds(RaisingHash),
    st.builds(RaisingEq),
)

# (name, strategy, comparable): "comparable" families may use tie_break="key" -- their keys are
# totally ordered (a tie group mixing the int and str of `incomparable` always has to compare an
# int with a str, whatever the sort algorithm, so it raises TypeError in both implementations).
FAMILIES = [
    ("int", small_ints, True),
    ("bigint", big_ints, True),
    ("text", text, True),
    ("int_tuple", int_tuples, True),
    ("numbers", numbers, True),
    ("incomparable", incomparable, True),
    ("mixed", mixed, False),
    ("errors", st.one_of(mixed, mixed, mixed, mixed, bad_keys), False),  # bad keys one time in 5
]

# --- argument values ---------------------------------------------------------------------------

K_VALUES = [
    60, 0, 0.0, -0.0, 1, 2, 0.5, 1e-300, 5e-324, 1e308, 2**70, Fraction(1, 3), np.float64(2.5),
    np.int64(3), np.float32(0.1), 10,
]  # fmt: skip
WEIGHT_VALUES = [
    1, 1.0, 2, 3, 0, 0.0, -0.0, -1, -2.5, 0.5, 1 / 3, 5e-324, -5e-324, 1e-300, 1e300, 1e308,
    -1e308, Fraction(1, 3), np.float64(0.7), np.float32(0.1), np.int64(2), 10**20,
]  # fmt: skip
EXTREME_WEIGHTS = [1e308, -5e-324, 1e300, 5e-324, -1e308, 1, -1, 1.7e308, 1e-300]
RAW_SCORES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 5),
    st.sampled_from([np.float32(0.5), Fraction(1, 3), 2**70]),
)

BAD_ARGUMENTS = {
    "k": [-1, -1e-300, float("nan"), float("inf"), "x", True, None, 10**400, Decimal(1), 1j],
    "window": [0, -1, 1.5, True, "2", 10.0],
    "duplicates": ["last", "", 1, None, b"first"],
    "tie_break": ["score", None, 0],
    "offset": [-1, 1.5, None, True, "0"],
    "limit": [-1, "3", 2.0, False],
    "min_score": [float("nan"), float("inf"), -float("inf"), "x", True, 10**400],
    "normalize": ["yes", 1, None, 0],
    "trace": [1, None, "no"],
}


# --- comparison helpers ------------------------------------------------------------------------


def bits(x) -> bytes:
    return struct.pack("<d", x)


def same_key(a, b) -> bool:
    """The same key object: exact ints and strs by value, exact floats by bits, tuples element by
    element, numpy scalars by type and value (iterating an array makes new ones on every call),
    anything else by identity (the implementation must hand back the object it was given)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) in (int, bool):
        return a == b
    if type(a) is str:
        return str.__eq__(a, b) is True
    if type(a) is float:
        return bits(a) == bits(b)
    if type(a) is tuple:
        return len(a) == len(b) and all(same_key(x, y) for x, y in zip(a, b))
    if isinstance(a, np.generic):
        return bits(a) == bits(b) if isinstance(a, np.floating) else bool(a == b)
    return False


def assert_same_float(got, want, what) -> None:
    assert type(got) is float, f"{what}: {type(got).__name__} {got!r}, want a float"
    assert bits(got) == bits(want), f"{what}: {got!r} != {want!r} (bits)"


def assert_same_contribution(got, want, what) -> None:
    assert type(got.list_index) is int and got.list_index == want.list_index, what
    assert type(got.rank) is int and got.rank == want.rank, what
    assert_same_float(got.weight, want.weight, f"{what}.weight")
    assert_same_float(got.contribution, want.contribution, f"{what}.contribution")
    if want.score is None:
        assert got.score is None, f"{what}.score: {got.score!r}, want None"
    else:
        assert_same_float(got.score, want.score, f"{what}.score")


def assert_same_plain(got, want, what) -> None:
    """to_dict() output: plain dicts/lists with the same keys in the same order, floats by bits."""
    if isinstance(want, dict):
        assert type(got) is dict, f"{what}: {type(got).__name__}"
        assert list(got) == list(want), f"{what}: keys {list(got)} != {list(want)}"
        for name in want:
            if name == "key":
                assert same_key(got[name], want[name]), (
                    f"{what}[key]: {got[name]!r} != {want[name]!r}"
                )
            else:
                assert_same_plain(got[name], want[name], f"{what}[{name!r}]")
    elif isinstance(want, list):
        assert type(got) is list, f"{what}: {type(got).__name__}"
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_plain(g, w, f"{what}[{i}]")
    elif type(want) is float:
        assert_same_float(got, want, what)
    else:
        assert type(got) is type(want) and got == want, f"{what}: {got!r} != {want!r}"


def assert_same_hits(got, want) -> None:
    assert isinstance(got, list), f"result is {type(got).__name__}, want a list"
    shown = [(h.key, h.score) for h in got], [(h.key, h.score) for h in want]
    assert len(got) == len(want), f"{len(got)} hits, want {len(want)}: {shown}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert same_key(g.key, w.key), (
            f"hit {i}: key {g.key!r} ({type(g.key).__name__}) != {w.key!r} ({type(w.key).__name__}): {shown}"
        )
        assert_same_float(g.score, w.score, f"hit {i} ({w.key!r}) score")
        key, score = g
        assert key is g.key and bits(score) == bits(g.score)
        if w.contributions is None:
            assert g.contributions is None, f"hit {i}: contributions without trace"
        else:
            assert g.contributions is not None, f"hit {i}: no contributions with trace=True"
            gc, wc = tuple(g.contributions), tuple(w.contributions)
            assert len(gc) == len(wc), f"hit {i}: {len(gc)} contributions, want {len(wc)}"
            for j, (a, b) in enumerate(zip(gc, wc)):
                assert_same_contribution(a, b, f"hit {i} contribution {j}")
        assert_same_plain(g.to_dict(), w.to_dict(), f"hit {i}.to_dict()")


def call(fn, make_input):
    lists, kwargs = make_input()
    try:
        return fn(lists, **kwargs), None
    # A BaseException that is not an Exception (PyO3's PanicException) escapes and fails the test.
    except Exception as exc:  # noqa: BLE001 -- any exception is an outcome to compare
        return None, exc


def assert_same_outcome(rrf, ref_rrf, make_input) -> None:
    want, want_exc = call(ref_rrf, make_input)
    got, got_exc = call(rrf, make_input)
    if currently_in_test_context():
        event(
            f"reference raised {type(want_exc).__name__}"
            if want_exc
            else f"{min(len(want), 4)}+ hits"
        )
    if want_exc is not None:
        assert got_exc is not None, (
            f"the reference raised {want_exc!r}; the implementation returned {got!r}"
        )
        assert isinstance(got_exc, type(want_exc)), (
            f"raised {got_exc!r}; the reference raised {want_exc!r}"
        )
        return
    if got_exc is not None:
        raise AssertionError(
            f"the implementation raised {got_exc!r}; the reference returned {want!r}"
        ) from got_exc
    assert_same_hits(got, want)


def snapshot(x, depth=0):
    """What an input looks like, without calling any __eq__ or __hash__: containers by identity and
    content, floats by bits, numpy arrays by bytes, everything else by identity."""
    if isinstance(x, (list, tuple)) and depth < 4:
        return (type(x), id(x), len(x), tuple(snapshot(v, depth + 1) for v in x))
    if isinstance(x, dict) and depth < 4:
        return (dict, id(x), tuple((id(k), snapshot(v, depth + 1)) for k, v in x.items()))
    if isinstance(x, np.ndarray):
        return (np.ndarray, id(x), x.dtype.str, x.shape, x.tobytes(), x.flags.writeable)
    if type(x) is float:
        return (float, id(x), bits(x))
    return (type(x), id(x))


# --- input strategies --------------------------------------------------------------------------


@st.composite
def key_lists(draw, family, max_lists=4, max_len=6):
    """Lists drawn from a small pool of keys (so keys repeat across and within lists), or
    permutations of one pool (equal-length lists with many exact ties)."""
    # Indices into the pool, never the keys themselves: Hypothesis hashes what sampled_from and
    # permutations hold, and some keys here raise from __hash__ or __eq__.
    pool = draw(st.lists(family, min_size=1, max_size=6))
    # (sampled_from shrinks towards its first element: the common case comes first)
    n = draw(st.sampled_from([2, 1, 3, 2, 3, 4, 1, 2, 3, 0]))
    shortest = draw(st.sampled_from([1, 0]))
    shape = draw(st.sampled_from(["pool", "pool", "permutations", "fresh"]))
    if shape == "permutations":
        length = draw(st.integers(shortest, len(pool)))
        orders = [draw(st.permutations(range(len(pool))))[:length] for _ in range(n)]
    elif shape == "fresh":
        return [draw(st.lists(family, min_size=shortest, max_size=max_len)) for _ in range(n)]
    else:
        index = st.integers(0, len(pool) - 1)
        orders = [draw(st.lists(index, min_size=shortest, max_size=max_len)) for _ in range(n)]
    return [[pool[i] for i in order] for order in orders]


def container_kinds(lists, draw):
    """How each list is passed: list (mostly), tuple, a one-shot iterator, or a numpy array."""
    kinds = []
    for lst in lists:
        if not isinstance(lst, list):  # a bad value standing in for a list: passed as it is
            kinds.append("raw")
            continue
        options = ["list", "list", "tuple", "iter"]
        if lst and all(type(x) is int and -100 < x < 100 for x in lst):
            options.append("ndarray")
        kinds.append(draw(st.sampled_from(options)))
    return kinds


def make_lists(lists, kinds, outer):
    """A fresh input for one call (iterators are used up by a call)."""
    made = []
    for lst, kind in zip(lists, kinds):
        if kind == "tuple":
            made.append(tuple(lst))
        elif kind == "iter":
            made.append(iter(lst))
        elif kind == "ndarray":
            made.append(np.array(lst, dtype=np.int64))
        else:
            made.append(lst)
    if outer == "tuple":
        return tuple(made)
    if outer == "iter":
        return iter(made)
    return made


@st.composite
def rrf_calls(draw, families=FAMILIES, bad_rate=0.1, paging=True):
    """(lists, kinds, outer, kwargs): mostly valid calls, sometimes with one bad argument."""
    _name, family, comparable = draw(st.sampled_from(families))
    lists = draw(key_lists(family))
    n = len(lists)
    kwargs = {}

    if draw(st.booleans()):
        kwargs["k"] = draw(st.one_of(st.sampled_from(K_VALUES), st.floats(0, 100)))
    if draw(st.booleans()):
        shape = draw(st.sampled_from(["pool", "pool", "floats", "same", "extreme"]))
        if shape == "floats":
            weights = draw(st.lists(st.floats(-3, 3), min_size=n, max_size=n))
        elif shape == "extreme":  # overflow, underflow to (signed) zero, subnormal scores
            weights = draw(st.lists(st.sampled_from(EXTREME_WEIGHTS), min_size=n, max_size=n))
            kwargs["k"] = draw(st.sampled_from([0, 1, 0.5, 5e-324]))
        elif shape == "same":
            weights = [draw(st.sampled_from(WEIGHT_VALUES))] * n
        else:
            weights = draw(st.lists(st.sampled_from(WEIGHT_VALUES), min_size=n, max_size=n))
        kwargs["weights"] = as_container(
            weights, draw(st.sampled_from(["list", "list", "tuple", "ndarray"]))
        )
    if sometimes(draw, 4):
        kwargs["window"] = draw(st.sampled_from([1, 2, 3, 5, 10**30, np.int64(2)]))
    if draw(st.booleans()):
        kwargs["duplicates"] = draw(st.sampled_from(["first", "sum", "sum", "error"]))
    if comparable and draw(st.booleans()):
        kwargs["tie_break"] = "key"
    elif sometimes(draw, 4):
        kwargs["tie_break"] = "best_rank"
    if paging:
        if sometimes(draw, 4):
            kwargs["offset"] = draw(st.sampled_from([1, 0, 2, 5, 10**30, np.int64(1)]))
        if sometimes(draw, 4):
            kwargs["limit"] = draw(st.sampled_from([2, 1, 5, 0, 10**30, np.int64(3)]))
        if sometimes(draw, 4):
            kwargs["min_score"] = draw(min_scores(kwargs))
    if sometimes(draw, 3):
        kwargs["normalize"] = True
    elif sometimes(draw, 4):
        kwargs["normalize"] = False
    if sometimes(draw, 4):
        per_list = []
        for lst in lists:
            if draw(st.booleans()):
                per_list.append(None)
            else:
                per_list.append(draw(st.lists(RAW_SCORES, min_size=len(lst), max_size=len(lst))))
        kwargs["scores"] = per_list
    if draw(st.booleans()):
        kwargs["trace"] = True
    elif sometimes(draw, 4):
        kwargs["trace"] = False

    if bad_rate == 1.0 or (bad_rate and sometimes(draw, round(1 / bad_rate))):
        lists, kwargs = draw(with_one_bad_argument(lists, kwargs))

    kinds = container_kinds(lists, draw) if isinstance(lists, list) else None
    outer = draw(st.sampled_from(["list", "list", "list", "tuple", "iter"]))
    return lists, kinds, outer, kwargs


def sometimes(draw, one_in: int) -> bool:
    """True about one time in ``one_in``; shrinks to False."""
    return draw(st.sampled_from([False] * (one_in - 1) + [True]))


def as_container(values, kind):
    if kind == "tuple":
        return tuple(values)
    if kind == "ndarray" and values:
        try:
            array = np.array(values)
        except (OverflowError, TypeError, ValueError):
            return values
        return array if array.dtype.kind in "if" else values
    return values


@st.composite
def min_scores(draw, kwargs):
    """Mostly values a score can actually take: w / (k + r), and its sums of two."""
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(
            st.one_of(
                st.floats(-0.05, 0.05), st.sampled_from([0.0, -0.0, 1.0, 0.5, 1 / 61, 1e-300])
            )
        )
    k = float(kwargs.get("k", 60)) if not isinstance(kwargs.get("k", 60), str) else 60.0
    weights = kwargs.get("weights")
    w = float(draw(st.sampled_from(list(weights)))) if weights is not None and len(weights) else 1.0
    one = w / (k + draw(st.integers(1, 4)))
    if choice == 1 or not math.isfinite(one):
        return one
    other = w / (k + draw(st.integers(1, 4)))
    total = 0.0
    for v in sorted([one, other]):
        total += v
    return total if math.isfinite(total) else one


@st.composite
def with_one_bad_argument(draw, lists, kwargs):
    kwargs = dict(kwargs)
    n = len(lists)
    what = draw(st.sampled_from(sorted(BAD_ARGUMENTS) + ["weights", "scores", "lists", "lists[i]"]))
    if what in BAD_ARGUMENTS:
        kwargs[what] = draw(st.sampled_from(BAD_ARGUMENTS[what]))
    elif what == "weights":
        good = [1.0] * n
        kwargs["weights"] = draw(
            st.sampled_from(
                [good + [1.0], good[:-1], 5, "ab", None if n else 5]
                + [
                    good[:i] + [bad] + good[i + 1 :]
                    for i in range(n)
                    for bad in (float("nan"), float("-inf"), "1", True, None, 10**400)
                ]
            )
        )
    elif what == "scores":
        options = [[None] * (n + 1), 5, "ab"]
        for i, lst in enumerate(lists):
            nones = [None] * n
            options.append(nones[:i] + [[0.0] * (len(lst) + 1)] + nones[i + 1 :])
            options.append(nones[:i] + [7] + nones[i + 1 :])
            if lst:
                options.append(nones[:i] + [["x"] * len(lst)] + nones[i + 1 :])
                options.append(nones[:i] + [[True] * len(lst)] + nones[i + 1 :])
        kwargs["scores"] = draw(st.sampled_from(options))
    elif what == "lists":
        return draw(st.sampled_from(["abc", b"abc", 5, None])), kwargs
    else:  # one list replaced by something that is not a list of keys
        if n:
            lists = list(lists)
            lists[draw(st.integers(0, n - 1))] = draw(
                st.sampled_from(["ab", b"ab", bytearray(b"ab"), 3, None])
            )
        else:
            lists = ["ab"]
    return lists, kwargs


def input_maker(lists, kinds, outer, kwargs):
    if kinds is None:  # `lists` is itself the bad value
        return lambda: (lists, dict(kwargs))
    return lambda: (make_lists(lists, kinds, outer), dict(kwargs))


# --- the properties ----------------------------------------------------------------------------


@given(rrf_calls())
def test_rrf_matches_reference(rrf, ref_rrf, call_spec):
    lists, kinds, outer, kwargs = call_spec
    before = (snapshot(lists), snapshot(kwargs))
    assert_same_outcome(rrf, ref_rrf, input_maker(lists, kinds, outer, kwargs))
    assert (snapshot(lists), snapshot(kwargs)) == before, "an input was modified"


@given(rrf_calls(families=[f for f in FAMILIES if f[0] != "errors"], bad_rate=0.0))
def test_rrf_valid_calls_match_reference(rrf, ref_rrf, call_spec):
    """Only valid arguments and hashable keys: most of these return hits, not errors."""
    lists, kinds, outer, kwargs = call_spec
    assert_same_outcome(rrf, ref_rrf, input_maker(lists, kinds, outer, kwargs))


@given(rrf_calls(bad_rate=1.0))
def test_rrf_bad_arguments_match_reference(rrf, ref_rrf, call_spec):
    lists, kinds, outer, kwargs = call_spec
    assert_same_outcome(rrf, ref_rrf, input_maker(lists, kinds, outer, kwargs))


@given(st.data())
def test_tie_heavy_lists_match_reference(rrf, ref_rrf, data):
    """Permutations of a small alphabet, equal weights: nearly every score is an exact tie."""
    alphabet = data.draw(st.sampled_from(["ab", "abc", "abcd", [1, 2, 3], [1.0, 2, True, "x"]]))
    n = data.draw(st.integers(1, 5))
    length = data.draw(st.integers(1, len(alphabet)))
    lists = [data.draw(st.permutations(list(alphabet)))[:length] for _ in range(n)]
    kwargs = {
        "k": data.draw(st.sampled_from([0, 1, 60, 0.5])),
        "weights": [data.draw(st.sampled_from([1, 2, 0.1]))] * n,
        "tie_break": data.draw(
            st.sampled_from(["best_rank", "key"] if type(alphabet) is str else ["best_rank"])
        ),
        "normalize": data.draw(st.booleans()),
        "trace": data.draw(st.booleans()),
    }
    assert_same_outcome(rrf, ref_rrf, lambda: (lists, dict(kwargs)))


@given(st.data())
def test_extreme_weights_match_reference(rrf, ref_rrf, data):
    """Scores that overflow, underflow to -0.0 or 0.0 (which tie), or are subnormal."""
    n = data.draw(st.integers(1, 4))
    lists = [data.draw(st.lists(st.sampled_from("abcde"), max_size=4)) for _ in range(n)]
    weights = data.draw(
        st.lists(
            st.sampled_from([-5e-324, 1e300, 5e-324, 1.0, -1.0, 1e308, -1e-300]),
            min_size=n,
            max_size=n,
        )
    )
    kwargs = {
        "k": data.draw(st.sampled_from([0, 0.5, 1, 60])),
        "weights": weights,
        "normalize": data.draw(st.booleans()),
        "duplicates": data.draw(st.sampled_from(["first", "sum"])),
        "tie_break": data.draw(st.sampled_from(["best_rank", "key"])),
        "min_score": data.draw(st.sampled_from([None, 0.0, -0.0, 5e-324, -5e-324])),
        "trace": True,
    }
    assert_same_outcome(rrf, ref_rrf, lambda: (lists, dict(kwargs)))


@given(st.data())
def test_permuted_lists_give_bit_identical_scores(rrf, data):
    _name, family, _ = data.draw(
        st.sampled_from([f for f in FAMILIES if f[0] not in ("errors", "mixed")])
    )
    lists = data.draw(key_lists(family))
    n = len(lists)
    kwargs = {
        "k": data.draw(st.sampled_from(K_VALUES)),
        "duplicates": data.draw(st.sampled_from(["first", "sum"])),
        "normalize": data.draw(st.booleans()),
    }
    if data.draw(st.booleans()):
        kwargs["window"] = data.draw(st.integers(1, 4))
    weights = data.draw(st.lists(st.sampled_from(WEIGHT_VALUES), min_size=n, max_size=n))
    order = data.draw(st.permutations(range(n)))

    def scores_by_key(lists, weights):
        try:
            hits = rrf(lists, weights=weights, **kwargs)
        except ValueError as exc:  # normalize without a positive weight, or a score overflow
            return type(exc)
        return {h.key: bits(h.score) for h in hits}

    base = scores_by_key(lists, weights)
    permuted = scores_by_key([lists[i] for i in order], [weights[i] for i in order])
    assert permuted == base
    if isinstance(base, dict):
        assert len(rrf(lists, weights=weights, **kwargs)) == len(base)


def deep_equal(a, b) -> bool:
    """``a`` equals its deep copy ``b``: floats by bits (NaN too), arrays by dtype and bytes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(deep_equal(a[name], b[name]) for name in a)
    if isinstance(a, (float, np.floating)):
        return bits(a) == bits(b)
    return bool(a == b)


@given(rrf_calls(families=[f for f in FAMILIES if f[0] != "errors"], bad_rate=0.3))
def test_inputs_are_not_mutated(rrf, call_spec):
    lists, kinds, _outer, kwargs = call_spec
    if kinds is not None:  # materialise every list once, so the very objects passed can be checked
        kinds = ["list" if kind == "iter" else kind for kind in kinds]
        lists = make_lists(lists, kinds, "list")
    deep_lists, deep_kwargs = copy.deepcopy(lists), copy.deepcopy(kwargs)
    before = (snapshot(lists), snapshot(kwargs))
    try:
        rrf(lists, **kwargs)
    except (TypeError, ValueError):
        pass
    assert (snapshot(lists), snapshot(kwargs)) == before, "an input was modified"
    assert deep_equal(lists, deep_lists), "a list was modified"
    assert deep_equal(kwargs, deep_kwargs), "an argument was modified"


@given(rrf_calls(families=[f for f in FAMILIES if f[0] != "errors"], bad_rate=0.0, paging=False))
def test_same_input_same_output(rrf, call_spec):
    lists, kinds, outer, kwargs = call_spec
    make = input_maker(lists, kinds, outer, kwargs)
    first, first_exc = call(rrf, make)
    second, second_exc = call(rrf, make)
    if first_exc is not None:
        assert type(second_exc) is type(first_exc)
    else:
        assert_same_hits(second, first)


@pytest.mark.parametrize("n_lists", [1, 8])
def test_long_lists_match_reference(rrf, ref_rrf, n_lists):
    """Long lists with k=0 and a huge window: ranks well beyond the small cases above."""
    lists = [list(range(i, i + 2000)) for i in range(n_lists)]
    assert_same_outcome(
        rrf, ref_rrf, lambda: (lists, {"k": 0, "window": 10**30, "trace": True, "limit": 20})
    )
