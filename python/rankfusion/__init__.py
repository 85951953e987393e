"""rankfusion: fast, deterministic, explainable Reciprocal Rank Fusion.

The functions here are the Rust core (``rankfusion._core``). ``rankfusion.reference`` holds the same
functions in plain Python: the executable specification the core is tested against.
"""

from . import _reference as reference
from ._core import BatchResult, Contribution, Hit, rrf, rrf_batch, rrf_many

__all__ = [
    "BatchResult",
    "Contribution",
    "Hit",
    "reference",
    "rrf",
    "rrf_batch",
    "rrf_many",
]
__version__ = "0.1.0"

# --- Candidate revalidation and hybrid search --------------------------------------------------
from ._core import Revalidated, RevalidatedBatch, pool_size, revalidate, revalidate_batch
from .hybrid import HybridHit, KeywordIndex, RecordStore, VectorIndex, hybrid_search
from .sqlite_store import Document, SQLiteStore

__all__ += [
    "Document",
    "HybridHit",
    "KeywordIndex",
    "RecordStore",
    "Revalidated",
    "RevalidatedBatch",
    "SQLiteStore",
    "VectorIndex",
    "hybrid_search",
    "pool_size",
    "revalidate",
    "revalidate_batch",
]
# --- end of Candidate revalidation and hybrid search ---------------------------------------------
