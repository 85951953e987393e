"""Fuse runs held as tables: Arrow, pandas, polars, DuckDB results, Parquet files.

A run as a table has one row per retrieved document: a query id, a doc id and the run's score
(any other column is ignored). :func:`fuse` takes one table per run, or one long table with a run
column, and returns the fused run as a ``pyarrow.Table`` with the columns query, doc, score (the
fused score, float64) and rank (1-based, int64), named as the input's columns are::

    import pyarrow.parquet as pq
    from rankfusion import frame

    runs = [pq.read_table("bm25.parquet"), pq.read_table("dense.parquet")]
    fused = frame.fuse(runs, limit=1000)  # columns qid, docid, score, rank
    fused = frame.fuse(runs, **frame.RANX)  # ranx's names: q_id, doc_id, score

What it computes is exactly what ``rankfusion fuse`` computes on the same runs written as TREC
files (``rankfusion.trec.read_run`` + ``rankfusion.trec.fuse``), document for document and score
bit for bit:

- each query's documents are ranked as ``read_run`` ranks a file's lines: ``order="score"``
  (default) by score descending, ties by doc id descending (a plain string comparison; integer
  ids compare as their decimal text, the way a TREC file holds them); ``order="file"`` in the
  order of the rows. A query's rows need not be contiguous;
- queries come in the order they first appear in the first run, then the queries only the
  second run has, and so on (for a long table: in the rows of the first run, ...);
- a query missing from some runs is fused from the runs that have it.

How: the id columns are dictionary-encoded by Arrow (doc ids in blocks of queries: a doc needs
one code only among the rows of its query), each run becomes (queries x docs) int64 code matrices
padded with -1 and float64 score matrices, queries of similar size are fused together by the Rust
batch engine (``rankfusion.rrf_batch``, GIL released, in parallel), and the codes are mapped back
to ids. There is no Python object per row. See ``docs/frame.md``.

Bad tables raise what the TREC readers raise, with the run, the row and the column instead of the
file and the line (:class:`TableError`, a ValueError): a missing column, a null id or score, a
NaN score (``inf`` is accepted), a doc id twice in one query of one run (with
``duplicates="error"``); a column of the wrong type is a TypeError.

Column names: :data:`TREC` (``qid, docid, score``, the default), :data:`PYTERRIER`
(``qid, docno, score``), :data:`RANX` (``q_id, doc_id, score``), :data:`IR_MEASURES`
(``query_id, doc_id, score``); pass one as ``**frame.PYTERRIER``.

Tables in: ``pyarrow.Table``/``RecordBatch``/``RecordBatchReader``, or anything that exports
the Arrow PyCapsule stream interface (``__arrow_c_stream__``: polars, pandas >= 2.2, DuckDB,
...); a pandas DataFrame without it goes through ``pyarrow.Table.from_pandas``. This module
never imports pandas or polars itself. Needs pyarrow: ``pip install "rankfusion[arrow]"``.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

try:
    import pyarrow as pa
    import pyarrow.compute as pc
except ImportError:
    raise ImportError(
        'rankfusion.frame needs pyarrow, which is not installed: pip install "rankfusion[arrow]"'
    ) from None

from . import trec
from ._core import Fusion
from .errors import FusionError

__all__ = [
    "IR_MEASURES",
    "PRESETS",
    "PYTERRIER",
    "RANX",
    "TREC",
    "ColumnTypeError",
    "TableError",
    "columns_of",
    "file_format",
    "from_run",
    "fuse",
    "read_table",
    "read_trec",
    "to_run",
    "write_parquet",
    "write_trec",
]

TREC = MappingProxyType({"query": "qid", "doc": "docid", "score": "score"})
"""The default column names, those of a TREC run file: ``qid, docid, score``."""
PYTERRIER = MappingProxyType({"query": "qid", "doc": "docno", "score": "score"})
"""PyTerrier's result frames: ``qid, docno, score``."""
RANX = MappingProxyType({"query": "q_id", "doc": "doc_id", "score": "score"})
"""ranx's ``Run.from_df`` / ``from_parquet`` / ``to_dataframe``: ``q_id, doc_id, score``."""
IR_MEASURES = MappingProxyType({"query": "query_id", "doc": "doc_id", "score": "score"})
"""ir-measures' run frames: ``query_id, doc_id, score``."""
PRESETS = MappingProxyType(
    {"trec": TREC, "pyterrier": PYTERRIER, "ranx": RANX, "ir_measures": IR_MEASURES}
)
"""The column-name presets by name, in the order :func:`columns_of` tries them."""

_ORDERS = ("score", "file")
# Fused in one call of the engine: about this many cells (queries x sum of the runs' widths).
_BLOCK_CELLS = 1 << 22
# Doc ids are hashed in blocks of queries of about this many rows (all runs together): a block's
# hash table stays in the cache, as the command's native path interns each query's ids on its
# own (5 runs x 2,000 queries x 1,000 docs: 1 << 20 took 2.3 s of CPU to hash, 1 << 12 0.54 s).
_ENCODE_ROWS = 1 << 12


class TableError(ValueError):
    """A run table that cannot be fused: names the run, and where it applies the row (0-based,
    in the table as given) and the column.

    Attributes: ``run`` (``"runs[1]"`` or ``"run 'bm25'"``), ``row`` (int or None), ``column``
    (str or None) and ``reason``.
    """

    def __init__(self, run: str, row: Optional[int], column: Optional[str], reason: str) -> None:
        self.run = run
        self.row = row
        self.column = column
        self.reason = reason
        where = run
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):  # picklable with the custom signature (Dask, multiprocessing)
        return (type(self), (self.run, self.row, self.column, self.reason))


class ColumnTypeError(TypeError):
    """A run table's id or score column of the wrong type (``runs[1]: column 'score' must hold
    numbers, got string``).

    Attributes: ``run`` (as :class:`TableError`'s), ``column`` and ``reason``.
    """

    def __init__(self, run: str, column: str, reason: str) -> None:
        self.run = run
        self.column = column
        self.reason = reason
        super().__init__(f"{run}: column {column!r} {reason}")

    def __reduce__(self):  # picklable with the custom signature (Dask, multiprocessing)
        return (type(self), (self.run, self.column, self.reason))


# --- tables in ----------------------------------------------------------------------------------


