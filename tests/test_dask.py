"""``rankfusion.dask`` on a real ``distributed.LocalCluster`` (2 worker processes): the result of
every query equals single-process ``frame.fuse`` exactly, whether the inputs are shuffled on the
query, aligned by their divisions or zipped partition by partition; also with a query whose rows
sit in several input partitions, empty partitions, and a worker killed in the middle of a job.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.dataframe")  # the "dask" extra (CI installs it: it is in "test")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from _runs import random_case  # noqa: E402

from rankfusion import dask as rfd  # noqa: E402
from rankfusion import frame  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def frames_of(rows_per_run):
    return [pd.DataFrame(rows, columns=["qid", "docid", "score"]) for rows in rows_per_run]


def by_query(table: pa.Table):
    """{qid: [row, ...]} with scores as bits: the order of queries aside, everything compared."""
    out = {}
    for row in table.to_pylist():
        row = {k: (struct.pack("<d", v) if isinstance(v, float) else v) for k, v in row.items()}
        out.setdefault(row["qid"], []).append(row)
    return out


def from_dask(result) -> pa.Table:
    df = result.compute()
    return pa.Table.from_pandas(df, preserve_index=False)


def nullable(table: pa.Table) -> pa.Table:
    """Trace columns as pandas gives them back (a float NaN where Arrow has a null)."""
    columns = {}
    for name in table.column_names:
        col = table[name]
        if name.startswith(("raw_score_", "contribution_")):
            col = col.fill_null(float("nan"))
        columns[name] = col
    return pa.table(columns)


def check(result, rows_per_run, **options):
    want = frame.fuse([pa.Table.from_pandas(df) for df in frames_of(rows_per_run)], **options)
    got = from_dask(result)
    assert got.column_names == want.column_names
    assert by_query(nullable(got)) == by_query(nullable(want))


def cases(seed: int, n: int, tmp_path):
    rng = random.Random(seed)
    for case in range(n):
        rows, _, options, order = random_case(rng, tmp_path, case)
        if options["weights"] and max(options["weights"]) > 1e300:
            options["weights"] = None  # an error is checked on its own below
        if options["duplicates"] == "error":
            options["duplicates"] = "first"
        yield rng, rows, options, order


def test_shuffled_runs_equal_frame_fuse(client, tmp_path):
    for rng, rows, options, order in cases(1, 8, tmp_path):
        runs = []
        for df in frames_of(rows):
            df = df.sample(frac=1, random_state=rng.randint(0, 99)) if order == "score" else df
            runs.append(dd.from_pandas(df, npartitions=rng.randint(1, 4), sort=False))
        trace = rng.random() < 0.5
        result = rfd.fuse(runs, order=order, trace=trace, npartitions=rng.randint(1, 9), **options)
        if order == "score":
            rows = [list(df.itertuples(index=False)) for df in (r.compute() for r in runs)]
        check(result, rows, order=order, trace=trace, **options)


def test_rows_of_a_query_in_several_partitions_and_empty_partitions(client):
    a = pd.DataFrame(
        {"qid": ["1", "2", "1", "3", "1"], "docid": list("abcde"), "score": [5.0, 4, 3, 2, 1]}
    )
    b = pd.DataFrame({"qid": ["3", "1", "9"], "docid": list("cax"), "score": [1.0, 1, 1]})
    runs = [
        dd.from_pandas(a, npartitions=3, sort=False),
        dd.from_pandas(b, npartitions=2, sort=False),
    ]
    runs[1] = runs[1][runs[1].qid != "9"]  # an input partition left empty
    assert 0 in runs[1].map_partitions(len).compute().tolist()
    result = rfd.fuse(runs, npartitions=16, order="file", trace=True)  # most of them empty
    assert result.npartitions == 16
    check(result, [a.values.tolist(), b[b.qid != "9"].values.tolist()], order="file", trace=True)


def test_partitioned_inputs_need_no_shuffle(client, tmp_path):
    for _, rows, options, order in cases(2, 4, tmp_path):
        frames = frames_of(rows)
        indexed = [dd.from_pandas(df.set_index("qid", drop=False), npartitions=2) for df in frames]
        assert all(r.known_divisions for r in indexed)
        result = rfd.fuse(indexed, order=order, **options)
        assert "shuffle" not in str(result.dask.keys()).lower()
        want_rows = [
            list(p.itertuples(index=False)) for p in (r.compute() for r in indexed)
        ]  # set_index sorted the rows by query (stably)
        check(result, want_rows, order=order, **options)
        # the caller says so: partition i of every run holds the same queries
        zipped = [
            dd.from_pandas(df.sort_values("qid", kind="stable"), npartitions=1) for df in frames
        ]
        result = rfd.fuse(zipped, partitioned=True, order=order, trace=True, **options)
        want_rows = [list(r.compute().itertuples(index=False)) for r in zipped]
        check(result, want_rows, order=order, trace=True, **options)


def test_one_long_dataframe_with_a_run_column(client, tmp_path):
    for _, rows, options, order in cases(3, 4, tmp_path):
        long = pd.concat(
            [df.assign(system=f"s{i}") for i, df in enumerate(frames_of(rows))], ignore_index=True
        )
        names = [f"s{i}" for i in range(len(rows))]
        ddf = dd.from_pandas(long, npartitions=3, sort=False)
        result = rfd.fuse(ddf, run="system", run_order=names, order=order, **options)
        check(result, rows, order=order, **options)
    with pytest.raises(ValueError, match="run_order"):
        rfd.fuse(ddf, run="system")


def test_lazy_and_written_with_to_parquet(client, tmp_path):
    calls = []

    def boom(part):
        if len(part):
            calls.append(1)
            raise RuntimeError("computed")
        return part

    df = pd.DataFrame({"qid": ["1", "2"], "docid": ["a", "b"], "score": [1.0, 2.0]})
    run = dd.from_pandas(df, npartitions=1)
    lazy = rfd.fuse([run.map_partitions(boom, meta=run._meta), run])
    assert isinstance(lazy, dd.DataFrame)  # nothing computed yet
    with pytest.raises(RuntimeError, match="computed"):
        lazy.compute()
    rfd.fuse([run, run], limit=1).to_parquet(tmp_path / "fused")
    back = dd.read_parquet(tmp_path / "fused").compute().sort_values("qid")
    assert back["docid"].tolist() == ["a", "b"] and back["rank"].tolist() == [1, 1]


def test_arguments_checked_at_once_data_errors_on_compute(client):
    df = pd.DataFrame({"qid": ["1", "2"], "docid": ["a", "b"], "score": [1.0, float("nan")]})
    run = dd.from_pandas(df, npartitions=1)
    with pytest.raises(ValueError, match="weights"):
        rfd.fuse([run, run], weights=[1.0])
    with pytest.raises(ValueError, match="method must be one of"):
        rfd.fuse([run], method="combmnz")
    with pytest.raises(ValueError, match="method 'rbc' needs phi"):
        rfd.fuse([run], method="rbc")
    with pytest.raises(TypeError, match="dask DataFrame"):
        rfd.fuse([df])
    with pytest.raises(TypeError, match="one DataFrame"):
        rfd.fuse(run)
    lazy = rfd.fuse([run, run])
    with pytest.raises(frame.TableError, match=r"run 0, row 1, column 'score': score is null"):
        lazy.compute()  # pandas' NaN is Arrow's null


class KillOnce(distributed.WorkerPlugin):
    """Kills its worker's process (no clean shut-down) the first time any worker finishes a
    fusion task, once for the whole cluster (a marker file)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        if finish == "memory" and "fuse" in str(key):
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
            os._exit(1)


