"""Type stubs for the Rust core (``rankfusion._core``). Checked by ``mypy.stubtest`` in the tests."""

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, Optional, final

import numpy as np
import numpy.typing as npt

__all__ = ["BatchResult", "Contribution", "Hit", "_bare_loop", "rrf", "rrf_batch", "rrf_many"]

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

@final
class BatchResult:
    """The result of ``rrf_batch``: unpacks as ``ids, scores, counts``."""

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """(Q, W) int64, padded with the pad value."""
    @property
    def scores(self) -> npt.NDArray[np.float64]:
        """(Q, W) float64, padded with NaN."""
    @property
    def counts(self) -> npt.NDArray[np.int64]:
        """(Q,) int64: the number of real hits of each row."""
    @property
    def ranks(self) -> Optional[npt.NDArray[np.int32]]:
        """(Q, W, L) int32 with trace=True: the hit's best rank in list l, 0 where absent."""
    @property
    def contributions(self) -> Optional[npt.NDArray[np.float64]]:
        """(Q, W, L) float64 with trace=True: the hit's contribution from list l, 0.0 if absent."""
    def __new__(
        cls,
        ids: Any,
        scores: Any,
        counts: Any,
        ranks: Any = None,
        contributions: Any = None,
    ) -> BatchResult: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def rrf_batch(
    lists: Iterable[Any],
    *,
    pad: int = -1,
    k: float = 60,
    weights: Optional[Sequence[float]] = None,
    window: Optional[int] = None,
    duplicates: str = "first",
    tie_break: str = "best_rank",
    offset: int = 0,
    limit: Optional[int] = None,
    min_score: Optional[float] = None,
    normalize: bool = False,
    trace: bool = False,
    threads: Optional[int] = None,
) -> BatchResult:
    """RRF of Q queries at once over 2-D integer id arrays (Q, N_i) padded with ``pad``."""

def rrf_many(
    queries: Iterable[Iterable[Iterable[Hashable]]],
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
    scores: Optional[Sequence[Any]] = None,
    trace: bool = False,
    threads: Optional[int] = None,
) -> list[list[Hit]]:
    """``[rrf(lists, **kwargs) for lists in queries]`` in one call, in parallel."""

def _bare_loop(
    lists: Iterable[Any], *, threads: Optional[int] = None, repeat: int = 1
) -> list[float]:
    """Benchmarks only: seconds of each of ``repeat`` bare runs of rrf_batch's Rust loop."""
