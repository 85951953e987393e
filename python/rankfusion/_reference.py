"""The reference implementation: docs/semantics.md written as plain Python.

Read this file to learn what rankfusion computes. The Rust core (``rankfusion._core``) must return
exactly what these functions return -- the same keys, in the same order, with bit-identical float64
scores -- and raise the same exceptions; the differential tests check that with Hypothesis.

Nothing here is optimised. Every step is written the way the contract states it. Sections: result
types; errors and argument conversion; the method table; ``Fusion``, the settings of a fusion
(``fuse``, ``rrf``, the batch functions and ``rrf_many`` are calls of one); the fusion itself
(scan, normalisation, each key's score, order); candidate revalidation (``revalidate``,
``pool_size``, ``revalidate_batch``); comparing runs (``compare_per_query``: the paired tests,
their random streams, Student's t, the corrections).
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
import sys
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Sequence

from .errors import FusionError, FusionTypeError

__all__ = [
    "BatchResult",
    "Contribution",
    "Fusion",
    "FusionError",
    "FusionTypeError",
    "Hit",
    "METHODS",
    "NORMS",
    "RANK_NORMS",
    "Revalidated",
    "RevalidatedBatch",
    "canonical_sum",
    "compare_per_query",
    "ComparedPair",
    "fuse",
    "fuse_batch",
    "pool_size",
    "revalidate",
    "revalidate_batch",
    "rrf",
    "rrf_batch",
    "rrf_many",
]

DUPLICATES = ("first", "sum", "error")
TIE_BREAKS = ("best_rank", "key")

# === Result types =================================================================================
# Tuples with names: each compares, hashes and unpacks as the tuple of its first fields; any
# further field (Hit.contributions, BatchResult.ranks) is an attribute only.


class _Record(tuple):
    """A tuple with names, immutable: its further fields are set once, by ``_set``."""

    def _set(self, **fields) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")


class Contribution(_Record):
    """What one list gave a hit: the tuple ``(list_index, rank, weight, contribution, score)``.

    ``rank`` is the 1-based rank of the counted occurrence, or 0 when the key is not in that list
    and the method still gives it a value there (bordafuse, the borda norm, arithmetic_mean);
    ``contribution`` is the term the method adds (RRF: ``weight / (k + rank)``); ``score`` the
    list's raw score for the item when known; ``normalized`` (an attribute only) the value the
    normalisation gave it, for score-based methods.
    """

    def __new__(cls, list_index, rank, weight, contribution, score=None, normalized=None):
        c = super().__new__(cls, (list_index, rank, weight, contribution, score))
        c._set(normalized=normalized)
        return c

    list_index = property(operator.itemgetter(0))
    rank = property(operator.itemgetter(1))
    weight = property(operator.itemgetter(2))
    contribution = property(operator.itemgetter(3))
    score = property(operator.itemgetter(4))

    def __reduce__(self):
        return (type(self), (*self, self.normalized))

    def to_dict(self) -> dict:
        d = {"list_index": self.list_index, "rank": self.rank, "weight": self.weight}
        d["contribution"] = self.contribution
        if self.score is not None:
            d["score"] = self.score
        if self.normalized is not None:
            d["normalized"] = self.normalized
        return d


class Hit(_Record):
    """A fused hit: the tuple ``(key, score)``. With ``trace=True``, its ``contributions`` and what
    its method did with them: ``factor`` (what their sum was multiplied by: CombMNZ's number of
    lists, ...), ``divisor`` (what it was divided by: CombANZ's number of lists, a mean's
    weights, ...) and ``boost`` (what the boost added); each None where it does not apply."""

    def __new__(cls, key, score, contributions=None, factor=None, divisor=None, boost=None) -> Hit:
        hit = super().__new__(cls, (key, score))
        hit._set(contributions=contributions, factor=factor, divisor=divisor, boost=boost)
        return hit

    key = property(operator.itemgetter(0))
    score = property(operator.itemgetter(1))

    def __reduce__(self):
        details = (self.contributions, self.factor, self.divisor, self.boost)
        return (type(self), (self.key, self.score, *details))

    def __repr__(self) -> str:
        traced = "" if self.contributions is None else f", contributions={self.contributions!r}"
        return f"Hit(key={self.key!r}, score={self.score!r}{traced})"

    def to_dict(self) -> dict:
        d = {"key": self.key, "score": self.score}
        if self.contributions is not None:
            d["contributions"] = [c.to_dict() for c in self.contributions]
        for name in ("factor", "divisor", "boost"):
            if getattr(self, name) is not None:
                d[name] = getattr(self, name)
        return d


class BatchResult(_Record):
    """The result of ``rrf_batch``: the tuple ``(ids, scores, counts)``.

    ``ids`` (Q, W) int64 padded with the pad value, ``scores`` (Q, W) float64 padded with NaN,
    ``counts`` (Q,) int64 real hits per row. With ``trace=True``: ``ranks`` (Q, W, L) int32, the
    best (first counted) rank of the hit in list l, 0 where absent, and ``contributions``
    (Q, W, L) float64, the canonical sum of the hit's contributions from list l (its one
    contribution unless duplicates="sum"), 0.0 where absent; both None otherwise.
    """

    def __new__(
        cls, ids, scores, counts, ranks=None, contributions=None, normalized=None
    ) -> BatchResult:
        result = super().__new__(cls, (ids, scores, counts))
        # normalized: (Q, W, L), with fuse_batch's traces
        result._set(ranks=ranks, contributions=contributions, normalized=normalized)
        return result

    ids = property(operator.itemgetter(0))
    scores = property(operator.itemgetter(1))
    counts = property(operator.itemgetter(2))


class Revalidated(NamedTuple):
    """A live candidate: the tuple ``(id, record, score)``."""

    id: Any
    record: Any
    score: float

    def to_dict(self) -> dict:
        return self._asdict()


class RevalidatedBatch(NamedTuple):
    """The live candidates of a batch: ``ids`` (Q, W) int64 padded with the pad value,
    ``scores`` (Q, W) float64 padded with NaN, ``counts`` (Q,) int64 kept per row."""

    ids: Any
    scores: Any
    counts: Any


# === Errors and argument conversion ===============================================================
# Every bad input is a FusionTypeError (a TypeError) or FusionError (a ValueError) naming it; its
# fields say where: ``scores[1][3]`` is the argument "scores", list 1, rank 4 (rankfusion.errors).


def _fields(name: str) -> dict:
    """The fields of an argument named ``name``: ``weights[2]`` -> argument "weights", list 2;
    ``scores[1][3]`` -> argument "scores", list 1, rank 4."""
    argument, _, rest = name.partition("[")
    indices = (
        [int(i) if i.isdigit() else None for i in rest.rstrip("]").split("][")] if rest else []
    )
    fields: dict = {"argument": argument}
    if indices and indices[0] is not None:
        fields["list"] = indices[0]
    if len(indices) > 1 and indices[1] is not None:
        fields["rank"] = indices[1] + 1
    return fields


def _bad_type(name: str, message: str) -> FusionTypeError:
    return FusionTypeError(message, **_fields(name))


def _bad_value(name: str, message: str) -> FusionError:
    return FusionError(message, **_fields(name))


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _as_list(value: Any, name: str) -> list:
    """Any iterable but str/bytes/bytearray, materialised into a list (the input is not modified)."""
    if isinstance(value, (str, bytes, bytearray)):
        raise _bad_type(name, f"{name} must be a non-string iterable, got {_describe(value)}")
    try:
        iterator = iter(value)
    except TypeError:
        raise _bad_type(name, f"{name} must be iterable, got {_describe(value)}") from None
    return list(iterator)


def _real(value: Any, name: str, *, finite: bool = True) -> float:
    """A real number (int, float, numpy scalar, Fraction...; not bool) as a float64."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _bad_type(name, f"{name} must be a real number, got {_describe(value)}")
    try:
        x = float(value)
    except OverflowError:
        raise _bad_value(name, f"{name} must be finite, got {value!r}") from None
    if finite and not math.isfinite(x):
        raise _bad_value(name, f"{name} must be finite, got {x!r}")
    return x


def _integer(value: Any, name: str, minimum: int) -> int:
    """An integer (anything with __index__, not bool) that is >= minimum."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise _bad_type(name, f"{name} must be an int, got {_describe(value)}")
    n = operator.index(value)
    if n < minimum:
        raise _bad_value(name, f"{name} must be >= {minimum}, got {n}")
    return n


def _count(value: Any, name: str, minimum: int) -> int:
    """An integer setting >= minimum; one beyond 2**63 - 1 is 2**64 - 1 (no bound either way:
    no list is that long)."""
    n = _integer(value, name, minimum)
    return n if n <= 2**63 - 1 else 2**64 - 1


def _choice(value: Any, name: str, choices: tuple) -> str:
    if not isinstance(value, str):
        raise _bad_type(name, f"{name} must be one of {choices}, got {_describe(value)}")
    if value not in choices:
        raise _bad_value(name, f"{name} must be one of {choices}, got {value!r}")
    return value


def _flag(value: Any, name: str) -> bool:
    """True or False: a bool, or a numpy bool (an item of a bool array)."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    raise _bad_type(name, f"{name} must be True or False, got {_describe(value)}")


def _int64(value: Any, name: str) -> int:
    """An integer (anything with __index__, not bool) that fits in int64."""
    n = _integer(value, name, -(2**63))
    if n > 2**63 - 1:
        raise _bad_value(name, f"{name} must fit in int64, got {n}")
    return n


