"""Hand-computed vectors for ``rrf``.

Every expected number is written as literal arithmetic, never computed by the code under test. A
score is the canonical sum: the contributions ``w / (k + rank)`` in ascending order of value,
added to 0.0 one at a time; so ``0.0 + 1/12 + 2/11`` because 1/12 < 2/11. ``w / (k + r)`` with
integer ``k + r`` rounds exactly like the literal ``w / (k + r)`` written here.
"""

from __future__ import annotations

import json
import struct

import pytest
from _keys import Folded


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def keys(hits) -> list:
    return [h.key for h in hits]


def assert_hits(hits, expected) -> None:
    """``expected``: [(key, score)], compared by type and value of the key and bits of the score."""
    assert isinstance(hits, list)
    got = [(h.key, h.score) for h in hits]
    assert len(got) == len(expected), (got, expected)
    for (gk, gs), (ek, es) in zip(got, expected):
        assert type(gk) is type(ek) and gk == ek, (got, expected)
        assert type(gs) is float, (got, expected)
        assert bits(gs) == bits(es), (got, expected)


def assert_contribution(c, list_index, rank, weight, contribution, score=None) -> None:
    assert type(c.list_index) is int and c.list_index == list_index
    assert type(c.rank) is int and c.rank == rank
    assert type(c.weight) is float and bits(c.weight) == bits(weight)
    assert type(c.contribution) is float and bits(c.contribution) == bits(contribution)
    if score is None:
        assert c.score is None
    else:
        assert type(c.score) is float and bits(c.score) == bits(score)


# --- the worked examples -----------------------------------------------------------------------


def test_weighted_two_lists(rrf):
    hits = rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2])
    assert_hits(hits, [("c2", 0.0 + 1 / 12 + 2 / 11), ("c3", 0.0 + 2 / 12), ("c1", 0.0 + 1 / 11)])
    assert all(h.contributions is None for h in hits)


def test_weighted_two_lists_trace(rrf):
    hits = rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2], trace=True)
    assert keys(hits) == ["c2", "c3", "c1"]
    c2, c3, c1 = hits
    assert isinstance(c2.contributions, tuple) and len(c2.contributions) == 2
    assert_contribution(c2.contributions[0], 0, 2, 1.0, 1 / 12)
    assert_contribution(c2.contributions[1], 1, 1, 2.0, 2 / 11)
    (only,) = c3.contributions
    assert_contribution(only, 1, 2, 2.0, 2 / 12)
    (only,) = c1.contributions
    assert_contribution(only, 0, 1, 1.0, 1 / 11)


def test_weight_zero_list_is_skipped(rrf):
    assert_hits(
        rrf([["a", "b"], ["b", "c"]], k=1, weights=[1, 0]), [("a", 0.5), ("b", 0.0 + 1 / 3)]
    )


def test_all_weights_zero_gives_no_hits(rrf):
    assert rrf([["a", "b"], ["b", "c"]], k=1, weights=[0, 0]) == []
    assert rrf([["a", "b"], ["b", "c"]], k=1, weights=[0.0, -0.0]) == []


def test_agreement_beats_a_single_first_place(rrf):
    hits = rrf([["a", "b", "x"], ["c", "d", "x"]])
    assert_hits(
        hits,
        [
            ("x", 0.0 + 1 / 63 + 1 / 63),
            ("a", 0.0 + 1 / 61),
            ("c", 0.0 + 1 / 61),
            ("b", 0.0 + 1 / 62),
            ("d", 0.0 + 1 / 62),
        ],
    )


def test_single_key_default_k(rrf):
    assert_hits(rrf([["only"]]), [("only", 1 / 61)])


