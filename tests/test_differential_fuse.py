"""Differential tests of ``fuse``: the Rust core against the reference, with Hypothesis.

Every method x norm combination, the valid ones and the ones that are errors, with mixed keys
(str, int, float, tuples, and equal keys of different types: 1, 1.0, True), windows, duplicates,
tie breaks, paging, weights (negative, zero, tiny, huge), lower_is_better, phi/gamma/sigma,
boosts and traces. Both must return the same keys (the same objects), in the same order, with
bit-identical scores and trace fields (raw and normalised scores, contributions, factor, divisor,
boost); or both must raise the same exception type with the same message.

The strategy takes the method and the norm first and builds arguments for them, each argument
sometimes deliberately wrong; the main property runs once per (method, norm) pair, valid or not,
so that every pair gets its share of the examples.

CI runs the two main properties (this file's and test_differential_fuse_batch.py's) with
RANKFUSION_MAX_EXAMPLES (see .ci/run, "fusion methods differential").
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from _fusion_cases import (
    BAD_ARGUMENTS,
    BAD_GAMMAS,
    BAD_PHIS,
    BAD_SCORES,
    BAD_SIGMAS,
    BAD_WEIGHTS,
    BIG_GAMMAS,
    BOOST_VALUES,
    BOOST_WEIGHTS,
    COMBINATIONS,
    GAMMAS,
    K_VALUES,
    MEANS,
    METHODS,
    PHIS,
    SCORE_SHAPES,
    SIGMAS,
    VALID,
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

CORE = rankfusion.fuse
REF = ref.fuse


def bits(x) -> bytes:
    return struct.pack("<d", x)


def same_key(a, b) -> bool:
    """The same key object: exact ints/strs/bools by value, floats by bits, tuples element-wise,
    numpy scalars by type and value, anything else by identity."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) in (int, bool, str):
        return a == b
    if type(a) is float:
        return bits(a) == bits(b)
    if type(a) is tuple:
        return len(a) == len(b) and all(same_key(x, y) for x, y in zip(a, b))
    if isinstance(a, np.generic):
        return bits(a) == bits(b) if isinstance(a, np.floating) else bool(a == b)
    return False


def assert_float(got, want, what) -> None:
    assert type(got) is float, f"{what}: {type(got).__name__} {got!r}, want a float"
    assert bits(got) == bits(want), f"{what}: {got!r} != {want!r} (bits)"


def assert_optional_float(got, want, what) -> None:
    if want is None:
        assert got is None, f"{what}: {got!r}, want None"
    else:
        assert_float(got, want, what)


def assert_plain(got, want, what) -> None:
    """to_dict() output: the same keys in the same order, floats by bits."""
    if isinstance(want, dict):
        assert type(got) is dict and list(got) == list(want), f"{what}: {got!r} != {want!r}"
        for name in want:
            if name == "key":
                assert same_key(got[name], want[name]), f"{what}[key]"
            else:
                assert_plain(got[name], want[name], f"{what}[{name!r}]")
    elif isinstance(want, list):
        assert type(got) is list and len(got) == len(want), f"{what}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_plain(g, w, f"{what}[{i}]")
    elif type(want) is float:
        assert_float(got, want, what)
    else:
        assert type(got) is type(want) and got == want, f"{what}: {got!r} != {want!r}"


def assert_same_hits(got, want) -> None:
    shown = [(h.key, h.score) for h in got], [(h.key, h.score) for h in want]
    assert isinstance(got, list), f"result is {type(got).__name__}"
    assert len(got) == len(want), f"{len(got)} hits, want {len(want)}: {shown}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert same_key(g.key, w.key), f"hit {i}: key {g.key!r} != {w.key!r}: {shown}"
        assert_float(g.score, w.score, f"hit {i} ({w.key!r}) score")
        if w.contributions is None:
            assert g.contributions is None, f"hit {i}: contributions without trace"
            for name in ("factor", "divisor", "boost"):
                assert getattr(g, name) is None, f"hit {i}.{name} without trace"
            continue
        assert g.contributions is not None, f"hit {i}: no contributions with trace=True"
        gc, wc = tuple(g.contributions), tuple(w.contributions)
        assert len(gc) == len(wc), f"hit {i}: {len(gc)} contributions, want {len(wc)}"
        for j, (a, b) in enumerate(zip(gc, wc)):
            what = f"hit {i} contribution {j}"
            assert type(a.list_index) is int and a.list_index == b.list_index, what
            assert type(a.rank) is int and a.rank == b.rank, what
            assert_float(a.weight, b.weight, f"{what}.weight")
            assert_float(a.contribution, b.contribution, f"{what}.contribution")
            assert_optional_float(a.score, b.score, f"{what}.score")
            assert_optional_float(a.normalized, b.normalized, f"{what}.normalized")
        for name in ("factor", "divisor", "boost"):
            assert_optional_float(getattr(g, name), getattr(w, name), f"hit {i}.{name}")
        assert_plain(g.to_dict(), w.to_dict(), f"hit {i}.to_dict()")


