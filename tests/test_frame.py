"""``rankfusion.frame``: runs as tables, fused exactly as ``rankfusion fuse`` fuses TREC files.

The main check writes random runs both as tables and as TREC files and compares ``frame.fuse``
with the command's native path (``trec._read_run_files`` + ``trec._fuse_run_files``: the bytes
``rankfusion fuse`` writes) and with the Python path (``trec.read_run`` + ``trec.fuse``) for the
options the command lacks: document for document, rank for rank, score bits included, and the
same errors. The runs have ties (also 0.0 with -0.0), infinite scores, duplicates, queries that
some runs lack and queries whose rows are not contiguous.
"""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")  # the "arrow" extra (CI installs it: it is in "test")

from rankfusion import frame, trec  # noqa: E402

QIDS = ["1", "2", "10", "qé", "Q-3", "q_z", "7"]
DOCS = ["d1", "d2", "d10", "D1", "a", "b", "é", "é", "€", "ｄ", "doc#1", "'\"", "\\", "z" * 40]
SCORES = [1.0, 2.0, 0.5, -1.0, 1e3, math.inf, -math.inf, 0.0, -0.0, 3.25]


def random_rows(rng: random.Random, qids, *, duplicates: bool):
    rows = []
    for qid in qids:
        n = rng.randint(1, 12)
        pool = rng.sample(DOCS, rng.randint(1, len(DOCS)))
        docs = [rng.choice(pool) for _ in range(n)] if duplicates else pool[:n]
        for doc in docs:
            if rng.random() < 0.2:
                score = rng.choice(SCORES)
            else:
                score = rng.choice([1.5, 2.0, 2.25, 3.0, round(rng.random() * 10, 3)])
            rows.append((qid, doc, score))
    if rng.random() < 0.3:
        rng.shuffle(rows)  # non-contiguous queries
    elif rng.random() < 0.5:
        rows.sort(key=lambda r: (QIDS.index(r[0]), -r[2]))  # by score, as runs usually are
    return rows


def write_trec_rows(rows, path):
    with open(path, "w", encoding="utf-8") as f:
        for rank, (q, d, s) in enumerate(rows, 1):
            f.write(f"{q} Q0 {d} {rank} {s!r} tag\n")