def test_interleaved_tie_order(rrf):
    # a, c (rank 1 of lists 0 and 1), then b, d (rank 2): first appearance in the interleaved scan.
    assert keys(rrf([["a", "b"], ["c", "d"]])) == ["a", "c", "b", "d"]
    assert keys(rrf([["c", "d"], ["a", "b"]])) == ["c", "a", "d", "b"]
    # seen higher up wins over an earlier list
    assert keys(rrf([["p", "q"], ["r"], ["s", "t"]], weights=[1, 2, 1])) == [
        "r",
        "p",
        "s",
        "q",
        "t",
    ]


def test_tie_order_is_first_appearance_even_when_a_later_list_has_it_higher(rrf):
    # a: list0 rank1 + list1 rank2; b: list0 rank2 + list1 rank1 -> same multiset, bit-equal scores
    hits = rrf([["a", "b"], ["b", "a"]])
    assert_hits(hits, [("a", 0.0 + 1 / 62 + 1 / 61), ("b", 0.0 + 1 / 62 + 1 / 61)])


# --- duplicates --------------------------------------------------------------------------------


def test_duplicates_first(rrf):
    hits = rrf([["a", "b", "a"], ["b"]], k=1, trace=True)
    assert_hits(hits, [("b", 0.0 + 1 / 3 + 1 / 2), ("a", 0.0 + 1 / 2)])
    a = hits[1]
    assert len(a.contributions) == 1
    assert_contribution(a.contributions[0], 0, 1, 1.0, 1 / 2)


def test_duplicates_first_is_the_default(rrf):
    lists = [["a", "b", "a"], ["b"]]
    assert [(h.key, bits(h.score)) for h in rrf(lists, k=1)] == [
        (h.key, bits(h.score)) for h in rrf(lists, k=1, duplicates="first")
    ]


def test_duplicates_sum(rrf):
    hits = rrf([["a", "b", "a"], ["b"]], k=1, duplicates="sum", trace=True)
    # a: 1/2 + 1/4 = 0.75, b: 1/3 + 1/2
    assert_hits(hits, [("b", 0.0 + 1 / 3 + 1 / 2), ("a", 0.0 + 1 / 4 + 1 / 2)])
    a = hits[1]
    assert len(a.contributions) == 2
    assert_contribution(a.contributions[0], 0, 1, 1.0, 1 / 2)
    assert_contribution(a.contributions[1], 0, 3, 1.0, 1 / 4)


def test_duplicates_error(rrf):
    with pytest.raises(ValueError) as info:
        rrf([["a"], ["b", "c", "b"]], duplicates="error")
    assert "lists[1]" in str(info.value)
    assert "'b'" in str(info.value)


def test_duplicates_error_without_duplicates(rrf):
    assert_hits(
        rrf([["a"], ["b", "a"]], k=0, duplicates="error"),
        [("a", 0.0 + 1 / 2 + 1 / 1), ("b", 1 / 1)],
    )


def test_duplicate_skip_does_not_shift_ranks(rrf):
    hits = rrf([["a", "a", "b"]], k=0, trace=True)
    assert_hits(hits, [("a", 1.0), ("b", 1 / 3)])
    assert_contribution(hits[1].contributions[0], 0, 3, 1.0, 1 / 3)


# --- window ------------------------------------------------------------------------------------


def test_window(rrf):
    lists = [["a", "b", "c"], ["c", "d"]]
    assert_hits(rrf(lists, window=1), [("a", 1 / 61), ("c", 1 / 61)])
    assert_hits(rrf(lists, window=2), [("a", 1 / 61), ("c", 1 / 61), ("b", 1 / 62), ("d", 1 / 62)])
    expected_full = [("c", 0.0 + 1 / 63 + 1 / 61), ("a", 1 / 61), ("b", 1 / 62), ("d", 1 / 62)]
    assert_hits(rrf(lists, window=3), expected_full)
    assert_hits(rrf(lists, window=10**30), expected_full)
    assert_hits(rrf(lists), expected_full)


def test_items_beyond_window_are_never_hashed(rrf):
    class Unhashable:
        __hash__ = None

    assert_hits(rrf([["a", ["not", "hashable"], Unhashable()]], window=1), [("a", 1 / 61)])
    # ...nor checked for duplicates
    assert_hits(rrf([["a", "a"]], window=1, duplicates="error"), [("a", 1 / 61)])