def _pair(value: Any, name: str, must: str = "") -> list:
    """One candidate (or item of a boost): an iterable of exactly two items (str/bytes are not
    pairs). ``must`` says what it must be: "{name} must be an (id, score) pair" unless given."""
    must = must or f"{name} must be an (id, score) pair"
    if isinstance(value, (str, bytes, bytearray)):
        raise _bad_type(name, f"{must}, got {_describe(value)}")
    try:
        iterator = iter(value)
    except TypeError:
        raise _bad_type(name, f"{must}, got {_describe(value)}") from None
    pair = list(iterator)
    if len(pair) != 2:
        raise _bad_value(name, f"{must}, got {len(pair)} items")
    return pair


def _not_masked(value: Any, name: str) -> None:
    """A masked array's mask would be ignored (its hidden entries read as data): refused."""
    import numpy as np

    if isinstance(value, np.ma.MaskedArray):
        raise _bad_type(
            name,
            f"{name} is a masked array; its mask would be ignored: pass a plain array "
            "(e.g. ids.filled(pad), scores.filled(nan))",
        )


def _id_matrix(value: Any, name: str) -> Any:
    """A 2-D integer array whose dtype widens to int64 without loss, as an int64 copy.

    Not an ndarray: converted by ``numpy.asarray`` (a ragged nesting is a ValueError). Accepted
    dtypes: int8..int64 and uint8..uint32 (uint64 and bool are not: a TypeError), any layout.
    """
    import numpy as np

    _not_masked(value, name)
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except ValueError as e:
            raise _bad_value(name, f"{name} is not a 2-D integer array: {e}") from None
    dtype = value.dtype
    if dtype.kind not in "iu" or not np.can_cast(dtype, np.int64, casting="safe"):
        raise _bad_type(
            name, f"{name} must be an integer array that widens to int64, got dtype {dtype}"
        )
    if value.ndim != 2:
        raise _bad_value(
            name, f"{name} must be a 2-D array (queries, candidates), got shape {value.shape}"
        )
    return value.astype(np.int64)


def _matrix(value: Any, name: str, kinds: str, what: str):
    """A 2-D numpy array whose dtype kind is one of ``kinds`` (checked before the shape)."""
    import numpy as np

    _not_masked(value, name)
    try:
        array = np.asarray(value)
    except ValueError as e:  # a ragged nested list
        raise _bad_value(name, f"{name} must be a 2-D array: {e}") from None
    dtype = array.dtype
    if dtype.kind not in kinds:
        raise _bad_type(name, f"{name} must be {what}, got dtype {dtype}")
    if array.ndim != 2:
        raise _bad_value(
            name, f"{name} must be a 2-D array (queries, candidates), got shape {array.shape}"
        )
    return array


def _id_matrices(lists: Any, name: str) -> list:
    arrays = []
    for i, value in enumerate(_as_list(lists, name)):
        array = _id_matrix(value, f"{name}[{i}]")
        if arrays and array.shape[0] != arrays[0].shape[0]:
            raise _bad_value(
                f"{name}[{i}]",
                f"{name}[{i}] has {array.shape[0]} rows (queries), "
                f"{name}[0] has {arrays[0].shape[0]}",
            )
        arrays.append(array)
    return arrays


# === The method table =============================================================================
# A method is a row: what its values come from (the ranks, or the lists' scores normalised), what
# one counted occurrence adds (its term) and how a key's terms become its score (its combination).
# The formulas of each are the tables below it. docs/semantics.md, "Fusion methods", is the same
# table in words; the core's (rust/fusion/methods.rs) is checked equal to it.


@dataclass(frozen=True)
class Method:
    """``kind`` "rank" or "score"; whether it takes ``weights``; the parameters it takes besides;
    a normalisation of its own (the caller's ``norm`` is then refused); whether a list that does
    not hold a key still gives it a term (``fills``); its ``term``, ``combine`` (and ``factor``
    with ``combine="times"``), named in ``TERMS``, ``COMBINE`` and ``FACTORS``."""

    kind: str
    weighted: bool
    term: str
    combine: str = "sum"
    params: tuple = ()
    norm: Optional[str] = None
    fills: bool = False
    factor: Optional[str] = None


METHODS = {
    # rank-based
    "rrf": Method("rank", True, "reciprocal", params=("k", "normalize")),
    "rbc": Method("rank", True, "rank_biased", params=("phi",)),
    "isr": Method("rank", False, "inverse_square", "times", factor="present"),
    "log_isr": Method("rank", False, "inverse_square", "times", factor="log_present"),
    "logn_isr": Method(
        "rank", False, "inverse_square", "times", params=("sigma",), factor="log_present_sigma"
    ),
    "bordafuse": Method("rank", True, "points", fills=True),
    "condorcet": Method("rank", True, "vote", "copeland"),
    # score-based
    "sum": Method("score", False, "value"),
    "wsum": Method("score", True, "weighted"),
    "mnz": Method("score", False, "value", "times", factor="present"),
    "anz": Method("score", False, "value", "per_list"),
    "gmnz": Method("score", False, "value", "times", params=("gamma",), factor="present_pow_gamma"),
    "max": Method("score", False, "value", "max"),
    "min": Method("score", False, "value", "min"),
    "med": Method("score", False, "value", "median"),
    "wmnz": Method("score", True, "value", "times", factor="present_weights"),
    "mixed": Method("score", True, "weighted", "times", factor="sqrt_present"),
    "dbsf": Method("score", False, "value", norm="dbsf"),
    "relative_score": Method("score", True, "weighted", norm="min-max"),
    "arithmetic_mean": Method("score", True, "weighted", "arithmetic_mean", fills=True),
    "geometric_mean": Method("score", True, "weighted_log", "geometric_mean"),
    "harmonic_mean": Method("score", True, "weighted_inverse", "harmonic_mean"),
}
NORMS = ("none", "min-max", "max", "sum", "z-score", "l2", "rank", "borda", "dbsf")
RANK_NORMS = ("rank", "borda")  # read the ranks: need no scores
MEANS = ("arithmetic_mean", "geometric_mean", "harmonic_mean")  # their weights must be >= 0

# What one counted occurrence at rank r of a list of weight w adds (v: its normalised value, or
# BordaFuse's points); ``f`` is the Fusion.
TERMS: dict = {
    "reciprocal": lambda w, v, r, f: w / (f.k + r),
    "rank_biased": lambda w, v, r, f: w * ((1 - f.phi) * _power(f.phi, r - 1)),
    "inverse_square": lambda w, v, r, f: 1 / (r * r),
    "points": lambda w, v, r, f: w * v,
    "vote": lambda w, v, r, f: w,
    "value": lambda w, v, r, f: v,
    "weighted": lambda w, v, r, f: w * v,
    "weighted_log": lambda w, v, r, f: w * math.log(v) if v > 0 else 0.0,
    "weighted_inverse": lambda w, v, r, f: w / v if v > 0 else 0.0,
}

# What a "times" method multiplies the canonical sum of a key's terms by: a function of the lists
# holding it (``present``, their indices) and the Fusion.
FACTORS: dict = {
    "present": lambda present, weights, f: float(len(present)),
    "log_present": lambda present, weights, f: math.log(len(present)),
    "log_present_sigma": lambda present, weights, f: math.log(len(present) + f.sigma),
    "present_pow_gamma": lambda present, weights, f: _ieee(pow, float(len(present)), f.gamma),
    "sqrt_present": lambda present, weights, f: math.sqrt(len(present)),
    "present_weights": lambda present, weights, f: canonical_sum(weights[i] for i in present),
}


# === Fusion: the settings of a fusion =============================================================
# The settings are checked once, when the Fusion is made, in the order of its signature; a call
# then checks its own inputs, in order: the lists, their number against the settings (weights,
# lower_is_better, normalize's divisor), the raw scores, the boost.

SETTINGS = (
    "method", "norm", "k", "weights", "window", "duplicates", "tie_break", "offset", "limit",
    "min_score", "normalize", "lower_is_better", "phi", "gamma", "sigma", "boost_weight", "trace",
)  # fmt: skip
RRF_SETTINGS = (
    "k", "weights", "window", "duplicates", "tie_break", "offset", "limit", "min_score",
    "normalize", "trace",
)  # fmt: skip


class _Default:
    """``k``'s default: 60, and "not given" (k is an error with a method that does not use it)."""

    def __repr__(self) -> str:
        return "60"


K_DEFAULT = _Default()


def _unused(name: str, method: str) -> FusionError:
    return FusionError(f"{name} is not used by method {method!r}", argument=name)


def _best_possible(weights: list, k: float) -> float:
    """normalize=True's divisor: the values w / (k + 1) of the lists of positive weight, added like
    a score."""
    if not any(w > 0 for w in weights):
        raise FusionError(
            "normalize=True needs at least one list with a positive weight", argument="normalize"
        )
    best_possible = canonical_sum(w / (k + 1) for w in weights if w > 0)
    if not (best_possible > 0 and math.isfinite(best_possible)):  # under- or overflow
        raise FusionError(
            f"normalize=True: the largest possible score is {best_possible}", argument="normalize"
        )
    return best_possible


def _per_list(name: str, values: Optional[list], n: int, what: str = "values") -> None:
    if values is not None and len(values) != n:
        raise FusionError(f"{name} has {len(values)} {what} for {n} lists", argument=name)


