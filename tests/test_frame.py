"""``rankfusion.frame``: runs as tables, fused exactly as ``rankfusion fuse`` fuses TREC files.

The main check writes random runs both as tables and as TREC files and compares ``frame.fuse``
with the command's native path (``trec._read_run_files`` + ``trec._fuse_run_files``: the bytes
``rankfusion fuse`` writes) and with the Python path (``trec.read_run`` + ``trec.fuse``) for the
options the command lacks: document for document, rank for rank, score bits included, and the
same errors. The runs have ties (also 0.0 with -0.0), infinite scores, duplicates, queries that
some runs lack and queries whose rows are not contiguous.
"""

from __future__ import annotations

import json
import pickle
import random
import struct
import subprocess
import sys

import pytest

pa = pytest.importorskip("pyarrow")  # the "arrow" extra (CI installs it: it is in "test")

from _runs import as_table, random_case, write_trec_rows  # noqa: E402

from rankfusion import Fusion, frame, rrf, trec  # noqa: E402


def native(paths, options, order):
    """What ``rankfusion fuse`` writes (its native path), as (qid, docid, rank, score) rows."""
    mode = "error" if options["duplicates"] == "error" else "keep"
    arguments = {name: v for name, v in options.items() if not (name == "k" and v is None)}
    try:
        # the settings first, before any file is read, as the command checks them
        Fusion(**arguments).check(len(paths))
        files = trec._read_run_files(paths, order=order, duplicates=mode)
        data = trec._fuse_run_files(files, tag="t", **arguments)
    except (ValueError, TypeError) as e:
        return ("error", e)
    out = []
    for line in data.decode("utf-8").splitlines():
        q, _, d, rank, score, _ = line.split()
        out.append((q, d, int(rank), float(score)))
    return ("ok", out)


def ours(tables, options, order, **extra):
    options = {name: v for name, v in options.items() if not (name == "k" and v is None)}
    try:
        table = frame.fuse(tables, order=order, **options, **extra)
    except (ValueError, TypeError) as e:
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


def test_every_method_equals_the_command_on_random_runs(tmp_path):
    """Every fusion method and its arguments, score-based methods reading the score column."""
    rng = random.Random(21)
    outcomes = {"ok": 0, "error": 0}
    methods = set()
    for case in range(300):
        finite = case % 4 != 0  # inf scores are an error for score-based methods
        rows, paths, options, order = random_case(rng, tmp_path, case, finite, methods=True)
        expected = native(paths, options, order)
        got = ours([as_table(r, rng) for r in rows], options, order)
        assert_same(expected, got)
        outcomes[expected[0]] += 1
        methods.add(options["method"])
    assert outcomes["ok"] > 150 and outcomes["error"] > 5, outcomes
    assert len(methods) == 22


def test_score_method_traces_carry_the_normalised_scores():
    """wsum over min-max: raw_score, normalized and contribution per run. A ranks x 3, y 2, z 1;
    B ranks z 0.9, x 0.8 (min-max: x 1.0 and 0.0, y 0.5, z 0.0 and 1.0)."""
    a = pa.table({"qid": ["1"] * 3, "docid": ["x", "y", "z"], "score": [3.0, 2.0, 1.0]})
    b = pa.table({"qid": ["1"] * 2, "docid": ["z", "x"], "score": [0.9, 0.8]})
    table = frame.fuse([a, b], method="wsum", norm="min-max", weights=[1.0, 2.0], trace=True)
    rows = table.to_pylist()
    assert [(r["docid"], r["score"]) for r in rows] == [("z", 2.0), ("x", 1.0), ("y", 0.5)]
    z = rows[0]
    assert (z["raw_score_0"], z["normalized_0"], z["contribution_0"]) == (1.0, 0.0, 0.0)
    assert (z["raw_score_1"], z["normalized_1"], z["contribution_1"]) == (0.9, 1.0, 2.0)
    assert rows[2]["normalized_1"] is None  # y is not in B
    assert "normalized_0" not in frame.fuse([a, b], trace=True).column_names  # rrf: no norm


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


