"""``rankfusion fuse``/``explain`` with Parquet runs: the same output, warnings and errors as
with the same runs as TREC files (the shipped Cranfield runs, converted)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pa = pytest.importorskip("pyarrow")  # the "arrow" extra (CI installs it: it is in "test")
pq = pytest.importorskip("pyarrow.parquet")

from rankfusion import frame  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "cranfield")
BM25 = os.path.join(DATA, "bm25.run.gz")
MINILM = os.path.join(DATA, "minilm.run.gz")
QRELS = os.path.join(DATA, "qrels.txt")


def rankfusion(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "rankfusion", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture(scope="module")
def parquet_runs(tmp_path_factory):
    """The Cranfield runs as Parquet: BM25 with TREC's names, MiniLM with ranx's, in file order."""
    folder = tmp_path_factory.mktemp("parquet")
    bm25 = folder / "bm25.parquet"
    minilm = folder / "minilm.parquet"
    # file order, every line: what the TREC file holds, ranked again by the command
    frame.write_parquet(frame.read_trec(BM25, order="file", duplicates="keep"), bm25)
    table = frame.read_trec(MINILM, order="file", duplicates="keep").select(
        ["qid", "docid", "score"]
    )
    frame.write_parquet(table.rename_columns(["q_id", "doc_id", "score"]), minilm)
    return bm25, minilm


def test_parquet_to_parquet_equals_trec_to_trec(parquet_runs, tmp_path):
    bm25, minilm = parquet_runs
    done = rankfusion("fuse", bm25, minilm, "-o", tmp_path / "f.parquet", "--weights", "1,0.5")
    assert done.returncode == 0, done.stderr
    done = rankfusion("fuse", BM25, MINILM, "-o", tmp_path / "f.run", "--weights", "1,0.5")
    assert done.returncode == 0, done.stderr
    table = pq.read_table(tmp_path / "f.parquet")
    assert table.column_names == ["qid", "docid", "score", "rank"]
    lines = [line.split() for line in (tmp_path / "f.run").read_text().splitlines()]
    assert len(lines) == table.num_rows > 30_000
    assert [r[0] for r in lines] == table["qid"].to_pylist()
    assert [r[2] for r in lines] == table["docid"].to_pylist()
    assert [int(r[3]) for r in lines] == table["rank"].to_pylist()
    assert [float(r[4]) for r in lines] == table["score"].to_pylist()  # == on floats: bits
    # Parquet in, TREC out: byte for byte
    done = rankfusion("fuse", bm25, minilm, "-o", tmp_path / "g.run", "--weights", "1,0.5")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "g.run").read_bytes() == (tmp_path / "f.run").read_bytes()


@pytest.mark.parametrize(
    "options",
    [
        ["--limit", "10", "--tag", "x"],
        ["-k", "2.5", "--window", "50", "--order", "file"],
        ["--duplicates", "sum", "--limit", "0"],
    ],
)
def test_stdout_and_mixed_inputs(parquet_runs, options):
    bm25, minilm = parquet_runs
    want = rankfusion("fuse", BM25, MINILM, *options)
    assert want.returncode == 0, want.stderr
    for runs in ([bm25, minilm], [BM25, minilm], [bm25, MINILM]):
        got = rankfusion("fuse", *runs, *options)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout


def test_format_option_and_names_without_extension(parquet_runs, tmp_path):
    bm25, minilm = parquet_runs
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(bm25.read_bytes())
    b.write_bytes(minilm.read_bytes())
    done = rankfusion("fuse", a, b, "--format", "parquet", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert pq.read_table(tmp_path / "out").num_rows > 0
    wrong = rankfusion("fuse", a, b)  # read as TREC text
    assert wrong.returncode == 1


def test_warnings_and_qrels_trace_explain_as_with_trec(parquet_runs, tmp_path):
    bm25, _ = parquet_runs
    part = tmp_path / "part.parquet"
    table = pq.read_table(bm25)
    frame.write_parquet(table.filter(pa.compute.not_equal(table["qid"], "1")), part)
    trec_part = tmp_path / "part.run"
    frame.write_trec(pq.read_table(part), trec_part, tag="x")
    want = rankfusion("fuse", BM25, trec_part, "--limit", "5")
    got = rankfusion("fuse", bm25, part, "--limit", "5")
    assert got.returncode == want.returncode == 0
    assert "has no results for 1 of 225 queries (1)" in want.stderr
    assert got.stderr.replace(str(bm25), "A").replace(str(part), "B") == want.stderr.replace(
        BM25, "A"
    ).replace(str(trec_part), "B")
    assert got.stdout == want.stdout
    # --qrels and --trace take the Python path, with the Parquet runs read as rankings
    args = ["--qrels", QRELS, "--metrics", "ndcg@10,map", "--limit", "20", "-q"]
    want = rankfusion(
        "fuse", BM25, MINILM, *args, "-o", tmp_path / "w.run", "--trace", tmp_path / "w.jsonl"
    )
    got = rankfusion(
        "fuse",
        bm25,
        parquet_runs[1],
        *args,
        "-o",
        tmp_path / "g.parquet",
        "--trace",
        tmp_path / "g.jsonl",
    )
    assert got.returncode == want.returncode == 0, got.stderr

    def cells(text):  # the table's cells (its column widths follow the paths' lengths)
        text = text.replace(str(bm25), BM25).replace(str(parquet_runs[1]), MINILM)
        return [line.split() for line in text.splitlines()]

    assert cells(got.stdout) == cells(want.stdout)
    assert (tmp_path / "g.jsonl").read_text().replace(str(bm25), BM25).replace(
        str(parquet_runs[1]), MINILM
    ) == (tmp_path / "w.jsonl").read_text()
    written = pq.read_table(tmp_path / "g.parquet")
    assert written["docid"].to_pylist() == [
        line.split()[2] for line in (tmp_path / "w.run").read_text().splitlines()
    ]
    want = rankfusion("explain", BM25, MINILM, "--query", "1", "--top", "3")
    got = rankfusion("explain", bm25, parquet_runs[1], "--query", "1", "--top", "3")
    assert got.returncode == want.returncode == 0
    assert cells(got.stdout) == cells(want.stdout)


def test_bad_parquet_exits_1_naming_the_file(parquet_runs, tmp_path):
    bm25, _ = parquet_runs
    cases = {
        "nan.parquet": pa.table(
            {"qid": ["1", "1"], "docid": ["a", "b"], "score": [1.0, float("nan")]}
        ),
        "empty.parquet": pa.table(
            {
                "qid": pa.array([], pa.string()),
                "docid": pa.array([], pa.string()),
                "score": pa.array([], pa.float64()),
            }
        ),
        "columns.parquet": pa.table({"query": ["1"], "doc": ["a"], "score": [1.0]}),
        "dup.parquet": pa.table({"qid": ["1", "1"], "docid": ["a", "a"], "score": [2.0, 1.0]}),
        "strscore.parquet": pa.table({"qid": ["1", "1"], "docid": ["a", "b"], "score": ["2", "1"]}),
        "floatdoc.parquet": pa.table({"qid": ["1", "1"], "docid": [1.5, 2.5], "score": [2.0, 1]}),
    }
    for name, table in cases.items():
        pq.write_table(table, tmp_path / name)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all\n")
    expected = {
        "nan.parquet": "nan.parquet, row 1, column 'score': score is NaN",
        "empty.parquet": "empty.parquet: empty run: the table has no rows",
        "columns.parquet": "columns.parquet: no known run columns among 'query', 'doc', 'score'",
        "junk.parquet": "junk.parquet: ",
        "dup.parquet": "dup.parquet, row 1, column 'docid': query '1' has doc 'a' twice (first on row 0)",
        "strscore.parquet": "strscore.parquet: column 'score' must hold numbers, got string",
        "floatdoc.parquet": "floatdoc.parquet: column 'docid' must hold strings or integers, "
        "got double",
    }
    for name, message in expected.items():
        args = ["--duplicates", "error"] if name == "dup.parquet" else []
        for out in ("out.parquet", "out.run"):  # Parquet out; TREC text out of a Parquet run
            done = rankfusion("fuse", bm25, tmp_path / name, "-o", tmp_path / out, *args)
            assert done.returncode == 1, (name, done.stderr)
            assert message in done.stderr, (name, done.stderr)
            assert "Traceback" not in done.stderr
            assert not (tmp_path / out).exists()


def test_without_pyarrow_parquet_is_a_usage_error(parquet_runs):
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pyarrow':\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from rankfusion.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "fuse", str(parquet_runs[0]), BM25],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert 'pip install "rankfusion[arrow]"' in done.stderr
    trec_only = subprocess.run(
        [sys.executable, "-c", code, "fuse", BM25, MINILM, "--limit", "1"],
        capture_output=True,
        text=True,
    )
    assert trec_only.returncode == 0 and trec_only.stdout.startswith("1 Q0 ")
