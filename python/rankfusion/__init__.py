"""rankfusion: fast, deterministic, explainable Reciprocal Rank Fusion.

The functions here are the Rust core (``rankfusion._core``). ``rankfusion.reference`` holds the same
functions in plain Python: the executable specification the core is tested against.
"""

from typing import TYPE_CHECKING, Any, List

from ._core import Contribution, Hit, rrf

if TYPE_CHECKING:  # pragma: no cover
    from . import _reference as reference

__all__ = ["Contribution", "Hit", "reference", "rrf"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The reference is imported on first use: its imports (dataclasses, inspect, ...) are a good
    # part of the start-up time of the `rankfusion` command, which never uses it.
    if name == "reference":
        from . import _reference

        return _reference
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted([*globals(), "reference"])