@pytest.mark.parametrize("cells, rows", [(1, 1), (24, 7)])
def test_small_blocks_change_nothing(tmp_path, monkeypatch, cells, rows):
    """Queries fused in many blocks of similar size and doc ids hashed in many blocks of
    queries (one query each at the extreme): the same output, and the same first error."""
    monkeypatch.setattr(frame, "_BLOCK_CELLS", cells)
    monkeypatch.setattr(frame, "_ENCODE_ROWS", rows)
    rng = random.Random(99)
    for case in range(60):
        rows_, paths, options, order = random_case(rng, tmp_path, case)
        assert_same(
            native(paths, options, order), ours([as_table(r, rng) for r in rows_], options, order)
        )


def python_path(paths, order, duplicates, **options):
    """Per query, ``rankfusion.rrf`` on the runs as ``trec.read_run`` reads them."""
    mode = "error" if duplicates == "error" else "keep"
    runs = [trec.read_run(p, order=order, duplicates=mode) for p in paths]
    qids = list(dict.fromkeys(q for run in runs for q in run))
    empty = trec.Ranking([], [])
    out = {}
    for q in qids:
        rankings = [run.get(q, empty) for run in runs]
        out[q] = rrf(
            [r.docids for r in rankings],
            duplicates=duplicates,
            scores=[r.scores for r in rankings],
            **options,
        )
    return out


def test_options_and_trace_equal_rrf_per_query(tmp_path):
    """tie_break, offset, min_score, normalize and the trace columns, against ``rrf`` per query
    on the runs ``read_run`` reads (raw scores included, also 0.0 tied with -0.0; finite, as
    ``rrf(scores=...)`` wants them)."""
    rng = random.Random(3)
    checked = 0
    for case in range(150):
        rows, paths, options, order = random_case(rng, tmp_path, case, finite=True)
        duplicates = options.pop("duplicates")
        options.update(
            tie_break=rng.choice(["best_rank", "key"]),
            offset=rng.choice([0, 0, 1, 3]),
            min_score=rng.choice([None, None, 0.0, 0.02]),
            normalize=rng.choice([False, True]),
            trace=True,
        )
        try:
            expected = python_path(paths, order, duplicates, **options)
        except ValueError:
            continue
        table = frame.fuse(
            [as_table(r, rng) for r in rows], order=order, duplicates=duplicates, **options
        )
        got = table.to_pylist()
        want = [(q, h) for q, hits in expected.items() for h in hits]
        assert len(got) == len(want)
        per_query: dict = {}
        for row, (q, hit) in zip(got, want):
            per_query[q] = per_query.get(q, 0) + 1
            assert (row["qid"], row["docid"], row["rank"]) == (q, hit.key, per_query[q])
            assert bits(row["score"]) == bits(hit.score)
            for i in range(len(rows)):
                mine = [c for c in hit.contributions if c.list_index == i]
                if not mine:
                    assert row[f"rank_{i}"] is None and row[f"raw_score_{i}"] is None
                    assert row[f"contribution_{i}"] is None
                    continue
                assert row[f"rank_{i}"] == mine[0].rank
                assert bits(row[f"raw_score_{i}"]) == bits(mine[0].score)
                total = 0.0
                for value in sorted(c.contribution for c in mine):
                    total += value
                assert bits(row[f"contribution_{i}"]) == bits(total)
        checked += 1
    assert checked > 100
    assert json.loads(table.schema.metadata[b"rankfusion.runs"]) == [
        str(i) for i in range(len(rows))
    ]


