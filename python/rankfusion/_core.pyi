"""Type stubs for the Rust core (``rankfusion._core``). Checked by ``mypy.stubtest`` in the tests."""

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, Optional, final

__all__ = ["Contribution", "Hit", "rrf"]

@final
class Contribution:
    """One counted occurrence of a key: ``weight / (k + rank)`` from list ``list_index``."""

    @property
    def list_index(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def weight(self) -> float: ...
    @property
    def contribution(self) -> float: ...
    @property
    def score(self) -> Optional[float]:
        """The list's own raw score for this item, when ``scores=`` was passed."""
    def __new__(
        cls,
        list_index: int,
        rank: int,
        weight: float,
        contribution: float,
        score: Optional[float] = None,
    ) -> Contribution: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

@final
class Hit:
    """A fused hit: unpacks as ``key, score``; ``contributions`` is None unless ``trace=True``."""

    @property
    def key(self) -> Any: ...
    @property
    def score(self) -> float: ...
    @property
    def contributions(self) -> Optional[tuple[Contribution, ...]]: ...
    def __new__(
        cls,
        key: Any,
        score: float,
        contributions: Optional[tuple[Contribution, ...]] = None,
    ) -> Hit: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def rrf(
    lists: Iterable[Iterable[Hashable]],
    *,
    k: float = 60,
    weights: Optional[Sequence[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    scores: Optional[Sequence[Optional[Sequence[float]]]] = None,
    trace: bool = False,
) -> list[Hit]:
    """Reciprocal Rank Fusion of ranked lists (best first)."""
