"""Scores that overflow inside a method's own arithmetic (a factor, an exponential), and a sum that
overflows but is not the score: the core and the reference agree, as docs/semantics.md states it.
A score that is not finite is a ValueError naming the key, whatever the method."""

from __future__ import annotations

import sys

import pytest

MAX = sys.float_info.max


@pytest.fixture(params=["core", "reference"])
def fuse(request, reference):
    if request.param == "reference":
        return reference.fuse
    from rankfusion import _core

    return _core.fuse


def test_gmnz_factor_that_overflows(fuse):
    # 2.0 ** 2000 overflows: Python's ** raises OverflowError where float64 arithmetic gives inf.
    with pytest.raises(ValueError, match=r"^the fused score of key 'a' is not finite \(inf\)$"):
        fuse([["a"], ["a"]], method="gmnz", gamma=2000.0, scores=[[1.0], [1.0]])
    # 0.0 * inf
    with pytest.raises(ValueError, match=r"^the fused score of key 'a' is not finite \(nan\)$"):
        fuse([["a"], ["a"]], method="gmnz", gamma=2000.0, norm="none", scores=[[0.0], [0.0]])


def test_geometric_mean_that_overflows(fuse):
    # The weighted mean of log(MAX) rounds one ulp above it: math.exp raises OverflowError where
    # float64 arithmetic gives inf.
    with pytest.raises(ValueError, match=r"^the fused score of key 'a' is not finite \(inf\)$"):
        fuse(
            [["a"], ["a"]],
            method="geometric_mean",
            norm="none",
            weights=[0.1, 0.6],
            scores=[[MAX], [MAX]],
        )


def test_condorcet_scores_wins_whatever_the_weights(fuse):
    # The weights of the lists holding "a" add up to inf, but a Condorcet score is one plus the
    # number of keys beaten: "a" beats "b" (inf > 0.0), "b" beats nothing.
    hits = fuse([["a", "b"], ["a"]], method="condorcet", weights=[1.7e308, 1.7e308])
    assert [(h.key, h.score) for h in hits] == [("a", 2.0), ("b", 1.0)]