def test_queries_selects_and_orders(tmp_path):
    a = pa.table(
        {"qid": ["1", "1", "2", "3"], "docid": ["a", "b", "c", "d"], "score": [2.0, 1, 1, 1]}
    )
    b = pa.table({"qid": ["3", "4"], "docid": ["d", "e"], "score": [1.0, 1]})
    out = frame.fuse([a, b], queries=["4", "nope", "1", "4"])
    assert out["qid"].to_pylist() == ["4", "1", "1"]
    assert out["docid"].to_pylist() == ["e", "a", "b"]
    assert frame.fuse([a, b], queries=[]).num_rows == 0
    with pytest.raises(TypeError, match="queries"):
        frame.fuse([a, b], queries="1")


# --- what a table can be ----------------------------------------------------------------------

RUN_A = {"qid": ["1", "1", "2"], "docid": ["a", "b", "a"], "score": [2.0, 1.0, 5.0]}
RUN_B = {"qid": ["1", "2", "2"], "docid": ["b", "c", "a"], "score": [9.0, 3.0, 1.0]}


def expected_ab():
    return frame.fuse([pa.table(RUN_A), pa.table(RUN_B)])


class Stream:
    """Only the Arrow PyCapsule stream interface, as polars, DuckDB and others export it."""

    def __init__(self, table):
        self.table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self.table.__arrow_c_stream__(requested_schema)


def test_tables_of_every_kind():
    want = expected_ab()
    a, b = pa.table(RUN_A), pa.table(RUN_B)
    assert want.select(["qid", "docid", "rank"]).to_pydict() == {
        "qid": ["1", "1", "2", "2"],
        "docid": ["b", "a", "a", "c"],
        "rank": [1, 2, 1, 2],
    }
    for runs in (
        [a.to_batches()[0], pa.RecordBatchReader.from_batches(b.schema, b.to_batches())],
        [Stream(a), Stream(b)],
        (t for t in [a, b]),
        {"bm25": a, "dense": b},
    ):
        assert frame.fuse(runs).equals(want, check_metadata=False)
    pd = pytest.importorskip("pandas")  # installed with the dask extra (CI has it)
    frames = [pd.DataFrame(RUN_A), pd.DataFrame(RUN_B).set_index("qid", drop=False)]
    got = frame.fuse(frames).select(["qid", "docid", "score", "rank"])
    assert got.cast(want.schema).equals(want, check_metadata=False)  # pandas 3: large_string


def test_the_fused_table_against_plain_rrf():
    """Two tiny runs worked out with rrf itself: query order, ranks, scores."""
    out = expected_ab().to_pylist()
    q1 = rrf([["a", "b"], ["b"]])
    q2 = rrf([["a"], ["c", "a"]])
    assert [(r["qid"], r["docid"], r["score"], r["rank"]) for r in out] == [
        ("1", h.key, h.score, i) for i, h in enumerate(q1, 1)
    ] + [("2", h.key, h.score, i) for i, h in enumerate(q2, 1)]


def test_presets_name_the_columns():
    a = pa.table({"q_id": RUN_A["qid"], "doc_id": RUN_A["docid"], "score": RUN_A["score"]})
    b = pa.table({"q_id": RUN_B["qid"], "doc_id": RUN_B["docid"], "score": RUN_B["score"]})
    out = frame.fuse([a, b], **frame.RANX)
    assert out.column_names == ["q_id", "doc_id", "score", "rank"]
    assert out.rename_columns(["qid", "docid", "score", "rank"]).equals(
        expected_ab(), check_metadata=False
    )
    for preset, names in [
        (frame.PYTERRIER, ("qid", "docno", "score")),
        (frame.IR_MEASURES, ("query_id", "doc_id", "score")),
        (frame.TREC, ("qid", "docid", "score")),
    ]:
        assert tuple(preset.values()) == names
        tables = [
            pa.table(dict(zip(names, RUN_A.values()))),
            pa.table(dict(zip(names, RUN_B.values()))),
        ]
        assert frame.fuse(tables, **preset).column_names == [*names, "rank"]
        assert frame.columns_of(tables[0].schema) == dict(preset)
    with pytest.raises(ValueError, match="no known run columns"):
        frame.columns_of(["a", "b"])