class Fusion:
    """The settings of a fusion, checked when it is made; call it on one query's lists, or use
    ``batch`` (id arrays) and ``many`` (a list of queries). Immutable, hashable, picklable; equal
    to any fusion that computes the same. See ``rankfusion.Fusion`` and docs/semantics.md."""

    def __init__(
        self,
        *,
        method: str = "rrf",
        norm: Optional[str] = None,
        k: Any = K_DEFAULT,
        weights: Optional[Sequence[float]] = None,
        window: Optional[int] = None,
        duplicates: str = "first",
        tie_break: str = "best_rank",
        offset: int = 0,
        limit: Optional[int] = None,
        min_score: Optional[float] = None,
        normalize: bool = False,
        lower_is_better: Optional[Sequence[bool]] = None,
        phi: Optional[float] = None,
        gamma: Optional[float] = None,
        sigma: Optional[float] = None,
        boost_weight: Optional[float] = None,
        trace: bool = False,
    ) -> None:
        keep = self.__dict__.update  # (the attributes are set here once: see __setattr__)
        method = _choice(method, "method", tuple(METHODS))
        m = METHODS[method]
        if norm is not None:
            norm = _choice(norm, "norm", NORMS)
            if m.kind == "rank":
                raise _unused("norm", method)
            if m.norm is not None:
                raise FusionError(
                    f"norm is not used by method {method!r}: it normalises with {m.norm!r}",
                    argument="norm",
                )
        keep(method=method, norm=None if norm == "none" else norm)
        if k is not K_DEFAULT and "k" not in m.params:
            raise _unused("k", method)
        k = 60.0 if k is K_DEFAULT else _real(k, "k") + 0.0
        if k < 0:
            raise FusionError(f"k must be >= 0, got {k!r}", argument="k")
        if weights is not None:
            if not m.weighted:
                raise _unused("weights", method)
            weights = [_real(w, f"weights[{i}]") + 0.0 for i, w in enumerate(_as_list(weights, "weights"))]  # fmt: skip
            for i, w in enumerate(weights):
                if method in MEANS and w < 0:
                    raise FusionError(
                        f"weights[{i}] must be >= 0 for method {method!r}, got {w!r}",
                        argument="weights",
                        list=i,
                    )
        keep(k=k, weights=None if weights is None else tuple(weights))
        keep(
            window=None if window is None else _count(window, "window", 1),
            duplicates=_choice(duplicates, "duplicates", DUPLICATES),
            tie_break=_choice(tie_break, "tie_break", TIE_BREAKS),
            offset=_count(offset, "offset", 0),
            limit=None if limit is None else _count(limit, "limit", 0),
            min_score=None if min_score is None else _real(min_score, "min_score") + 0.0,
            normalize=_flag(normalize, "normalize"),
        )
        if self.normalize and "normalize" not in m.params:
            raise _unused("normalize", method)
        if self.normalize and weights is not None:
            _best_possible(weights, k)
        self._check_lower_is_better(lower_is_better, m)
        self._check_parameters(phi, gamma, sigma, m)
        if boost_weight is not None:
            boost_weight = _real(boost_weight, "boost_weight") + 0.0
            if self.normalize:
                raise FusionError("boost cannot be combined with normalize=True", argument="boost")
        keep(boost_weight=boost_weight, trace=_flag(trace, "trace"))

    def _check_lower_is_better(self, lower_is_better: Any, m: Method) -> None:
        if lower_is_better is not None:
            if m.kind == "rank":
                raise _unused("lower_is_better", self.method)
            if self.norm_in_effect in RANK_NORMS:  # it reads the ranks, not the scores
                raise FusionError(
                    f"lower_is_better is not used by norm {self.norm_in_effect!r}",
                    argument="lower_is_better",
                )
            flags = _as_list(lower_is_better, "lower_is_better")
            lower_is_better = tuple(_flag(x, f"lower_is_better[{i}]") for i, x in enumerate(flags))
        self.__dict__["lower_is_better"] = lower_is_better

    def _check_parameters(self, phi: Any, gamma: Any, sigma: Any, m: Method) -> None:
        values = {}
        for name, value in (("phi", phi), ("gamma", gamma), ("sigma", sigma)):
            if value is not None and name not in m.params:
                raise _unused(name, self.method)
            if value is None and name in m.params and name != "sigma":
                raise FusionError(f"method {self.method!r} needs {name}", argument=name)
            values[name] = None if value is None else _real(value, name) + 0.0
        if values["phi"] is not None and not 0 <= values["phi"] < 1:
            raise FusionError(
                f"phi must satisfy 0 <= phi < 1, got {values['phi']!r}", argument="phi"
            )
        if values["sigma"] is not None and not 0 <= values["sigma"] <= 1:
            raise FusionError(
                f"sigma must satisfy 0 <= sigma <= 1, got {values['sigma']!r}", argument="sigma"
            )
        if self.method == "logn_isr" and values["sigma"] is None:
            values["sigma"] = 0.01
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Fusion is immutable: use replace()")

    # --- what the settings say --------------------------------------------------------------

    @property
    def norm_in_effect(self) -> str:
        """The normalisation in effect: the method's own, the one asked for, or "none"."""
        m = METHODS[self.method]
        return "none" if m.kind == "rank" else (m.norm or self.norm or "none")

    @property
    def reads_scores(self) -> bool:
        """Whether a call needs scores for every list it reads."""
        return METHODS[self.method].kind == "score" and self.norm_in_effect not in RANK_NORMS

    def to_dict(self) -> dict:
        """The settings that differ from the defaults (and ``method``): ``Fusion(**d) == self``."""
        d = {"method": self.method}
        given = {
            "norm": self.norm,
            "k": self.k if self.method == "rrf" and self.k != 60 else None,
            "weights": None if self.weights is None else list(self.weights),
            "window": self.window,
            "duplicates": self.duplicates if self.duplicates != "first" else None,
            "tie_break": self.tie_break if self.tie_break != "best_rank" else None,
            "offset": self.offset or None,
            "limit": self.limit,
            "min_score": self.min_score,
            "normalize": self.normalize or None,
            "lower_is_better": None if self.lower_is_better is None else list(self.lower_is_better),
            "phi": self.phi,
            "gamma": self.gamma,
            "sigma": self.sigma if self.sigma != 0.01 else None,
            "boost_weight": self.boost_weight,
            "trace": self.trace or None,
        }
        d.update((name, value) for name, value in given.items() if value is not None)
        return d

    def replace(self, **changes: Any) -> Fusion:
        """A copy with some settings changed; a setting given as None goes back to its default."""
        return Fusion(**{**self.to_dict(), **changes})

    def __repr__(self) -> str:
        return "Fusion(" + ", ".join(f"{n}={v!r}" for n, v in self.to_dict().items()) + ")"

    def __eq__(self, other: object) -> bool:
        return self.to_dict() == other.to_dict() if isinstance(other, Fusion) else NotImplemented

    def __hash__(self) -> int:
        return hash(repr(self))

    def __reduce__(self):
        return (_fusion, (self.to_dict(),))

    # --- a call -------------------------------------------------------------------------------

    def _weights(self, n: int) -> list:
        """The weight of each of ``n`` lists (checked against them), normalize's divisor checked,
        and the flags of lower_is_better checked against them."""
        _per_list("weights", self.weights, n)
        weights = [1.0] * n if self.weights is None else list(self.weights)
        if self.normalize:
            _best_possible(weights, self.k)
        _per_list("lower_is_better", self.lower_is_better, n)
        return weights

    def check(self, n_lists: int) -> None:
        """Checks the settings against a call of ``n_lists`` lists, as every call does first."""
        self._weights(n_lists)

    def _boost(self, boost: Any) -> Optional[dict]:
        """``boost``: both or neither with boost_weight; key -> finite real."""
        if boost is not None and self.boost_weight is None:
            raise FusionError("boost needs boost_weight", argument="boost")
        if boost is None and self.boost_weight is not None:
            raise FusionError("boost_weight is not used without boost", argument="boost_weight")
        if boost is None:
            return None
        if not isinstance(boost, Mapping):
            raise _bad_type(
                "boost", f"boost must be a mapping key -> value, got {_describe(boost)}"
            )
        pairs = (
            _pair(p, "boost", "boost.items() must give (key, value) pairs") for p in boost.items()
        )
        return {key: _real(v, f"boost[{key!r}]") for key, v in pairs}

    def __call__(self, lists: Iterable[Iterable[Hashable]], scores: Any = None, boost: Any = None):
        """Fuses one query; see docs/semantics.md."""
        lists = [_as_list(lst, f"lists[{i}]") for i, lst in enumerate(_as_list(lists, "lists"))]
        weights = self._weights(len(lists))
        raw_scores = _raw_scores(scores, lists, weights, self)
        return _fuse(lists, self, weights, raw_scores, self._boost(boost))

    def many(self, queries: Iterable[Any], *, scores: Any = None, threads: Optional[int] = None):
        """``[self(lists, scores=scores[q]) for q, lists in enumerate(queries)]``; an error of
        query q is located there (``queries[q]: ...``); the keys' own exceptions propagate."""
        queries = _as_list(queries, "queries")
        if scores is not None:
            scores = _as_list(scores, "scores")
            if len(scores) != len(queries):
                raise FusionError(
                    f"scores has {len(scores)} entries for {len(queries)} queries",
                    argument="scores",
                )
        if threads is not None:
            _integer(threads, "threads", 1)
        self._boost(None)
        results = []
        for q, lists in enumerate(queries):
            try:
                results.append(self(lists, None if scores is None else scores[q]))
            except (FusionError, FusionTypeError) as e:
                raise e.located(query=q) from None
        return results

    def batch(
        self, ids: Any, scores: Any = None, *, pad: int = -1, boost: Any = None, threads=None
    ):
        """Fuses Q queries of id arrays; row q equals the fusion of row q of every list."""
        return self._batch(ids, "ids", scores, pad, boost, threads, with_normalized=True)

    def _batch(self, ids, name, scores, pad, boost, threads, with_normalized):
        import numpy as np

        arrays = _id_matrices(ids, name)
        n = len(arrays)
        weights = self._weights(n)
        score_arrays: list = [None] * n
        if scores is not None:
            scores = _as_list(scores, "scores")
            _per_list("scores", scores, n, "entries")
            for i, s in enumerate(scores):
                if s is not None:
                    s = _matrix(s, f"scores[{i}]", "iuf", "a real array (integer or float dtype)")
                    if s.shape != arrays[i].shape:
                        raise _bad_value(
                            f"scores[{i}]",
                            f"scores[{i}] has shape {s.shape} but {name}[{i}] has shape "
                            f"{arrays[i].shape}",
                        )
                    score_arrays[i] = s.astype(np.float64)
        _scores_given(score_arrays, weights, self)
        pad = _int64(pad, "pad")
        boost = self._boost(boost)
        for key in boost or {}:  # the rows hold int ids: a boost's key is one
            if isinstance(key, bool) or not hasattr(type(key), "__index__"):
                raise _bad_type("boost", f"boost's keys must be ids (ints), got {_describe(key)}")
        if threads is not None:
            _integer(threads, "threads", 1)
        return _batch(arrays, score_arrays, pad, self, weights, boost, with_normalized)


