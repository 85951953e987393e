"""The ``rankfusion`` command, run through subprocess: exit codes, stdout/stderr, files."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from rankfusion import reference, trec

pytest.importorskip("rankfusion.cli")


def rankfusion(*args, cwd=None, input=None):
    return subprocess.run(
        [sys.executable, "-m", "rankfusion", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=input,
        timeout=120,
    )


def run_text(rows, tag="t"):
    return "".join(f"{q} Q0 {d} {r} {s} {tag}\n" for q, d, r, s in rows)


@pytest.fixture
def runs(tmp_path):
    a = tmp_path / "a.run"
    b = tmp_path / "b.run.gz"
    a.write_text(
        run_text([("1", "x", 1, 3.0), ("1", "y", 2, 2.0), ("1", "z", 3, 1.0), ("2", "u", 1, 5.0)])
    )
    b.write_bytes(
        gzip.compress(
            run_text([("1", "z", 1, 0.9), ("1", "x", 2, 0.8), ("3", "v", 1, 0.7)]).encode()
        )
    )
    return a, b


def expected_fusion(a, b, **options):
    ra, rb = trec.read_run(a), trec.read_run(b)
    out = {}
    for q in ["1", "2", "3"]:
        lists = [ra[q].docids if q in ra else [], rb[q].docids if q in rb else []]
        out[q] = reference.rrf(lists, **options)
    return out


def parse_lines(text):
    return [line.split() for line in text.splitlines()]


# --- fuse -------------------------------------------------------------------------------------


def test_the_commands_choices_are_the_references_methods_and_norms():
    # The command takes its choices from the core (importing the reference would slow its
    # start); they must be the names the reference defines, in its order.
    from rankfusion import _reference, _tables

    assert tuple(_tables.METHODS) == tuple(_reference.METHODS)
    assert tuple(_tables.NORMS) == _reference.NORMS


def test_the_command_does_not_import_the_reference_nor_numpy(tmp_path):
    """The native path of `fuse` starts light: neither the reference nor numpy (which
    rankfusion._compare imports, and which once doubled the command's time on 5 small runs)."""
    run = tmp_path / "a.run"
    run.write_text("1 Q0 d1 1 2.0 a\n1 Q0 d2 2 1.0 a\n")
    code = (
        "import sys; from rankfusion.cli import main; "
        f"main(['fuse', {str(run)!r}, {str(run)!r}, '-o', {str(tmp_path / 'o.run')!r}, '-q']); "
        "print([m in sys.modules for m in ('rankfusion._reference', 'numpy', "
        "'rankfusion._compare')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[False, False, False]"


def test_fuse_to_stdout(runs):
    a, b = runs
    p = rankfusion("fuse", a, b, "--quiet")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    lines = parse_lines(p.stdout)
    expected = expected_fusion(a, b)
    want = [
        [q, "Q0", h.key, str(r), repr(h.score), "rankfusion"]
        for q, hits in expected.items()
        for r, h in enumerate(hits, 1)
    ]
    assert lines == want


def test_fuse_options_and_output_file(runs, tmp_path):
    a, b = runs
    out = tmp_path / "fused.run"
    p = rankfusion(
        "fuse",
        a,
        b,
        "-k",
        "10",
        "--weights",
        "1,0.5",
        "--window",
        "2",
        "--limit",
        "1",
        "--tag",
        "hyb",
        "-o",
        out,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    expected = expected_fusion(a, b, k=10, weights=[1, 0.5], window=2, limit=1)
    lines = parse_lines(out.read_text())
    assert lines == [
        [q, "Q0", hits[0].key, "1", repr(hits[0].score), "hyb"] for q, hits in expected.items()
    ]


def test_fuse_gzip_output_and_limit_zero_keeps_all(runs, tmp_path):
    a, b = runs
    out = tmp_path / "fused.run.gz"
    p = rankfusion("fuse", a, b, "--limit", "0", "-o", out, "-q")
    assert p.returncode == 0, p.stderr
    with gzip.open(out, "rt") as f:
        assert len(f.readlines()) == 3 + 1 + 1


def test_fuse_warns_about_missing_queries(runs):
    a, b = runs
    p = rankfusion("fuse", a, b)
    assert p.returncode == 0
    assert "warning" in p.stderr and "1 of 3 queries (3)" in p.stderr
    assert "(2)" in p.stderr
    assert rankfusion("fuse", a, b, "--quiet").stderr == ""


def test_fuse_trace(runs, tmp_path):
    a, b = runs
    out, trace = tmp_path / "f.run", tmp_path / "f.trace.jsonl"
    p = rankfusion("fuse", a, b, "-o", out, "--trace", trace, "-q")
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(records) == len(out.read_text().splitlines())
    first = records[0]
    assert first["qid"] == "1" and first["rank"] == 1
    assert first["docid"] in ("x", "z")
    runs_seen = {c["run"]: c for c in first["contributions"]}
    assert set(runs_seen) == {str(a), str(b)}
    x = next(r for r in records if r["qid"] == "1" and r["docid"] == "x")
    assert x["contributions"] == [
        {
            "run": str(a),
            "list_index": 0,
            "rank": 1,
            "score": 3.0,
            "weight": 1.0,
            "contribution": 1 / 61,
        },
        {
            "run": str(b),
            "list_index": 1,
            "rank": 2,
            "score": 0.8,
            "weight": 1.0,
            "contribution": 1 / 62,
        },
    ]
    assert x["score"] == reference.canonical_sum([1 / 61, 1 / 62])


def test_fuse_duplicates(tmp_path):
    a = tmp_path / "dup.run"
    a.write_text(run_text([("1", "x", 1, 3.0), ("1", "y", 2, 2.0), ("1", "x", 3, 1.0)]))
    first = parse_lines(rankfusion("fuse", a, "-q").stdout)
    assert [line[2] for line in first] == ["x", "y"]
    assert first[0][4] == repr(1 / 61)
    summed = parse_lines(rankfusion("fuse", a, "--duplicates", "sum", "-q").stdout)
    assert summed[0][4] == repr(reference.canonical_sum([1 / 61, 1 / 63]))
    out = tmp_path / "out.run"
    p = rankfusion("fuse", a, "--duplicates", "error", "-o", out)
    assert p.returncode == 1
    assert f"{a}:3: query '1' has doc 'x' twice (first on line 1)" in p.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("1 Q0 x 1 3.0 t\n1 Q0 y 2 2.0\n", ":2: expected 6 fields"),
        ("1 Q0 x 1 3.0 t\n1 Q0 y 2 high t\n", ":2: score is not a number"),
        ("", "empty run"),
    ],
)
def test_bad_data_exits_1_and_writes_nothing(runs, tmp_path, content, message):
    a, _ = runs
    bad = tmp_path / "bad.run"
    bad.write_text(content)
    out, trace = tmp_path / "out.run", tmp_path / "out.jsonl"
    p = rankfusion("fuse", a, bad, "-o", out, "--trace", trace)
    assert p.returncode == 1
    assert message in p.stderr and str(bad) in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""
    assert not out.exists() and not trace.exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.run", "b.run.gz", "bad.run"]


def test_bad_data_keeps_an_existing_output(runs, tmp_path):
    a, _ = runs
    bad = tmp_path / "bad.run"
    bad.write_text("1 Q0 x\n")
    out = tmp_path / "out.run"
    out.write_text("previous\n")
    assert rankfusion("fuse", a, bad, "-o", out).returncode == 1
    assert out.read_text() == "previous\n"


def test_corrupt_gzip_exits_1(runs, tmp_path):
    a, b = runs
    broken = tmp_path / "broken.run.gz"
    broken.write_bytes(b.read_bytes()[:-12])
    p = rankfusion("fuse", a, broken)
    assert p.returncode == 1 and "corrupt gzip" in p.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--weights", "1"], "argument --weights: weights has 1 values for 2 lists"),
        (["--weights", "1,x"], "--weights"),
        (["-k", "-1"], "-k"),
        (["-k", "nan"], "-k"),
        (["--window", "0"], "--window"),
        (["--limit", "-3"], "--limit"),
        (["--duplicates", "max"], "--duplicates"),
        (["--tag", "two words"], "--tag"),
        (["--metrics", "ndcg@10"], "--metrics needs --qrels"),
        (["--nonsense"], "unrecognized arguments"),
    ],
)
def test_bad_usage_exits_2(runs, tmp_path, args, message):
    a, b = runs
    out = tmp_path / "out.run"
    p = rankfusion("fuse", a, b, "-o", out, *args)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert not out.exists()