def test_long_table_with_a_run_column():
    long = pa.table(
        {
            "system": ["B"] * 3 + ["A"] * 3,
            "qid": RUN_B["qid"] + RUN_A["qid"],
            "docid": RUN_B["docid"] + RUN_A["docid"],
            "score": RUN_B["score"] + RUN_A["score"],
        }
    )
    out = frame.fuse(long, run="system", run_order=["A", "B"], trace=True)
    assert out.select(["qid", "docid", "score", "rank"]).equals(expected_ab(), check_metadata=False)
    assert json.loads(out.schema.metadata[b"rankfusion.runs"]) == ["A", "B"]
    assert out["rank_0"].to_pylist()[:2] == [2, 1]  # run A: doc b at rank 2, doc a at rank 1
    # without run_order the runs come in order of first appearance: B, then A
    swapped = frame.fuse(long, run="system", trace=True)
    assert json.loads(swapped.schema.metadata[b"rankfusion.runs"]) == ["B", "A"]
    assert swapped["rank_0"].to_pylist()[:2] == [1, None]
    # a run named in run_order that has no rows is an empty run
    empty = frame.fuse(long, run="system", run_order=["A", "B", "C"], weights=[1, 1, 5])
    assert empty.select(["qid", "docid", "score", "rank"]).equals(
        expected_ab(), check_metadata=False
    )
    with pytest.raises(
        frame.TableError, match=r"run 'B', row 0, column 'system': .*not in run_order"
    ):
        frame.fuse(long, run="system", run_order=["A"])
    with pytest.raises(ValueError, match="twice"):
        frame.fuse(long, run="system", run_order=["A", "A"])
    with pytest.raises(ValueError, match="run_order needs run="):
        frame.fuse([long], run_order=["A"])
    with pytest.raises(TypeError, match="one table"):
        frame.fuse(long)
    nulls = long.set_column(0, "system", pa.array(["B", None, "B", "A", "A", "A"]))
    with pytest.raises(frame.TableError, match=r"runs, row 1, column 'system': run is null"):
        frame.fuse(nulls, run="system")
    bad = long.set_column(3, "score", pa.array([1.0, 2.0, 3.0, 4.0, float("nan"), 6.0]))
    with pytest.raises(frame.TableError, match=r"run 'A', row 4, column 'score': score is NaN"):
        frame.fuse(bad, run="system")
    dup = long.set_column(2, "docid", pa.array(["b", "c", "a", "a", "a", "a"]))
    with pytest.raises(
        frame.TableError,
        match=r"run 'A', row 4, column 'docid': query '1' has doc 'a' twice \(first on row 3\)",
    ):
        frame.fuse(dup, run="system", duplicates="error")


def test_integer_ids_keep_their_type_and_compare_as_text(tmp_path):
    """Integer ids are ranked as the decimal text a TREC file holds (ties: '9' > '10')."""
    a = pa.table(
        {"qid": pa.array([7, 7, 7], pa.int32()), "docid": [9, 10, 3], "score": [1.0, 1.0, 2.0]}
    )
    b = pa.table({"qid": pa.array([7, 8], pa.int64()), "docid": [10, 4], "score": [5, 1]})
    out = frame.fuse([a, b], trace=True)
    assert out.schema.field("qid").type == pa.int64()  # int32 and int64 -> int64
    assert out.schema.field("docid").type == pa.int64()
    assert out["docid"].to_pylist() == [10, 3, 9, 4]
    assert out["rank_0"].to_pylist() == [3, 1, 2, None]  # 3 (2.0), then 9 before 10 (a tie)
    write_trec_rows([("7", "9", 1.0), ("7", "10", 1.0), ("7", "3", 2.0)], tmp_path / "a.run")
    write_trec_rows([("7", "10", 5.0), ("8", "4", 1.0)], tmp_path / "b.run")
    options = dict(k=60, weights=None, window=None, duplicates="first", limit=None)
    expected = native([tmp_path / "a.run", tmp_path / "b.run"], options, "score")
    assert_same(expected, ours([a, b], options, "score"))
    # ints in one run, text in the other: one id type, text ("10" is 10)
    text = b.set_column(1, "docid", pa.array(["10", "4"]))
    mixed = frame.fuse([a, text])
    assert mixed.schema.field("docid").type == pa.large_string()
    assert mixed.to_pylist() == [
        {**row, "docid": str(row["docid"]), "qid": row["qid"]}
        for row in frame.fuse([a, b]).to_pylist()
    ]