def _fusion(settings: dict) -> Fusion:
    """``Fusion(**settings)``, for pickle."""
    return Fusion(**settings)


def _raw_scores(scores: Any, lists: list, weights: list, f: Fusion) -> list:
    """``scores=``: per list None or its raw scores (reals, not NaN), aligned with the list."""
    n = len(lists)
    raw_scores: list = [None] * n
    if scores is not None:
        scores = _as_list(scores, "scores")
        _per_list("scores", scores, n, "entries")
        for i, s in enumerate(scores):
            if s is None:
                continue
            s = _as_list(s, f"scores[{i}]")
            if len(s) != len(lists[i]):
                raise _bad_value(
                    f"scores[{i}]", f"scores[{i}] has {len(s)} values for {len(lists[i])} keys"
                )
            raw_scores[i] = [_raw_score(x, f"scores[{i}][{j}]", f) for j, x in enumerate(s)]
    _scores_given(raw_scores, weights, f)
    return raw_scores


def _scores_given(raw_scores: list, weights: list, f: Fusion) -> None:
    """A method whose normalisation reads scores needs them for every list it reads."""
    if f.reads_scores:
        for i, w in enumerate(weights):
            if w != 0 and raw_scores[i] is None:
                raise FusionError(
                    f"method {f.method!r} with norm {f.norm_in_effect!r} needs scores for every "
                    f"list: scores[{i}] is missing",
                    argument="scores",
                    list=i,
                )


def _raw_score(value: Any, name: str, f: Fusion) -> float:
    """A raw score: a real, never NaN; infinite only where the method does not read it (a
    rank-based method carries it into traces)."""
    x = _real(value, name, finite=False)
    if math.isnan(x):
        raise _bad_value(name, f"{name} must not be NaN")
    if f.reads_scores and not math.isfinite(x):
        raise _bad_value(name, f"{name} must be finite, got {x!r}")
    return x


def _accepts(function: str, settings: dict, allowed: tuple) -> dict:
    for name in settings:
        if name not in allowed:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")
    return settings


def fuse(lists: Iterable[Iterable[Hashable]], *, scores: Any = None, boost: Any = None, **settings):
    """Fusion of ranked lists (best first) by any method: ``Fusion(**settings)(lists, scores,
    boost)``. See docs/semantics.md and ``rankfusion.fuse``."""
    return Fusion(**_accepts("fuse", settings, SETTINGS))(lists, scores, boost)


def rrf(lists: Iterable[Iterable[Hashable]], *, scores: Any = None, **settings):
    """Reciprocal Rank Fusion: ``fuse(lists, scores=scores, **settings)`` with RRF's settings."""
    return Fusion(**_accepts("rrf", settings, RRF_SETTINGS))(lists, scores)


def rrf_many(queries: Iterable[Any], *, scores: Any = None, threads=None, **settings):
    """``[rrf(lists, scores=scores[q], **settings) for q, lists in enumerate(queries)]``."""
    fusion = Fusion(**_accepts("rrf_many", settings, RRF_SETTINGS))
    return fusion.many(queries, scores=scores, threads=threads)


def rrf_batch(lists: Iterable[Any], *, pad: int = -1, threads=None, **settings) -> BatchResult:
    """RRF of Q queries of id arrays at once: row q of the result is ``rrf`` of row q of every
    list (its pads removed, ranks unshifted). Width W: with limit=None the largest count of any
    row; with a limit, min(limit, cap) where cap = sum of min(N_i, window) over the lists of
    non-zero weight. ``threads`` only bounds the core's parallelism; here it is checked."""
    fusion = Fusion(**_accepts("rrf_batch", settings, RRF_SETTINGS))
    return fusion._batch(lists, "lists", None, pad, None, threads, with_normalized=False)


def fuse_batch(ids: Iterable[Any], scores: Any = None, *, pad: int = -1, boost: Any = None,
               threads=None, **settings) -> BatchResult:  # fmt: skip
    """``fuse`` of Q queries at once: row q of the result is ``fuse`` of row q of every list.
    With ``trace=True`` the result also holds ``normalized`` (Q, W, L): the normalised value of
    the hit's best occurrence in list l, 0.0 where absent."""
    fusion = Fusion(**_accepts("fuse_batch", settings, SETTINGS))
    return fusion._batch(ids, "ids", scores, pad, boost, threads, with_normalized=True)


# === The fusion ===================================================================================


def canonical_sum(values: Iterable[float]) -> float:
    """The canonical sum: ascending order of value, from 0.0, one float64 addition at a time.

    Because the order depends only on the values, any permutation of the same values (lists given
    in another order, say) gives bit-identical results.
    """
    total = 0.0
    for v in sorted(values):
        total += v
    return total


def _power(x: float, n: int) -> float:
    """``x ** n`` for an int n >= 0 by repeated squaring (the products in a fixed order, so that
    every implementation gets the same bits; ``pow`` may round differently)."""
    result = 1.0
    while n:
        if n & 1:
            result *= x
        n >>= 1
        x *= x
    return result


def _ieee(f: Callable[..., float], *args: float) -> float:
    """``f(*args)`` overflowing to inf as IEEE-754 arithmetic does, where Python's ``**`` and
    ``math.exp`` raise OverflowError: an overflowing score is then the error naming the key that
    every other score that is not finite is."""
    try:
        return f(*args)
    except OverflowError:
        return math.inf


def _median(values: list) -> float:
    values = sorted(values)
    half = len(values) // 2
    return values[half] if len(values) % 2 else (values[half - 1] + values[half]) / 2


def _root_sum_squares(xs: list, divisor: int) -> float:
    """sqrt(sum of x * x / divisor), the sum canonical. When the squares under- or overflow (a
    zero or infinite root of values that are not all zero), the same with every x divided by the
    largest |x| first, and the root multiplied by it."""
    root = math.sqrt(canonical_sum(x * x for x in xs) / divisor)
    if (root == 0 or math.isinf(root)) and any(x != 0 for x in xs):
        top = max(abs(x) for x in xs)
        root = top * math.sqrt(canonical_sum((x / top) * (x / top) for x in xs) / divisor)
    return root


# --- 1. The interleaved scan ----------------------------------------------------------------


@dataclass
class _Scan:
    """What the scan found: per key (in order of first appearance) its first key object and its
    counted occurrences (list index, rank); the lists read; per list read, its items read."""

    found: dict
    read: list
    n_read: dict


def _scan(lists: list, f: Fusion, weights: list, is_hole: Callable[[Any], bool]) -> _Scan:
    """Rank 1 of list 0, rank 1 of list 1, ..., rank 2 of list 0, ...: a list of weight 0 is not
    read at all, only the first ``window`` items are; ranks are positions in the list as given
    (skipping a hole or a repeat never shifts them). Dict semantics: 1 == 1.0 == True."""
    read = [i for i in range(len(lists)) if weights[i] != 0]
    depth = max((len(lists[i]) for i in read), default=0)
    if f.window is not None:
        depth = min(depth, f.window)
    found: dict = {}  # key -> [first key object met, [(list index, rank), ...] counted]
    n_read = dict.fromkeys(read, 0)  # items read per list (holes not counted)
    for position in range(depth):
        rank = position + 1
        for i in read:
            if position >= len(lists[i]):
                continue
            key = lists[i][position]
            if is_hole(key):
                continue
            n_read[i] += 1
            if not isinstance(key, Hashable):
                raise _bad_type(
                    f"lists[{i}][{position}]", f"lists[{i}][{position}] is not hashable: {key!r}"
                )
            entry = found.setdefault(key, [key, []])
            if f.duplicates != "sum" and any(list_index == i for list_index, _ in entry[1]):
                if f.duplicates == "error":
                    raise FusionError(
                        f"lists[{i}] has the key {{key}} more than once (rank {rank})",
                        list=i,
                        rank=rank,
                        key=key,
                    )
                continue  # "first": only the best (first) occurrence counts
            entry[1].append((i, rank))
    return _Scan(found, read, n_read)


# --- 2. The normalisations (score-based methods) --------------------------------------------