def test_bad_usage_files(runs, tmp_path):
    a, b = runs
    p = rankfusion("fuse", a, tmp_path / "missing.run")
    assert p.returncode == 2 and "no such file" in p.stderr
    p = rankfusion("fuse", a, b, "-o", tmp_path / "no" / "dir" / "out.run")
    assert p.returncode == 2 and "no such directory" in p.stderr
    p = rankfusion("fuse", a, b, "-o", tmp_path)
    assert p.returncode == 2 and "is a directory" in p.stderr
    p = rankfusion("fuse", a, b, "-o", tmp_path / "x", "--trace", tmp_path / "x")
    assert p.returncode == 2 and "same file" in p.stderr
    p = rankfusion("fuse", a, b, "--trace", "-")
    assert p.returncode == 2 and "--trace needs a file name" in p.stderr
    p = rankfusion("fuse")
    assert p.returncode == 2 and "RUN" in p.stderr
    p = rankfusion()
    assert p.returncode == 2 and "fuse" in p.stderr


def test_help_and_version():
    p = rankfusion("--help")
    assert p.returncode == 0 and "fuse" in p.stdout and "explain" in p.stdout
    p = rankfusion("fuse", "--help")
    assert p.returncode == 0 and "examples:" in p.stdout and "--qrels" in p.stdout
    p = rankfusion("explain", "--help")
    assert p.returncode == 0 and "examples:" in p.stdout
    p = rankfusion("--version")
    assert p.returncode == 0 and p.stdout.startswith("rankfusion ")