def test_dictionary_and_chunked_columns():
    a, b = pa.table(RUN_A), pa.table(RUN_B)
    want = expected_ab()
    cat = [t.set_column(0, "qid", t["qid"].dictionary_encode()) for t in (a, b)]
    cat = [t.set_column(1, "docid", t["docid"].dictionary_encode()) for t in cat]
    assert frame.fuse(cat).equals(want, check_metadata=False)
    # a dictionary with a value twice and one unused
    values = pa.array(["b", "zz", "a", "b"])
    odd = pa.DictionaryArray.from_arrays(pa.array([2, 3, 2], pa.int32()), values)
    assert frame.fuse([a.set_column(1, "docid", odd), b]).equals(want, check_metadata=False)
    # a null in a dictionary that a row uses
    holes = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["a", None]))
    with pytest.raises(frame.TableError, match=r"runs\[0\], row 1, column 'docid': doc id is null"):
        frame.fuse([a.set_column(1, "docid", holes), b])
    chunked = pa.concat_tables([a.slice(0, 1), a.slice(1, 1), a.slice(2)])
    assert frame.fuse([chunked, b]).equals(want, check_metadata=False)


# a query's rows apart (1, 2, 1): grouping them takes rows out of order
SCATTERED = {"qid": ["1", "2", "1", "2"], "docid": ["a", "c", "b", "a"], "score": [4.0, 3, 2, 1]}


def test_string_view_ids_plain_and_as_dictionaries():
    """string_view ids (what polars exports) and string_view dictionaries (polars'
    Categorical): Arrow cannot take rows of them, so they are read as large_string."""
    plain = [pa.table(SCATTERED), pa.table(RUN_B)]
    want = frame.fuse(plain)

    def view(t, name, dictionary):
        col = t[name].cast(pa.string_view())
        col = col.dictionary_encode() if dictionary else col
        return t.set_column(t.schema.get_field_index(name), name, col)

    for names in (["docid"], ["qid"], ["qid", "docid"]):
        for dictionary in (False, True):
            for which in ([0], [1], [0, 1]):
                runs = list(plain)
                for i in which:
                    for name in names:
                        runs[i] = view(runs[i], name, dictionary)
                got = frame.fuse(runs)
                assert got.cast(want.schema).equals(want, check_metadata=False), (names, which)
                assert frame.fuse(runs, trace=True, tie_break="key").num_rows == want.num_rows


def test_polars_frames_and_categoricals():
    pl = pytest.importorskip("polars")  # in the test extra (CI has it)
    want = frame.fuse([pa.table(SCATTERED), pa.table(RUN_B)])
    a, b = pl.DataFrame(SCATTERED), pl.DataFrame(RUN_B)

    def cat(df, *names):
        return df.with_columns(*[pl.col(n).cast(pl.Categorical) for n in names])

    for runs in (
        [a, b],
        [cat(a, "docid"), b],
        [cat(a, "qid"), b],
        [a, cat(b, "qid", "docid")],
        [cat(a, "qid", "docid"), cat(b, "qid", "docid")],
    ):
        got = frame.fuse(runs)
        assert got.cast(want.schema).equals(want, check_metadata=False)
    holes = a.with_columns(pl.Series("docid", ["a", None, "b", "a"]).cast(pl.Categorical))
    with pytest.raises(frame.TableError, match=r"runs\[0\], row 1, column 'docid': doc id is null"):
        frame.fuse([holes, b])