def _normalizer(norm: str, values: list, i: int) -> Callable[[float], float]:
    """The normalisation of list ``i``: ``values`` are the raw scores of its counted items, in
    list order (already negated for a lower-is-better list). Returns raw score -> normalised
    value. A statistic that overflows a float is an error naming the list."""
    n = len(values)
    low, high = min(values), max(values)

    def finite(statistic: float, what: str) -> float:
        if not math.isfinite(statistic):
            raise FusionError(
                f"norm={norm!r} cannot normalise scores[{i}]: {what} overflows a float",
                argument="scores",
                list=i,
            )
        return statistic

    if norm == "none":
        return lambda s: s
    if norm == "min-max":  # an all-equal (or one-item) list: every item is the best, 1.0
        if high == low:
            return lambda s: 1.0
        span = finite(high - low, "the span of its scores (max - min)")
        return lambda s: (s - low) / span
    if norm == "max":
        if high < 0:
            raise FusionError(
                f"norm='max' needs a list's largest score to be >= 0, got {high!r} "
                "(use 'min-max' for negative scores)",
                argument="norm",
            )
        return (lambda s: 0.0) if high == 0 else (lambda s: s / high)
    if norm == "sum":  # a share of the total above the minimum; equal shares when all equal
        total = finite(
            canonical_sum(v - low for v in values), "the sum of its scores above the min"
        )
        return (lambda s: 1.0 / n) if total == 0 else (lambda s: (s - low) / total)
    if norm == "z-score":  # population standard deviation; a constant list: all 0.0
        if high == low:
            return lambda s: 0.0
        mean = finite(canonical_sum(values) / n, "the sum of its scores (for their mean)")
        sd = finite(_root_sum_squares([v - mean for v in values], n), "their standard deviation")
        return (lambda s: 0.0) if sd == 0 else (lambda s: (s - mean) / sd)
    if norm == "l2":
        length = finite(_root_sum_squares(values, 1), "the length (l2 norm) of its scores")
        return (lambda s: 0.0) if length == 0 else (lambda s: s / length)
    assert norm == "dbsf", norm  # Qdrant's: Welford's mean and sample variance, mean -/+ 3 sd
    if n == 1:
        return lambda s: 0.5
    mean, m2 = 0.0, 0.0
    for count, v in enumerate(values, 1):
        delta = v - mean
        mean += delta / count
        m2 += delta * (v - mean)
    # Scores spanning the float range overflow m2 to -inf: the sd is then nan.
    sd = math.sqrt(m2 / (n - 1)) if m2 >= 0 else math.nan
    low, high = mean - 3 * sd, mean + 3 * sd
    if low == high:
        return lambda s: 0.5
    span = finite(high - low, "the span of mean -/+ 3 sd of its scores")
    return lambda s: (s - low) / span


class _Values:
    """The value of each occurrence: the normalised raw score (score norms, each list over the
    raw scores of its counted items in list order, negated first when lower-is-better), the rank
    or borda normalisation, or BordaFuse's points. ``of(key, i, rank)``; rank 0: the key is not in
    list i (borda's unranked value, BordaFuse's unranked points, else 0.0)."""

    def __init__(self, scan: _Scan, f: Fusion, raw_scores: list) -> None:
        self.scan, self.f, self.raw_scores = scan, f, raw_scores
        self.norm, self.n_keys = f.norm_in_effect, len(scan.found)
        self.normalizers = {}
        if f.reads_scores:
            for i in scan.read:
                counted = sorted(r for _, occ in scan.found.values() for j, r in occ if j == i)
                if counted:
                    self.normalizers[i] = _normalizer(
                        self.norm, [self.sign(i) * self.raw(i, r) for r in counted], i
                    )

    def raw(self, i: int, rank: int) -> Optional[float]:
        return self.raw_scores[i][rank - 1] if self.raw_scores[i] is not None else None

    def sign(self, i: int) -> float:
        return -1.0 if self.f.lower_is_better is not None and self.f.lower_is_better[i] else 1.0

    def of(self, key: Any, i: int, rank: int) -> Optional[float]:
        n_keys, n_read = self.n_keys, self.scan.n_read
        if METHODS[self.f.method].term == "points":  # ranx's: |C| - rank + 1; unranked, the mean
            return float(n_keys - rank + 1) if rank else (n_keys - n_read[i] + 1) / 2
        if METHODS[self.f.method].kind == "rank":
            return None
        if self.norm == "borda":
            v = 1 - (rank - 1) / n_keys if rank else 0.5 - (n_read[i] - 1) / (2 * n_keys)
        elif rank == 0:
            v = 0.0
        elif self.norm == "rank":
            v = 1 - (rank - 1) / n_read[i]
        else:
            v = self.normalizers[i](self.sign(i) * self.raw(i, rank))
        if not math.isfinite(v):
            raise FusionError(
                f"the normalized score of key {{key}} in lists[{i}] is not finite ({v})",
                list=i,
                key=key,
            )
        return v


# --- 3. Each key's score ----------------------------------------------------------------------


def _contributions(key: Any, occurrences: list, values: _Values, weights: list):
    """The key's contributions, ordered by list then rank (a list that does not hold it but fills
    gives rank 0), and the lists holding it (every list read, with the borda norm)."""
    f, scan = values.f, values.scan
    m = METHODS[f.method]
    present = sorted({i for i, _ in occurrences})
    if m.fills or values.norm == "borda":
        occurrences = occurrences + [(i, 0) for i in scan.read if i not in present]
        present = scan.read if values.norm == "borda" else present
    contributions = []
    for i, rank in sorted(occurrences):
        w, v = weights[i], values.of(key, i, rank)
        c = TERMS[m.term](w, v, rank, f)
        score = values.raw(i, rank) if rank else None
        contributions.append(Contribution(i, rank, w, c, score, v))
    return contributions, present


def _kept(contributions: list, keep: Callable[[float], bool]) -> list:
    return [c for c in contributions if keep(c.normalized)]


def _combine(m: Method, contributions: list, present: list, weights: list, f: Fusion):
    """A key's (score, factor, divisor) from its contributions, as its method combines them."""
    total = canonical_sum(c.contribution for c in contributions)
    values = [c.normalized for c in contributions]
    if m.combine == "sum":
        return total, None, None
    if m.combine == "times":
        factor = FACTORS[m.factor](present, weights, f)
        return total * factor, factor, None
    if m.combine == "per_list":
        return total / len(present), None, float(len(present))
    # max, min and med: a zero is +0.0 (Python's max of 0.0 and -0.0 is whichever comes first,
    # which would make the sign depend on the order of the lists).
    if m.combine in ("max", "min", "median"):
        pick = {"max": max, "min": min, "median": _median}[m.combine]
        return pick(values) + 0.0, None, None
    if m.combine == "arithmetic_mean":  # negative values skipped, zeros (and misses) kept
        kept = _kept(contributions, lambda v: v >= 0)
        divisor = canonical_sum(c.weight for c in kept)
        score = 0.0 if divisor == 0 else canonical_sum(c.contribution for c in kept) / divisor
        return score, None, divisor
    if m.combine == "geometric_mean":  # values <= 0 skipped
        kept = _kept(contributions, lambda v: v > 0)
        divisor = canonical_sum(c.weight for c in kept)
        return (0.0 if not kept else _ieee(math.exp, total / divisor)), None, divisor
    if m.combine == "harmonic_mean":  # values <= 0 skipped
        kept = _kept(contributions, lambda v: v > 0)
        divisor = canonical_sum(c.contribution for c in kept)
        if not kept:
            return 0.0, None, divisor
        # every w / v underflowed to 0.0: inf, as IEEE-754 divides
        score = canonical_sum(c.weight for c in kept) / divisor if divisor != 0 else math.inf
        return score, None, divisor
    assert m.combine == "copeland"
    return 0.0, None, None  # its wins, counted once every key is scored


def _copeland(scored: list, scan: _Scan, weights: list) -> None:
    """Condorcet: each key's score is one plus the number of keys it beats (more list weight ranks
    it ahead than behind; a list holding neither abstains; each side's weights a canonical sum)."""
    best = [{i: min(r for j, r in occ if j == i) for i, _ in occ} for _, occ in scan.found.values()]
    for x, entry in enumerate(scored):
        wins = 0
        for y in range(len(scored)):
            if y == x:
                continue
            ahead, behind = [], []
            for i in scan.read:
                rx, ry = best[x].get(i), best[y].get(i)
                if rx is not None and (ry is None or rx < ry):
                    ahead.append(weights[i])
                elif ry is not None and (rx is None or ry < rx):
                    behind.append(weights[i])
            wins += canonical_sum(ahead) > canonical_sum(behind)
        entry[1] = 1.0 + wins


def _not_finite(f: Fusion, score: float, stage: str) -> FusionError:
    if stage == "fused" and f.method == "rrf":
        message = f"the score of key {{key}} is not finite ({score}): weights too large"
    else:
        message = f"the {stage} score of key {{key}} is not finite ({score})"
    return FusionError(message)


def _score(scan: _Scan, f: Fusion, weights: list, raw_scores: list) -> list:
    """Per key, in order of first appearance, [key, score, contributions, factor, divisor]."""
    m = METHODS[f.method]
    values = _Values(scan, f, raw_scores)
    scored = []
    for key, occurrences in scan.found.values():
        contributions, present = _contributions(key, occurrences, values, weights)
        score, factor, divisor = _combine(m, contributions, present, weights, f)
        if not math.isfinite(score):
            raise _not_finite(f, score, "fused").located(key=key)
        scored.append([key, score, contributions, factor, divisor])
    if m.combine == "copeland":
        _copeland(scored, scan, weights)
    return scored


# --- 4. normalize, the boost, the order, the page --------------------------------------------


def _sorted_by_key(tied: Iterable[tuple]) -> list:
    """Tied (sum, Hit) pairs by key, ascending. Only tied keys are ever compared."""
    try:
        return sorted(tied, key=lambda pair: pair[1].key)
    except TypeError as e:
        raise FusionTypeError(
            f"tie_break='key': tied keys cannot be compared ({e})", argument="tie_break"
        ) from e