def _as_table(obj: Any, what: str) -> pa.Table:
    """A ``pyarrow.Table`` from anything that holds one (without importing pandas or polars)."""
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if isinstance(obj, pa.RecordBatchReader):
        return obj.read_all()
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(obj).read_all()
    if type(obj).__module__.split(".")[0] == "pandas" and type(obj).__name__ == "DataFrame":
        return pa.Table.from_pandas(obj, preserve_index=False)
    raise TypeError(
        f"{what} must be a table: a pyarrow Table, or an object with __arrow_c_stream__ "
        f"(polars, pandas, DuckDB, ...), got {type(obj).__name__}"
    )


def _run_names(n: int) -> List[str]:
    """How errors name each of a list of ``n`` runs (``TableError.run``): ``runs[i]``."""
    return [f"runs[{i}]" for i in range(n)]


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _column(table: pa.Table, name: str, run: str) -> pa.ChunkedArray:
    names = table.schema.names
    found = names.count(name)
    if found == 1:
        return table.column(name)
    if found > 1:
        raise TableError(run, None, name, f"the table has {found} columns of that name")
    hint = ""
    for preset, columns in PRESETS.items():
        if all(c in names for c in columns.values()):
            hint = f"; it has {preset}'s names: pass **rankfusion.frame.{preset.upper()}"
            break
    shown = ", ".join(map(repr, names[:10])) + (", ..." if len(names) > 10 else "")
    raise TableError(run, None, name, f"no such column (the table has {shown}){hint}")


def _first_true(mask: Any) -> int:
    return int(pc.index(mask, True).as_py())


def _null_error(col: pa.ChunkedArray, run: str, name: str, what: str) -> TableError:
    return TableError(run, _first_true(pc.is_null(col)), name, f"{what} is null")


def _indices(encoded: pa.ChunkedArray) -> np.ndarray:
    chunks = [c.indices.to_numpy() for c in encoded.chunks]
    if not chunks:
        return np.empty(0, np.int32)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _id_column(col: pa.ChunkedArray, run: str, name: str, what: str) -> pa.ChunkedArray:
    """The column, checked: strings or integers (or a dictionary of them), no null. Raises
    ColumnTypeError for another type, TableError for a null."""
    t = col.type
    value_type = t.value_type if pa.types.is_dictionary(t) else t
    if not (_is_text(value_type) or pa.types.is_integer(value_type)):
        raise ColumnTypeError(run, name, f"must hold strings or integers, got {t}")
    if col.null_count:
        raise _null_error(col, run, name, what)
    if pa.types.is_string_view(value_type):
        # polars' strings and Categoricals (a string_view dictionary): Arrow has no take for
        # string_view (nor a cast of such a dictionary to plain strings), so the ids are read
        # as large_string, the type the output has for them
        large = pa.large_string()
        col = col.cast(pa.dictionary(t.index_type, large) if pa.types.is_dictionary(t) else large)
    if pa.types.is_dictionary(t) and col.num_chunks:
        values = col.unify_dictionaries().chunk(0).dictionary
        if values.null_count:  # a null in the dictionary that a row may use
            return _id_column(col.cast(col.type.value_type), run, name, what)
    return col


def _common_type(types: Sequence[pa.DataType]) -> pa.DataType:
    """The type every run's ids are cast to: theirs when they agree, else int64 for integers
    of other widths, else large_string (integers become their decimal text)."""
    plain = {t.value_type if pa.types.is_dictionary(t) else t for t in types} or {pa.string()}
    if len(plain) == 1 and not pa.types.is_string_view(next(iter(plain))):
        return plain.pop()
    if all(pa.types.is_integer(t) for t in plain) and pa.uint64() not in plain:
        return pa.int64()
    return pa.large_string()


def _same_dictionaries(columns: Sequence[pa.ChunkedArray]) -> bool:
    types = {c.type for c in columns}
    return len(types) == 1 and pa.types.is_dictionary(next(iter(types)))


def _first_appearances(index: np.ndarray) -> np.ndarray:
    """The distinct values of ``index`` in order of first appearance (hashing only the first
    value of each run of equal values: ids of a query come in runs)."""
    if len(index) < 2:
        return index.astype(np.int64)
    starts = np.concatenate(([0], np.flatnonzero(index[1:] != index[:-1]) + 1))
    return pc.unique(pa.array(index[starts])).to_numpy().astype(np.int64)


def _runs_of(chunk: pa.Array) -> Optional[Tuple[pa.Array, np.ndarray]]:
    """``(values, lengths)`` of the runs of equal ids in ``chunk``, or None when the runs are
    too short to be worth it."""
    if len(chunk) < 64:
        return None
    encoded = pc.run_end_encode(chunk)
    if len(encoded.values) * 4 > len(chunk):
        return None
    ends = encoded.run_ends.to_numpy().astype(np.int64)
    return encoded.values, np.diff(ends, prepend=0)


def _encode(
    columns: Sequence[pa.ChunkedArray], runs: bool = False
) -> Tuple[List[np.ndarray], pa.Array]:
    """One dictionary for the ids of every column: ``(codes, values)`` with ``values[codes[i]
    [r]]`` the id in row r of ``columns[i]``, values in order of first appearance over
    ``columns[0]``, ``columns[1]``..., no value twice. One hash pass over all the rows; with
    ``runs`` (query ids: rows of a query usually come together), over the first row of each
    run of equal ids."""
    sizes = [len(c) for c in columns]
    chunks = [chunk for c in columns for chunk in c.chunks]
    if columns and _same_dictionaries(columns):
        # dictionary-encoded already (a Parquet column read as such, a pandas category): one
        # dictionary for all, then its values reordered by first appearance (used ones only)
        t = columns[0].type
        unified = pa.chunked_array(chunks, t).unify_dictionaries()
        dictionary = unified.chunk(0).dictionary if chunks else pa.array([], t.value_type)
        index = _indices(unified)
        used = _first_appearances(index)
        if len(used) == len(dictionary) and (used == np.arange(len(used))).all():
            # the dictionary is in order of first appearance already (Parquet writes a column's
            # dictionary so, and unifying appends each next column's new values): as it is
            codes, values = index, dictionary
        else:
            remap = np.zeros(len(dictionary), np.int64)
            remap[used] = np.arange(len(used))
            codes, values = np.take(remap, index), dictionary.take(pa.array(used))
    else:
        common = _common_type([c.type for c in columns if len(c)] or [c.type for c in columns])
        chunks = [c if c.type == common else c.cast(common) for c in chunks]
        found = [_runs_of(c) for c in chunks] if runs else []
        if found and all(f is not None for f in found):
            encoded = pc.dictionary_encode(pa.chunked_array([f[0] for f in found], common))
            lengths = np.concatenate([f[1] for f in found])
            codes = np.repeat(_indices(encoded), lengths)
        else:
            encoded = pc.dictionary_encode(pa.chunked_array(chunks, common))
            codes = _indices(encoded)
        values = (
            encoded.chunk(encoded.num_chunks - 1).dictionary
            if encoded.num_chunks
            else pa.array([], common)
        )
    bounds = np.cumsum([0] + sizes)
    return [codes[a:b] for a, b in zip(bounds[:-1], bounds[1:])], values