# --- bad tables -------------------------------------------------------------------------------


def with_column(columns, name, values):
    return pa.table({**columns, name: values})


@pytest.mark.parametrize(
    "table, error, message",
    [
        (
            pa.table({"qid": ["1"], "docno": ["a"], "score": [1.0]}),
            frame.TableError,
            r"runs\[1\], column 'docid': no such column \(the table has 'qid', 'docno', 'score'\); "
            r"it has pyterrier's names: pass \*\*rankfusion.frame.PYTERRIER",
        ),
        (
            with_column(RUN_B, "qid", [None, "2", "2"]),
            frame.TableError,
            r"runs\[1\], row 0, column 'qid': query id is null",
        ),
        (
            with_column(RUN_B, "docid", ["b", "c", None]),
            frame.TableError,
            r"runs\[1\], row 2, column 'docid': doc id is null",
        ),
        (
            with_column(RUN_B, "score", [1.0, None, 1.0]),
            frame.TableError,
            r"runs\[1\], row 1, column 'score': score is null",
        ),
        (
            with_column(RUN_B, "score", [1.0, 2.0, float("nan")]),
            frame.TableError,
            r"runs\[1\], row 2, column 'score': score is NaN",
        ),
        (
            with_column(RUN_B, "score", ["1", "2", "3"]),
            frame.ColumnTypeError,
            r"runs\[1\]: column 'score' must hold numbers, got string",
        ),
        (
            with_column(RUN_B, "score", [True, False, True]),
            TypeError,
            "must hold numbers, got bool",
        ),
        (
            with_column(RUN_B, "docid", [1.5, 2.0, 3.0]),
            frame.ColumnTypeError,
            "column 'docid' must hold strings or integers, got double",
        ),
        (
            pa.table(
                [pa.array(["1"]), pa.array(["a"]), pa.array(["b"]), pa.array([1.0])],
                names=["qid", "docid", "docid", "score"],
            ),
            frame.TableError,
            "the table has 2 columns of that name",
        ),
        ("not a table", TypeError, r"runs\[1\] must be a table"),
    ],
)
def test_bad_tables(table, error, message):
    with pytest.raises(error, match=message):
        frame.fuse([pa.table(RUN_A), table])


def test_a_column_of_the_wrong_type_carries_its_fields():
    """ColumnTypeError is a TypeError whose fields say which run and column, and why; it
    pickles (Dask sends it between processes)."""
    with pytest.raises(frame.ColumnTypeError) as caught:
        frame.fuse([pa.table(RUN_A), with_column(RUN_B, "score", ["1", "2", "3"])])
    e = caught.value
    assert isinstance(e, TypeError)
    assert (e.run, e.column, e.reason) == ("runs[1]", "score", "must hold numbers, got string")
    again = pickle.loads(pickle.dumps(e))
    assert (type(again), str(again)) == (frame.ColumnTypeError, str(e))


def test_a_null_row_is_named_across_chunks():
    bad = pa.concat_tables([pa.table(RUN_B), with_column(RUN_B, "score", [1.0, float("nan"), 1.0])])
    with pytest.raises(frame.TableError, match=r"row 4, column 'score': score is NaN"):
        frame.fuse([pa.table(RUN_A), bad])