def test_weight_zero_list_is_never_hashed(rrf):
    assert_hits(
        rrf([["a"], [["unhashable"], "b", "b"]], weights=[1, 0], duplicates="error"),
        [("a", 1 / 61)],
    )


# --- paging and min_score ----------------------------------------------------------------------


PAGING_LISTS = [["a", "b", "x"], ["c", "d", "x"]]  # order: x, a, c, b, d


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, ["x", "a", "c", "b", "d"]),
        ({"offset": 1, "limit": 2}, ["a", "c"]),
        ({"offset": 3}, ["b", "d"]),
        ({"offset": 4, "limit": 10}, ["d"]),
        ({"offset": 5}, []),
        ({"offset": 10**30}, []),
        ({"limit": 0}, []),
        ({"limit": 1}, ["x"]),
        ({"limit": 10**30}, ["x", "a", "c", "b", "d"]),
        ({"min_score": 1 / 61}, ["x", "a", "c"]),  # inclusive
        ({"min_score": 0.0 + 1 / 63 + 1 / 63}, ["x"]),
        ({"min_score": 1.0}, []),
        ({"min_score": -1.0}, ["x", "a", "c", "b", "d"]),
        ({"min_score": 1 / 61, "offset": 1, "limit": 1}, ["a"]),
        ({"min_score": 1 / 62, "offset": 2}, ["c", "b", "d"]),
    ],
)
def test_paging(rrf, kwargs, expected):
    assert keys(rrf(PAGING_LISTS, **kwargs)) == expected


def test_pages_are_stable(rrf):
    everything = rrf(PAGING_LISTS)
    pages = [rrf(PAGING_LISTS, offset=o, limit=2) for o in range(0, 6, 2)]
    assert [h.key for page in pages for h in page] == keys(everything)


def test_min_score_compares_the_normalized_score(rrf):
    # normalized: x -> 1/63 + 1/63 over 1/61 + 1/61 (about 0.97), a and c -> 0.5
    hits = rrf(PAGING_LISTS, normalize=True, min_score=0.5)
    assert keys(hits) == ["x", "a", "c"]


# --- normalize ---------------------------------------------------------------------------------


def test_normalize(rrf):
    hits = rrf([["a", "b"], ["b", "c"]], k=1, weights=[1, 2], normalize=True)
    best = 0.0 + 1 / 2 + 2 / 2
    assert_hits(
        hits,
        [
            ("b", (0.0 + 1 / 3 + 2 / 2) / best),
            ("c", (0.0 + 2 / 3) / best),
            ("a", (0.0 + 1 / 2) / best),
        ],
    )
    assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_normalize_top_everywhere_is_one(rrf):
    assert_hits(
        rrf([["a", "b"], ["a"], ["a"]], normalize=True),
        [("a", 1.0), ("b", (1 / 62) / (0.0 + 1 / 61 + 1 / 61 + 1 / 61))],
    )


def test_normalize_keeps_order_and_trace_is_raw(rrf):
    lists = [["a", "b", "x"], ["c", "d", "x"]]
    plain = rrf(lists)
    normed = rrf(lists, normalize=True, trace=True)
    assert keys(plain) == keys(normed)
    best = 0.0 + 1 / 61 + 1 / 61
    assert_hits(normed, [(h.key, h.score / best) for h in plain])
    x = normed[0]
    assert_contribution(x.contributions[0], 0, 3, 1.0, 1 / 63)
    assert_contribution(x.contributions[1], 1, 3, 1.0, 1 / 63)


def test_normalize_ignores_negative_and_zero_weights_in_the_maximum(rrf):
    hits = rrf([["a"], ["b"], ["c"]], k=1, weights=[2, -1, 0], normalize=True)
    best = 0.0 + 2 / 2
    assert_hits(hits, [("a", (2 / 2) / best), ("b", (-1 / 2) / best)])


