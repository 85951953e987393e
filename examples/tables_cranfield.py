"""Fuse the shipped Cranfield runs as Parquet tables: with the command, with rankfusion.frame, and
on a local Dask cluster; each gives what ``rankfusion fuse`` gives on the TREC files.

    pip install ".[arrow,dask]"
    python examples/tables_cranfield.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
from pathlib import Path

import dask.dataframe as dd
import pyarrow.parquet as pq
from distributed import Client, LocalCluster

from rankfusion import dask as rfd
from rankfusion import frame

DATA = Path(__file__).resolve().parent.parent / "data" / "cranfield"

# distributed's scheduler logs two WARNING lines for every shuffle, when it starts and when it
# ends ("Shuffle ... initialized by task ...", "... deactivated due to stimulus ..."): news, not
# failures (docs/dask.md). Quiet here; an error is still shown.
logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)


def to_parquet(folder: Path) -> list:
    """The two TREC runs as Parquet files (qid, docid, score, rank)."""
    paths = []
    for name in ("bm25", "minilm"):
        path = folder / f"{name}.parquet"
        frame.write_parquet(frame.read_trec(DATA / f"{name}.run.gz"), path)
        paths.append(path)
    return paths


def command(*args) -> None:
    subprocess.run([sys.executable, "-m", "rankfusion", "fuse", *map(str, args)], check=True)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    bm25, minilm = to_parquet(folder)

    # 1. the command, on the TREC files and on the Parquet files
    command(DATA / "bm25.run.gz", DATA / "minilm.run.gz", "-o", folder / "trec.run", "-q")
    command(bm25, minilm, "-o", folder / "command.parquet", "-q")

    # 2. in Python, from any Arrow tables (pandas, polars, DuckDB results work the same way)
    fused = frame.fuse([pq.read_table(bm25), pq.read_table(minilm)], limit=1000)

    # 3. on a local Dask cluster: the runs as Dask DataFrames, written with to_parquet
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        with Client(cluster):
            runs = [dd.read_parquet(bm25), dd.read_parquet(minilm)]
            rfd.fuse(runs, limit=1000).to_parquet(folder / "dask")
            on_cluster = dd.read_parquet(folder / "dask").compute()

    lines = [line.split() for line in (folder / "trec.run").read_text().splitlines()]
    want = {(q, d): (int(r), float(s)) for q, _, d, r, s, _ in lines}
    command_table = pq.read_table(folder / "command.parquet")
    for name, rows in (
        ("command, Parquet", command_table.to_pylist()),
        ("frame.fuse", fused.to_pylist()),
        ("dask, 2 workers", on_cluster.to_dict("records")),
    ):
        got = {(r["qid"], r["docid"]): (int(r["rank"]), float(r["score"])) for r in rows}
        same = got == want  # ranks, and scores compared with ==: bit for bit
        print(f"{name:18} {len(got):,} fused docs, same as rankfusion fuse on TREC: {same}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(Path(scratch))