def test_explain_help_gives_each_methods_contribution(runs):
    """`explain --help` says how each method makes a term (not weight / (k + rank) for all): one
    line per method, the formula explain's own header prints for it, METHODS' term and combine."""
    from rankfusion import METHODS

    p = rankfusion("explain", "--help")
    assert p.returncode == 0
    text = " ".join(p.stdout.split())
    assert "contribution weight / (k + rank)" not in text
    listed = {}
    for line in p.stdout.splitlines():
        words = line.split(None, 1)
        if line.startswith("  ") and words and words[0] in METHODS and len(words) == 2:
            listed[words[0]] = words[1]
    assert list(listed) == list(METHODS)
    assert listed["rrf"] == "term = w / (k + r), score = S"
    assert listed["relative_score"] == "term = w v (min-max), score = S"
    a, b = runs
    for method, formula in listed.items():
        options = {"rbc": ["--phi", "0.8"], "gmnz": ["--gamma", "2"]}.get(method, [])
        header = rankfusion("explain", a, b, "--query", "1", "--method", method, *options, "-q")
        assert header.returncode == 0, header.stderr
        assert header.stdout.splitlines()[0].endswith(", " + formula), (method, header.stdout)


def test_no_progress_bar_when_stderr_is_not_a_tty(runs, tmp_path):
    a, b = runs
    p = rankfusion("fuse", a, b, "-o", tmp_path / "o.run")
    assert "it/s" not in p.stderr and "%|" not in p.stderr


