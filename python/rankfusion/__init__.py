"""rankfusion: fast, deterministic, explainable Reciprocal Rank Fusion.

The functions here are the Rust core (``rankfusion._core``). ``rankfusion.reference`` holds the same
functions in plain Python: the executable specification the core is tested against.

Fusion (``Fusion``, the settings of a fusion checked once, and the functions over it: ``rrf``,
``fuse``, ``rrf_batch``, ``fuse_batch``, ``rrf_many``; the tables ``METHODS`` and ``NORMS``) and
revalidation (``revalidate``, ``revalidate_batch``, ``pool_size``) come straight from the core.
Bad input raises ``FusionError`` (a ValueError) or ``FusionTypeError`` (a TypeError), whose
attributes say what and where (``rankfusion.errors``). Tuning a fusion on qrels
(``optimize``), comparing runs with paired significance tests (``compare``,
``compare_per_query``: their statistics in the core, rust/stats/), the hybrid-search pipeline,
the SQLite store and the reference are imported on first use, so that ``import rankfusion`` (and
the ``rankfusion`` command) stays quick.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from . import _results  # noqa: F401 -- the result types' constructors, repr, to_dict
from ._core import (
    BatchResult,
    Contribution,
    Fusion,
    Hit,
    Revalidated,
    RevalidatedBatch,
    fuse,
    fuse_batch,
    pool_size,
    revalidate,
    revalidate_batch,
    rrf,
    rrf_batch,
    rrf_many,
)
from ._tables import METHODS, NORMS, MethodInfo, NormInfo
from .errors import FusionError, FusionTypeError

if TYPE_CHECKING:  # pragma: no cover
    from . import reference
    from ._compare import ComparedPair, Comparison, compare, compare_per_query
    from ._optimize import FoldResult, OptimizeResult, fold_of, optimize
    from ._version import __version__ as __version__
    from .hybrid import HybridHit, KeywordIndex, RecordStore, VectorIndex, hybrid_search
    from .sqlite_store import Document, SQLiteStore

# Attributes imported on first use: name -> (module, attribute or None for the module itself).
_LAZY = {
    "reference": (".reference", None),
    "HybridHit": (".hybrid", "HybridHit"),
    "KeywordIndex": (".hybrid", "KeywordIndex"),
    "RecordStore": (".hybrid", "RecordStore"),
    "VectorIndex": (".hybrid", "VectorIndex"),
    "hybrid_search": (".hybrid", "hybrid_search"),
    "Document": (".sqlite_store", "Document"),
    "SQLiteStore": (".sqlite_store", "SQLiteStore"),
    "optimize": ("._optimize", "optimize"),
    "OptimizeResult": ("._optimize", "OptimizeResult"),
    "FoldResult": ("._optimize", "FoldResult"),
    "fold_of": ("._optimize", "fold_of"),
    "compare": ("._compare", "compare"),
    "compare_per_query": ("._compare", "compare_per_query"),
    "Comparison": ("._compare", "Comparison"),
    "ComparedPair": ("._compare", "ComparedPair"),
    "__version__": ("._version", "__version__"),
}

__all__ = [
    "METHODS",
    "NORMS",
    "BatchResult",
    "ComparedPair",
    "Comparison",
    "Contribution",
    "Document",
    "FoldResult",
    "Fusion",
    "FusionError",
    "FusionTypeError",
    "Hit",
    "HybridHit",
    "KeywordIndex",
    "MethodInfo",
    "NormInfo",
    "OptimizeResult",
    "RecordStore",
    "Revalidated",
    "RevalidatedBatch",
    "SQLiteStore",
    "VectorIndex",
    "compare",
    "compare_per_query",
    "fuse",
    "fold_of",
    "fuse_batch",
    "hybrid_search",
    "optimize",
    "pool_size",
    "reference",
    "revalidate",
    "revalidate_batch",
    "rrf",
    "rrf_batch",
    "rrf_many",
]


if not TYPE_CHECKING:  # type checkers see the names imported above, so a typo is an error

    def __getattr__(name):
        if name in _LAZY:
            module_name, attribute = _LAZY[name]
            module = _import_module(module_name, __name__)
            value = module if attribute is None else getattr(module, attribute)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__():
        return sorted({*__all__, "__version__"})
