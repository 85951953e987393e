"""Differential test: ``rankfusion.compare_per_query`` (its tests in the Rust core, rust/stats/)
against ``rankfusion.reference.compare_per_query`` (plain Python), with Hypothesis.

Every field of every tested pair must be the same: run names and metric, and every float --
delta, p, corrected p, effect size, both ends of the interval -- with the same bits; the same
booleans and counts; or both must raise, the core an instance of the reference's exception type.
The per-query values are random vectors of n = 1 to 60 queries for 1 to 6 runs (one run is an
error in both), drawn to hold ties (values shared between runs), zeros and exact differences;
every test, correction and baseline mode; few permutations (the reference adds each sign
vector's sum in Python), enough for both the exact enumeration (2**n <= permutations) and the
sampled test, with any 64-bit seed.

``RANKFUSION_MAX_EXAMPLES`` sets the number of examples (default 300).
"""

from __future__ import annotations

import math
import os
import struct

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import rankfusion
from rankfusion import reference

EXAMPLES = settings(
    max_examples=int(os.environ.get("RANKFUSION_MAX_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def outcome(fn, *args, **kwargs):
    try:
        return "ok", fn(*args, **kwargs)
    except (TypeError, ValueError) as e:
        return "raised", e


def assert_same_error(got, expected) -> None:
    """The same class, message and fields (argument, qid, list, ...)."""
    assert type(got) is type(expected), (got, expected)
    assert isinstance(expected, (rankfusion.FusionError, rankfusion.FusionTypeError)), expected
    assert str(got) == str(expected), (got, expected)
    assert got.fields() == expected.fields(), (got.fields(), expected.fields())


def exact_fields(record) -> tuple:
    """The record with each float as its bits (so that 0.0 and -0.0 differ, NaN equals NaN)."""

    def key(v):
        if isinstance(v, float):
            return ("float", struct.pack("<d", v))
        if isinstance(v, tuple):
            return tuple(key(x) for x in v)
        return (type(v).__name__, v)

    return tuple(key(v) for v in record)


# Per-query values: common metric values (ties between runs, zeros, ones), fractions such as
# nDCG's, and any float in [0, 1].
VALUES = st.one_of(
    st.sampled_from([0.0, 0.0, 1.0, 0.5, 0.25, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.7]),
    st.floats(0.0, 1.0),
)


@st.composite
def comparisons(draw):
    n_runs = draw(st.integers(1, 6))
    n = draw(st.one_of(st.integers(1, 12), st.integers(1, 60)))  # few queries: exact tests
    n_metrics = draw(st.integers(1, 2))
    # Runs that copy another on some queries: ties, and zero differences.
    as_dict = draw(st.booleans())  # one kind per example: a mapping's queries are its keys
    per_query = {}
    for m in range(n_metrics):
        runs: dict = {}
        for r in range(n_runs):
            values = draw(st.lists(VALUES, min_size=n, max_size=n))
            if runs and draw(st.booleans()):
                other = draw(st.sampled_from(list(runs.values())))
                keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
                values = [o if k else v for v, o, k in zip(values, other, keep)]
            runs[f"run{r + 1}"] = values
        per_query[f"metric{m}"] = {
            name: {f"q{i}": v for i, v in enumerate(values)} if as_dict else values
            for name, values in runs.items()
        }
    mode = draw(st.sampled_from(["all", "baseline", "pairs"]))  # which pairs are tested
    kwargs = {
        "test": draw(st.sampled_from(["randomization", "t", "bootstrap"])),
        "permutations": draw(st.one_of(st.integers(1, 300), st.sampled_from([2**n, 2**n - 1]))),
        "seed": draw(st.integers(0, 2**64 - 1)),
        "correction": draw(st.sampled_from(["none", "bonferroni", "holm", "bh"])),
        "alpha": draw(st.sampled_from([0.05, 0.01, 0.1, 0.5, 1.0, 0.0])),
        "confidence": draw(st.one_of(st.sampled_from([0.95, 0.9, 0.99]), st.floats(0.01, 0.99))),
    }
    if kwargs["permutations"] > 300:  # keep the reference quick: the exact case only
        kwargs["permutations"] = min(kwargs["permutations"], 2**10)
    if n <= 10 and draw(st.booleans()):  # the exact enumeration, often
        kwargs["permutations"] = 2**n + draw(st.integers(0, 5))
    if mode == "baseline" and n_runs:
        kwargs["baseline"] = draw(
            st.one_of(
                st.integers(0, n_runs - 1), st.sampled_from([f"run{r + 1}" for r in range(n_runs)])
            )
        )
    elif mode == "pairs" and n_runs >= 2:
        pair = st.permutations(range(n_runs)).map(lambda p: (p[0], p[1]))
        kwargs["pairs"] = draw(st.lists(pair, min_size=1, max_size=4))
    return per_query, kwargs


@EXAMPLES
@given(comparisons())
def test_compare_matches_reference(case):
    per_query, kwargs = case
    status, expected = outcome(reference.compare_per_query, per_query, **kwargs)
    got_status, got = outcome(rankfusion.compare_per_query, per_query, **kwargs)
    event(f"{kwargs['test']}: {status}")
    assert got_status == status, (got, expected)
    if status == "raised":
        assert_same_error(got, expected)
        return
    assert len(got.pairs) == len(expected)
    for mine, theirs in zip(got.pairs, expected):
        assert mine == theirs  # every float ==, ...
        assert exact_fields(mine) == exact_fields(theirs), (mine, theirs)  # ... and its bits
    n = len(next(iter(next(iter(per_query.values())).values())))
    if kwargs["test"] == "randomization" and 2**n <= kwargs["permutations"]:
        event("randomization: exact")
    if any(r.significant for r in expected):
        event("some significant")


def test_bad_arguments_raise_what_the_reference_raises():
    """The same class, message and fields, naming the argument; a per-query value located at its
    query (qid), an item of pairs at its index (list)."""
    good = {"m": {"a": [0.1, 0.2, 0.3], "b": [0.3, 0.1, 0.0]}}
    per_query = "per_query"
    cases = [
        ([], {}, per_query),
        ({}, {}, per_query),
        ({"m": {"a": [0.1]}}, {}, per_query),
        ({"m": {"a": [0.1], "b": [0.2, 0.3]}}, {}, per_query),
        ({"m": {"a": [], "b": []}}, {}, per_query),
        ({"m": {"a": [0.1, "x"], "b": [0.2, 0.3]}}, {}, per_query),
        ({"m": {"a": [0.1, math.inf], "b": [0.2, 0.3]}}, {}, per_query),
        ({"m": {"a": [0.1, True], "b": [0.2, 0.3]}}, {}, per_query),
        ({"m": {"a": [0.1, 10**400], "b": [0.2, 0.3]}}, {}, per_query),
        ({"m": {"a": {"q1": 0.1, "q2": math.nan}, "b": {"q1": 0.1, "q2": 0.2}}}, {}, per_query),
        ({"m": {"a": {"q1": 0.1}, "b": {"q2": 0.1}}}, {}, per_query),
        ({"m": {"a": "0.1", "b": [0.2]}}, {}, per_query),
        ({"m": good["m"], "n": {"a": [0.1, 0.2, 0.3], "c": [0.1, 0.2, 0.3]}}, {}, per_query),
        ({"m": {"a": [0.1], "b": [0.2]}}, {"test": "t"}, "test"),
        (good, {"baseline": "c"}, "baseline"),
        (good, {"baseline": 2}, "baseline"),
        (good, {"baseline": -1}, "baseline"),
        (good, {"baseline": True}, "baseline"),
        (good, {"baseline": 1.0}, "baseline"),
        (good, {"baseline": 0, "pairs": [(1, 0)]}, "pairs"),
        (good, {"pairs": [(0, 0)]}, "pairs"),
        (good, {"pairs": []}, "pairs"),
        (good, {"pairs": [(1, 0), (0, 1, 1)]}, "pairs"),
        (good, {"pairs": [(1, 0), "ab"]}, "pairs"),
        (good, {"pairs": [(1, 0), 7]}, "pairs"),
        (good, {"pairs": [(1, "c")]}, "pairs"),
        (good, {"pairs": "ab"}, "pairs"),
        (good, {"pairs": 3}, "pairs"),
        (good, {"test": "wilcoxon"}, "test"),
        (good, {"test": None}, "test"),
        (good, {"permutations": 0}, "permutations"),
        (good, {"permutations": 2**40 + 1}, "permutations"),
        (good, {"permutations": 1.5}, "permutations"),
        (good, {"seed": -1}, "seed"),
        (good, {"seed": 2**64}, "seed"),
        (good, {"correction": "fdr"}, "correction"),
        (good, {"alpha": 1.5}, "alpha"),
        (good, {"alpha": "0.05"}, "alpha"),
        (good, {"confidence": 1.0}, "confidence"),
        (good, {"confidence": 0.0}, "confidence"),
        (good, {"confidence": math.nan}, "confidence"),
    ]
    for per_query, kwargs, argument in cases:
        status, expected = outcome(reference.compare_per_query, per_query, **kwargs)
        got_status, got = outcome(rankfusion.compare_per_query, per_query, **kwargs)
        assert status == got_status == "raised", (per_query, kwargs, expected, got)
        assert_same_error(got, expected)
        assert expected.argument == argument, (per_query, kwargs, expected)
    # where: the query of a bad value, the item of pairs
    _, e = outcome(rankfusion.compare_per_query, cases[9][0])
    assert (e.qid, str(e)) == ("q2", "query 'q2': per_query['m']['a'] must be finite, got nan")
    _, e = outcome(rankfusion.compare_per_query, good, pairs=[(1, 0), (0, 1, 1)])
    assert (e.argument, e.list, e.reason) == (
        "pairs",
        1,
        "pairs[1] must be a (system, baseline) pair, got 3 items",
    )