def _hits(scored: list, f: Fusion, weights: list, boost: Optional[dict], trace: bool) -> list:
    """(order value, Hit) per key: normalize=True divides the score but the order still uses the
    sum (two sums can round to one quotient); the boost adds w * (v - min) / (max - min), min and
    max over the fused keys that have a value (a span of 0 adds 0)."""
    best_possible = _best_possible(weights, f.k) if f.normalize else None
    boost = boost or {}
    valued = [boost[entry[0]] for entry in scored if entry[0] in boost]
    low, high = (min(valued), max(valued)) if valued else (0.0, 0.0)
    hits = []
    for key, total, contributions, factor, divisor in scored:
        score = total
        if best_possible is not None:
            score = total / best_possible
            if not math.isfinite(score):
                raise _not_finite(f, score, "normalized").located(key=key)
        added = None
        if key in boost:
            added = f.boost_weight * ((boost[key] - low) / (high - low)) if high > low else 0.0
            score = total = score + added
            if not math.isfinite(score):
                raise _not_finite(f, score, "boosted").located(key=key)
        details = (tuple(contributions), factor, divisor, added) if trace else ()
        hits.append((total, Hit(key, score, *details)))
    return hits


def _fuse(lists: list, f: Fusion, weights: list, raw_scores: list, boost: Optional[dict],
          trace: Optional[bool] = None, is_hole: Callable[[Any], bool] = lambda item: False):  # fmt: skip
    """The fusion of checked inputs: scan, score, normalize and boost, then ``min_score`` (on the
    score as returned), the order (sum descending; Python's sort is stable, so tied hits stay in
    first-appearance order; with tie_break="key" each group of tied sums is sorted by key), then
    the page. ``is_hole(item)`` marks items that are not keys (a batch's pads)."""
    scan = _scan(lists, f, weights, is_hole)
    scored = _score(scan, f, weights, raw_scores)
    hits = _hits(scored, f, weights, boost, f.trace if trace is None else trace)
    if f.min_score is not None:
        hits = [(total, h) for total, h in hits if h.score >= f.min_score]
    hits.sort(key=lambda pair: -pair[0])
    if f.tie_break == "key":
        groups = itertools.groupby(hits, key=lambda pair: pair[0])
        hits = [pair for _, group in groups for pair in _sorted_by_key(group)]
    end = None if f.limit is None else f.offset + f.limit
    return [h for _, h in hits[f.offset : end]]


def _batch(arrays, score_arrays, pad, f: Fusion, weights, boost, with_normalized: bool):
    """Every row on its own, in order, as a call with pads for holes; the first error wins."""

    n = len(arrays)
    n_queries = arrays[0].shape[0] if arrays else 0
    pages = []
    for q in range(n_queries):
        rows = [a[q].tolist() for a in arrays]
        try:
            raw = [None] * n
            for i, s in enumerate(score_arrays):
                if s is not None:
                    raw[i] = s[q].tolist()
                    for j, x in enumerate(raw[i]):  # the score of a pad is never read
                        if rows[i][j] != pad:
                            _raw_score(x, f"scores[{i}][{j}]", f)
            pages.append(_fuse(rows, f, weights, raw, boost, True, lambda x: x == pad))
        except (FusionError, FusionTypeError) as e:
            raise e.located(row=q) from None
    return _batch_result(pages, arrays, pad, f, weights, with_normalized)


def _batch_result(pages, arrays, pad, f: Fusion, weights, with_normalized: bool):
    """The pages as padded arrays. Width W: with limit=None the largest count of any row; with a
    limit, min(limit, cap), cap = sum of min(N_i, window) over the lists of non-zero weight."""
    import numpy as np

    n, n_queries, trace = len(arrays), len(pages), f.trace
    if f.limit is None:
        width = max((len(p) for p in pages), default=0)
    else:
        cap = sum(min(a.shape[1], f.window or a.shape[1]) for a, w in zip(arrays, weights) if w)
        width = min(f.limit, cap)
    ids = np.full((n_queries, width), pad, dtype=np.int64)
    scores = np.full((n_queries, width), np.nan, dtype=np.float64)
    counts = np.array([len(p) for p in pages], dtype=np.int64)
    shape = (n_queries, width, n)
    ranks = np.zeros(shape, dtype=np.int32) if trace else None
    contributions = np.zeros(shape, dtype=np.float64) if trace else None
    normalized = np.zeros(shape, dtype=np.float64) if trace and with_normalized else None
    for q, page in enumerate(pages):
        for j, hit in enumerate(page):
            ids[q, j], scores[q, j] = hit.key, hit.score
            for i in range(n) if trace else ():
                mine = [c for c in hit.contributions if c.list_index == i]
                if mine:
                    ranks[q, j, i] = mine[0].rank  # the first counted = the best rank
                    contributions[q, j, i] = canonical_sum(c.contribution for c in mine)
                    if normalized is not None and mine[0].normalized is not None:
                        normalized[q, j, i] = mine[0].normalized
    if with_normalized:
        return BatchResult(ids, scores, counts, ranks, contributions, normalized)
    return BatchResult(ids, scores, counts, ranks, contributions)


# === Candidate revalidation =======================================================================
# A vector index returns (id, score) candidates that may be stale (soft-deleted, missing, failing
# a filter the index could not apply); revalidation hydrates them against the live store in one
# batched call and keeps their order.


def pool_size(limit: int, filtering: str, multiplier: int = 3) -> int:
    """How many candidates to ask a vector index for, to end with ``limit`` after filtering.

    ``limit`` when the index filters before the scan (``"pre"``); ``limit * multiplier`` for
    ``"post"``, ``"none"`` and anything else (fail safe: widen the pool, filter in-engine).
    ``limit`` is an int >= 0, ``multiplier`` an int >= 1.
    """
    limit = _integer(limit, "limit", 0)
    multiplier = _integer(multiplier, "multiplier", 1)
    if isinstance(filtering, str) and filtering == "pre":
        return limit
    return limit * multiplier


def revalidate(
    candidates: Iterable[tuple[Hashable, float]],
    lookup: Any,
    *,
    where: Callable[[Any], Any] | None = None,
    limit: int | None = None,
) -> list:
    """The live candidates, as (id, record, score) triples, in input order. See docs/semantics.md.

    candidates are (id, score) pairs, never a Mapping; ids are hashable;
    scores are real numbers carried as float (NaN included), never compared. ``lookup`` needs
    ``get`` (a Mapping has one); ``get_many`` must return a Mapping (TypeError otherwise: a bug of
    the lookup, not a failure to fall back on). ``where`` gets the record; its exceptions
    propagate. ``limit`` is None or an int >= 0, and the walk stops once ``limit`` are kept.
    """
    # 1. Arguments, in signature order.
    if isinstance(candidates, Mapping):
        raise _bad_type(
            "candidates",
            "candidates must be an iterable of (id, score) pairs, not a mapping "
            f"({type(candidates).__name__}): pass mapping.items()",
        )
    ids, scores = [], []
    for i, candidate in enumerate(_as_list(candidates, "candidates")):
        id, score = _pair(candidate, f"candidates[{i}]")
        if not isinstance(id, Hashable):
            raise _bad_type(f"candidates[{i}][0]", f"candidates[{i}][0] is not hashable: {id!r}")
        ids.append(id)
        scores.append(_real(score, f"candidates[{i}][1]", finite=False))  # carried, never compared
    get = getattr(lookup, "get", None)
    if not callable(get):
        raise _bad_type(
            "lookup",
            f"lookup must have a get(id) method (or be a Mapping), got {type(lookup).__name__}",
        )
    get_many = getattr(lookup, "get_many", None)
    if get_many is not None and not callable(get_many):
        raise _bad_type(
            "lookup.get_many", f"lookup.get_many must be callable, got {type(get_many).__name__}"
        )
    if where is not None and not callable(where):
        raise _bad_type("where", f"where must be callable or None, got {_describe(where)}")
    if limit is not None:
        limit = _integer(limit, "limit", 0)

    # 2. The plan: the ids de-duplicated in first-seen order (dict semantics: 1 == 1.0 == True).
    unique = list(dict.fromkeys(ids))
    if not unique or limit == 0:
        return []  # nothing to look up: the lookup is not called at all

    # 3. Batch path: ONE call with the unique ids. An Exception raised by it falls back to the
    #    per-id path; a BaseException (KeyboardInterrupt, SystemExit) propagates.
    record_of = None
    if get_many is not None:
        try:
            found = get_many(list(unique))
        except Exception:  # noqa: BLE001, S110 -- any Exception falls back to get()
            pass
        else:
            if not isinstance(found, Mapping):
                raise _bad_type(
                    "lookup.get_many",
                    "lookup.get_many must return a mapping id -> record or None, "
                    f"got {type(found).__name__}",
                )
            record_of = {u: found.get(u) for u in unique}  # ids nobody asked for are ignored

    # 4. The rebuild, in input order: every occurrence of a duplicate keeps its own score. The
    #    per-id path calls get() once per candidate; an exception or None drops the candidate.
    #    `where` is called on each live record in turn; the walk stops once `limit` are kept.
    out = []
    for id, score in zip(ids, scores):
        if record_of is not None:
            record = record_of[id]
        else:
            try:
                record = get(id)
            except Exception:  # noqa: BLE001, S112 -- an erroring id is dropped
                continue
        if record is None:
            continue
        if where is not None and not where(record):
            continue
        out.append(Revalidated(id, record, score))
        if len(out) == limit:
            break
    return out