def test_console_script_if_installed(runs):
    exe = shutil.which("rankfusion")
    if exe is None:
        pytest.skip("the rankfusion console script is not on PATH")
    a, b = runs
    p = subprocess.run([exe, "fuse", str(a), str(b), "-q"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == rankfusion("fuse", a, b, "-q").stdout


# --- evaluation -------------------------------------------------------------------------------


def test_fuse_with_qrels_prints_a_table(runs, tmp_path):
    pytest.importorskip("ir_measures")
    a, b = runs
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 z 2\n1 0 y 1\n2 0 u 1\n3 0 v 0\n")
    out = tmp_path / "f.run"
    p = rankfusion("fuse", a, b, "--qrels", qrels, "--metrics", "ndcg@10,P@1", "-o", out, "-q")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["run", "nDCG@10", "P@1"]
    assert [line.split()[0] for line in lines[1:]] == [str(a), str(b), "fused"]
    # without -o the run goes to stdout and the table to stderr
    p = rankfusion("fuse", a, b, "--qrels", qrels, "-q")
    assert p.returncode == 0
    assert p.stdout.startswith("1 Q0 ")
    assert p.stderr.splitlines()[0].split() == ["run", "nDCG@10", "R@100"]


def test_fuse_warns_when_no_judged_query_has_results(runs, tmp_path):
    pytest.importorskip("ir_measures")
    a, b = runs
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("001 0 x 1\n002 0 u 1\n")  # the runs' queries are 1, 2 and 3
    p = rankfusion("fuse", a, b, "--qrels", qrels, "-o", tmp_path / "f.run", "--metrics", "P@1")
    assert p.returncode == 0
    warning = (
        f"rankfusion: warning: no judged query has results: {qrels} judges 2 queries (001, "
        "002), none of which a run has (the runs have 3 queries (1, 2, 3)); every mean is 0\n"
    )
    assert warning in p.stderr
    assert [line.split()[-1] for line in p.stdout.splitlines()[1:]] == ["0.0000"] * 3
    assert rankfusion("fuse", a, b, "--qrels", qrels, "-q").stderr.startswith("run ")  # quiet
    qrels.write_text("001 0 x 1\n2 0 u 1\n")  # one query meets: no warning
    p = rankfusion("fuse", a, b, "--qrels", qrels, "-o", tmp_path / "f.run")
    assert p.returncode == 0 and "no judged query" not in p.stderr


def test_fuse_with_bad_qrels_or_metric(runs, tmp_path):
    pytest.importorskip("ir_measures")
    a, b = runs
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 z two\n")
    out = tmp_path / "f.run"
    p = rankfusion("fuse", a, b, "--qrels", qrels, "-o", out)
    assert p.returncode == 1 and "gain is not an integer" in p.stderr and not out.exists()
    qrels.write_text("1 0 z 1\n")
    p = rankfusion("fuse", a, b, "--qrels", qrels, "--metrics", "ndcg@10,nope", "-o", out)
    assert p.returncode == 2 and "unknown metric 'nope'" in p.stderr and not out.exists()


# --- explain ----------------------------------------------------------------------------------


def test_explain_top(runs):
    a, b = runs
    p = rankfusion("explain", a, b, "--query", "1", "--top", "2", "-q")
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert text.startswith("query 1: 3 fused documents, top 2 shown; RRF k=60")
    blocks = text.split("\n\n")[1:]
    assert len(blocks) == 2
    hits = reference.rrf([["x", "y", "z"], ["z", "x"]])
    assert blocks[0].splitlines()[0] == f"#1  doc {hits[0].key}  score {hits[0].score!r}"
    rows = [line.split() for line in blocks[0].splitlines()[2:]]
    assert rows == [
        [str(a), "1", "3.0", "-", "1.0", repr(1 / 61)],
        [str(b), "2", "0.8", "-", "1.0", repr(1 / 62)],
    ]


def test_explain_a_score_based_method(runs):
    """Each run's raw score, its min-max value, the weight and the contribution; the hit's
    factor for mnz. a ranks x 3.0, y 2.0, z 1.0; b ranks z 0.9, x 0.8."""
    a, b = runs
    p = rankfusion(
        "explain", a, b, "--query", "1", "--method", "wsum", "--norm", "min-max",
        "--weights", "1,2", "-q",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("query 1: 3 fused documents; wsum, min-max, term = w v, score = S")
    blocks = p.stdout.split("\n\n")[1:]
    # z: 1 * (1-1)/(3-1) + 2 * (0.9-0.8)/(0.9-0.8) = 2.0; x: 1 * 1.0 + 2 * 0.0 = 1.0; y: 0.5
    assert [block.splitlines()[0] for block in blocks] == [
        "#1  doc z  score 2.0", "#2  doc x  score 1.0", "#3  doc y  score 0.5"
    ]  # fmt: skip
    assert [line.split() for line in blocks[0].splitlines()[2:]] == [
        [str(a), "3", "1.0", "0.0", "1.0", "0.0"],
        [str(b), "1", "0.9", "1.0", "2.0", "2.0"],
    ]
    p = rankfusion("explain", a, b, "--query", "1", "--method", "mnz", "--doc", "x", "-q")
    # mnz without a norm: x = (3.0 + 0.8) * 2 runs
    assert p.returncode == 0 and f"#1  doc x  score {(3.0 + 0.8) * 2!r}  (factor 2.0)" in p.stdout


def test_fuse_methods_and_their_usage_errors(runs, tmp_path):
    a, b = runs
    out = tmp_path / "f.run"
    p = rankfusion("fuse", a, b, "--method", "max", "--norm", "rank", "-o", out, "-q")
    assert p.returncode == 0, p.stderr
    # query 1 by rank norm: a x 1, y 2/3, z 1/3; b z 1, x 1/2 -> max: x 1, z 1, y 2/3
    lines = [line.split()[2:5] for line in out.read_text().splitlines() if line.startswith("1 ")]
    assert lines == [["x", "1", "1.0"], ["z", "2", "1.0"], ["y", "3", repr(1 - 1 / 3)]]
    for args, message in [
        (["--method", "wsum", "-k", "10"], "argument -k: k is not used by method 'wsum'"),
        (
            ["--method", "sum", "--weights", "1,2"],
            "argument --weights: weights is not used by method 'sum'",
        ),
        (["--norm", "min-max"], "argument --norm: norm is not used by method 'rrf'"),
        (["--method", "rbc"], "argument --phi: method 'rbc' needs phi"),
        (["--method", "rbc", "--phi", "1"], "argument --phi: phi must satisfy 0 <= phi < 1"),
        (
            ["--method", "sum", "--lower-is-better", "true"],
            "argument --lower-is-better: lower_is_better has 1 values",
        ),
        (["--lower-is-better", "maybe,no"], "expected comma-separated true/false"),
        (["--method", "nope"], "invalid choice: 'nope'"),
    ]:
        p = rankfusion("fuse", a, b, *args, "-o", out, "-q")
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)


def test_explain_doc_absent_from_a_run_and_outside_window(runs):
    a, b = runs
    p = rankfusion("explain", a, b, "--query", "1", "--doc", "y", "-q")
    assert p.returncode == 0, p.stderr
    assert "#3  doc y" in p.stdout
    assert "not in run" in p.stdout
    p = rankfusion("explain", a, b, "--query", "1", "--doc", "y", "--window", "1", "-q")
    assert p.returncode == 0
    assert "doc y: no fused score" in p.stdout and "outside the window" in p.stdout
    p = rankfusion("explain", a, b, "--query", "2", "--doc", "u", "--weights", "1,2", "-q")
    assert "query not in run" in p.stdout


def test_explain_errors(runs):
    a, b = runs
    p = rankfusion("explain", a, b, "--query", "99")
    assert p.returncode == 1 and "query '99' is in none of the runs" in p.stderr
    p = rankfusion("explain", a, b, "--query", "1", "--doc", "nope")
    assert p.returncode == 1 and "no run ranks doc 'nope'" in p.stderr
    p = rankfusion("explain", a, b)
    assert p.returncode == 2 and "--query" in p.stderr
    p = rankfusion("explain", a, b, "--query", "1", "--doc", "x", "--top", "3")
    assert p.returncode == 2 and "not allowed with" in p.stderr


def test_main_returns_status_in_process(runs, capsys):
    from rankfusion.cli import main

    a, b = runs
    assert main(["fuse", str(a), str(b), "-q", "--limit", "1"]) == 0
    assert capsys.readouterr().out.count("\n") == 3
    assert main(["fuse", str(a), str(b), "--weights", "1"]) == 2
    assert os.path.exists(a)


def test_progress_only_on_a_terminal_and_not_quiet(monkeypatch):
    import argparse

    from rankfusion import cli

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli._progress(argparse.Namespace(quiet=False)) is True
    assert cli._progress(argparse.Namespace(quiet=True)) is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert cli._progress(argparse.Namespace(quiet=False)) is False
    bar = trec._progress_bar(True, 10, "reading")
    assert bar is not None and bar.total == 10
    bar.close()
    assert trec._progress_bar(False, 10, "reading") is None


# --- stdout: a reader that goes away, a closed stdout --------------------------------------------


@pytest.fixture(scope="module")
def big_runs(tmp_path_factory):
    """Two runs whose fusion is ~2.5 MB of text: far more than a pipe holds."""
    folder = tmp_path_factory.mktemp("big")
    paths = []
    for f in range(2):
        path = folder / f"big{f}.run"
        path.write_text(
            run_text(
                (q, f"d{(q * 7 + r * (f + 3)) % 3000}x{r}", r + 1, 1000.5 - r)
                for q in range(50)
                for r in range(1000)
            )
        )
        paths.append(path)
    return paths


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("path", ["native", "python", "parquet", "explain", "optimize"])
def test_a_pipe_whose_reader_goes_away_exits_141_quietly(big_runs, tmp_path, path, unbuffered):
    """`rankfusion ... | head -1`: no message, the status of a process that SIGPIPE ends (128 +
    13, as cat or seq there), on every path of every subcommand; no output file written."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"  # stdout writes straight to the pipe, as in Docker images
    runs = list(map(str, big_runs))
    args = [sys.executable, "-m", "rankfusion", "fuse", *runs, "-q"]
    first = b"0 Q0 "
    written = tmp_path / "written"
    if path == "python":
        args += ["--trace", str(written)]
    elif path == "parquet":
        pytest.importorskip("pyarrow")  # the arrow extra (in the test extra: CI has it)
        from rankfusion import frame

        frame.write_parquet(frame.read_trec(runs[0]), tmp_path / "a.parquet")
        args[4] = str(tmp_path / "a.parquet")
    elif path == "explain":
        args[3] = "explain"
        args += ["--query", "0", "--top", "1000"]  # ~300 KB: more than a pipe holds
        first = b"query 0: "
    elif path == "optimize":
        pytest.importorskip("ir_measures")
        qrels = tmp_path / "qrels.txt"
        qrels.write_text("".join(f"{q} 0 d{q * 7 % 3000}x0 1\n" for q in range(50)))
        args[3] = "optimize"
        args += ["--qrels", str(qrels), "--method", "rrf", "--metric", "P@5", "-o", str(written)]
        first = b"rrf, P@5 over 50 judged queries"  # the report comes after the search
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdout is not None and child.stderr is not None
    head = os.read(child.stdout.fileno(), 100)  # the reader takes 100 bytes and goes away
    child.stdout.close()
    status = child.wait(timeout=120)
    err = child.stderr.read().decode()
    child.stderr.close()
    assert head.startswith(first)
    assert (status, err) == (141, "")
    assert not written.exists()


def closed_stdout_run(*args):
    """The command with file descriptor 1 closed (``>&-``)."""
    return subprocess.run(
        [sys.executable, "-m", "rankfusion", *map(str, args)],
        stdout=None,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )


@pytest.mark.parametrize("extra", [[], ["--trace", "TRACE"]], ids=["native", "python"])
def test_fuse_with_stdout_closed_exits_1_without_a_traceback(runs, tmp_path, extra):
    a, b = runs
    extra = [str(tmp_path / "t.jsonl") if e == "TRACE" else e for e in extra]
    p = closed_stdout_run("fuse", a, b, *extra)
    assert p.returncode == 1
    assert p.stderr == (
        "rankfusion fuse: error: stdout is closed: nowhere to write to (write the run with -o FILE)\n"
    )
    assert not (tmp_path / "t.jsonl").exists()  # checked before anything is read or written


def test_stdout_closed_is_fine_when_nothing_goes_there(runs, tmp_path):
    a, b = runs
    out = tmp_path / "out.run"
    p = closed_stdout_run("fuse", a, b, "-o", out, "-q")
    assert (p.returncode, p.stderr) == (0, "")
    assert out.read_text().startswith("1 Q0 ")


def test_fuse_qrels_table_with_stdout_closed_exits_1_and_writes_nothing(runs, tmp_path):
    pytest.importorskip("ir_measures")
    a, b = runs
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 x 1\n")
    out = tmp_path / "out.run"
    p = closed_stdout_run("fuse", a, b, "-q", "--qrels", qrels, "-o", out)
    assert p.returncode == 1
    assert p.stderr == (
        "rankfusion fuse: error: stdout is closed: nowhere to write to "
        "(the --qrels table goes to stdout with -o)\n"
    )
    assert not out.exists()


def test_explain_with_stdout_closed_exits_1_without_a_traceback(runs):
    a, b = runs
    p = closed_stdout_run("explain", a, b, "--query", "1")
    assert p.returncode == 1
    assert p.stderr == "rankfusion explain: error: stdout is closed: nowhere to write to\n"


def closed_stderr_run(*args):
    """The command with file descriptor 2 closed (``2>&-``)."""
    return subprocess.run(
        [sys.executable, "-m", "rankfusion", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(2),
    )


@pytest.mark.parametrize("extra", [[], ["--trace", "TRACE"]], ids=["native", "python"])
def test_fuse_with_stderr_closed_writes_the_run_and_nothing_else(runs, tmp_path, extra):
    a, b = runs  # each lacks a query: a warning that has nowhere to go
    extra = [str(tmp_path / "t.jsonl") if e == "TRACE" else e for e in extra]
    p = closed_stderr_run("fuse", a, b, *extra)
    assert p.returncode == 0
    assert p.stdout == rankfusion("fuse", a, b, "-q").stdout  # the run, no warning in it
    assert p.stdout.startswith("1 Q0 ")


def test_errors_with_stderr_closed_keep_their_status_and_stay_off_stdout(runs, tmp_path):
    a, _ = runs
    bad = tmp_path / "bad.run"
    bad.write_text("1 Q0 x 1\n")
    p = closed_stderr_run("fuse", a, bad)
    assert (p.returncode, p.stdout) == (1, "")
    p = closed_stderr_run("fuse", a, tmp_path / "missing.run")
    assert (p.returncode, p.stdout) == (2, "")
    p = closed_stderr_run("fuse", a, "--weights", "x")
    assert (p.returncode, p.stdout) == (2, "")
    p = closed_stderr_run("explain", a, a, "--query", "nope")
    assert (p.returncode, p.stdout) == (1, "")


def test_runs_with_infinite_scores_on_every_path(tmp_path):
    """inf / -inf scores are accepted by read_run: the native path, --trace, --qrels and explain
    all fuse them (RRF never reads a raw score); the trace carries them as JSON's Infinity."""
    pytest.importorskip("ir_measures")
    run = tmp_path / "inf.run"
    run.write_text("1 Q0 d1 1 inf a\n1 Q0 d2 2 1.0 a\n1 Q0 d3 3 -inf a\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n")
    native, traced, judged = (tmp_path / f"{name}.run" for name in ("native", "traced", "judged"))
    trace = tmp_path / "t.jsonl"
    for args in (
        ["-o", native],
        ["-o", traced, "--trace", trace],
        ["-o", judged, "--qrels", qrels],
    ):
        p = rankfusion("fuse", run, run, "-q", *args)
        assert p.returncode == 0, p.stderr
    assert native.read_text() == traced.read_text() == judged.read_text()
    assert [line.split()[2] for line in native.read_text().splitlines()] == ["d1", "d2", "d3"]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    raw = [[c["score"] for c in r["contributions"]] for r in records]
    assert raw == [[float("inf")] * 2, [1.0, 1.0], [float("-inf")] * 2]
    p = rankfusion("explain", run, run, "--query", "1")
    assert p.returncode == 0, p.stderr
    assert [line.split()[2] for line in p.stdout.splitlines() if "inf.run" in line] == [
        "inf", "inf", "1.0", "1.0", "-inf", "-inf"
    ]  # fmt: skip
    fused = trec.fuse([trec.read_run(run)] * 2, trace=True)
    assert [c.score for c in fused["1"][0].contributions] == [float("inf")] * 2


# --- a full device: the file that failed is named, nothing else is replaced --------------------

FULL = "/dev/full"  # every write fails with ENOSPC (Linux)
needs_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full on this system")
NO_SPACE = os.strerror(28)  # ENOSPC: "No space left on device"


def full_stdout_run(*args):
    """The command with stdout on /dev/full."""
    with open(FULL, "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "rankfusion", *map(str, args)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )


@needs_full
@pytest.mark.parametrize(
    "args",
    [
        ["-o", FULL],  # the native path
        ["-o", FULL, "--trace", "TRACE"],  # the Python path
        ["-o", "OUT", "--trace", FULL],
        ["-o", FULL, "--format", "parquet"],  # the Arrow path
        ["-o", FULL, "--format", "trec", "--weights", "1,1"],
    ],
    ids=["native", "python", "trace", "parquet", "trec"],
)
def test_a_full_output_file_is_named(runs, tmp_path, args):
    a, b = runs
    if "parquet" in args:
        pytest.importorskip("pyarrow")  # the arrow extra (in the test extra: CI has it)
        from rankfusion import frame

        for path in runs:
            frame.write_parquet(frame.read_trec(path), tmp_path / (path.name + ".parquet"))
        a, b = tmp_path / "a.run.parquet", tmp_path / "b.run.gz.parquet"
    args = [{"TRACE": tmp_path / "t.jsonl", "OUT": tmp_path / "o.run"}.get(x, x) for x in args]
    p = rankfusion("fuse", a, b, "-q", *args)
    assert (p.returncode, p.stderr) == (1, f"rankfusion fuse: error: {FULL}: {NO_SPACE}\n")
    assert not (tmp_path / "t.jsonl").exists() and not (tmp_path / "o.run").exists()
    assert [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")] == []


@needs_full
def test_a_full_stdout_is_named_and_replaces_no_file(runs, tmp_path):
    pytest.importorskip("ir_measures")
    a, b = runs
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 z 2\n1 0 y 1\n2 0 u 1\n")
    out, trace = tmp_path / "out.run", tmp_path / "t.jsonl"
    out.write_text("OLD\n")
    trace.write_text("OLD TRACE\n")
    error = f"rankfusion fuse: error: stdout: {NO_SPACE}\n"
    # the --qrels table goes to stdout: -o is left as it was (docs/cli.md)
    p = full_stdout_run("fuse", a, b, "-q", "--qrels", qrels, "-o", out)
    assert (p.returncode, p.stderr) == (1, error)
    assert out.read_text() == "OLD\n"
    # the run goes to stdout: the trace is left as it was
    p = full_stdout_run("fuse", a, b, "-q", "--trace", trace)
    assert (p.returncode, p.stderr) == (1, error)
    assert trace.read_text() == "OLD TRACE\n"
    p = full_stdout_run("fuse", a, b, "-q")  # the native path
    assert (p.returncode, p.stderr) == (1, error)
    p = full_stdout_run("explain", a, b, "--query", "1", "-q")
    assert (p.returncode, p.stderr) == (1, f"rankfusion explain: error: stdout: {NO_SPACE}\n")
    assert [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")] == []
    # and once stdout takes it, both are replaced
    p = rankfusion("fuse", a, b, "-q", "--qrels", qrels, "-o", out, "--trace", trace)
    assert p.returncode == 0 and p.stdout.startswith("run ")
    assert out.read_text().startswith("1 Q0 ") and trace.read_text().startswith("{")


@needs_full
def test_optimize_names_a_full_file_or_stdout(runs, tmp_path):
    pytest.importorskip("ir_measures")
    a, b = runs
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 z 2\n1 0 y 1\n2 0 u 1\n")
    tune = ["optimize", a, b, "--qrels", qrels, "--method", "rrf", "--metric", "ndcg@10", "-q"]
    table = tmp_path / "table.tsv"
    for option in ("-o", "--table"):
        other = ["--table", table] if option == "-o" else ["-o", tmp_path / "o.run"]
        p = rankfusion(*tune, option, FULL, *other)
        assert (p.returncode, p.stderr) == (1, f"rankfusion optimize: error: {FULL}: {NO_SPACE}\n")
        assert not table.exists() and not (tmp_path / "o.run").exists()
    p = full_stdout_run(*tune, "-o", tmp_path / "o.run")
    assert (p.returncode, p.stderr) == (1, f"rankfusion optimize: error: stdout: {NO_SPACE}\n")
    assert not (tmp_path / "o.run").exists()


def test_the_command_runs_without_cyclic_garbage_collections(tmp_path, capsys):
    """A run on the Python path is millions of objects and no reference cycles: a full
    collection would stop the command for up to seconds, deaf to Ctrl-C, to find nothing. The
    command runs with the collector off, and puts it back as it found it."""
    import gc

    from rankfusion.cli import main

    run = tmp_path / "a.run"
    run.write_text(run_text((q, f"d{d}", d + 1, 100.0 - d) for q in range(100) for d in range(100)))
    out, trace = tmp_path / "o.run", tmp_path / "t.jsonl"
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        assert main(["fuse", str(run), str(run), "--trace", str(trace), "-o", str(out)]) == 0
        assert collections == []  # 20,000 lines, traced: thousands of allocations
        assert gc.isenabled()
        gc.disable()
        try:
            assert main(["fuse", str(run), str(run), "-o", str(out)]) == 0
            assert not gc.isenabled()  # as it was
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(count)
    assert out.read_text().startswith("0 Q0 ") and trace.read_text().startswith("{")


@pytest.mark.parametrize("output", ["stdout", "o.run", "o.run.gz"])
@pytest.mark.parametrize("path", ["native", "trace"])
def test_an_output_written_in_small_pieces_is_the_same(tmp_path, path, output):
    """The outputs go out a piece at a time (Ctrl-C handled between pieces): pieces of 3 bytes
    or characters, which split multi-byte characters and the bytes of invalid UTF-8 (kept by
    surrogateescape), write the very bytes of one piece; stdout's error handler (here
    backslashreplace) sees whole characters."""
    lines = [
        f"{q} Q0 {d} {r + 1} {10 - r} t\n".encode("utf-8", "surrogateescape")
        for q in ("1", "2é")
        for r, d in enumerate(["x", "é", "日本語", "d\udcff", "y" * 7])
    ]
    a = tmp_path / "a.run"
    a.write_bytes(b"".join(lines))
    b = tmp_path / "b.run"
    b.write_bytes(b"".join(reversed(lines)))

    def command(piece, folder):
        folder.mkdir()
        argv = ["fuse", str(a), str(b), "-q"]
        if output != "stdout":
            argv += ["-o", str(folder / output)]
        if path == "trace":
            argv += ["--trace", str(folder / "t.jsonl")]
        code = (
            "import sys\n"
            "from rankfusion import cli, trec\n"
            f"trec._WRITE_PIECE = {piece}\n"
            f"sys.argv = ['rankfusion', *{argv!r}]\n"
            "sys.exit(cli.main())\n"
        )
        env = {**os.environ, "PYTHONIOENCODING": "utf-8:backslashreplace"}
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, timeout=120, env=env
        )
        assert (done.returncode, done.stderr) == (0, b"")
        files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
        return done.stdout, files

    whole = command(trec._WRITE_PIECE, tmp_path / "whole")
    assert whole == command(3, tmp_path / "pieces")
    stdout, files = whole
    written = stdout if output == "stdout" else files[output]
    if output.endswith(".gz"):
        written = gzip.decompress(written)
    assert "日本語".encode() in written
    assert (b"d\\udcff" if output == "stdout" else b"d\xff") in written
