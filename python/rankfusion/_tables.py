"""``METHODS`` and ``NORMS``: the core's tables of methods and normalisations (rust/fusion/methods.rs),
as read-only mappings name -> row."""

from types import MappingProxyType
from typing import Any, Dict

from ._core import _METHOD_ROWS, _NORM_ROWS


class _Row:
    """A read-only row: its fields are the keys of its ``__slots__`` (their docs the values)."""

    __slots__: Dict[str, str] = {}

    def __init__(self, *values: Any) -> None:
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__name__}({shown})"

    _shown: "tuple[str, ...]" = ()


class MethodInfo(_Row):
    """One row of ``rankfusion.METHODS``: what a method reads, takes and computes."""

    __slots__ = {
        "name": "Its name (the ``method`` setting).",
        "kind": '"rank" (its values come from the ranks) or "score" (from the lists\' scores).',
        "weighted": "Whether it takes ``weights``.",
        "params": "The parameters it takes besides the weights (``k``, ``normalize``, ``phi``, "
        "``gamma``, ``sigma``).",
        "norm": "The normalisation it applies itself (its ``norm`` is then refused), or None.",
        "fills": "Whether a list that does not hold a key still gives it a term.",
        "term": "What one occurrence adds (``w`` weight, ``v`` normalised value, ``r`` rank).",
        "combine": "How a key's terms become its score.",
        "anchor": "Where the definition comes from.",
        "traced": "Whether ``rankfusion.optimize`` scores its settings from one traced fusion "
        "(a sum of terms of one list's rank or value each, perhaps times a factor of the lists "
        "holding the key).",
    }
    _shown = ("name", "kind", "term", "combine")


class NormInfo(_Row):
    """One row of ``rankfusion.NORMS``."""

    __slots__ = {
        "name": "Its name (the ``norm`` setting).",
        "reads_scores": "Whether it reads the lists' scores (``rank`` and ``borda`` read the "
        "ranks only).",
    }
    _shown = ("name", "reads_scores")


MethodInfo.__module__ = NormInfo.__module__ = "rankfusion"

METHODS: "MappingProxyType[str, MethodInfo]" = MappingProxyType(
    {row[0]: MethodInfo(*row) for row in _METHOD_ROWS}
)
"""The fusion methods by name (read-only)."""
NORMS: "MappingProxyType[str, NormInfo]" = MappingProxyType(
    {row[0]: NormInfo(*row) for row in _NORM_ROWS}
)
"""The normalisations by name (read-only)."""