def test_duplicates_as_the_trec_reader(tmp_path):
    dup = pa.table(
        {"qid": ["1", "2", "2", "1", "2"], "docid": ["a", "b", "c", "a", "b"], "score": [1.0] * 5}
    )
    with pytest.raises(
        frame.TableError,
        match=r"runs\[0\], row 3, column 'docid': query '1' has doc 'a' twice \(first on row 0\)",
    ):
        frame.fuse([dup], duplicates="error")
    # "first" counts a doc's best-ranked row, "sum" every row
    first = frame.fuse([dup]).to_pylist()
    assert [(r["qid"], r["docid"]) for r in first] == [("1", "a"), ("2", "c"), ("2", "b")]
    summed = frame.fuse([dup], duplicates="sum").to_pylist()
    assert summed[0]["score"] == 1 / 61 + 1 / 62
    # an earlier run's duplicate comes before a later run's NaN, as in TREC files
    nan = with_column(RUN_B, "score", [float("nan"), 1.0, 1.0])
    with pytest.raises(frame.TableError, match=r"runs\[0\], row 3"):
        frame.fuse([dup, nan], duplicates="error")
    with pytest.raises(frame.TableError, match="NaN"):
        frame.fuse([dup, nan], duplicates="first")


def test_arguments_are_checked_before_any_row():
    nan = with_column(RUN_B, "score", [float("nan"), 1.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        frame.fuse([pa.table(RUN_A), nan], weights=[1.0])
    with pytest.raises(TypeError, match="k"):
        frame.fuse([nan], k="60")
    with pytest.raises(ValueError, match="method must be one of"):
        frame.fuse([nan], method="combsum")
    with pytest.raises(TypeError, match="method must be one of"):
        frame.fuse([nan], method=None)
    with pytest.raises(ValueError, match="k is not used by method 'wsum'"):
        frame.fuse([nan], method="wsum", k=60)
    with pytest.raises(ValueError, match="order"):
        frame.fuse([nan], order="rank")
    with pytest.raises(ValueError, match="duplicates"):
        frame.fuse([nan], duplicates="keep")
    with pytest.raises(TypeError, match="query must be a column name"):
        frame.fuse([nan], query=1)
    with pytest.raises(ValueError, match="three columns"):
        frame.fuse([nan], doc="qid")
    with pytest.raises(ValueError, match="'rank'"):
        frame.fuse([nan], score="rank")
    # no runs, no rows: still checked, and an empty table
    with pytest.raises(ValueError, match="window"):
        frame.fuse([], window=0)
    empty = frame.fuse([])
    assert empty.num_rows == 0 and empty.column_names == ["qid", "docid", "score", "rank"]
    no_rows = frame.fuse([pa.table(RUN_A).slice(0, 0), pa.table(RUN_B)])
    assert no_rows.num_rows == 3


def test_a_query_that_cannot_be_fused_is_named(monkeypatch):
    """The first failing query in output order, whichever block it was fused in."""
    monkeypatch.setattr(frame, "_BLOCK_CELLS", 2)
    rows = {
        "qid": ["1", "1", "1", "2", "3"],
        "docid": ["a", "b", "c", "d", "e"],
        "score": [1.0] * 5,
    }
    # query 1 has the most rows: its block is fused last, yet it is the one named; its docs
    # tie, so c ranks first (doc ids descending) and only c's two contributions overflow
    with pytest.raises(ValueError, match=r"^query '1': the score of key 'c' is not finite"):
        frame.fuse([pa.table(rows)] * 2, weights=[1e308, 1e308], k=0)
    with pytest.raises(ValueError, match=r"^query '2': the score of key 'd' is not finite"):
        frame.fuse([pa.table(rows)] * 2, weights=[1e308, 1e308], k=0, queries=["2", "1"])


# --- files and conversions --------------------------------------------------------------------


def test_trec_round_trips(tmp_path):
    rng = random.Random(8)
    for case in range(40):
        rows, paths, options, order = random_case(rng, tmp_path, case)
        mode = rng.choice(["keep", "first"])
        path = paths[0]
        table = frame.read_trec(path, order=order, duplicates=mode)
        run = trec.read_run(path, order=order, duplicates=mode)
        assert frame.to_run(table, order="file", duplicates="keep") == run
        assert frame.to_run(as_table(rows[0], rng), order=order, duplicates=mode) == run
        assert table.to_pydict()["rank"] == [
            i for r in run.values() for i in range(1, len(r.docids) + 1)
        ]
        # the fused table written as TREC is what write_run writes for trec.fuse
        fuse_options = {k: v for k, v in options.items() if k != "duplicates"}
        runs = [trec.read_run(p, order=order, duplicates="keep") for p in paths]
        fused = frame.fuse(
            [frame.read_trec(p, order=order, duplicates="keep") for p in paths],
            order="file",
            **fuse_options,
        )
        try:
            trec.write_run(trec.fuse(runs, **fuse_options), tmp_path / "want.run", tag="x")
        except ValueError:
            continue
        frame.write_trec(fused, tmp_path / "got.run", tag="x")
        assert (tmp_path / "got.run").read_bytes() == (tmp_path / "want.run").read_bytes()
        back = frame.from_run(trec.fuse(runs, **fuse_options))
        assert back.equals(fused.cast(back.schema), check_metadata=False)
    with pytest.raises(trec.TrecFormatError, match="empty run"):
        (tmp_path / "empty.run").write_text("")
        frame.read_trec(tmp_path / "empty.run")
    assert frame.read_trec(tmp_path / "empty.run", allow_empty=True).num_rows == 0


def test_write_trec_checks(tmp_path):
    ok = pa.table({"qid": ["1", "2", "1"], "docid": ["a", "b", "c"], "score": [1.0, 2.0, 0.5]})
    frame.write_trec(ok, tmp_path / "ok.run", tag="t")
    assert (tmp_path / "ok.run").read_text() == ("1 Q0 a 1 1.0 t\n1 Q0 c 2 0.5 t\n2 Q0 b 1 2.0 t\n")
    with pytest.raises(ValueError, match="whitespace"):
        frame.write_trec(
            with_column(ok.to_pydict(), "docid", ["a b", "b", "c"]), tmp_path / "x.run"
        )
    assert not (tmp_path / "x.run").exists()
    with pytest.raises(frame.TableError, match="doc id is null"):
        frame.write_trec(with_column(ok.to_pydict(), "docid", ["a", None, "c"]), tmp_path / "x.run")


def test_parquet_files(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    names = {
        "q_id": RUN_A["qid"],
        "doc_id": RUN_A["docid"],
        "score": RUN_A["score"],
        "x": [1, 2, 3],
    }
    pq.write_table(pa.table(names), tmp_path / "ranx.parquet")
    table = frame.read_table(tmp_path / "ranx.parquet")
    assert table.column_names == ["qid", "docid", "score"]
    assert table.cast(pa.table(RUN_A).schema).equals(pa.table(RUN_A))
    assert frame.file_format("A.PQ") == "parquet" and frame.file_format("a.run.gz") == "trec"
    frame.write_parquet(table, tmp_path / "out.parquet")
    assert pq.read_table(tmp_path / "out.parquet").equals(table)
    # a failed write leaves neither the file nor a temporary one
    with pytest.raises(pa.ArrowException):
        frame.write_parquet(table, tmp_path / "bad.parquet", compression="no-such-codec")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet", "ranx.parquet"]


def test_works_without_pandas_and_polars():
    """rankfusion.frame needs neither (pyarrow itself imports pandas lazily where installed:
    here neither can be imported)."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pandas', 'polars'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import pyarrow as pa\n"
        "from rankfusion import frame\n"
        "t = pa.table({'qid': ['1', '1'], 'docid': ['a', 'b'], 'score': [1.0, 2.0]})\n"
        "print(frame.fuse([t, t], trace=True).to_pydict()['docid'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "['b', 'a']", out.stderr


def test_without_pyarrow_the_error_names_the_extra():
    code = "import sys\nsys.modules['pyarrow'] = None\nimport rankfusion.frame\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert 'pip install "rankfusion[arrow]"' in out.stderr