def _score_column(col: pa.ChunkedArray, run: str, name: str) -> np.ndarray:
    t = col.type
    if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)):
        raise ColumnTypeError(run, name, f"must hold numbers, got {t}")
    if col.null_count:
        raise _null_error(col, run, name, "score")
    if t != pa.float64():
        col = col.cast(pa.float64(), safe=False)  # as a TREC file's text would be read
    scores = col.to_numpy()
    nan = np.isnan(scores)
    if nan.any():
        raise TableError(run, int(np.argmax(nan)), name, "score is NaN")
    return scores


def _as_text(values: Any) -> Any:
    return values if _is_text(values.type) else values.cast(pa.large_string())


class _Source(NamedTuple):
    """One run as read and checked: its table's doc column, and per row of the table the
    global query code and the raw score; ``rows`` are the run's rows of the table, in order
    (None: all of them; a long table holds several runs)."""

    docs: pa.ChunkedArray
    q: np.ndarray
    s: np.ndarray
    rows: Optional[np.ndarray]


class _Runs(NamedTuple):
    names: List[str]  # how errors name each run
    labels: List[str]  # the run names recorded in the output's metadata
    sources: List[_Source]
    queries: pa.Array  # query id of each global code, in order of first appearance


def _check_names(query: Any, doc: Any, score: Any, run: Any) -> None:
    for value, name in ((query, "query"), (doc, "doc"), (score, "score")):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str), got {type(value).__name__}")
    if run is not None and not isinstance(run, str):
        raise TypeError(f"run must be a column name (str) or None, got {type(run).__name__}")
    if len({query, doc, score}) < 3:
        raise ValueError(
            f"query, doc and score must name three columns, got {query!r}, {doc!r}, {score!r}"
        )


def _run_list(runs: Any) -> Tuple[List[str], List[str], List[Any]]:
    """``(error names, labels, tables)`` for a list or a mapping of tables."""
    if isinstance(runs, Mapping):
        labels = [str(key) for key in runs]
        return [f"run {key!r}" for key in runs], labels, list(runs.values())
    if isinstance(runs, (pa.Table, pa.RecordBatch)) or hasattr(runs, "__arrow_c_stream__"):
        raise TypeError(
            "runs is one table: pass a list of tables (one per run), or name the column that "
            "tells the runs apart with run='...'"
        )
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Iterable):
        raise TypeError(
            f"runs must be a list of tables or a dict of named tables, got {type(runs).__name__}"
        )
    tables = list(runs)
    return _run_names(len(tables)), [str(i) for i in range(len(tables))], tables


class _Read(NamedTuple):
    """How to read the runs: column names, whether a repeated doc id is an error, and the
    check of the fusion arguments (given the number of runs) that comes before any row."""

    query: str
    doc: str
    score: str
    duplicates_error: bool
    check: Callable[[int], None]


def _gather(runs: Any, how: _Read, run: Optional[str], run_order: Any) -> _Runs:
    if run is None:
        if run_order is not None:
            raise ValueError("run_order needs run= (the column that tells the runs apart)")
        return _gather_list(*_run_list(runs), how)
    return _gather_long(_as_table(runs, "runs"), how, run, run_order)


def _gather_list(names: List[str], labels: List[str], objs: List[Any], how: _Read) -> _Runs:
    """The runs of a list of tables, each checked in turn (columns, types, nulls, NaN) and its
    first problem raised, as the TREC readers read one file after the other: with
    ``duplicates="error"`` a repeated doc id in an earlier run is the problem reported."""
    how.check(len(objs))
    qcols: List[pa.ChunkedArray] = []
    dcols: List[pa.ChunkedArray] = []
    scores: List[np.ndarray] = []
    for name, obj in zip(names, objs):
        try:
            table = _as_table(obj, name)
            cols = [_column(table, c, name) for c in (how.query, how.doc, how.score)]
            q = _id_column(cols[0], name, how.query, "query id")
            d = _id_column(cols[1], name, how.doc, "doc id")
            scores.append(_score_column(cols[2], name, how.score))
        except (TableError, TypeError):
            if how.duplicates_error and qcols:  # a repeat in an earlier run comes first
                _prepare(_list_runs(names, labels, qcols, dcols, scores), how, 1)
            raise
        qcols.append(q)
        dcols.append(d)
    return _list_runs(names, labels, qcols, dcols, scores)


def _list_runs(
    names: List[str],
    labels: List[str],
    qcols: List[pa.ChunkedArray],
    dcols: List[pa.ChunkedArray],
    scores: List[np.ndarray],
) -> _Runs:
    qcodes, queries = _encode(qcols, True)
    sources = [_Source(d, q, s, None) for d, q, s in zip(dcols, qcodes, scores)]
    n = len(sources)
    return _Runs(names[:n], labels[:n], sources, queries)