def test_normalize_needs_a_positive_weight_even_on_empty_input(rrf):
    # The check is about the arguments: it does not depend on whether the lists hold items.
    assert rrf([[], []], weights=[0, 1], normalize=True) == []
    for lists, weights in (([], None), ([[], []], [0, -1]), ([["a"]], [0])):
        with pytest.raises(ValueError, match="^normalize=True needs at least one list"):
            rrf(lists, weights=weights, normalize=True)


def test_normalize_signed_zero_ties(rrf):
    # Sums: p 1e300/1, x 5e-324/1, z 5e-324/2 -> 0.0 (ties to even), n -5e-324/1.
    # Normalised by 1e300 + 5e-324 == 1e300: x -> 0.0, z -> 0.0, n -> -0.0.
    # Hits are ordered by the sums, so normalising never reorders: p, x, z, n.
    hits = rrf([["n"], ["p"], ["x", "z"]], k=0, weights=[-5e-324, 1e300, 5e-324], normalize=True)
    assert_hits(hits, [("p", 1.0), ("x", 0.0), ("z", 0.0), ("n", -0.0)])
    # min_score compares the returned score: -0.0 >= 0.0, so n stays.
    kept = rrf(
        [["n"], ["p"], ["x", "z"]],
        k=0,
        weights=[-5e-324, 1e300, 5e-324],
        normalize=True,
        min_score=0.0,
    )
    assert keys(kept) == ["p", "x", "z", "n"]


def test_normalize_never_reorders(rrf):
    # Sums: a 0.1/4 + 0.3/4 = 0.1, b 0.3/3 = 0.09999999999999999, c 0.1/3.
    # Normalised by 0.1/3 + 0.3/3: a and b both print 0.75, but a's sum is larger, so a stays
    # ahead of b although b appears first in the scan.
    lists = [["c", "a"], ["b", "a"]]
    plain = rrf(lists, k=2, weights=[0.1, 0.3])
    normalized = rrf(lists, k=2, weights=[0.1, 0.3], normalize=True)
    assert keys(plain) == keys(normalized) == ["a", "b", "c"]
    top = 0.0 + 0.1 / 3 + 0.3 / 3
    assert_hits(
        normalized,
        [("a", (0.0 + 0.1 / 4 + 0.3 / 4) / top), ("b", (0.3 / 3) / top), ("c", (0.1 / 3) / top)],
    )
    assert normalized[0].score == normalized[1].score


# --- tie_break="key" ---------------------------------------------------------------------------


def test_tie_break_key(rrf):
    lists = [["d", "b"], ["c", "a"]]
    assert keys(rrf(lists)) == ["d", "c", "b", "a"]
    assert keys(rrf(lists, tie_break="key")) == ["c", "d", "a", "b"]
    assert keys(rrf(lists, tie_break="best_rank")) == ["d", "c", "b", "a"]


def test_tie_break_key_only_reorders_ties(rrf):
    lists = [["z", "b"], ["a"]]  # z and a tie at 1/61, b at 1/62
    assert keys(rrf(lists, tie_break="key")) == ["a", "z", "b"]
    assert keys(rrf([[3, 2, 1]], tie_break="key")) == [3, 2, 1]


def test_tie_break_key_big_ints(rrf):
    big = [2**64, -(2**70), 2**63, 5]
    assert keys(rrf([[x] for x in big], tie_break="key")) == [-(2**70), 5, 2**63, 2**64]


# --- keys --------------------------------------------------------------------------------------


def test_equal_keys_across_types_are_one_key(rrf):
    hits = rrf([[1.0, "x"], ["y", True], [1]], trace=True)
    assert_hits(hits, [(1.0, 0.0 + 1 / 62 + 1 / 61 + 1 / 61), ("y", 1 / 61), ("x", 1 / 62)])
    assert [(c.list_index, c.rank) for c in hits[0].contributions] == [(0, 1), (1, 2), (2, 1)]


