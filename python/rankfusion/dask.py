"""Fuse run collections too big for one machine: runs as Dask DataFrames, fused on the workers.

::

    import dask.dataframe as dd
    from rankfusion import dask as rfd

    runs = [dd.read_parquet("bm25/*.parquet"), dd.read_parquet("dense/*.parquet")]
    fused = rfd.fuse(runs, limit=1000)  # lazy: a dask DataFrame qid, docid, score, rank
    fused.to_parquet("fused/")

:func:`fuse` puts every run's rows of a query into one partition (a shuffle on the query column,
or none when the inputs are partitioned by query already: see ``partitioned``), then fuses each
partition with :func:`rankfusion.frame.fuse` on the worker (Arrow compute and the Rust engine,
with the GIL released). Each query's fused rows are exactly what ``frame.fuse`` (and so
``rankfusion fuse`` on TREC files) gives for it; only the order of the queries differs: the
output comes partition by partition, and within a partition in order of first appearance.

:func:`fuse_partition` is the per-partition step as a plain function of one pandas DataFrame
(or Arrow table) holding every run's rows of some queries, for other engines: Spark's
``groupBy(...).applyInArrow`` (see ``docs/dask.md``), Ray, multiprocessing.

Needs ``pip install "rankfusion[dask]"`` (dask[dataframe], distributed and pyarrow).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

try:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
except ImportError:
    raise ImportError(
        "rankfusion.dask needs dask[dataframe], distributed and pyarrow, which are not all "
        'installed: pip install "rankfusion[dask]"'
    ) from None

from . import frame, trec
from ._core import Fusion

__all__ = ["fuse", "fuse_partition"]

_RUN = "__rankfusion_run"  # the run's index in the list, added to every row
_PART = "__rankfusion_partition"  # the row's place in its input, when the order of rows matters
_ROW = "__rankfusion_row"


def fuse_partition(
    part: Any,
    *,
    run: str,
    run_order: Sequence[Any],
    query: str = "qid",
    doc: str = "docid",
    score: str = "score",
    **options: Any,
) -> pd.DataFrame:
    """``frame.fuse(part, run=run, run_order=run_order, ...)`` as a pandas DataFrame: the fusion
    of one partition holding every run's rows of its queries (a pandas DataFrame or anything
    ``frame.fuse`` takes). ``options`` are ``frame.fuse``'s keyword arguments."""
    if isinstance(part, pd.DataFrame):
        part = pa.Table.from_pandas(part, preserve_index=False)
    table = frame.fuse(
        part, run=run, run_order=run_order, query=query, doc=doc, score=score, **options
    )
    return _to_pandas(table)


def _pandas_type(t: pa.DataType) -> Any:
    if frame._is_text(t):
        return pd.StringDtype("pyarrow")  # what dask uses for strings
    if t == pa.int32():
        return pd.Int32Dtype()  # the trace's ranks: null where a run does not count a doc
    return None  # numpy


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """The fused table as pandas: strings as pyarrow-backed strings, the trace's ranks as
    nullable ints, the rest as numpy (a trace's missing raw score or contribution: NaN)."""
    return table.to_pandas(types_mapper=_pandas_type, ignore_metadata=True)


def _positions(part: pd.DataFrame, partition_info: Optional[Dict[str, Any]] = None) -> pd.DataFrame:
    """Adds each row's input partition and place in it (the order of rows to restore)."""
    number = partition_info["number"] if partition_info else 0
    return part.assign(
        **{_PART: np.full(len(part), number, np.int64), _ROW: np.arange(len(part), dtype=np.int64)}
    )


def _fuse_long(part: pd.DataFrame, ordered: bool, reset: bool, **options: Any) -> pd.DataFrame:
    """Fuses one partition of the long frame (all runs' rows of its queries)."""
    if reset:  # the query is the index (and maybe a column too)
        part = part.reset_index(drop=options["query"] in part.columns)
    if ordered:  # each run's rows in their input order (a shuffle may interleave them)
        part = part.sort_values([_RUN, _PART, _ROW], kind="stable")
    return fuse_partition(part, run=_RUN, **options)


def _fuse_zipped(*parts: pd.DataFrame, reset: bool, **options: Any) -> pd.DataFrame:
    """Fuses partition i of every run (partitions aligned by the caller)."""
    tagged = []
    for i, part in enumerate(parts):
        if reset:
            part = part.reset_index(drop=options["query"] in part.columns)
        tagged.append(part.assign(**{_RUN: np.full(len(part), i, np.int64)}))
    return fuse_partition(pd.concat(tagged, ignore_index=True), run=_RUN, **options)


