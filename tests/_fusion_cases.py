"""What the fusion-method differential tests share: the argument values they draw and the draw of
a method and its norm."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from rankfusion import reference as ref

METHODS = tuple(ref.METHODS)
NORMS = ref.NORMS
MEANS = ("arithmetic_mean", "geometric_mean", "harmonic_mean")

# --- argument values ------------------------------------------------------------------------------

SCORE_SHAPES = {
    # few distinct values: ties, all-equal lists, zeros, negatives
    "ties": st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5, 0.0, -0.0, 3.0]),
    "floats": st.floats(-1e3, 1e3, allow_nan=False),
    "ints": st.integers(-5, 5),
    # sums, squares and spans that overflow; subnormals; signed zeros
    "huge": st.sampled_from(
        [1e308, -1e308, 1.7e308, -1.7e308, 5e-324, -5e-324, 1e-300, 1e300, 0.0, -0.0, 1.0]
    ),
    "types": st.sampled_from([np.float32(0.5), Fraction(1, 3), np.int64(3), 2**70, np.float64(2)]),
}
BAD_SCORES = [float("nan"), float("inf"), -float("inf"), "1", True, None, 10**400, 1j]
WEIGHTS = [
    1, 1.0, 2, 0.5, 0, 0.0, -0.0, -1, -2.5, 1 / 3, 5e-324, 1e-300, 1e300, 1e308, -1e308,
    Fraction(1, 3), np.float64(0.7), np.float32(0.1), np.int64(2), 10**20,
]  # fmt: skip
BAD_WEIGHTS = [float("nan"), float("inf"), "1", True, None, 10**400]
K_VALUES = [60, 0, 1, 0.5, 1e-300, 2**70, Fraction(1, 3), np.float64(2.5), np.int64(3)]
PHIS = [0.5, 0.0, 0.8, 0.99, 1e-300, Fraction(1, 2), np.float64(0.3), 0.9999999999999999]
BAD_PHIS = [1, 1.0, -0.1, 1.5, float("nan"), float("inf"), "0.5", True]
GAMMAS = [2, 0.5, 1.0, 0.0, -1.0, 3, Fraction(3, 2), np.float64(1.5)]
BIG_GAMMAS = [1100.0, 2000, -1100.0]  # p ** gamma overflows (or underflows)
BAD_GAMMAS = [float("nan"), float("inf"), "2", True]
SIGMAS = [0.01, 0, 0.0, 0.5, 1, 1.0, 1e-300, Fraction(1, 4)]
BAD_SIGMAS = [-0.01, 1.5, -1e-300, float("nan"), "0.1", True]
BOOST_VALUES = [0.0, 1.0, 5.0, -2.0, 2.5, 1e308, -1e308, 5e-324, np.float64(3), 7, Fraction(1, 3)]
BOOST_WEIGHTS = [0.5, 0.0, -1.0, 2, 1e308, 5e-324, np.float64(0.25)]
BAD_REALS = [float("nan"), float("inf"), "1", True, None]

# argument name -> bad values (types and ranges), for the "one more bad argument" draw
BAD_ARGUMENTS = {
    "method": ["RRF", "borda", "", 1, None, b"rrf"],
    "norm": ["minmax", "None", "", 1, b"max"],
    "window": [0, -1, 1.5, True, "2"],
    "duplicates": ["last", 1, None],
    "tie_break": ["score", None, 0],
    "offset": [-1, 1.5, None, True],
    "limit": [-1, "3", 2.0, False],
    "min_score": [float("nan"), float("inf"), "x", True, 10**400],
    "normalize": ["yes", 1, None],
    "trace": [1, None, "no"],
    "lower_is_better": [5, "ab", [1], [None], [0.0]],
    "boost": [[("a", 1.0)], 5, "ab"],
    "boost_weight": BAD_REALS,
}


# Strategies are built once per size: building one per draw costs more than the draw itself.
_BELOW: dict = {}


def below(draw, n: int) -> int:
    """An int in [0, n); shrinks to 0."""
    strategy = _BELOW.get(n)
    if strategy is None:
        strategy = _BELOW[n] = st.integers(0, n - 1)
    return draw(strategy)


def sometimes(draw, one_in: int) -> bool:
    """True about one time in ``one_in``; shrinks to False."""
    return below(draw, one_in) == one_in - 1


def pick(draw, values):
    """One of ``values`` (shrinks to the first)."""
    return values[below(draw, len(values))]


def picks(draw, values, n: int) -> list:
    """``n`` of ``values``, with repeats."""
    return [pick(draw, values) for _ in range(n)]


def effective_norm(method: str, norm) -> str:
    m = ref.METHODS[method]
    if m.kind == "rank":
        return "none"
    return m.norm or norm or "none"


def reads_scores(method: str, norm) -> bool:
    return ref.METHODS[method].kind == "score" and effective_norm(method, norm) not in (
        "rank",
        "borda",
    )


# Every (method, norm) pair; norm None is "not given". A pair is valid when the method takes a
# norm (score-based, without a norm of its own) or the norm is not given.
COMBINATIONS = [(m, n) for m in METHODS for n in (None,) + NORMS]
VALID = [
    (m, n)
    for m, n in COMBINATIONS
    if n is None or (ref.METHODS[m].kind == "score" and ref.METHODS[m].norm is None)
]
# With mistakes: every valid pair twice, every invalid pair (an error) once.
WEIGHTED = VALID + COMBINATIONS


def examples_for(method: str, norm, max_examples: int) -> int:
    """The main properties run once per (method, norm) pair, so that each pair gets its share of
    the examples (Hypothesis does not draw uniformly from hundreds of choices). Every method gets
    an equal share of ``max_examples``; a method's invalid pairs (an error at once) get a fifth
    of it between them, its valid pairs the rest. Rounded up: the shares add up to at least
    ``max_examples``."""
    pairs = [n for m, n in COMBINATIONS if m == method]
    valid = [n for m, n in VALID if m == method]
    share = max_examples / len(METHODS)
    if len(valid) < len(pairs):
        if (method, norm) in VALID:
            share = share * 4 / 5 / len(valid)
        else:
            share = share / 5 / (len(pairs) - len(valid))
    else:
        share = share / len(valid)
    return max(1, math.ceil(share))


def combination_id(value) -> str:
    """pytest ids of (method, norm) pairs: "wsum-min-max", "rrf-None"."""
    return str(value)


@st.composite
def method_and_norm(draw, mistakes=True):
    """A (method, norm) pair, each as often as the others: the valid ones, and with ``mistakes``
    the invalid ones too (a norm for a rank-based method, or for dbsf and relative_score, which
    have their own), half as often."""
    return pick(draw, WEIGHTED if mistakes else VALID)