def _gather_long(table: pa.Table, how: _Read, run: str, run_order: Any) -> _Runs:
    """The runs of one long table, told apart by the column ``run``."""
    query, doc, score = how.query, how.doc, how.score
    if run in (query, doc, score):
        raise ValueError(f"run must name a fourth column, got {run!r}")
    where = "runs"
    (r,), rvalues = _encode([_id_column(_column(table, run, where), where, run, "run")], True)
    if run_order is None:
        order = rvalues
        index = r
    else:
        if isinstance(run_order, (str, bytes)) or not isinstance(run_order, Iterable):
            raise TypeError(
                f"run_order must be a list of run values, got {type(run_order).__name__}"
            )
        wanted = list(run_order)
        if len(set(wanted)) != len(wanted):
            raise ValueError(f"run_order names a run twice: {wanted!r}")
        try:
            order = pa.array(wanted).cast(rvalues.type) if wanted else rvalues[:0]
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise TypeError(
                f"run_order does not match column {run!r} ({rvalues.type}): {e}"
            ) from None
        position = pc.index_in(rvalues, value_set=order)
        if position.null_count:
            missing = _first_true(position.is_null())
            row = int(np.argmax(r == missing))
            raise TableError(
                f"run {rvalues[missing].as_py()!r}", row, run, "the run is not in run_order"
            )
        index = position.to_numpy()[r]
    labels = [str(v) for v in order.to_pylist()]
    names = [f"run {v!r}" for v in order.to_pylist()]
    how.check(len(names))

    cols = [_column(table, c, where) for c in (query, doc, score)]
    try:
        qcol = _id_column(cols[0], where, query, "query id")
        dcol = _id_column(cols[1], where, doc, "doc id")
        s = _score_column(cols[2], where, score)
    except TableError as e:  # a row of the long table: name its run
        raise TableError(names[int(index[e.row])], e.row, e.column, e.reason) from None
    (q,), queries = _encode([qcol], True)
    # rows of each run, in table order
    by_run = np.argsort(index, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(index, minlength=len(order)))))
    rows = [by_run[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    # queries in order of first appearance in the first run, then the second, ...
    firsts = [pc.unique(pa.array(q[i])).to_numpy() for i in rows]
    seen = pc.unique(pa.array(np.concatenate(firsts) if firsts else q[:0])).to_numpy()
    recode = np.zeros(len(queries), np.int64)
    recode[seen] = np.arange(len(seen))
    q = recode[q]
    queries = queries.take(pa.array(seen))
    return _Runs(names, labels, [_Source(dcol, q, s, i) for i in rows], queries)


class _Grouped(NamedTuple):
    """A run's rows grouped by query: queries by code, each query's rows in table order.
    ``order[p]`` is the table row at position p (None: row p), ``q``/``s`` the query codes and
    raw scores by position, ``start``/``count`` each query code's positions."""

    order: Optional[np.ndarray]
    q: np.ndarray
    s: np.ndarray
    start: np.ndarray
    count: np.ndarray


def _group(source: _Source, n_queries: int) -> _Grouped:
    order = source.rows
    q = source.q if order is None else source.q[order]
    if len(q) > 1 and (q[1:] < q[:-1]).any():
        by_query = np.argsort(q, kind="stable")
        order = by_query if order is None else order[by_query]
        q = q[by_query]
    s = source.s if order is None else source.s[order]
    count = np.bincount(q, minlength=n_queries).astype(np.int64)
    return _Grouped(order, q, s, np.cumsum(count) - count, count)


def _piece(column: pa.ChunkedArray, order: Optional[np.ndarray], a: int, b: int) -> pa.ChunkedArray:
    """Positions a..b-1 of a grouped run's doc column: a slice when they are adjacent rows."""
    if order is None:
        return column.slice(a, b - a)
    rows = order[a:b]
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1 and (np.diff(rows) == 1).all():
        return column.slice(int(rows[0]), b - a)
    return column.take(pa.array(rows))


def _encode_docs(
    sources: List[_Source], groups: List[_Grouped], threads: Optional[int]
) -> Tuple[List[np.ndarray], Any]:
    """Doc codes for every grouped position of every run, and the doc id of each code.

    A doc is one code in all the runs' rows of one query, which is all that fusion needs:
    the queries are cut into blocks of about ``_ENCODE_ROWS`` rows, and the doc ids of each
    block are dictionary-encoded on their own (in parallel; small hash tables), the blocks'
    dictionaries laid end to end. Doc columns that are all dictionary-encoded alike are
    unified instead (no hashing of the ids)."""
    columns = [s.docs for s in sources]
    if columns and _same_dictionaries(columns):
        distinct = list({id(c): c for c in columns}.values())
        codes, values = _encode(distinct)
        by_column = {id(c): k for c, k in zip(distinct, codes)}
        out = []
        for source, group in zip(sources, groups):
            k = by_column[id(source.docs)]
            out.append(k if group.order is None else k[group.order])
        return out, values
    common = _common_type([c.type for c in columns if len(c)] or [c.type for c in columns])
    n_queries = len(groups[0].count) if groups else 0
    total = np.zeros(n_queries, np.int64)
    for g in groups:
        total += g.count
    targets = np.arange(1, int(total.sum()) // _ENCODE_ROWS + 1) * _ENCODE_ROWS
    cuts = np.searchsorted(np.cumsum(total), targets) + 1  # a block ends once it has enough
    bounds = np.unique(np.concatenate(([0], cuts, [n_queries])).clip(0, n_queries))
    blocks = list(zip(bounds[:-1], bounds[1:]))
    size = sum(len(g.q) for g in groups)
    dtype = np.int32 if size < 2**31 else np.int64
    out = [np.empty(len(g.q), dtype) for g in groups]

    def encode(block: Tuple[int, int]) -> pa.Array:
        qa, qb = block
        pieces: List[pa.Array] = []
        spans = []
        for column, g in zip(columns, groups):
            a = int(g.start[qa])
            b = int(g.start[qb - 1] + g.count[qb - 1])
            piece = _piece(column, g.order, a, b)
            pieces += [c if c.type == common else c.cast(common) for c in piece.chunks]
            spans.append((a, b))
        encoded = pc.dictionary_encode(pa.chunked_array(pieces, common))
        codes = _indices(encoded)
        done = 0
        for target, (a, b) in zip(out, spans):
            target[a:b] = codes[done : done + b - a]
            done += b - a
        return encoded.chunk(encoded.num_chunks - 1).dictionary if encoded.num_chunks else None

    workers = max(1, min(_threads(threads), len(blocks)))
    if workers > 1:
        pool = ThreadPoolExecutor(workers)
        try:
            dictionaries = list(pool.map(encode, blocks))
        except BaseException:  # Ctrl-C: the blocks not started are dropped, unwaited for
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    else:
        dictionaries = [encode(b) for b in blocks]
    offset = 0
    for (qa, qb), dictionary in zip(blocks, dictionaries):
        if offset:
            for target, g in zip(out, groups):
                target[g.start[qa] : g.start[qb - 1] + g.count[qb - 1]] += offset
        offset += 0 if dictionary is None else len(dictionary)
    values = [d for d in dictionaries if d is not None]
    # one array (a copy of the ids, once): taking rows of thousands of small chunks is slow
    return out, pa.concat_arrays(values) if values else pa.array([], common)


def _threads(threads: Optional[int]) -> int:
    """The threads to use: ``threads``, else ``RAYON_NUM_THREADS`` when set to a positive
    number (as the engine reads it), else every CPU."""
    if threads is not None:
        return int(threads)
    env = os.environ.get("RAYON_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else os.cpu_count() or 1


def _check_duplicates(
    g: _Grouped, d: np.ndarray, name: str, doc: str, queries: pa.Array, docs: Any
) -> None:
    """TableError for a doc id twice in one query, as ``read_run(duplicates="error")`` reports
    it: in the first query (in the run's order) that has one, its first repeated row."""
    if len(g.q) < 2:
        return
    key = g.q.astype(np.int64) * max(len(docs), 1) + d
    encoded = pc.dictionary_encode(pa.array(key))
    if len(encoded.dictionary) == len(key):
        return
    c = encoded.indices.to_numpy()
    before = np.concatenate(([-1], np.maximum.accumulate(c)[:-1]))
    repeats = np.flatnonzero(c <= before)  # a position whose (query, doc) came earlier
    rows = np.arange(len(c)) if g.order is None else g.order
    first_row = rows[g.start[g.q[repeats]]]  # the row where the repeat's query first appears
    second = int(repeats[np.lexsort((rows[repeats], first_row))[0]])
    first = int(g.start[g.q[second]] + np.argmax(c[g.start[g.q[second]] : second] == c[second]))
    qid = queries[int(g.q[second])].as_py()
    docid = docs[int(d[second])].as_py()
    raise TableError(
        name,
        int(rows[second]),
        doc,
        f"query {qid!r} has doc {docid!r} twice (first on row {int(rows[first])})",
    )


def _prepare(gathered: _Runs, how: _Read, threads: Optional[int]) -> Any:
    """Group every run by query and code its doc ids: ``(groups, doc codes, docs)``; with
    ``duplicates="error"``, the first run with a repeated doc id raises TableError."""
    n_queries = len(gathered.queries)
    groups = [_group(s, n_queries) for s in gathered.sources]
    dcodes, docs = _encode_docs(gathered.sources, groups, threads)
    if how.duplicates_error:
        for name, g, d in zip(gathered.names, groups, dcodes):
            _check_duplicates(g, d, name, how.doc, gathered.queries, docs)
    return groups, dcodes, docs


class _Ranked(NamedTuple):
    """A run's rows grouped by query and ranked: doc codes and raw scores by position, and per
    query code the first position and the number of its rows (0: not in the run)."""

    d: np.ndarray
    s: np.ndarray
    start: np.ndarray
    count: np.ndarray


def _rank(g: _Grouped, d: np.ndarray, order: str, docs_text: Any) -> _Ranked:
    """Each query's rows in the order ``read_run(order=order)`` gives a file's lines."""
    s = g.s
    if order == "file" or len(d) < 2:
        return _Ranked(d, s, g.start, g.count)
    # trec_eval's order, as rankfusion.trec._trec_eval_order: a query whose scores do not
    # increase keeps every score in its place and sorts the doc ids of each group of tied scores
    # (descending); any other query is sorted by (score, doc id) descending. -0.0 ties 0.0.
    q = g.q
    key = s + 0.0
    same = q[1:] == q[:-1]
    unsorted = np.zeros(len(g.count), bool)
    unsorted[q[1:][same & (key[1:] > key[:-1])]] = True
    tie = same & (key[1:] == key[:-1]) & ~unsorted[q[1:]]  # ties in queries that keep scores
    d = d.copy()
    # the usual tie, two docs alone: one comparison, then a swap when in the wrong order
    alone = tie.copy()
    alone[1:] &= ~tie[:-1]
    alone[:-1] &= ~tie[1:]
    pairs = np.flatnonzero(alone)
    if len(pairs):
        first = docs_text.take(pa.array(d[pairs]))
        second = docs_text.take(pa.array(d[pairs + 1]))
        swap = pairs[pc.less(first, second).to_numpy(zero_copy_only=False)]
        d[swap], d[swap + 1] = d[swap + 1], d[swap].copy()
    # larger groups of ties, and queries whose scores are not in order: sorted
    todo = unsorted[q]
    group = tie & ~alone
    todo[:-1] |= group
    todo[1:] |= group
    if not todo.any():
        return _Ranked(d, s, g.start, g.count)
    rows = np.flatnonzero(todo)
    keys = pa.table(
        {
            "q": pa.array(q[rows]),
            "s": pa.array(key[rows]),
            "d": docs_text.take(pa.array(d[rows])),
        }
    )
    perm = pc.sort_indices(
        keys, [("q", "ascending"), ("s", "descending"), ("d", "descending")]
    ).to_numpy()
    source = rows[perm]
    d[rows] = d[source]
    travel = unsorted[q[rows]]  # in a sorted query a score travels with its doc
    if travel.any():
        s = s.copy()
        s[rows[travel]] = s[source[travel]]
    return _Ranked(d, s, g.start, g.count)


# --- fusion -------------------------------------------------------------------------------------


def _fuse_matrices(
    ids: Sequence[np.ndarray],
    scores: Sequence[np.ndarray],
    fusion: Fusion,
    threads: Optional[int] = None,
) -> Any:
    """Fuse Q queries given as one (Q, N_i) id matrix per run (int codes, padded with -1) and
    the runs' raw scores aligned with them (float64, NaN in the pads): the one place the tables
    reach the fusion engine (``Fusion.batch``). Returns a ``rankfusion.BatchResult``.

    The scores are handed over only to the methods that read them (the score-based ones).
    """
    scores = list(scores) if fusion.reads_scores else None
    return fusion.batch(list(ids), scores, pad=-1, threads=threads)


def _matrices(run: _Ranked, qs: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The (len(qs), N) doc code and raw score matrices of queries ``qs`` in one run."""
    count = run.count[qs]
    start = run.start[qs]
    n = len(qs)
    width = int(count.max()) if n else 0
    if width == 0:
        return np.empty((n, 0), np.int64), np.empty((n, 0))
    if (count == width).all() and (n == 1 or (np.diff(start) == width).all()):
        first = int(start[0])  # full rows stored one after the other: a view
        block = slice(first, first + n * width)
        return run.d[block].reshape(n, width), run.s[block].reshape(n, width)
    ids = np.full((n, width), -1, np.int64)
    raw = np.full((n, width), np.nan)
    row = np.repeat(np.arange(n), count)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    source = np.repeat(start, count) + within
    ids[row, within] = run.d[source]
    raw[row, within] = run.s[source]
    return ids, raw


def _blocks(total: np.ndarray) -> List[np.ndarray]:
    """Positions 0..len(total)-1 cut into blocks of queries of similar size, each about
    ``_BLOCK_CELLS`` cells (queries x the largest total), positions ascending in each."""
    by_size = np.argsort(total, kind="stable")
    size = np.maximum(total[by_size], 1)
    out = []
    a = 0
    while a < len(size):
        lo, hi = a + 1, len(size)  # the largest b with (b - a) * size[b - 1] <= cells
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if (mid - a) * int(size[mid - 1]) <= _BLOCK_CELLS:
                lo = mid
            else:
                hi = mid - 1
        out.append(np.sort(by_size[a:lo]))
        a = lo
    return out


class _Hits(NamedTuple):
    """A block's fused hits, row after row: ``counts[j]`` hits for the query at output position
    ``positions[j]``."""

    positions: np.ndarray
    counts: np.ndarray
    docs: np.ndarray
    scores: np.ndarray
    ranks: Optional[np.ndarray]  # (hits, runs) with trace=True
    raw: Optional[np.ndarray]
    contributions: Optional[np.ndarray]
    normalized: Optional[np.ndarray]


def _compact(positions: np.ndarray, result: Any, raw: Sequence[np.ndarray], trace: bool) -> _Hits:
    counts = np.asarray(result.counts, np.int64)
    width = result.ids.shape[1]
    keep = np.arange(width) < counts[:, None]
    hits = _Hits(positions, counts, result.ids[keep], result.scores[keep], None, None, None, None)
    if not trace:
        return hits
    ranks = result.ranks[keep]
    row = np.repeat(np.arange(len(counts)), counts)
    scores = np.full(ranks.shape, np.nan)
    for i, matrix in enumerate(raw):
        found = np.flatnonzero(ranks[:, i] > 0)
        scores[found, i] = matrix[row[found], ranks[found, i] - 1]
    return hits._replace(
        ranks=ranks,
        raw=scores,
        contributions=result.contributions[keep],
        normalized=result.normalized[keep],
    )


def _select(queries: pa.Array, wanted: Any) -> np.ndarray:
    """Codes of the ``wanted`` query ids that some run has, in the order given, once each."""
    if isinstance(wanted, (str, bytes)) or not isinstance(wanted, Iterable):
        raise TypeError(f"queries must be a list of query ids, got {type(wanted).__name__}")
    values = list(dict.fromkeys(wanted))
    if not values:
        return np.empty(0, np.int64)
    try:
        array = pa.array(values).cast(queries.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise TypeError(f"queries do not match the query ids' type ({queries.type}): {e}") from None
    found = pc.index_in(array, value_set=queries).drop_null()
    return found.to_numpy().astype(np.int64)


def fuse(
    runs: Any,
    fusion: Optional[Fusion] = None,
    *,
    query: str = "qid",
    doc: str = "docid",
    score: str = "score",
    run: Optional[str] = None,
    run_order: Optional[Sequence[Any]] = None,
    order: str = "score",
    queries: Optional[Iterable[Any]] = None,
    threads: Optional[int] = None,
    **settings: Any,
) -> pa.Table:
    """Fuse runs held as tables, query by query: a ``pyarrow.Table`` with the columns ``query``,
    ``doc``, ``score`` (the fused score, float64) and ``rank`` (1..n per query, int64), best
    first within each query, queries in order of first appearance (see the module's doc).

    - ``runs``: a list of tables, one per run (``Contribution.list_index`` / the trace columns'
      index is the position in the list), or a dict ``{name: table}``; or, with ``run=``, one
      long table whose column ``run`` tells the runs apart, in the order ``run_order`` gives
      (default: the order in which the run values first appear). A table is a pyarrow Table, or
      anything exporting ``__arrow_c_stream__`` (polars, pandas, DuckDB), or a pandas DataFrame.
    - ``fusion``: a :class:`rankfusion.Fusion`, or its settings as keyword arguments
      (``method``, ``norm``, ``k``, ``weights`` — one per run —, ``window``, ``duplicates``,
      ``tie_break``, ``offset``, ``limit``, ``min_score``, ``normalize``, ``lower_is_better``,
      ``phi``, ``gamma``, ``sigma``, ``trace``), applied per query; score-based methods read the
      score column. With ``duplicates="error"``, a doc id twice in one query of one run is a
      :class:`TableError` naming both rows, as ``read_run`` names both lines.
    - ``query``, ``doc``, ``score``: the column names (see :data:`PYTERRIER`, :data:`RANX`,
      :data:`IR_MEASURES`). Ids are strings or integers (the output keeps their type; runs whose
      types differ get strings), scores any numbers (float64 here, like a TREC file's text).
    - ``trace=True`` adds, for each run i, ``rank_{i}`` (int32: the document's rank in run i),
      ``raw_score_{i}`` (the run's score there), ``contribution_{i}`` (float64) and, for
      score-based methods, ``normalized_{i}`` (the score after the norm); null where the run
      does not count the document. The run names are in the schema's metadata
      (``b"rankfusion.runs"``, a JSON list).
    - ``order``: ``"score"`` (trec_eval's ranking) or ``"file"`` (the rows' order).
    - ``queries``: fuse only these query ids (others are left out), in this order.
    - ``threads``: as ``Fusion.batch``.

    Errors: FusionTypeError / FusionError for bad settings (checked first, then against the
    number of runs before any row is read); TypeError for a table or a column of the wrong
    type; :class:`TableError` (ValueError) for a missing column, a null, a NaN score, a
    duplicate with ``duplicates="error"``; FusionError ``"query 'q': ..."`` (its ``qid`` and
    ``key``, the doc id) for a query that cannot be fused (a score overflowing to infinity with
    huge weights), the first such query in output order.
    """
    fusion = trec._fusion_of(fusion, settings)
    trace = fusion.trace
    _check_names(query, doc, score, run)
    trec._check_choice(order, "order", _ORDERS)
    if "rank" in (query, doc, score):
        raise ValueError("the output has a column 'rank': query, doc and score must not be 'rank'")

    how = _Read(query, doc, score, fusion.duplicates == "error", fusion.check)
    gathered = _gather(runs, how, run, run_order)
    groups, dcodes, docs = _prepare(gathered, how, threads)
    gathered = gathered._replace(sources=[])  # only the groups' copies are needed now
    if fusion.tie_break == "key":  # codes in the doc ids' order
        by_text = pc.sort_indices(_as_text(docs)).to_numpy()
        rank_of = np.empty(len(by_text), np.int64)
        rank_of[by_text] = np.arange(len(by_text))
        docs = docs.take(pa.array(by_text))
        dcodes = [rank_of[d] for d in dcodes]
    text = _as_text(docs) if order == "score" else docs
    n_queries = len(gathered.queries)
    ranked = []
    while groups:  # free each run's grouped rows once ranked
        ranked.append(_rank(groups.pop(0), dcodes.pop(0), order, text))
    del text

    qorder = np.arange(n_queries) if queries is None else _select(gathered.queries, queries)
    total = np.zeros(len(qorder), np.int64)
    for r in ranked:
        total += r.count[qorder]
    blocks: List[_Hits] = []
    failed: Optional[Tuple[int, FusionError]] = None
    for positions in _blocks(total):
        qs = qorder[positions]
        ids, raw = zip(*(_matrices(r, qs) for r in ranked)) if ranked else ((), ())
        try:
            result = _fuse_matrices(ids, raw, fusion, threads)
        except FusionError as e:
            if e.row is None:
                raise
            position = int(positions[e.row])
            if failed is None or position < failed[0]:
                failed = (position, e)
            continue
        if failed is None:
            blocks.append(_compact(positions, result, raw, trace))
    if failed is not None:  # the row's query and the doc id of the code it names
        position, e = failed
        qid = gathered.queries[int(qorder[position])].as_py()
        located = {"key": docs[e.key].as_py()} if e.key is not None else {}
        raise e.located(row=None, qid=qid, **located) from None
    normalized = trace and fusion.reads_scores
    return _table(gathered, docs, qorder, blocks, query, doc, score, trace, normalized)


def _table(
    gathered: _Runs,
    docs: pa.Array,
    qorder: np.ndarray,
    blocks: List[_Hits],
    query: str,
    doc: str,
    score: str,
    trace: bool,
    normalized: bool = False,
) -> pa.Table:
    """The output table: the blocks' hits in query order (with trace, ``normalized_{i}``
    columns when ``normalized``: a score-based method)."""
    per_query = np.zeros(len(qorder), np.int64)
    for b in blocks:
        per_query[b.positions] = b.counts
    offsets = np.cumsum(per_query) - per_query
    n = int(per_query.sum())
    n_runs = len(gathered.names)
    if len(blocks) == 1 and np.array_equal(blocks[0].positions, np.arange(len(qorder))):
        hits = blocks[0]
    else:
        hits = _Hits(
            np.arange(len(qorder)),
            per_query,
            np.empty(n, np.int64),
            np.empty(n),
            np.empty((n, n_runs), np.int32) if trace else None,
            np.empty((n, n_runs)) if trace else None,
            np.empty((n, n_runs)) if trace else None,
            np.empty((n, n_runs)) if trace else None,
        )
        for b in blocks:
            m = len(b.docs)
            dest = np.repeat(offsets[b.positions], b.counts) + (
                np.arange(m) - np.repeat(np.cumsum(b.counts) - b.counts, b.counts)
            )
            hits.docs[dest] = b.docs
            hits.scores[dest] = b.scores
            if trace:
                hits.ranks[dest] = b.ranks
                hits.raw[dest] = b.raw
                hits.contributions[dest] = b.contributions
                hits.normalized[dest] = b.normalized
    columns = {
        query: gathered.queries.take(pa.array(np.repeat(qorder, per_query))),
        doc: docs.take(pa.array(hits.docs)),
        score: pa.array(hits.scores),
        "rank": pa.array(np.arange(n, dtype=np.int64) - np.repeat(offsets, per_query) + 1),
    }
    if trace:
        for i in range(n_runs):
            absent = hits.ranks[:, i] == 0
            columns[f"rank_{i}"] = pa.array(hits.ranks[:, i], pa.int32(), mask=absent)
            columns[f"raw_score_{i}"] = pa.array(hits.raw[:, i], pa.float64(), mask=absent)
            columns[f"contribution_{i}"] = pa.array(
                hits.contributions[:, i], pa.float64(), mask=absent
            )
            if normalized:
                columns[f"normalized_{i}"] = pa.array(
                    hits.normalized[:, i], pa.float64(), mask=absent
                )
    table = pa.table(columns)
    return table.replace_schema_metadata({"rankfusion.runs": json.dumps(gathered.labels)})


# --- files --------------------------------------------------------------------------------------


def columns_of(names: Union[Iterable[str], pa.Schema, pa.Table]) -> Dict[str, str]:
    """The column-name preset (``{"query": ..., "doc": ..., "score": ...}``) whose three
    columns a table has: the first of :data:`PRESETS` (TREC, PyTerrier, ranx, ir-measures)
    that fits. Raises ValueError when none does."""
    if isinstance(names, pa.Table):
        names = names.schema
    present = list(names.names if isinstance(names, pa.Schema) else names)
    for columns in PRESETS.values():
        if all(c in present for c in columns.values()):
            return dict(columns)
    known = "; ".join(f"{k}: {', '.join(v.values())}" for k, v in PRESETS.items())
    raise ValueError(
        f"no known run columns among {', '.join(map(repr, present)) or 'none'} ({known})"
    )


def read_trec(
    path: trec.PathLike,
    *,
    order: str = "score",
    duplicates: str = "error",
    allow_empty: bool = False,
) -> pa.Table:
    """A TREC run file as a table with the columns ``qid, docid, score, rank`` (str, str,
    float64, int64): the rankings ``rankfusion.trec.read_run(path, ...)`` reads, with the same
    arguments and errors, ranks 1..n in that order. ``pyarrow.parquet.write_table(read_trec(
    "a.run"), "a.parquet")`` converts a run to Parquet."""
    run = trec.read_run(path, order=order, duplicates=duplicates, allow_empty=allow_empty)
    sizes = np.fromiter((len(r.docids) for r in run.values()), np.int64, len(run))
    offsets = np.cumsum(sizes) - sizes
    docids: List[str] = []
    scores: List[float] = []
    for ranking in run.values():
        docids += ranking.docids
        scores += ranking.scores
    n = len(docids)
    return pa.table(
        {
            "qid": pa.array(list(run), pa.string()).take(
                pa.array(np.repeat(np.arange(len(run)), sizes))
            ),
            "docid": pa.array(docids, pa.string()),
            "score": pa.array(scores, pa.float64()),
            "rank": pa.array(np.arange(n, dtype=np.int64) - np.repeat(offsets, sizes) + 1),
        }
    )


def write_trec(
    table: Any,
    path: Any,
    *,
    query: str = "qid",
    doc: str = "docid",
    score: str = "score",
    tag: str = "rankfusion",
) -> None:
    """Write a run table as TREC lines ``qid Q0 docid rank score tag``: each query's rows in
    the table's order with ranks 1..n, queries in order of first appearance, scores written
    exactly (as ``rankfusion.trec.write_run`` writes them: atomically, gzip'd for ``.gz``).
    Raises TableError for a missing column or a null, ValueError for an id that is empty or
    holds whitespace (nothing is written then)."""
    _check_names(query, doc, score, None)
    table = _as_table(table, "table")
    name = "table"
    (q,), queries = _encode(
        [_id_column(_column(table, query, name), name, query, "query id")], True
    )
    d = _column(table, doc, name)
    if d.null_count:
        raise _null_error(d, name, doc, "doc id")
    s = _column(table, score, name)
    if s.null_count:
        raise _null_error(s, name, score, "score")
    by_query = np.argsort(q, kind="stable")
    sizes = np.bincount(q, minlength=len(queries))
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    docids = d.take(pa.array(by_query)).to_pylist()
    scores = s.cast(pa.float64(), safe=False).take(pa.array(by_query)).to_pylist()
    run = {
        qid if isinstance(qid, str) else str(qid): trec.Ranking(docids[a:b], scores[a:b])
        for qid, a, b in zip(queries.to_pylist(), bounds[:-1], bounds[1:])
    }
    trec.write_run(run, path, tag=tag)


def read_table(path: trec.PathLike, *, format: Optional[str] = None) -> pa.Table:
    """A run file as a table with the columns ``qid, docid, score``: a Parquet file (by its
    ``.parquet``/``.pq`` name or ``format="parquet"``) with the columns of one of
    :data:`PRESETS` (found by :func:`columns_of`, renamed), or a TREC run (``format="trec"``,
    or any other name; read as ``read_trec(path, order="file", duplicates="keep")``)."""
    fmt = format or file_format(path)
    trec._check_choice(fmt, "format", ("trec", "parquet"))
    if fmt == "trec":
        return read_trec(path, order="file", duplicates="keep").select(list(TREC.values()))
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    columns = columns_of(schema)
    names = [columns["query"], columns["doc"], columns["score"]]
    # query ids repeat on every row of a query: read them as a dictionary (not one str a row)
    text = _is_text(schema.field(names[0]).type)
    table = pq.read_table(path, columns=names, read_dictionary=names[:1] if text else None)
    return table.rename_columns(list(TREC.values()))


def file_format(path: Any) -> str:
    """``"parquet"`` for a name ending with ``.parquet`` or ``.pq`` (any case), else ``"trec"``."""
    name = os.fspath(path).lower() if isinstance(path, (str, os.PathLike)) else ""
    return "parquet" if name.endswith((".parquet", ".pq")) else "trec"


def write_parquet(table: Any, path: trec.PathLike, **options: Any) -> None:
    """``pyarrow.parquet.write_table(table, path, **options)``, atomically: written under a
    temporary name beside ``path`` and renamed into place once complete (as the TREC writers)."""
    table = _as_table(table, "table")
    pending = trec._AtomicFile(path, compress=False)
    try:
        _write_parquet_file(table, pending, **options)
    except BaseException:
        pending.discard()
        raise
    pending.commit()


def _write_parquet_file(table: pa.Table, pending: Any, **options: Any) -> None:
    """Writes ``table`` as Parquet into an uncompressed ``trec._AtomicFile``."""
    import pyarrow.parquet as pq

    pq.write_table(table, pending._raw, **options)


def _query_ids(table: pa.Table, column: str) -> List[str]:
    """The distinct query ids of a run table, as str, in order of first appearance."""
    return [q if isinstance(q, str) else str(q) for q in pc.unique(table[column]).to_pylist()]


def to_run(
    table: Any,
    *,
    query: str = "qid",
    doc: str = "docid",
    score: str = "score",
    order: str = "score",
    duplicates: str = "error",
) -> trec.Run:
    """The ``{qid: Ranking}`` that ``rankfusion.trec.read_run(path, order=order,
    duplicates=duplicates)`` returns for the table written as a TREC file (ids as str)."""
    return _to_run(table, "table", query, doc, score, order, duplicates)


def _to_run(
    table: Any, name: str, query: str, doc: str, score: str, order: str, duplicates: str
) -> trec.Run:
    _check_names(query, doc, score, None)
    trec._check_choice(order, "order", _ORDERS)
    trec._check_choice(duplicates, "duplicates", trec._READ_DUPLICATES)
    how = _Read(query, doc, score, duplicates == "error", lambda n: None)
    gathered = _gather_list([name], [name], [table], how)
    groups, dcodes, docs = _prepare(gathered, how, None)
    ranked = _rank(groups[0], dcodes[0], order, _as_text(docs))
    docids = [
        d if isinstance(d, str) else str(d) for d in docs.take(pa.array(ranked.d)).to_pylist()
    ]
    scores = ranked.s.tolist()
    run: trec.Run = {}
    for i, qid in enumerate(gathered.queries.to_pylist()):
        a = int(ranked.start[i])
        b = a + int(ranked.count[i])
        ids, raw = docids[a:b], scores[a:b]
        if duplicates == "first" and len(set(ids)) < len(ids):
            seen: Dict[str, None] = {}
            keep = [j for j, d in enumerate(ids) if d not in seen and not seen.setdefault(d)]
            ids, raw = [ids[j] for j in keep], [raw[j] for j in keep]
        run[qid if isinstance(qid, str) else str(qid)] = trec.Ranking(ids, raw)
    return run


def from_run(run: Mapping[Any, Any]) -> pa.Table:
    """A table ``qid, docid, score, rank`` from what ``rankfusion.trec.write_run`` writes: per
    query a Ranking, fused hits (``rankfusion.trec.fuse``), ``(docid, score)`` pairs or a
    ``{docid: score}`` mapping; ranks 1..n in the given order."""
    qids: List[Any] = []
    docids: List[Any] = []
    scores: List[float] = []
    ranks: List[int] = []
    for qid, ranked in run.items():
        ids, raw = trec._ranked_pairs(ranked)
        qids += [qid if isinstance(qid, str) else str(qid)] * len(ids)
        docids += [d if isinstance(d, str) else str(d) for d in ids]
        scores += [float(x) for x in raw]
        ranks += range(1, len(ids) + 1)
    return pa.table(
        {
            "qid": pa.array(qids, pa.string()),
            "docid": pa.array(docids, pa.string()),
            "score": pa.array(scores, pa.float64()),
            "rank": pa.array(ranks, pa.int64()),
        }
    )