def outcome(fn, lists, kwargs):
    try:
        return fn(lists, **kwargs), None
    # A BaseException that is not an Exception (a Rust panic) escapes and fails the test.
    except Exception as exc:  # noqa: BLE001 -- any exception is an outcome to compare
        return None, exc


def assert_same_outcome(make_input, tag=None) -> None:
    """Calls the reference and the core on fresh copies of the input and compares everything."""
    want, want_exc = outcome(REF, *make_input())
    got, got_exc = outcome(CORE, *make_input())
    if tag is not None:
        kind = f"raises {type(want_exc).__name__}" if want_exc else f"{min(len(want), 3)}+ hits"
        event(f"outcome: {kind}")
    if want_exc is not None:
        assert got_exc is not None, f"the reference raised {want_exc!r}; the core returned {got!r}"
        assert type(got_exc) is type(want_exc) and str(got_exc) == str(want_exc), (
            f"core raised {got_exc!r}; the reference raised {want_exc!r}"
        )
        return
    if got_exc is not None:
        raise AssertionError(f"the core raised {got_exc!r}; the reference returned {want!r}")
    assert_same_hits(got, want)


# --- keys -----------------------------------------------------------------------------------------


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self):
        return "Unhashable()"


class RaisingEq:
    """Hashes like the int 3; comparing it with anything raises."""

    def __hash__(self):
        return hash(3)

    def __eq__(self, other):
        raise RuntimeError("no eq for you")

    def __repr__(self):
        return "RaisingEq()"


NAN = float("nan")  # one object: one key wherever it appears
EQUAL = [1, 1.0, True, np.int64(1), Fraction(1), 0, 0.0, -0.0, False, 2, 2.0, np.float64(2.0)]

# (name, strategy, comparable): comparable families may use tie_break="key".
FAMILIES = [
    ("str", st.sampled_from(["a", "b", "c", "d", "e", "", "\u00e9", "ab", "\x00"]), True),
    ("int", st.integers(-3, 9) | st.sampled_from([2**63 - 1, -(2**63), 2**64, 10**30]), True),
    ("float", st.sampled_from([0.5, -1.5, 2.0, 1e300, 5e-324, -0.0, 0.0]), True),
    ("tuple", st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"])), True),
    ("equal", st.sampled_from(EQUAL), True),
    (
        "mixed",
        st.one_of(
            st.sampled_from(["a", "1", 1, 1.0, True, (1, "a"), None, NAN, b"a", 2**70]),
            st.sampled_from(EQUAL),
            st.integers(0, 5),
        ),
        False,
    ),
]
BAD_KEYS = st.sampled_from([Unhashable(), RaisingEq(), [1], {}])
MIN_SCORES = st.one_of(
    st.floats(-2, 2), st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 1 / 61, 5e-324])
)


@st.composite
def key_lists(draw, family, max_lists=4, max_len=6):
    """Lists over a small pool of keys (keys repeat across and inside lists), or permutations of
    the pool (equal-length lists with exact ties)."""
    pool = [draw(family) for _ in range(1 + below(draw, 6))]
    n = pick(draw, [2, 1, 3, 2, 3, 4, 1, 2, 0])
    shortest = pick(draw, [1, 0])
    if pick(draw, ["pool", "pool", "permutations"]) == "permutations":
        length = shortest + below(draw, len(pool) - shortest + 1)
        orders = [draw(st.permutations(range(len(pool))))[:length] for _ in range(n)]
    else:
        lengths = [shortest + below(draw, max_len - shortest + 1) for _ in range(n)]
        orders = [[below(draw, len(pool)) for _ in range(length)] for length in lengths]
    return [[pool[i] for i in order] for order in orders], pool