def _run_list(runs: Any) -> List[Any]:
    if isinstance(runs, Mapping):
        return list(runs.values())
    if isinstance(runs, dd.DataFrame):
        raise TypeError(
            "runs is one DataFrame: pass a list of DataFrames (one per run), or name the column "
            "that tells the runs apart with run='...' and run_order=[...]"
        )
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Iterable):
        raise TypeError(f"runs must be a list of dask DataFrames, got {type(runs).__name__}")
    return list(runs)


def _reset(ddf: Any, query: str) -> Any:
    """The query index back as a column (dropped when the column is there too)."""
    return ddf.reset_index(drop=query in ddf.columns)


def _as_columns(ddf: Any, query: str) -> Any:
    """The run with its query as a column: the index moved back when the run is indexed by
    the query (``set_index(query)``, ``read_parquet(..., index=query)``), whatever its
    divisions."""
    return _reset(ddf, query) if ddf.index.name == query else ddf


def _check_columns(ddf: Any, name: str, columns: Sequence[str], run: Optional[str]) -> None:
    """The columns of a run (its meta: the empty frame of its dtypes), checked as
    ``frame.fuse`` checks a table's, when ``fuse`` is called: a missing column is the
    ``TableError`` ``frame.fuse`` raises (with its preset hint), a column of the wrong type the
    same ``ColumnTypeError`` (a column of object dtype says nothing of its values: it is checked on
    compute)."""
    meta = ddf._meta
    if meta.index.name is not None and meta.index.name == columns[0]:
        meta = meta.reset_index(drop=columns[0] in meta.columns)
    table = pa.Table.from_pandas(meta, preserve_index=False)
    checks = [(columns[0], "query id"), (columns[1], "doc id"), (columns[2], None)]
    if run is not None:
        checks.append((run, "run"))
    for column, what in checks:
        col = frame._column(table, column, name)
        if pa.types.is_null(col.type):
            continue  # object dtype: the values' type is known only on compute
        if what is None:
            frame._score_column(col, name, column)
        else:
            frame._id_column(col, name, column, what)


def _by_query_index(runs: Sequence[Any], query: str) -> bool:
    """Whether every run is indexed by the query with known divisions (set_index(query))."""
    return all(
        isinstance(r, dd.DataFrame) and r.index.name == query and r.known_divisions for r in runs
    )


