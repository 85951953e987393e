"""The result types: tuples with names, checked constructors, pickling, repr, garbage collection.

The core's types (``rankfusion._core``) and the reference's must behave alike; the core's are
C-level tuple subclasses with a free list, so their memory handling is tested here too.
"""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import weakref

import numpy as np
import pytest

import rankfusion as rf
from rankfusion import reference as ref


def test_hit_is_the_tuple_key_score_with_contributions_beside():
    (hit,) = rf.rrf([["a"]], trace=True)
    assert isinstance(hit, tuple) and tuple(hit) == ("a", 1 / 61) and len(hit) == 2
    assert hit == ("a", 1 / 61) and hash(hit) == hash(("a", 1 / 61))
    (c,) = hit.contributions
    assert isinstance(c, rf.Contribution) and tuple(c) == (0, 1, 1.0, 1 / 61, None)
    assert hit.to_dict() == {
        "key": "a",
        "score": 1 / 61,
        "contributions": [{"list_index": 0, "rank": 1, "weight": 1.0, "contribution": 1 / 61}],
    }
    assert repr(hit).startswith("Hit(key='a', score=0.01639344262295082, contributions=(")
    (plain,) = rf.rrf([["a"]])
    assert repr(plain) == "Hit(key='a', score=0.01639344262295082)" and plain.contributions is None


@pytest.mark.parametrize("impl", [rf, ref], ids=["core", "reference"])
def test_constructors_make_what_the_functions_return(impl):
    c = impl.Contribution(0, 2, 0.5, 0.25, score=3.0)
    h = impl.Hit("k", 0.25, (c,))
    assert (h.key, h.score, h.contributions) == ("k", 0.25, (c,))
    assert c.to_dict() == {
        "list_index": 0,
        "rank": 2,
        "weight": 0.5,
        "contribution": 0.25,
        "score": 3.0,
    }
    r = impl.Revalidated(7, {"t": 1}, 0.5)
    assert (r.id, r.record, r.score) == (7, {"t": 1}, 0.5) and r.to_dict()["record"] == {"t": 1}
    for x in (c, h, r, impl.Hit("k", 1.0)):
        again = pickle.loads(pickle.dumps(x))
        assert again == x and type(again) is type(x)
        assert copy.copy(x) == x
    assert pickle.loads(pickle.dumps(h)).contributions == (c,)


@pytest.mark.parametrize(
    "make, error, words",
    [
        (
            lambda: rf.Hit("a", 1.0, (1, 2)),
            TypeError,
            "Hit.contributions[0] must be a Contribution",
        ),
        (lambda: rf.Hit("a", "x"), TypeError, "Hit.score must be a real number"),
        (lambda: rf.Hit(["unhashable"], 1.0), TypeError, "Hit.key must be hashable"),
        (lambda: rf.Hit("a"), TypeError, "missing required argument 'score'"),
        (lambda: rf.Hit("a", 1.0, None, 1.0, 1.0, 0.0, 4), TypeError, "at most 6 arguments"),
        (lambda: rf.Hit("a", 1.0, key="b"), TypeError, "multiple values for argument 'key'"),
        (lambda: rf.Hit("a", 1.0, colour=1), TypeError, "unexpected keyword argument 'colour'"),
        (
            lambda: rf.Contribution(-1, 1, 1.0, 1.0),
            ValueError,
            "Contribution.list_index must be >= 0",
        ),
        (lambda: rf.Contribution(0, -1, 1.0, 1.0), ValueError, "Contribution.rank must be >= 0"),
        (lambda: rf.Contribution(0, 1, True, 1.0), TypeError, "Contribution.weight must be a real"),
        (lambda: rf.BatchResult("a", "b", "c"), TypeError, "BatchResult.ids must be a 2-D int64"),
        (
            lambda: rf.RevalidatedBatch(1, 2, 3),
            TypeError,
            "RevalidatedBatch.ids must be a 2-D int64",
        ),
        (
            lambda: rf.BatchResult(
                np.zeros((2, 3), np.int64), np.zeros((2, 3)), np.zeros(3, np.int64)
            ),
            ValueError,
            "must have shapes (Q, W), (Q, W) and (Q,)",
        ),
    ],
)
def test_constructors_check_their_fields(make, error, words):
    with pytest.raises(error) as e:
        make()
    assert words in str(e.value)


def test_batch_results_pickle_with_their_arrays():
    r = rf.rrf_batch([np.array([[1, 2], [3, -1]])], trace=True)
    again = pickle.loads(pickle.dumps(r))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(again, r))
    assert np.array_equal(again.ranks, r.ranks) and np.array_equal(
        again.contributions, r.contributions
    )
    made = rf.BatchResult(r.ids, r.scores, r.counts)
    assert made.ranks is None and made.ids is r.ids


def test_fields_are_read_only():
    (hit,) = rf.rrf([["a"]], trace=True)
    for name in ("key", "score", "contributions", "anything"):
        with pytest.raises(AttributeError):
            setattr(hit, name, None)


def test_records_free_their_fields_and_are_reused_safely():
    class Key(str):
        pass

    key = Key("k")
    hits = rf.rrf([[key]], trace=True)
    assert sys.getrefcount(key) > 2
    contributions = hits[0].contributions
    held = sys.getrefcount(contributions)
    del hits
    gc.collect()
    assert sys.getrefcount(contributions) == held - 1  # the hidden field was released too
    assert sys.getrefcount(key) == 2
    # Many made and freed, then made again (from the free list): every field is right.
    for _round in range(3):
        batch = [rf.rrf([[f"d{i}", f"e{i}"]], trace=True, k=i) for i in range(3000)]
        for i, (hit_d, hit_e) in enumerate(batch):
            assert hit_d.key == f"d{i}" and hit_e.key == f"e{i}"
            assert hit_d.score == 1 / (i + 1) and hit_d.contributions[0].rank == 1
        del batch


def test_records_take_part_in_cycles():
    # A key that refers to the hit that holds it: a cycle the collector must see through.
    class Node:
        pass

    node = Node()
    (hit,) = rf.rrf([[node]])
    node.hit = hit
    probe = weakref.ref(node)
    del node, hit
    gc.collect()
    assert probe() is None