@st.composite
def score_lists(draw, lists):
    """One score per key of every list, in a list, tuple or numpy array."""
    shape = pick(draw, sorted(SCORE_SHAPES))
    out = []
    for lst in lists:
        values = [draw(SCORE_SHAPES[shape]) for _ in lst]
        if pick(draw, [False, False, True]):  # ranked by score, as a search engine returns them
            try:
                values.sort(key=float, reverse=True)
            except OverflowError:
                pass
        kind = pick(draw, ["list", "list", "tuple", "ndarray"])
        if kind == "tuple":
            values = tuple(values)
        elif kind == "ndarray" and shape in ("ties", "floats", "huge"):
            values = np.array(values, dtype=np.float64)
        out.append(values)
    return out


@st.composite
def fuse_calls(draw, families=FAMILIES, bad_rate=8, combination=None, mistakes=True, method=None):
    """(lists, kwargs, outer, tag): a call of ``fuse`` built for a method and norm drawn first
    (or given: ``combination``, or ``method`` and a norm drawn for it).

    With ``mistakes``, each method argument is now and then given where it is not used, missing
    where it is needed, or out of range, and one time in ``bad_rate`` one more argument gets a
    bad value of any kind (0: never). Without, the arguments are valid: what fails is the data
    (a repeated key with duplicates="error", a score that overflows, ...)."""

    def mistake(one_in: int) -> bool:
        return mistakes and sometimes(draw, one_in)

    method, norm = combination or draw(method_and_norm(mistakes))
    m = ref.METHODS[method]
    family_name, family, comparable = pick(draw, families)
    if family_name == "mixed" and mistake(10):
        family = st.one_of(family, BAD_KEYS)
    lists, pool = draw(key_lists(family))
    n = len(lists)
    kw: dict = {"method": method}
    if norm is not None or sometimes(draw, 4):
        kw["norm"] = norm
    reading = reads_scores(method, norm)

    # scores: every list's for score-based methods (a list's missing is an error unless its
    # weight is 0); now and then given to a method that does not read them (traced only)
    if reading and not mistake(20) or not reading and sometimes(draw, 4):
        scores = draw(score_lists(lists))
        if n and mistake(15):
            scores[below(draw, n)] = None
        kw["scores"] = pick(draw, [scores, scores, tuple(scores)])

    # weights: weighted methods half the time (negative, zero, tiny, huge; the means' weights
    # must be >= 0)
    if m.weighted and draw(st.booleans()) or not m.weighted and mistake(15):
        if method in MEANS and not mistake(5):
            values = [w for w in WEIGHTS if not (isinstance(w, (int, float)) and w < 0)]
        else:
            values = WEIGHTS
        if sometimes(draw, 4):
            weights = [pick(draw, values)] * n
        else:
            weights = picks(draw, values, n)
        kw["weights"] = weights
        if n and sometimes(draw, 3):
            kw["weights"] = np.array([float(w) for w in weights])

    # k and normalize: rrf's own
    if method == "rrf" and draw(st.booleans()) or method != "rrf" and mistake(25):
        kw["k"] = pick(draw, K_VALUES)
    if method == "rrf" and sometimes(draw, 4) or method != "rrf" and mistake(30):
        kw["normalize"] = True

    # phi (rbc, needed), gamma (gmnz, needed), sigma (logn_isr, optional)
    for name, own, good, bad, needed in (
        ("phi", "rbc", PHIS, BAD_PHIS, True),
        ("gamma", "gmnz", GAMMAS, BAD_GAMMAS, True),
        ("sigma", "logn_isr", SIGMAS, BAD_SIGMAS, False),
    ):
        if method == own:
            if mistake(6):
                kw[name] = pick(draw, bad)
            elif not needed and draw(st.booleans()):
                pass  # the default
            elif not mistake(12):
                kw[name] = pick(draw, good + (BIG_GAMMAS if name == "gamma" else []))
        elif mistake(30):
            kw[name] = pick(draw, good)

    # lower_is_better: score-reading methods sometimes; others now and then (an error)
    if reading and sometimes(draw, 3) or not reading and mistake(25):
        lower = picks(draw, [False, True], n)
        if mistake(10):
            lower = lower + [False]
        kw["lower_is_better"] = pick(draw, [lower, tuple(lower)])

    if sometimes(draw, 4):
        kw["window"] = pick(draw, [1, 2, 3, 5, 10**30, np.int64(2)])
    if draw(st.booleans()):
        kw["duplicates"] = pick(draw, ["first", "sum", "sum", "error"])
    if comparable and draw(st.booleans()):
        kw["tie_break"] = "key"
    if sometimes(draw, 4):
        kw["offset"] = pick(draw, [1, 0, 2, 5, np.int64(1)])
    if sometimes(draw, 4):
        kw["limit"] = pick(draw, [2, 1, 5, 0, 10**30])
    if sometimes(draw, 5):
        kw["min_score"] = draw(MIN_SCORES)

    # boost: over some pooled keys, equal-but-different keys and keys that are not fused
    if sometimes(draw, 4):
        boost: dict = {}
        for key in pool:
            if draw(st.booleans()):
                try:
                    boost[key] = pick(draw, BOOST_VALUES)
                except Exception:  # noqa: BLE001 -- a key that cannot be hashed or compared
                    pass
        if sometimes(draw, 3):
            boost[pick(draw, ["zz", 99, 2.5, (9, "z")])] = pick(draw, BOOST_VALUES)
        if sometimes(draw, 4) and boost:  # every value equal: a span of 0
            value = pick(draw, BOOST_VALUES)
            boost = dict.fromkeys(boost, value)
        kw["boost"] = boost
        if not mistake(10):
            kw["boost_weight"] = pick(draw, BOOST_WEIGHTS)
        if kw.get("normalize") is True and not mistakes:
            del kw["normalize"]
    elif mistake(30):
        kw["boost_weight"] = pick(draw, BOOST_WEIGHTS)

    if draw(st.booleans()):
        kw["trace"] = True

    if mistakes and bad_rate and sometimes(draw, bad_rate):
        lists, kw = draw(with_one_bad_argument(lists, kw))
    outer = pick(draw, ["list", "list", "tuple", "iter"])
    return lists, kw, outer, f"{method} / {norm}"