def fuse(
    runs: Any,
    fusion: Optional[Fusion] = None,
    *,
    query: str = "qid",
    doc: str = "docid",
    score: str = "score",
    run: Optional[str] = None,
    run_order: Optional[Sequence[Any]] = None,
    partitioned: Optional[bool] = None,
    npartitions: Optional[int] = None,
    order: str = "score",
    threads: Optional[int] = 1,
    **settings: Any,
) -> Any:
    """Fuse runs held as Dask DataFrames: a lazy ``dask.dataframe.DataFrame`` with
    :func:`rankfusion.frame.fuse`'s columns (``query``, ``doc``, ``score``, ``rank``, and the
    trace columns with ``trace=True``).

    - ``runs``: a list (or dict) of dask DataFrames, one per run; or, with ``run=``, one dask
      DataFrame whose column ``run`` tells the runs apart, with ``run_order`` (required here:
      the order of first appearance is not known lazily).
    - ``partitioned``: whether the inputs are partitioned by query already, so that no shuffle
      is needed. ``None`` (default) detects it: runs indexed by the query column with known
      divisions (``set_index(query)``, ``read_parquet(..., index=query, calculate_divisions=
      True)``) are aligned by their divisions; anything else is shuffled on the query column
      into ``npartitions`` partitions (default: the most any input has; a query index without
      known divisions is moved back to a column first). ``True``: the caller
      says partition i of every run holds the same queries, and every row of them (the runs
      must then have the same number of partitions; for one long DataFrame: each query in one
      partition). ``False``: always shuffle.
    - ``threads``: the threads each partition's fusion may use (default 1: Dask runs
      partitions in parallel).
    - ``fusion`` (a :class:`rankfusion.Fusion`, or its settings as keyword arguments) and
      every other argument are ``frame.fuse``'s; the settings are checked here (against the
      number of runs too), before anything is computed, and so are the runs' columns (from
      their dtypes: a missing column is ``frame.fuse``'s ``TableError``, a column of the wrong
      type its ``TypeError``).

    With ``order="file"`` or ``trace=True`` each row carries its input position through the
    shuffle, and each partition restores the runs' row order before fusing. Errors in the data
    surface when the result is computed, as ``frame.fuse`` raises them (a row number then counts
    the rows of the fused partition).
    """
    fusion = trec._fusion_of(fusion, settings)
    frame._check_names(query, doc, score, run)
    trec._check_choice(order, "order", frame._ORDERS)
    if partitioned not in (None, True, False):
        raise TypeError(f"partitioned must be None, True or False, got {partitioned!r}")
    if npartitions is not None and (
        isinstance(npartitions, bool) or not isinstance(npartitions, int) or npartitions < 1
    ):
        raise ValueError(f"npartitions must be an int >= 1, got {npartitions!r}")
    if run is None:
        if run_order is not None:
            raise ValueError("run_order needs run= (the column that tells the runs apart)")
        inputs = _run_list(runs)
        for i, r in enumerate(inputs):
            if not isinstance(r, dd.DataFrame):
                raise TypeError(f"runs[{i}] must be a dask DataFrame, got {type(r).__name__}")
        order_of_runs: List[Any] = list(range(len(inputs)))
    else:
        if not isinstance(runs, dd.DataFrame):
            raise TypeError(
                f"with run=, runs must be one dask DataFrame, got {type(runs).__name__}"
            )
        if run_order is None:
            raise ValueError("a dask DataFrame with run= needs run_order (the runs, in order)")
        order_of_runs = list(run_order)
        inputs = [runs]
    fusion.check(len(order_of_runs))
    ordered = order == "file" or fusion.trace
    options = dict(
        fusion=fusion,
        query=query,
        doc=doc,
        score=score,
        order=order,
        threads=threads,
        run_order=order_of_runs,
    )
    columns = [query, doc, score]
    run_type = pa.array(order_of_runs).type if order_of_runs else pa.int64()
    empty = pa.table(
        {
            query: pa.array([], pa.string()),
            doc: pa.array([], pa.string()),
            score: pa.array([], pa.float64()),
            _RUN: pa.array([], run_type),
        }
    )
    # every run's columns: present, of the right types
    if run is None:
        for i, r in enumerate(inputs):
            _check_columns(r, f"runs[{i}]", columns, None)
    else:
        _check_columns(runs, "runs", columns, run)

    index = _by_query_index(inputs, query)
    if run is not None:
        long = inputs[0]
        reset = long.index.name == query
        if partitioned is True or (partitioned is None and index):
            options["run_order"] = order_of_runs
            return _map(long.rename(columns={run: _RUN}), [*columns, _RUN], reset, ordered, options)
        source = _as_columns(long, query).rename(columns={run: _RUN})[[*columns, _RUN]]
    else:
        if partitioned is True:
            if len({r.npartitions for r in inputs}) > 1:
                raise ValueError(
                    "partitioned=True needs runs with the same number of partitions, got "
                    + ", ".join(str(r.npartitions) for r in inputs)
                )
            picked = [_as_columns(r, query)[columns] for r in inputs]
            meta = _fuse_zipped(*[r._meta for r in picked], reset=False, **options)
            return dd.map_partitions(
                _fuse_zipped, *picked, reset=False, meta=meta, align_dataframes=False, **options
            )
        if partitioned is None and index and inputs:
            tagged = [r[[c for c in columns if c in r.columns]] for r in inputs]
            tagged = [r.assign(**{_RUN: i}) for i, r in enumerate(tagged)]
            long = dd.concat(tagged, interleave_partitions=True)
            return _map(long, [*columns, _RUN], True, ordered, options)
        tagged = []
        for i, r in enumerate(inputs):
            tagged.append(_as_columns(r, query)[columns].assign(**{_RUN: i}))
        if not tagged:
            return dd.from_pandas(fuse_partition(empty, run=_RUN, **options), npartitions=1)
        source = dd.concat(tagged) if len(tagged) > 1 else tagged[0]
    if ordered:
        meta = _positions(source._meta)
        source = source.map_partitions(_positions, meta=meta)
    count = npartitions or max(r.npartitions for r in inputs)
    shuffled = source.shuffle(on=query, npartitions=count)
    return _map(shuffled, None, False, ordered, options)


def _map(
    long: Any, columns: Optional[List[str]], reset: bool, ordered: bool, options: Dict[str, Any]
) -> Any:
    """``_fuse_long`` over every partition of a long frame."""
    if columns is not None and not reset:
        long = long[columns]
    if ordered and _PART not in long.columns:
        ordered = False  # partitions aligned by the input: their rows are in input order
    meta = _fuse_long(long._meta, ordered, reset, **options)
    return long.map_partitions(
        _fuse_long, ordered, reset, meta=meta, align_dataframes=False, **options
    )