def revalidate_batch(
    ids: Any, scores: Any, is_live: Any, *, limit: int | None = None, pad: int = -1
):
    """The live candidates of Q queries at once. See docs/semantics.md and ``rankfusion.revalidate_batch``.

    ids of any integer dtype whose values fit in int64; scores of any integer or
    float dtype, as float64; ``is_live`` must answer a bool array of one entry per id and is not
    called when there is no id or ``limit`` is 0; the width is ``min(limit, P)``, or the largest
    count without a limit.
    """
    import numpy as np

    # 1. Arguments, in signature order.
    ids = _matrix(ids, "ids", "iu", "an integer array (an integer dtype that fits in int64)")
    if ids.dtype.kind == "u" and ids.dtype.itemsize == 8 and ids.size and ids.max() > 2**63 - 1:
        raise _bad_value("ids", f"ids must fit in int64, got {ids.max()!r}")
    scores = _matrix(scores, "scores", "iuf", "a real array (integer or float dtype)")
    if scores.shape != ids.shape:
        raise _bad_value("scores", f"scores has shape {scores.shape} but ids has shape {ids.shape}")
    if not callable(is_live):
        raise _bad_type("is_live", f"is_live must be callable, got {_describe(is_live)}")
    if limit is not None:
        limit = _integer(limit, "limit", 0)
    if isinstance(pad, bool) or not hasattr(type(pad), "__index__"):
        raise _bad_type("pad", f"pad must be an int, got {_describe(pad)}")
    pad = operator.index(pad)
    if not -(2**63) <= pad < 2**63:
        raise _bad_value("pad", f"pad must fit in int64, got {pad}")
    rows = ids.astype(np.int64).tolist()
    score_rows = scores.astype(np.float64).tolist()

    # 2. ONE is_live call with the unique ids of the whole batch, first seen row by row; pads are
    #    never passed. No ids (or limit=0): no call.
    unique = list(dict.fromkeys(x for row in rows for x in row if x != pad))
    alive = set()
    if unique and limit != 0:
        answer = np.asarray(is_live(np.array(unique, dtype=np.int64)))
        if answer.dtype != np.bool_:
            raise _bad_type(
                "is_live", f"is_live must return a boolean array, got dtype {answer.dtype}"
            )
        if answer.shape != (len(unique),):
            raise _bad_value(
                "is_live",
                f"is_live must return one bool per id ({len(unique)}), got shape {answer.shape}",
            )
        alive = {x for x, ok in zip(unique, answer.tolist()) if ok}

    # 3. Row q keeps its live candidates in input order, truncated to limit.
    kept = [
        [(x, s) for x, s in zip(row, row_scores) if x != pad and x in alive][:limit]
        for row, row_scores in zip(rows, score_rows)
    ]

    # 4. Padded like rrf_batch: ids with the pad value, scores with NaN. The width is the limit
    #    (at most the number of candidates per row), or the largest count without one.
    n_rows, n_cols = ids.shape
    width = min(limit, n_cols) if limit is not None else max(map(len, kept), default=0)
    out_ids = np.full((n_rows, width), pad, dtype=np.int64)
    out_scores = np.full((n_rows, width), np.nan)
    counts = np.zeros(n_rows, dtype=np.int64)
    for q, row in enumerate(kept):
        counts[q] = len(row)
        out_ids[q, : len(row)] = [x for x, _ in row]
        out_scores[q, : len(row)] = [s for _, s in row]
    return RevalidatedBatch(out_ids, out_scores, counts)


# === Comparing runs: paired tests ================================================================
# docs/semantics.md, "Comparing runs". compare_per_query tests each (system, baseline, metric) of
# a family on per-query values, then corrects the family's p-values. Every sum is a loop from
# 0.0 in query (or draw) order, and the random draws come from one xoshiro256** stream per test,
# so the Rust core (rust/stats/) computes the same bits.

TESTS = ("randomization", "t", "bootstrap")
CORRECTIONS = ("none", "bonferroni", "holm", "bh")
MAX_PERMUTATIONS = 2**40
_MASK = 2**64 - 1


class ComparedPair(NamedTuple):
    """One test of a comparison: ``system`` against ``baseline`` (run names) on ``metric``.

    ``delta`` = system mean - baseline mean; ``p`` the test's two-sided p-value, ``p_corrected``
    the family's corrected one, ``significant`` = ``p_corrected <= alpha``; ``effect_size`` the
    paired Cohen's d (mean difference over the differences' standard deviation, None when they
    have none); ``ci`` the interval of the mean difference, ``(low, high)`` (None with one
    query); ``wins``/``ties``/``losses`` the queries where the system is above/equal/below."""

    system: str
    baseline: str
    metric: str
    delta: float
    p: float
    p_corrected: float
    significant: bool
    effect_size: Optional[float]
    ci: Optional[tuple]
    wins: int
    ties: int
    losses: int


def _total(values: Iterable[float]) -> float:
    """The sum from 0.0, left to right (Python's sum() may compensate: not this)."""
    total = 0.0
    for v in values:
        total += v
    return total


def _mean(values: Sequence[float]) -> float:
    return _total(values) / len(values)


# --- the random stream: xoshiro256** seeded by SplitMix64 ---


def _splitmix(seed: int, i: int) -> int:
    """The i-th output (1-based) of SplitMix64 started at seed."""
    z = (seed + i * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK


class _Stream:
    """Test t's xoshiro256** stream: its state is SplitMix64's outputs 4t+1 .. 4t+4."""

    def __init__(self, seed: int, test: int) -> None:
        self.s = [_splitmix(seed, 4 * test + k) for k in (1, 2, 3, 4)]

    def next(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & _MASK, 7) * 9) & _MASK
        t = (s[1] << 17) & _MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result


# --- the tests ---


def _exact(n: int, permutations: int) -> bool:
    return 2**n <= permutations


def _signed_sum(d: Sequence[float], words: Sequence[int]) -> float:
    """sum of d[i], negated where bit i % 64 of words[i // 64] is set."""
    return _total(-v if words[i // 64] >> (i % 64) & 1 else v for i, v in enumerate(d))


def _randomization(d: Sequence[float], permutations: int, stream: _Stream) -> float:
    """The share of sign vectors whose |sum| reaches the observed |sum| less the rounding
    tolerance n * sum|d| * 2**-52: every vector when 2**n <= permutations, else `permutations`
    vectors of ceil(n / 64) words each, with the +1 of the observed vector."""
    n = len(d)
    threshold = abs(_total(d)) - n * _total(abs(v) for v in d) * 2.0**-52
    if _exact(n, permutations):
        count = sum(abs(_signed_sum(d, [b])) >= threshold for b in range(2**n))
        return count / 2**n
    width = (n + 63) // 64
    count = 0
    for _ in range(permutations):
        words = [stream.next() for _ in range(width)]
        count += abs(_signed_sum(d, words)) >= threshold
    return (count + 1) / (permutations + 1)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """numpy's 'linear' quantile of sorted values."""
    h = (len(ordered) - 1) * q
    j = math.floor(h)
    if j >= len(ordered) - 1:
        return ordered[-1]
    return ordered[j] + (h - j) * (ordered[j + 1] - ordered[j])


def _bootstrap(d: Sequence[float], resamples: int, confidence: float, stream: _Stream) -> tuple:
    """(p, low, high): resample j of query b is d[word * n >> 64]; the resample means' share on
    the far side of 0 (doubled, +1 each) and their percentile interval."""
    n = len(d)
    means = []
    for _ in range(resamples):
        means.append(_total(d[stream.next() * n >> 64] for _ in range(n)) / n)
    smaller = min(sum(m <= 0.0 for m in means), sum(m >= 0.0 for m in means)) + 1
    p = min(1.0, 2.0 * smaller / (resamples + 1))
    means.sort()
    tail = (1.0 - confidence) / 2.0
    return p, _quantile(means, tail), _quantile(means, 1.0 - tail)


# --- Student's t: the tail I_x(nu/2, 1/2) by its continued fraction, and its inverse ---

_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)
_LANCZOS_G = 7.0
_HALF_LN_2PI = 0.91893853320467274


def _lanczos_sum(z: float) -> float:
    total = _LANCZOS[0]
    k = 1.0
    for c in _LANCZOS[1:]:
        total += c / (z - 1.0 + k)
        k += 1.0
    return total


def _ln_beta(a: float, b: float) -> float:
    """ln B(a, b) from the Lanczos approximation, its large terms cancelled by hand."""
    half_g = _LANCZOS_G - 0.5
    c = a + b
    tb = b + half_g
    tc = c + half_g
    return (
        _HALF_LN_2PI
        - half_g
        + (a - 0.5) * math.log1p(-b / tc)
        - b * math.log(tc)
        + (b - 0.5) * math.log(tb)
        + math.log(_lanczos_sum(a) * _lanczos_sum(b) / _lanczos_sum(c))
    )


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz)."""

    def tiny(v: float) -> float:
        return 1e-300 if abs(v) < 1e-300 else v

    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 / tiny(1.0 - qab * x / qap)
    h = d
    m = 1.0
    for _ in range(100_000):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 / tiny(1.0 + aa * d)
        c = tiny(1.0 + aa / c)
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 / tiny(1.0 + aa * d)
        c = tiny(1.0 + aa / c)
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
        m += 1.0
    return h


def _t_tail(t: float, nu: float) -> float:
    """P(|T| >= t), T Student's t with nu degrees of freedom, t >= 0."""
    t2 = t * t
    if math.isinf(t2):
        return 0.0
    a, b = 0.5 * nu, 0.5
    x = nu / (nu + t2)
    y = t2 / (nu + t2)
    front = math.exp(a * -math.log1p(t2 / nu) + b * (math.log(y) if y > 0.0 else -math.inf)
                     - _ln_beta(a, b))  # fmt: skip
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def _t_quantile(tail: float, nu: float) -> float:
    """The t >= 0 with P(|T| >= t) = tail: bisection to neighbouring floats."""
    lo, hi = 0.0, 1.0
    while _t_tail(hi, nu) > tail and hi < sys.float_info.max / 2.0:
        lo, hi = hi, hi * 2.0
    for _ in range(2000):
        mid = lo + (hi - lo) / 2.0
        if mid <= lo or mid >= hi:
            break
        if _t_tail(mid, nu) > tail:
            lo = mid
        else:
            hi = mid
    return hi