@st.composite
def with_one_bad_argument(draw, lists, kw):
    kw = dict(kw)
    n = len(lists)
    what = pick(draw, sorted(BAD_ARGUMENTS) + ["weights", "scores", "lists[i]"])
    if what in BAD_ARGUMENTS:
        kw[what] = pick(draw, BAD_ARGUMENTS[what])
    elif what == "weights":
        good = [1.0] * n
        options = [good + [1.0], 5, "ab"] + ([good[:-1]] if n else [])
        options += [good[:i] + [b] + good[i + 1 :] for i in range(n) for b in BAD_WEIGHTS]
        kw["weights"] = pick(draw, options)
    elif what == "scores":
        options = [[None] * (n + 1), 5, "ab"]
        for i, lst in enumerate(lists):
            good = [[0.0] * len(x) for x in lists]
            options.append(good[:i] + [[0.0] * (len(lst) + 1)] + good[i + 1 :])
            options.append(good[:i] + [7] + good[i + 1 :])
            for b in BAD_SCORES if lst else ():
                options.append(good[:i] + [[b] * len(lst)] + good[i + 1 :])
        kw["scores"] = pick(draw, options)
    elif n:
        lists = list(lists)
        lists[below(draw, n)] = pick(draw, ["ab", b"ab", 3, None])
    else:
        lists = ["ab"]
    return lists, kw


def input_maker(lists, kw, outer):
    """A fresh input per call (an iterator is used up by one call)."""

    def make():
        made = [list(x) if isinstance(x, list) else x for x in lists]
        if outer == "tuple":
            made = tuple(made)
        elif outer == "iter":
            made = iter(made)
        return made, dict(kw)

    return make


# --- the properties ------------------------------------------------------------------------------


@pytest.mark.parametrize("method, norm", COMBINATIONS, ids=combination_id)
def test_fuse_matches_reference(method, norm):
    """The main property, for every method and norm (each pair its share of the examples):
    valid or not, with a bad argument now and then."""

    @settings(max_examples=examples_for(method, norm, settings().max_examples))
    @given(fuse_calls(combination=(method, norm)))
    def check(call):
        lists, kw, outer, tag = call
        assert_same_outcome(input_maker(lists, kw, outer), tag)

    check()