def test_a_killed_worker_changes_nothing(tmp_path):
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rng = np.random.default_rng(4)
    frames = []
    for _ in range(3):
        n = 6000
        frames.append(
            pd.DataFrame(
                {
                    "qid": rng.integers(0, 300, n).astype(str),
                    "docid": rng.integers(0, 500, n).astype(str),
                    "score": rng.integers(0, 50, n) / 7,
                }
            )
        )
    marker = str(tmp_path / "killed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        c.register_plugin(KillOnce(marker))
        runs = [dd.from_pandas(df, npartitions=6, sort=False) for df in frames]
        result = rfd.fuse(runs, npartitions=24, limit=50, trace=True)
        with dask.config.set(scheduler=c):
            got = from_dask(result)
    assert os.path.exists(marker), "no worker was killed"
    want = frame.fuse([pa.Table.from_pandas(df) for df in frames], limit=50, trace=True)
    assert got.num_rows == want.num_rows
    assert by_query(nullable(got)) == by_query(nullable(want))


def test_the_spark_recipe_function_on_buckets(tmp_path):
    """The per-group function of docs/dask.md's Spark recipe, fed the groups Spark would feed
    it (rows bucketed by a hash of the query), equals frame.fuse."""
    from rankfusion.dask import fuse_partition

    _, rows, options, _ = next(cases(7, 1, tmp_path))
    long = pd.concat([df.assign(run=i) for i, df in enumerate(frames_of(rows))], ignore_index=True)
    long["bucket"] = [hash(q) % 3 for q in long["qid"]]
    parts = [
        fuse_partition(
            pa.Table.from_pandas(g, preserve_index=False),
            run="run",
            run_order=list(range(len(rows))),
            **options,
        )
        for _, g in long.groupby("bucket", sort=False)
    ]
    got = pa.Table.from_pandas(pd.concat(parts, ignore_index=True), preserve_index=False)
    want = frame.fuse([pa.Table.from_pandas(df) for df in frames_of(rows)], **options)
    assert by_query(got) == by_query(want)


def spark_recipe():
    """The Python block of docs/dask.md's Spark recipe (the one after its marker)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "dask.md").read_text()
    after = text[text.index("<!-- spark-recipe") :]
    start = after.index("```python\n") + len("```python\n")
    return after[start : after.index("```\n", start)]


def java_version() -> int:
    """The major version of the `java` on PATH (0: none)."""
    java = shutil.which("java")
    if java is None:
        return 0
    done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if found is None:
        return 0
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8.0": Java 8


def test_the_spark_recipe_where_pyspark_is_installed(tmp_path, monkeypatch):
    """docs/dask.md's recipe, run on a local SparkSession, equals frame.fuse. pyspark is in the
    test extra on Linux (CI runs this with the machine's Java 17)."""
    pytest.importorskip("pyspark")  # in the test extra on Linux
    if java_version() < 17:
        pytest.skip("pyspark is installed but there is no Java 17+ to run Spark 4")
    from pyspark.sql import SparkSession

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # executors need rankfusion too

    namespace: dict = {}
    exec(compile(spark_recipe(), "docs/dask.md", "exec"), namespace)
    _, rows, options, _ = next(cases(11, 1, tmp_path))
    options = {k: v for k, v in options.items() if v is not None}
    paths = {}
    for i, df in enumerate(frames_of(rows)):
        paths[f"run{i}"] = str(tmp_path / f"run{i}.parquet")
        df.to_parquet(paths[f"run{i}"], index=False)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    try:
        fused = namespace["fuse_on_spark"](spark, paths, buckets=3, **options).toPandas()
    finally:
        spark.stop()
    got = pa.Table.from_pandas(fused, preserve_index=False)
    want = frame.fuse([pa.Table.from_pandas(df) for df in frames_of(rows)], **options)
    assert by_query(got) == by_query(want)


# --- runs as a new user has them: indexed by the query, PyTerrier's names, wrong columns ------


def test_runs_indexed_by_the_query_with_unknown_divisions(client, tmp_path):
    """dd.read_parquet(..., index="qid") (dask's default: no divisions) and set_index(qid,
    sort=False): the index is moved back to a column before the shuffle; the result equals the
    same runs unindexed."""
    _, rows, options, order = next(cases(13, 1, tmp_path))
    frames = frames_of(rows)
    plain = [dd.from_pandas(df, npartitions=2, sort=False) for df in frames]
    want = from_dask(rfd.fuse(plain, order=order, **options))
    paths = []
    for i, df in enumerate(frames):
        paths.append(tmp_path / f"run{i}.parquet")
        df.to_parquet(paths[-1], index=False)
    read = [dd.read_parquet(p, index="qid") for p in paths]
    unsorted = [r.set_index("qid", sort=False) for r in plain]
    for runs in (read, unsorted):
        assert all(r.index.name == "qid" and not r.known_divisions for r in runs)
        got = from_dask(rfd.fuse(runs, order=order, **options))
        assert by_query(got) == by_query(want)
        # the caller says the partitions hold the same queries (one partition each)
        ones = [r.repartition(npartitions=1) for r in runs]
        got = from_dask(rfd.fuse(ones, partitioned=True, order=order, **options))
        assert by_query(got) == by_query(want)
    # one long DataFrame indexed by the query
    long = pd.concat([df.assign(system=i) for i, df in enumerate(frames)], ignore_index=True)
    indexed = dd.from_pandas(long, npartitions=3, sort=False).set_index("qid", sort=False)
    assert not indexed.known_divisions
    names = list(range(len(frames)))
    got = from_dask(rfd.fuse(indexed, run="system", run_order=names, order=order, **options))
    assert by_query(got) == by_query(want)


def test_columns_checked_when_fuse_is_called(client):
    """A missing column or one of the wrong type is frame.fuse's error, raised by the call (not
    on compute), naming the run; for runs indexed by the query too."""
    df = pd.DataFrame({"qid": ["1", "1", "2"], "docid": ["a", "b", "a"], "score": [2.0, 1, 3]})
    run = dd.from_pandas(df, npartitions=1)
    docno = dd.from_pandas(df.rename(columns={"docid": "docno"}), npartitions=1)
    with pytest.raises(frame.TableError) as caught:
        rfd.fuse([docno, docno])
    assert str(caught.value) == (
        "runs[0], column 'docid': no such column (the table has 'qid', 'docno', 'score'); it "
        "has pyterrier's names: pass **rankfusion.frame.PYTERRIER"
    )
    assert from_dask(rfd.fuse([docno, docno], **frame.PYTERRIER)).num_rows == 3
    # indexed by the query with known divisions (aligned, no shuffle): docid missing
    indexed = dd.from_pandas(df.set_index("qid", drop=False), npartitions=1)
    lacking = dd.from_pandas(df.drop(columns="docid").set_index("qid", drop=False), npartitions=1)
    assert indexed.known_divisions and lacking.known_divisions
    with pytest.raises(frame.TableError, match=r"^runs\[1\], column 'docid': no such column"):
        rfd.fuse([indexed, lacking])
    with pytest.raises(frame.TableError, match=r"^runs\[1\], column 'docid': no such column"):
        rfd.fuse([run, dd.from_pandas(df.drop(columns="docid"), npartitions=1)])
    # the real types, and the run
    strings = dd.from_pandas(df.assign(score=["1", "2", "3"]), npartitions=1)
    with pytest.raises(TypeError) as caught:
        rfd.fuse([run, strings])
    assert str(caught.value) == "runs[1]: column 'score' must hold numbers, got large_string"
    floats = dd.from_pandas(df.assign(docid=[1.5, 2.0, 3.0]), npartitions=1)
    with pytest.raises(TypeError) as caught:
        rfd.fuse([run, floats])
    assert str(caught.value) == (
        "runs[1]: column 'docid' must hold strings or integers, got double"
    )
    # as frame.fuse says it of the same tables
    with pytest.raises(TypeError, match=r"runs\[1\]: column 'docid' must hold strings or int"):
        frame.fuse([df, df.assign(docid=[1.5, 2.0, 3.0])])
    # one long DataFrame: its run column too
    long = dd.from_pandas(df.assign(system="a"), npartitions=1)
    with pytest.raises(frame.TableError, match=r"^runs, column 'run': no such column"):
        rfd.fuse(long, run="run", run_order=["a"])
    with pytest.raises(TypeError, match=r"^runs: column 'score' must hold numbers, got bool"):
        rfd.fuse(long.assign(score=True), run="system", run_order=["a"])