def as_table(rows, rng: random.Random):
    """The rows as a table, in one of the shapes a caller may have."""
    table = pa.table(
        {
            "qid": pa.array([r[0] for r in rows], pa.string()),
            "docid": pa.array([r[1] for r in rows], pa.string()),
            "score": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    shape = rng.random()
    if shape < 0.2 and len(rows) > 2:  # several chunks
        cut = rng.randint(1, len(rows) - 1)
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    elif shape < 0.35:  # dictionary-encoded ids (a Parquet column read as such, a category)
        table = table.set_column(1, "docid", table["docid"].dictionary_encode())
    elif shape < 0.45:
        table = (
            table.cast(
                pa.schema(
                    [("qid", pa.large_string()), ("docid", pa.string()), ("score", pa.float32())]
                ),
                safe=False,
            )
            if all(float(np.float32(r[2])) == r[2] or math.isinf(r[2]) for r in rows)
            else table
        )
    return table


def random_case(rng: random.Random, folder, case: int):
    n_runs = rng.randint(1, 4)
    duplicates = rng.choice(["first", "sum", "error"])
    allow_dups = duplicates != "error" or rng.random() < 0.3
    rows_per_run, paths = [], []
    for r in range(n_runs):
        qids = [q for q in QIDS if rng.random() < 0.6] or [rng.choice(QIDS)]
        rng.shuffle(qids)
        rows = random_rows(rng, qids, duplicates=allow_dups)
        path = str(folder / f"c{case}r{r}.run")
        write_trec_rows(rows, path)
        rows_per_run.append(rows)
        paths.append(path)
    weights = None
    if rng.random() < 0.6:
        weights = [rng.choice([1.0, 0.5, 2.0, 0.0, -0.5, -1.0, 1e22, 0.3]) for _ in paths]
    if rng.random() < 0.03:
        weights = [1e308] * n_runs  # scores overflow: an error for a query
    options = dict(
        k=rng.choice([60, 0, 1, 2.5, 1e-3]),
        weights=weights,
        window=rng.choice([None, None, 1, 2, 5]),
        duplicates=duplicates,
        limit=rng.choice([None, None, 1, 3, 7]),
    )
    order = rng.choice(["score", "file"])
    return rows_per_run, paths, options, order


def native(paths, options, order):
    """What ``rankfusion fuse`` writes (its native path), as (qid, docid, rank, score) rows."""
    mode = "error" if options["duplicates"] == "error" else "keep"
    try:
        files = trec._read_run_files(paths, order=order, duplicates=mode)
        data = trec._fuse_run_files(files, tag="t", **options)
    except ValueError as e:
        return ("error", e)
    out = []
    for line in data.decode("utf-8").splitlines():
        q, _, d, rank, score, _ = line.split()
        out.append((q, d, int(rank), float(score)))
    return ("ok", out)


def ours(tables, options, order, **extra):
    try:
        table = frame.fuse(tables, order=order, **options, **extra)
    except ValueError as e:
        return ("error", e)
    rows = zip(*(table[c].to_pylist() for c in ("qid", "docid", "rank", "score")))
    return ("ok", [(str(q), str(d), r, s) for q, d, r, s in rows])


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def assert_same(expected, got):
    assert expected[0] == got[0], (expected, got)
    if expected[0] == "error":
        e, g = expected[1], got[1]
        if isinstance(e, trec.TrecFormatError):  # a duplicate: the same rows, lines = rows + 1
            assert isinstance(g, frame.TableError), g
            assert g.row + 1 == e.line, (e, g)
            want = e.reason.replace("first on line", "first on row")
            first = int(want.rsplit(" ", 1)[1].rstrip(")"))
            assert g.reason == want.replace(f"row {first})", f"row {first - 1})"), (e, g)
        else:
            assert str(g) == str(e)
        return
    assert len(got[1]) == len(expected[1])
    for (q1, d1, r1, s1), (q2, d2, r2, s2) in zip(expected[1], got[1]):
        assert (q1, d1, r1) == (q2, d2, r2)
        assert bits(s1) == bits(s2), (q1, d1, s1, s2)


def test_fuse_equals_the_command_on_random_runs(tmp_path):
    rng = random.Random(12)
    outcomes = {"ok": 0, "error": 0}
    for case in range(300):
        rows, paths, options, order = random_case(rng, tmp_path, case)
        expected = native(paths, options, order)
        tables = [as_table(r, rng) for r in rows]
        got = ours(tables, options, order)
        assert_same(expected, got)
        outcomes[expected[0]] += 1
    assert outcomes["ok"] > 200 and outcomes["error"] > 5, outcomes


def test_long_table_equals_a_list_of_tables(tmp_path):
    rng = random.Random(5)
    for case in range(100):
        rows, paths, options, order = random_case(rng, tmp_path, case)
        expected = native(paths, options, order)
        names = [f"run{i}" for i in range(len(rows))]
        long = [(name, *row) for name, run in zip(names, rows) for row in run]
        if rng.random() < 0.5:  # the runs' rows interleaved, each run's rows in their order
            slots = [name for name, run in zip(names, rows) for _ in run]
            rng.shuffle(slots)
            pending = {name: iter(run) for name, run in zip(names, rows)}
            long = [(name, *next(pending[name])) for name in slots]
        table = pa.table(
            {
                "run": [r[0] for r in long],
                "qid": [r[1] for r in long],
                "docid": [r[2] for r in long],
                "score": pa.array([r[3] for r in long], pa.float64()),
            }
        )
        got = ours(table, options, order, run="run", run_order=names)
        if expected[0] == "error" and isinstance(expected[1], trec.TrecFormatError):
            assert got[0] == "error" and isinstance(got[1], frame.TableError)
            continue
        assert_same(expected, got)