@given(fuse_calls(families=[f for f in FAMILIES if f[0] != "mixed"], mistakes=False), st.data())
def test_fuse_valid_calls_match_reference(call, data):
    """Valid arguments and comparable keys: most calls return hits. min_score is sometimes
    exactly a fused score (the boundary: kept)."""
    lists, kw, outer, tag = call
    if "min_score" not in kw and data.draw(st.booleans()):
        hits, exc = outcome(REF, *input_maker(lists, kw, outer)())
        if exc is None and hits:
            kw = dict(kw, min_score=pick(data.draw, [h.score for h in hits]))
    assert_same_outcome(input_maker(lists, kw, outer), tag)


@pytest.mark.parametrize("method, norm", VALID, ids=combination_id)
@settings(max_examples=max(5, settings().max_examples // 60))
@given(data=st.data())
def test_every_valid_method_and_norm(method, norm, data):
    """Each valid pair with valid arguments only: what fails is the data."""
    lists, kw, outer, tag = data.draw(fuse_calls(combination=(method, norm), mistakes=False))
    assert_same_outcome(input_maker(lists, kw, outer))


@given(st.data())
def test_overflowing_scores_match_reference(data):
    """Huge raw scores, weights and boosts: sums, spans, squares and products that overflow."""
    draw = data.draw
    method, norm = draw(method_and_norm(mistakes=False))
    n = 1 + below(draw, 3)
    lists = [picks(draw, "abcd", below(draw, 5)) for _ in range(n)]
    huge = [1.7e308, -1.7e308, 1e308, -1e308, 1e300, 5e-324, 0.0, 1.0]
    kw: dict = {"method": method, "trace": True}
    if norm is not None:
        kw["norm"] = norm
    if ref.METHODS[method].kind == "score":
        kw["scores"] = [picks(draw, huge, len(x)) for x in lists]
    if ref.METHODS[method].weighted:
        w = [1.7e308, 1e308, 5e-324, 1.0, 1e-300] + ([] if method in MEANS else [-1e308])
        kw["weights"] = picks(draw, w, n)
    if method == "rbc":
        kw["phi"] = pick(draw, [0.5, 0.0])
    if method == "gmnz":
        kw["gamma"] = pick(draw, [2.0, 1100.0, 0.5])
    if sometimes(draw, 2):
        kw["boost"] = {k: pick(draw, huge) for k in "abc"}
        kw["boost_weight"] = pick(draw, [1e308, 1.0, -1e308])
    assert_same_outcome(lambda: (lists, dict(kw)), f"{method} / {norm}")


# --- permutation invariance ---------------------------------------------------------------------


@st.composite
def permutable_calls(draw, method):
    """A valid call of ``method`` (any norm it takes) on comparable keys, and a permutation of its
    lists."""
    norm = pick(draw, [n for m, n in VALID if m == method])
    families = [f for f in FAMILIES if f[0] in ("str", "int", "tuple")]
    lists, kw, _outer, _tag = draw(fuse_calls(families, combination=(method, norm), mistakes=False))
    for name in ("offset", "limit", "min_score", "tie_break", "trace"):
        kw.pop(name, None)
    n = len(lists)
    # valid per-list arguments, to permute alongside
    if "scores" in kw:
        kw["scores"] = list(kw["scores"])
    if "weights" in kw:
        kw["weights"] = [float(w) for w in kw["weights"]]
    if "lower_is_better" in kw:
        kw["lower_is_better"] = list(kw["lower_is_better"])[:n]
    return lists, kw, draw(st.permutations(range(n)))


def permuted(lists, kw, order):
    kw = dict(kw)
    for name in ("scores", "weights", "lower_is_better"):
        if kw.get(name) is not None and len(kw[name]) == len(lists):
            kw[name] = [kw[name][i] for i in order]
    return [lists[i] for i in order], kw


@pytest.mark.parametrize("impl", ["core", "reference"])
@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=max(10, settings().max_examples // 20))
@given(data=st.data())
def test_permuting_the_lists_keeps_every_score(impl, method, data):
    """Lists permuted (with their scores, weights and lower_is_better): the same {key: score},
    bit for bit; with tie_break="key" the very same output, page included."""
    fuse = CORE if impl == "core" else REF
    lists, kw, order = data.draw(permutable_calls(method), label="call")
    other_lists, other_kw = permuted(lists, kw, order)
    base, base_exc = outcome(fuse, lists, kw)
    moved, moved_exc = outcome(fuse, other_lists, other_kw)
    if base_exc is not None or moved_exc is not None:
        # (a message may name a list by its index, or another first-occurring key)
        assert type(base_exc) is type(moved_exc), (base_exc, moved_exc)
        return
    a = {h.key: bits(h.score) for h in base}
    b = {h.key: bits(h.score) for h in moved}
    assert a == b, (base, moved)
    assert len(base) == len(a)

    # tie_break="key": the whole output, with a page and a min_score
    paged = dict(kw, tie_break="key")
    paged["offset"] = pick(data.draw, [0, 0, 1, 2])
    paged["limit"] = pick(data.draw, [None, 1, 3])
    if base and sometimes(data.draw, 2):
        paged["min_score"] = pick(data.draw, [h.score for h in base])
    first = fuse(lists, **paged)
    other_lists, other_paged = permuted(lists, paged, order)
    second = fuse(other_lists, **other_paged)
    assert [(h.key, bits(h.score)) for h in first] == [(h.key, bits(h.score)) for h in second]


# --- regressions: arithmetic at the float limits, signed zeros, condorcet, bordafuse's points ---


def both(lists, **kw):
    """(reference outcome, core outcome) as comparable strings."""

    def show(fn):
        try:
            return repr([(h.key, h.score) for h in fn(lists, **kw)])
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"

    return show(REF), show(CORE)


ARITHMETIC = [
    pytest.param(  # p ** gamma overflows (Python's ** raises OverflowError)
        [["a"], ["a"]],
        dict(method="gmnz", gamma=1100.0, scores=[[1.0], [1.0]]),
        id="gmnz-pow-overflow",
    ),
    pytest.param(  # exp of a weighted mean of logs above 709.78 (math.exp raises)
        [["a"]],
        dict(method="geometric_mean", weights=[5e-324], scores=[[1.7e308]]),
        id="geometric-mean-exp-overflow",
    ),
    pytest.param(  # w / v underflows to 0.0, the sum of terms is 0.0 (Python's / raises)
        [["a"]],
        dict(method="harmonic_mean", weights=[5e-324], scores=[[1e308]]),
        id="harmonic-mean-zero-division",
    ),
]


@pytest.mark.parametrize("lists, kw", ARITHMETIC)
def test_overflow_is_the_same_error_in_both(lists, kw):
    want, got = both(lists, **kw)
    assert got == want


@pytest.mark.parametrize("lists, kw", ARITHMETIC)
def test_overflow_is_a_value_error_naming_the_key_in_the_core(lists, kw):
    """The documented contract: a fused or normalised score that is not finite is a ValueError
    naming the key."""
    with pytest.raises(ValueError, match=r"score of key 'a'.* is not finite"):
        CORE(lists, **kw)


# Finite scores whose normalisation's statistic overflows a float: the list's span, sum, mean,
# standard deviation or length. (Each once gave a normalised value of nan or 0.0.)
HUGE = 1.7e308
NORM_OVERFLOW = [
    pytest.param("min-max", [HUGE, -HUGE, 0.0], "the span of its scores (max - min)", id="min-max"),
    pytest.param("sum", [HUGE, HUGE, 0.0], "the sum of its scores above the min", id="sum"),
    pytest.param(
        "z-score", [HUGE, HUGE, 0.0], "the sum of its scores (for their mean)", id="z-mean"
    ),
    pytest.param("z-score", [HUGE, -HUGE, HUGE], "their standard deviation", id="z-sd"),
    pytest.param("l2", [HUGE, HUGE, 0.0], "the length (l2 norm) of its scores", id="l2"),
    # Welford's m2 = -inf (math.sqrt raises): the sd is nan.
    pytest.param("dbsf", [-HUGE, HUGE, 0.0], "the span of mean -/+ 3 sd of its scores", id="dbsf"),
]


@pytest.mark.parametrize("impl", ["core", "reference"])
@pytest.mark.parametrize("norm, row, what", NORM_OVERFLOW)
def test_a_norm_statistic_that_overflows_names_the_list(impl, norm, row, what):
    fuse = CORE if impl == "core" else REF
    lists = [["x", "y"], ["a", "b", "c"]]
    scores = [[2.0, 1.0], row]
    with pytest.raises(ValueError) as raised:
        fuse(lists, method="wsum", norm=norm, scores=scores)
    e = raised.value
    assert str(e) == f"norm={norm!r} cannot normalise scores[1]: {what} overflows a float"
    assert (e.argument, e.list, e.key) == ("scores", 1, None)
    # The same in a batch row, the row named.
    if impl == "core":
        ids = [np.array([[1, 2]]), np.array([[3, 4, 5]])]
        with pytest.raises(ValueError) as raised:
            rankfusion.fuse_batch(
                ids, [np.array([[2.0, 1.0]]), np.array([row])], method="wsum", norm=norm
            )
        assert (raised.value.argument, raised.value.list, raised.value.row) == ("scores", 1, 0)


def test_a_harmonic_mean_term_that_overflows_scores_zero():
    """The documented edge: w / v above the largest float (v subnormal) is inf, the key's
    harmonic mean Σw / inf = 0.0 (the true value, about 1e-323, is below every normal float)."""
    kw = dict(method="harmonic_mean", scores=[[5e-324], [1.0]], trace=True)
    for fuse in (CORE, REF):
        (hit,) = fuse([["a"], ["a"]], **kw)
        assert hit.score == 0.0
        assert [c.contribution for c in hit.contributions] == [math.inf, 1.0]
        assert [c.normalized for c in hit.contributions] == [5e-324, 1.0]
        assert CORE([["a"], ["a"]], **kw)[0].to_dict() == hit.to_dict()


@pytest.mark.parametrize("impl", ["core", "reference"])
@pytest.mark.parametrize("method", ["max", "min", "med"])
def test_list_order_never_changes_the_sign_of_a_zero(impl, method):
    fuse = CORE if impl == "core" else REF
    three = [["a"], ["a"], ["a"]]
    forward = fuse(three, method=method, scores=[[0.0], [-0.0], [1.0]])
    backward = fuse(three, method=method, scores=[[-0.0], [0.0], [1.0]])
    if method == "max":  # the largest value is a zero
        forward = fuse(three, method=method, scores=[[0.0], [-0.0], [-1.0]])
        backward = fuse(three, method=method, scores=[[-0.0], [0.0], [-1.0]])
    assert bits(forward[0].score) == bits(backward[0].score) == bits(0.0)


def test_condorcet_with_weights_whose_sum_overflows():
    lists, kw = [["a"], ["a"]], dict(method="condorcet", weights=[1.7e308, 1.7e308])
    want, got = both(lists, **kw)
    assert got == want


def test_bordafuse_traces_a_float_normalized_value():
    (hit,) = REF([["a"]], method="bordafuse", trace=True)
    assert type(hit.contributions[0].normalized) is float
    assert type(hit.to_dict()["contributions"][0]["normalized"]) is float


def test_core_bordafuse_traces_the_points_as_floats():
    (hit,) = CORE([["a"]], method="bordafuse", trace=True)
    assert type(hit.contributions[0].normalized) is float
    assert bits(hit.contributions[0].normalized) == bits(1.0)  # |C| - rank + 1 = 1 - 1 + 1


@settings(max_examples=max(20, settings().max_examples // 5))
@given(st.data())
def test_condorcet_over_more_lists_than_its_table_matches_reference(data):
    """Condorcet over 9 to 12 lists (the core weighs sets of up to 8 lists from a table, more
    list by list), weighted (weights that tie, cancel and abstain) or not, duplicates kept."""
    n = data.draw(st.integers(9, 12), label="lists")
    lists = [data.draw(st.lists(st.integers(0, 12), max_size=7)) for _ in range(n)]
    weights = st.sampled_from([1.0, 2.0, 0.5, -1.0, 0.0, 3.0, 1e-300])
    kw = {"method": "condorcet", "duplicates": data.draw(st.sampled_from(["first", "sum"]))}
    if data.draw(st.booleans()):
        kw["weights"] = data.draw(st.lists(weights, min_size=n, max_size=n), label="weights")
    assert_same_outcome(lambda: ([list(x) for x in lists], dict(kw)))
