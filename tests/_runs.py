"""Random runs for the table tests: rows of (qid, docid, score) with ties (also 0.0 with -0.0),
infinite scores, duplicates, queries some runs lack and queries whose rows are not contiguous;
written as TREC files too, so that the command can fuse the same runs."""

from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
from _methods import random_method

QIDS = ["1", "2", "10", "qé", "Q-3", "q_z", "7"]
DOCS = ["d1", "d2", "d10", "D1", "a", "b", "é", "é", "€", "ｄ", "doc#1", "'\"", "\\", "z" * 40]
SCORES = [1.0, 2.0, 0.5, -1.0, 1e3, math.inf, -math.inf, 0.0, -0.0, 3.25]


def random_rows(rng: random.Random, qids, *, duplicates: bool, finite: bool = False):
    rows = []
    for qid in qids:
        n = rng.randint(1, 12)
        pool = rng.sample(DOCS, rng.randint(1, len(DOCS)))
        docs = [rng.choice(pool) for _ in range(n)] if duplicates else pool[:n]
        for doc in docs:
            if rng.random() < 0.2:
                score = rng.choice(SCORES[:5] + SCORES[7:] if finite else SCORES)
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


def random_case(rng: random.Random, folder, case: int, finite: bool = False, methods: bool = False):
    n_runs = rng.randint(1, 4)
    duplicates = rng.choice(["first", "sum", "error"])
    allow_dups = duplicates != "error" or rng.random() < 0.3
    rows_per_run, paths = [], []
    for r in range(n_runs):
        qids = [q for q in QIDS if rng.random() < 0.6] or [rng.choice(QIDS)]
        rng.shuffle(qids)
        rows = random_rows(rng, qids, duplicates=allow_dups, finite=finite)
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
    if methods:  # every fusion method, with its own arguments
        options.update(random_method(rng, n_runs, weights))
        if options["method"] != "rrf":
            options["k"] = None
    order = rng.choice(["score", "file"])
    return rows_per_run, paths, options, order