def _t_test(mean_d: float, sd: float, n: int) -> float:
    se = sd / math.sqrt(n)
    if se == 0.0:
        return 1.0 if mean_d == 0.0 else 0.0
    return _t_tail(abs(mean_d / se), n - 1.0)


def _paired(x, y, test, permutations, confidence, t_quantile, stream) -> tuple:
    """(delta, p, effect_size, ci, wins, ties, losses) of x (system) against y (baseline)."""
    n = len(x)
    d = [a - b for a, b in zip(x, y)]
    mean_d = _mean(d)
    sd = math.sqrt(_total((v - mean_d) * (v - mean_d) for v in d) / (n - 1.0)) if n > 1 else None
    effect_size = mean_d / sd if sd else None
    ci = None
    if sd is not None:
        half = t_quantile * (sd / math.sqrt(n))
        ci = (mean_d - half, mean_d + half)
    if test == "randomization":
        p = _randomization(d, permutations, stream)
    elif test == "t":
        p = _t_test(mean_d, sd, n)
    else:
        p, low, high = _bootstrap(d, permutations, confidence, stream)
        ci = (low, high)
    wins = sum(a > b for a, b in zip(x, y))
    ties = sum(a == b for a, b in zip(x, y))
    return _mean(x) - _mean(y), p, effect_size, ci, wins, ties, n - wins - ties


# --- corrections: statsmodels' multipletests arithmetic ---


def _correct(p: Sequence[float], method: str) -> list:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = list(p)
    if method == "bonferroni":
        out = [min(1.0, v * m) for v in p]
    elif method == "holm":  # k-th smallest times (m - k), running maximum
        running = -math.inf
        for k, i in enumerate(order):
            running = max(running, (m - k) * p[i])
            out[i] = min(1.0, running)
    elif method == "bh":  # k-th smallest over (k + 1) / m, running minimum from the largest
        running = math.inf
        for k in reversed(range(m)):
            i = order[k]
            running = min(running, p[i] / ((k + 1) / m))
            out[i] = min(1.0, running)
    return out


# --- the argument checks and the family ---
# Each bad argument is a FusionTypeError / FusionError whose ``argument`` names it: a per-query
# value's is located at its query (``qid``), an item of ``pairs`` at its index (``list``).


def _per_query_table(per_query: Any) -> tuple:
    """(metrics, names, queries, values[metric][name] as lists in query order)."""
    if not isinstance(per_query, Mapping):
        raise _bad_type("per_query", "per_query must be a mapping {metric: {name: {qid: value}}}, "
                        f"got {type(per_query).__name__}")  # fmt: skip
    if not per_query:
        raise _bad_value("per_query", "per_query has no metric")
    metrics = [str(m) for m in per_query]
    names: Optional[list] = None
    queries: Optional[list] = None
    values: dict = {}
    for metric, runs in zip(metrics, per_query.values()):
        if not isinstance(runs, Mapping):
            raise _bad_type("per_query", f"per_query[{metric!r}] must be a mapping "
                            f"{{name: {{qid: value}}}}, got {type(runs).__name__}")  # fmt: skip
        if names is None:
            names = [str(name) for name in runs]
            if len(names) < 2:
                raise _bad_value("per_query", f"compare needs at least two runs, got {len(names)}")
            if len(set(names)) != len(names):
                raise _bad_value("per_query", f"run names must be distinct, got {names}")
        elif [str(name) for name in runs] != names:
            raise _bad_value("per_query", f"per_query[{metric!r}] has other runs than the first "
                             "metric")  # fmt: skip
        values[metric] = {}
        for name, scores in zip(names, runs.values()):
            where = f"per_query[{metric!r}][{name!r}]"
            if isinstance(scores, Mapping):
                pairs = list(scores.items())
            elif isinstance(scores, (str, bytes)) or not isinstance(scores, Iterable):
                raise _bad_type("per_query", f"{where} must be a mapping {{qid: value}} or a "
                                f"sequence of values, got {type(scores).__name__}")  # fmt: skip
            else:
                pairs = list(enumerate(scores))  # the queries are the positions
            if queries is None:
                queries = [q for q, _ in pairs]
                if not queries:
                    raise _bad_value("per_query", f"{where} has no query")
            got = dict(pairs)
            if len(got) != len(queries) or any(q not in got for q in queries):
                raise _bad_value("per_query", f"{where} does not hold the same queries as the "
                                 "first run")  # fmt: skip
            values[metric][name] = [_per_query_value(got[q], where, q) for q in queries]
    return metrics, names, queries, values


def _per_query_value(value: Any, where: str, qid: Any) -> float:
    try:
        return _real(value, where)
    except (FusionError, FusionTypeError) as e:
        raise e.located(argument="per_query", qid=qid) from None


def _run_index(value: Any, names: list, what: str) -> int:
    """A run given by its name or its index."""
    if isinstance(value, str):
        if value not in names:
            raise _bad_value(what, f"{what} {value!r} is not one of the runs {names}")
        return names.index(value)
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise _bad_type(what, f"{what} must be a run's name (str) or index (int), got "
                        f"{_describe(value)}")  # fmt: skip
    if not 0 <= operator.index(value) < len(names):
        raise _bad_value(what, f"{what} must be a run's name or an index below {len(names)}, "
                         f"got {operator.index(value)}")  # fmt: skip
    return operator.index(value)


def _tested_pairs(names: list, baseline: Any, pairs: Any) -> list:
    """(system, baseline) indices: every run against the baseline, the given pairs, or every
    pair i < j as (j, i)."""
    if baseline is not None and pairs is not None:
        raise _bad_value("pairs", "give baseline or pairs, not both")
    if baseline is not None:
        b = _run_index(baseline, names, "baseline")
        return [(s, b) for s in range(len(names)) if s != b]
    if pairs is None:
        return [(j, i) for i in range(len(names)) for j in range(i + 1, len(names))]
    out = []
    for k, pair in enumerate(_as_list(pairs, "pairs")):
        pair = _as_list(pair, f"pairs[{k}]")
        if len(pair) != 2:
            raise _bad_value(f"pairs[{k}]", f"pairs[{k}] must be a (system, baseline) pair, "
                             f"got {len(pair)} items")  # fmt: skip
        s, b = (_run_index(v, names, f"pairs[{k}]") for v in pair)
        if s == b:
            raise _bad_value(f"pairs[{k}]", f"pairs[{k}] compares {names[s]!r} with itself")
        out.append((s, b))
    if not out:
        raise _bad_value("pairs", "pairs is empty: nothing to compare")
    return out


def _check_settings(test, permutations, seed, correction, alpha, confidence, n_queries) -> tuple:
    test = _choice(test, "test", TESTS)
    permutations = _integer(permutations, "permutations", 1)
    if permutations > MAX_PERMUTATIONS:
        raise _bad_value("permutations", f"permutations must be at most 2**40, got {permutations}")
    seed = _integer(seed, "seed", 0)
    if seed > _MASK:
        raise _bad_value("seed", f"seed must be below 2**64, got {seed}")
    correction = _choice(correction, "correction", CORRECTIONS)
    alpha = _real(alpha, "alpha")
    if not 0.0 <= alpha <= 1.0:
        raise _bad_value("alpha", f"alpha must be between 0 and 1, got {alpha!r}")
    confidence = _real(confidence, "confidence")
    if not 0.0 < confidence < 1.0:
        raise _bad_value("confidence", "confidence must be between 0 and 1 (exclusive), got "
                         f"{confidence!r}")  # fmt: skip
    if test == "t" and n_queries < 2:
        raise _bad_value("test", f"the t-test needs at least 2 queries, got {n_queries}")
    return test, permutations, seed, correction, alpha, confidence


def compare_per_query(
    per_query: Mapping[Any, Mapping[Any, Any]],
    *,
    baseline: Any = None,
    pairs: Any = None,
    test: str = "randomization",
    permutations: int = 100_000,
    seed: int = 0,
    correction: str = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> list:
    """The tests of ``rankfusion.compare_per_query``, as its ``.pairs``: one
    :class:`ComparedPair` per tested (system, baseline) pair and metric, pair after pair (every
    run against ``baseline``; the ``pairs`` given; or, by default, every pair of runs i < j as
    run j against run i), each pair's metrics in order. Test t of that family draws from stream
    t of ``seed``; the family's p-values are corrected together."""
    metrics, names, queries, values = _per_query_table(per_query)
    tested = _tested_pairs(names, baseline, pairs)
    test, permutations, seed, correction, alpha, confidence = _check_settings(
        test, permutations, seed, correction, alpha, confidence, len(queries)
    )
    n = len(queries)
    t_quantile = _t_quantile(1.0 - confidence, n - 1.0) if n > 1 else None
    family = []
    for s, b in tested:
        for metric in metrics:
            stream = _Stream(seed, len(family))
            x, y = values[metric][names[s]], values[metric][names[b]]
            outcome = _paired(x, y, test, permutations, confidence, t_quantile, stream)
            family.append((names[s], names[b], metric, outcome))
    corrected = _correct([outcome[1] for *_, outcome in family], correction)
    return [
        ComparedPair(system, base, metric, delta, p, pc, pc <= alpha, effect, ci, w, t, loss)
        for (system, base, metric, (delta, p, effect, ci, w, t, loss)), pc in zip(family, corrected)
    ]