def test_first_key_object_is_returned(rrf):
    assert_hits(rrf([[True], [1.0], [1]]), [(True, 0.0 + 1 / 61 + 1 / 61 + 1 / 61)])
    assert_hits(rrf([[1], [True, 1.0]], duplicates="sum"), [(1, 0.0 + 1 / 62 + 1 / 61 + 1 / 61)])
    # within the interleaved scan, rank 1 of a later list comes before rank 2 of list 0
    assert_hits(rrf([["a", 1.0], [1]], k=0), [(1, 0.0 + 1 / 2 + 1 / 1), ("a", 1.0)])
    t = ("t",)
    t2 = ("t",)
    (hit,) = rrf([[t], [t2]])
    assert hit.key is t


def test_big_int_keys(rrf):
    big = 2**64 + 1
    hits = rrf([[big, 2**64], [2**64 + 1, float(2**64)]], k=0)
    assert_hits(hits, [(big, 0.0 + 1 / 1 + 1 / 1), (2**64, 0.0 + 1 / 2 + 1 / 2)])


def test_non_ascii_and_surrogate_text_keys(rrf):
    lists = [["é", "中文", "\U0001f600"], ["\ud800", "é"]]
    hits = rrf(lists, k=0)
    assert_hits(
        hits,
        [("é", 0.0 + 1 / 2 + 1 / 1), ("\ud800", 1 / 1), ("中文", 1 / 2), ("\U0001f600", 1 / 3)],
    )


def test_str_subclass_with_its_own_eq_and_hash(rrf):
    first = Folded("HELLO")
    hits = rrf([[first, "x"], ["hello", Folded("Hello")]], k=0, duplicates="sum")
    assert_hits(hits, [(first, 0.0 + 1 / 2 + 1 / 1 + 1 / 1), ("x", 1 / 2)])
    assert hits[0].key is first
    # the plain str met first is returned as it is
    hits = rrf([["hello"], [first]], k=0)
    assert_hits(hits, [("hello", 0.0 + 1 / 1 + 1 / 1)])
    # dict semantics: Folded("A") == "A", but their hashes differ, so they are two keys
    hits = rrf([[Folded("A")], ["A"]], k=0)
    assert [(type(h.key), str.__str__(h.key)) for h in hits] == [(Folded, "A"), (str, "A")]


def test_object_equal_to_an_int_is_the_same_key(rrf):
    class Seven:
        def __hash__(self):
            return hash(7)

        def __eq__(self, other):
            return other == 7 or isinstance(other, Seven)

    s = Seven()
    hits = rrf([[s], [7]], k=0)
    assert len(hits) == 1 and hits[0].key is s
    assert hits[0].score == 0.0 + 1 / 1 + 1 / 1
    hits = rrf([[7], [s]], k=0)
    assert_hits(hits, [(7, 0.0 + 1 / 1 + 1 / 1)])


def test_nan_keys_are_dict_keys(rrf):
    nan = float("nan")
    other_nan = float("nan")
    hits = rrf([[nan, other_nan], [nan]], k=0)
    assert len(hits) == 2
    assert hits[0].key is nan and hits[0].score == 0.0 + 1 / 1 + 1 / 1
    assert hits[1].key is other_nan and hits[1].score == 1 / 2


# --- scores= and the result types --------------------------------------------------------------


def test_scores_are_carried_into_contributions(rrf):
    hits = rrf([["a", "b"], ["b"]], scores=[[12.3, 4], None], trace=True)
    assert keys(hits) == ["b", "a"]
    b, a = hits
    assert_contribution(b.contributions[0], 0, 2, 1.0, 1 / 62, 4.0)
    assert_contribution(b.contributions[1], 1, 1, 1.0, 1 / 61)
    assert_contribution(a.contributions[0], 0, 1, 1.0, 1 / 61, 12.3)


