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

# --- Candidate revalidation ------------------------------------------------------------------------

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ += ["Revalidated", "RevalidatedBatch", "pool_size", "revalidate", "revalidate_batch"]

@final
class Revalidated:
    """A live candidate: unpacks as ``id, record, score``."""

    @property
    def id(self) -> Any: ...
    @property
    def record(self) -> Any: ...
    @property
    def score(self) -> float: ...
    def __new__(cls, id: Any, record: Any, score: float) -> Revalidated: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

@final
class RevalidatedBatch:
    """The live candidates of a batch: unpacks as ``ids, scores, counts``."""

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """(Q, W) int64, padded with the pad value."""
    @property
    def scores(self) -> npt.NDArray[np.float64]:
        """(Q, W) float64, padded with NaN."""
    @property
    def counts(self) -> npt.NDArray[np.int64]:
        """(Q,) int64: the live candidates kept in each row."""
    def __new__(cls, ids: Any, scores: Any, counts: Any) -> RevalidatedBatch: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def pool_size(limit: int, filtering: str, multiplier: int = 3) -> int:
    """``limit`` for ``"pre"`` filtering, else ``limit * multiplier``."""

def revalidate(
    candidates: Iterable[tuple[Hashable, float]],
    lookup: Any,
    *,
    where: Optional[Callable[[Any], Any]] = None,
    limit: Optional[int] = None,
) -> list[Revalidated]:
    """The live candidates, as (id, record, score) triples, in input order."""

def revalidate_batch(
    ids: npt.ArrayLike,
    scores: npt.ArrayLike,
    is_live: Callable[[npt.NDArray[np.int64]], npt.ArrayLike],
    *,
    limit: Optional[int] = None,
    pad: int = -1,
) -> RevalidatedBatch:
    """The live candidates of Q queries at once: ONE ``is_live`` call for the whole batch."""

# --- end of Candidate revalidation ----------------------------------------------------------------