def test_scores_never_change_the_fusion(rrf):
    lists = [["a", "b"], ["b", "c"]]
    plain = rrf(lists)
    with_scores = rrf(lists, scores=[[1000.0, -5.0], [1e308, -1e308]])
    assert [(h.key, bits(h.score)) for h in plain] == [(h.key, bits(h.score)) for h in with_scores]
    assert all(h.contributions is None for h in with_scores)


def test_to_dict(rrf):
    hits = rrf([["a", "b"], ["b"]], scores=[[12.3, 4.5], None], trace=True)
    d = hits[0].to_dict()
    assert type(d) is dict
    assert d == {
        "key": "b",
        "score": 0.0 + 1 / 62 + 1 / 61,
        "contributions": [
            {"list_index": 0, "rank": 2, "weight": 1.0, "contribution": 1 / 62, "score": 4.5},
            {"list_index": 1, "rank": 1, "weight": 1.0, "contribution": 1 / 61},
        ],
    }
    assert list(d) == ["key", "score", "contributions"]
    assert type(d["contributions"]) is list
    assert all(type(c) is dict for c in d["contributions"])
    assert list(d["contributions"][0]) == ["list_index", "rank", "weight", "contribution", "score"]
    assert json.loads(json.dumps(d)) == d
    c = hits[0].contributions[1].to_dict()
    assert type(c) is dict and c == {
        "list_index": 1,
        "rank": 1,
        "weight": 1.0,
        "contribution": 1 / 61,
    }


def test_to_dict_without_trace(rrf):
    (hit,) = rrf([["a"]], k=0, weights=[2])
    d = hit.to_dict()
    assert type(d) is dict and d == {"key": "a", "score": 2.0}
    assert list(d) == ["key", "score"]


def test_hit_unpacks_as_key_score(rrf):
    hits = rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2])
    key, score = hits[0]
    assert key == "c2" and bits(score) == bits(0.0 + 1 / 12 + 2 / 11)
    assert len(hits[0]) == 2
    assert hits[0][0] == "c2" and hits[0][1] == score
    assert hits[0][-1] == score
    assert list(hits[0]) == ["c2", score]
    assert dict(hits) == {"c2": score, "c3": 0.0 + 2 / 12, "c1": 0.0 + 1 / 11}
    assert [k for k, _ in hits] == ["c2", "c3", "c1"]


def test_hits_are_immutable(rrf):
    (hit,) = rrf([["a"]], trace=True)
    for name, value in [("key", "b"), ("score", 1.0), ("contributions", None)]:
        with pytest.raises(AttributeError):
            setattr(hit, name, value)
    contribution = hit.contributions[0]
    for name in ("list_index", "rank", "weight", "contribution", "score"):
        with pytest.raises(AttributeError):
            setattr(contribution, name, 0)
    assert hit.key == "a" and hit.score == 1 / 61


def test_repr_is_useful(rrf):
    (hit,) = rrf([["c2"]], k=0, weights=[0.5], trace=True)
    text = repr(hit)
    assert "'c2'" in text and "0.5" in text
    assert "0.5" in repr(hit.contributions[0])
    (hit,) = rrf([[12345]], k=10)
    assert "12345" in repr(hit) and repr(1 / 11) in repr(hit)


# --- k and weights -----------------------------------------------------------------------------


def test_k_zero(rrf):
    assert_hits(rrf([["a", "b"], ["b"]], k=0), [("b", 0.0 + 1 / 2 + 1 / 1), ("a", 1 / 1)])
    assert_hits(rrf([["a", "b"], ["b"]], k=0.0), [("b", 0.0 + 1 / 2 + 1 / 1), ("a", 1 / 1)])


def test_non_integer_k(rrf):
    assert_hits(rrf([["a", "b"]], k=0.5), [("a", 1 / 1.5), ("b", 1 / 2.5)])
    assert_hits(
        rrf([["a", "b"], ["b"]], k=0.5, weights=[1, 3]),
        [("b", 0.0 + 1 / 2.5 + 3 / 1.5), ("a", 1 / 1.5)],
    )


def test_negative_weights_demote(rrf):
    hits = rrf([["a", "b"], ["a"]], weights=[1, -1])
    # a: -1/61 + 1/61 = 0.0 exactly; b: 1/62
    assert_hits(hits, [("b", 1 / 62), ("a", 0.0 + -1 / 61 + 1 / 61)])
    assert_hits(rrf([["a"], ["b"]], weights=[1, -1]), [("a", 1 / 61), ("b", -1 / 61)])


def test_numeric_argument_types(rrf):
    from fractions import Fraction

    import numpy as np

    expected = [("b", 0.0 + 1 / 2.5 + 3 / 1.5), ("a", 1 / 1.5)]
    lists = [["a", "b"], ["b"]]
    assert_hits(rrf(lists, k=Fraction(1, 2), weights=(1, Fraction(3))), expected)
    assert_hits(rrf(lists, k=np.float64(0.5), weights=np.array([1.0, 3.0])), expected)
    assert_hits(rrf(lists, k=0.5, weights=[np.int64(1), np.float32(3.0)]), expected)
    assert_hits(
        rrf(
            lists, k=0.5, weights=[1, 3], window=np.int64(2), offset=np.int64(0), limit=np.int64(5)
        ),
        expected,
    )


# --- inputs ------------------------------------------------------------------------------------


def test_empty_inputs(rrf):
    assert rrf([]) == []
    assert rrf([[]]) == []
    assert rrf([[], [], []], weights=[1, 0, -1], trace=True) == []
    assert rrf(lists=[]) == []


def test_any_iterables(rrf):
    hits = rrf(iter([("a", "b"), iter(["b"]), (x for x in ["c"])]), k=1)
    assert_hits(hits, [("b", 0.0 + 1 / 3 + 1 / 2), ("a", 1 / 2), ("c", 1 / 2)])


def test_numpy_int_keys(rrf):
    import numpy as np

    hits = rrf([np.array([1, 3], dtype=np.int64), [3, 1]], k=0)
    # 1: np.int64 met first (rank 1 of list 0); 3: the int at rank 1 of list 1 comes before rank 2
    # of list 0. Both score 1/2 + 1/1 and keep first-appearance order.
    assert [type(h.key) for h in hits] == [np.int64, int]
    assert [h.key for h in hits] == [1, 3]
    assert [h.score for h in hits] == [0.0 + 1 / 2 + 1 / 1] * 2


def test_deterministic(rrf):
    lists = [["a", "b", "c", "d"], ["d", "c", "b", "a"], ["b", "d"]]
    first = [(h.key, bits(h.score)) for h in rrf(lists)]
    for _ in range(5):
        assert [(h.key, bits(h.score)) for h in rrf(lists)] == first


def test_list_order_does_not_change_scores(rrf):
    lists = [["a", "b", "c"], ["c", "a"], ["b"]]
    weights = [0.3, 0.7, 1.1]
    base = {h.key: bits(h.score) for h in rrf(lists, weights=weights, k=1)}
    for perm in ([2, 1, 0], [1, 2, 0], [0, 2, 1]):
        hits = rrf([lists[i] for i in perm], weights=[weights[i] for i in perm], k=1)
        assert {h.key: bits(h.score) for h in hits} == base


def test_keyword_only_arguments(rrf):
    with pytest.raises(TypeError):
        rrf([["a"]], 60)


def test_score_sum_is_ascending_from_zero(rrf):
    # 1e16, 1, 1 in ascending order: ((0 + 1) + 1) + 1e16 = 1e16 + 2; in list order it would be 1e16.
    hits = rrf([["a"], ["a"], ["a"]], k=0, weights=[1e16, 1, 1])
    assert_hits(hits, [("a", 0.0 + 1.0 + 1.0 + 1e16)])
    assert hits[0].score == 1e16 + 2
