"""The native read + fuse + write path of ``rankfusion fuse`` against the Python path.

The native path (``trec._read_run_files`` + ``trec._fuse_run_files``, what the command runs
without --qrels and --trace) must write exactly the bytes that ``trec.read_run`` x N +
``trec.fuse`` + ``trec.write_run`` write, and raise the same exceptions with the same messages.
Random run files (seeded) cover odd ids and bytes, ties, duplicates, missing and non-contiguous
queries, gzip, blank lines and unusual whitespace; random options cover every method (norms,
lower_is_better, phi, gamma, sigma, parameters a method does not use), -k, weights (0, negative,
huge), window, limit, duplicates, order and tag. The command itself is compared with its Python
path (the code it runs with --qrels or --trace), in process and through a subprocess.
"""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import sys

import pytest
from _methods import random_method

import rankfusion as rf
from rankfusion import cli, trec

# Ids: plain, numeric, non-ASCII, undecodable bytes, a NUL, full-width letters, punctuation.
QIDS = [b"1", b"2", b"10", b"q\xc3\xa9", b"q\xff", b"Q-3", b"q\x00z"]
DOCS = [
    b"d1",
    b"d2",
    b"d10",
    b"D1",
    b"a",
    b"b",
    b"\xc3\xa9",
    b"e\xcc\x81",
    b"x\xe9",
    b"\xe2\x82A",
    b"\xe2\x82\xac",
    b"\xef\xbd\x84",
    b"doc#1",
    b"'\"",
    b"\\",
    b"z" * 40,
]
SCORES = [b"1", b"2", b"2.0", b"0.5", b"-1", b"1e3", b"inf", b"-inf", b"0", b"-0.0", b"3.25"]
SEPARATORS = [b" ", b"\t", b"  ", b" \xc2\xa0", b"\x0b"]
LINE_ENDS = [b"\n", b"\n", b"\n", b"\r\n", b"\r", b"\n\n"]


def random_run(rng: random.Random, qids, *, duplicates: bool) -> bytes:
    lines = []
    for qid in qids:
        n = rng.randint(1, 12)
        pool = rng.sample(DOCS, rng.randint(1, len(DOCS)))
        docs = [rng.choice(pool) for _ in range(n)] if duplicates else pool[:n]
        for rank, doc in enumerate(docs, 1):
            if rng.random() < 0.15:
                score = (
                    b"\xef\xbc\x91" if rng.random() < 0.3 else rng.choice(SCORES)
                )  # full-width 1
            else:
                score = f"{rng.choice([1.5, 2.0, 2.25, 3.0, rng.random() * 10]):.3f}".encode()
            sep = rng.choice(SEPARATORS) if rng.random() < 0.1 else b" "
            fields = [qid, b"Q0", doc, str(rank).encode(), score, b"tag"]
            lines.append(sep.join(fields))
    rng.shuffle(lines) if rng.random() < 0.3 else None  # non-contiguous queries
    out = b"\xef\xbb\xbf" if rng.random() < 0.1 else b""
    for line in lines:
        out += line + (rng.choice(LINE_ENDS) if rng.random() < 0.2 else b"\n")
    return out


def random_case(rng: random.Random, folder: str, case: int):
    n_runs = rng.randint(1, 4)
    duplicates = rng.choice(["first", "sum", "error"])
    allow_dups = duplicates != "error" or rng.random() < 0.2
    paths = []
    for r in range(n_runs):
        qids = [q for q in QIDS if rng.random() < 0.6] or [rng.choice(QIDS)]
        rng.shuffle(qids)
        data = random_run(rng, qids, duplicates=allow_dups)
        path = os.path.join(folder, f"c{case}r{r}.run")
        if rng.random() < 0.3:
            data = gzip.compress(data)
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    weights = None
    if rng.random() < 0.6:
        weights = [rng.choice([1.0, 0.5, 2.0, 0.0, -0.5, -1.0, 1e22, 0.3]) for _ in paths]
    options = dict(
        k=rng.choice([60, 0, 1, 2.5, 1e-3]),
        window=rng.choice([None, None, 1, 2, 5]),
        duplicates=duplicates,
        limit=rng.choice([None, None, 1, 3, 7]),
    )
    options.update(random_method(rng, n_runs, weights))
    if options["method"] != "rrf":
        options["k"] = None
    order = rng.choice(["score", "file"])
    tag = rng.choice(["rankfusion", "t\udcff", "é-1"])
    return paths, options, order, tag


def settings(options):
    """The Fusion's settings of ``options`` (``k`` None: not given)."""
    return {name: v for name, v in options.items() if not (name == "k" and v is None)}


def python_path(paths, options, order, tag, out):
    options = settings(options)
    mode = "error" if options["duplicates"] == "error" else "keep"
    runs = [trec.read_run(p, order=order, duplicates=mode) for p in paths]
    fused = trec.fuse(runs, **options)
    trec.write_run(fused, out, tag=tag)
    with open(out, "rb") as f:
        return f.read()


def native_path(paths, options, order, tag):
    options = settings(options)
    mode = "error" if options["duplicates"] == "error" else "keep"
    files = trec._read_run_files(paths, order=order, duplicates=mode)
    return trec._fuse_run_files(files, tag=tag, **options)


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except (ValueError, TypeError, OSError) as e:
        return (type(e), str(e))


def test_native_path_writes_the_python_paths_bytes(tmp_path):
    rng = random.Random(20240611)
    kinds = {"ok": 0, "error": 0, "empty output": 0}
    for case in range(400):
        paths, options, order, tag = random_case(rng, str(tmp_path), case)
        out = str(tmp_path / f"c{case}.out")
        expected = outcome(python_path, paths, options, order, tag, out)
        got = outcome(native_path, paths, options, order, tag)
        assert got == expected, (case, paths, options, order, tag)
        if expected[0] != "ok":
            kinds["error"] += 1
        else:
            kinds["ok" if expected[1] else "empty output"] += 1
    # the cases exercise both outcomes
    assert kinds["ok"] > 200 and kinds["error"] > 10, kinds


@pytest.mark.parametrize(
    "contents",
    [
        # the first bad file decides, whatever comes after it
        [b"1 Q0 a 1 1 t\n", b"1 Q0 a 1\n", b""],
        [b"1 Q0 a 1 1 t\n", b"", b"1 Q0 a 1\n"],
        [b"1 Q0 a 1 x t\n1 Q0 b 1 nan t\n", b"\x1f\x8bnot gzip"],
        [b"\x1f\x8bnot gzip", b"1 Q0 a 1 x t\n"],
        [b"1 Q0 a 1 1 t\n", b"\n\n \n", b"\x1f\x8bnot gzip"],
        [b"1 Q0 a 1 1 t\n1 Q0 a 2 0 t\n", b"1 Q0 a 1 1 t\n"],
        [b"1 Q0 caf\xe9 1 1 t\n1 Q0 caf\xe9 2 0 t\n"],
    ],
)
@pytest.mark.parametrize("duplicates", ["first", "error"])
def test_errors_are_the_python_paths(tmp_path, contents, duplicates):
    paths = []
    for i, data in enumerate(contents):
        path = tmp_path / f"{i}.run"
        path.write_bytes(data)
        paths.append(str(path))
    paths.append(str(tmp_path / "missing.run"))  # an OSError after them: never reached first
    options = dict(k=60, weights=None, window=None, duplicates=duplicates, limit=None)
    expected = outcome(python_path, paths, options, "score", "t", str(tmp_path / "o"))
    got = outcome(native_path, paths, options, "score", "t")
    assert expected[0] in (trec.TrecFormatError, FileNotFoundError)
    assert got == expected


def test_missing_file_after_good_ones_is_the_os_error(tmp_path):
    good = tmp_path / "a.run"
    good.write_bytes(b"1 Q0 a 1 1 t\n")
    paths = [str(good), str(tmp_path / "missing.run")]
    options = dict(k=60, weights=None, window=None, duplicates="first", limit=None)
    expected = outcome(python_path, paths, options, "score", "t", str(tmp_path / "o"))
    assert expected[0] is FileNotFoundError
    assert outcome(native_path, paths, options, "score", "t") == expected


def test_overflowing_scores_raise_the_python_paths_error(tmp_path):
    # query 1: 1e308 / 1 + 1e308 / 2 is finite; query 2: 1e308 / 1 + 1e308 / 1 is not
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_bytes(b"1 Q0 ok 1 1 t\n2 Q0 caf\xe9 1 1 t\n2 Q0 x 2 0 t\n")
    b.write_bytes(b"1 Q0 other 1 1 t\n1 Q0 ok 2 0 t\n2 Q0 caf\xe9 1 1 t\n")
    paths = [str(a), str(b)]
    options = dict(k=0, weights=[1e308, 1e308], window=None, duplicates="first", limit=None)
    expected = outcome(python_path, paths, options, "score", "t", str(tmp_path / "o"))
    assert expected[0] is rf.FusionError and expected[1].startswith("query '2': "), expected
    assert "'caf\\udce9'" in expected[1]
    assert outcome(native_path, paths, options, "score", "t") == expected


def test_scores_formatted_by_cpython_and_zero(tmp_path):
    # 1e22 is left to CPython's repr by the core's formatter; +1 - 1 cancels to 0.0
    a = tmp_path / "a.run"
    a.write_bytes(b"1 Q0 x 1 1 t\n1 Q0 y 2 0 t\n")
    paths = [str(a), str(a)]
    for weights, k in [([1e22, 3e22], 0), ([1.0, -1.0], 60), ([2.0**50, 0.25], 0)]:
        options = dict(k=k, weights=weights, window=None, duplicates="first", limit=None)
        expected = python_path(paths, options, "score", "t", str(tmp_path / "o"))
        assert native_path(paths, options, "score", "t") == expected
    assert b" 4e+22 t\n" in native_path(paths, dict(options, weights=[1e22, 3e22]), "score", "t")


def test_large_runs_fused_in_parallel_match(tmp_path):
    rng = random.Random(7)
    paths = []
    for r in range(3):
        lines = []
        for q in range(60):
            docs = rng.sample(range(400), 200)
            for rank, d in enumerate(docs, 1):
                lines.append(f"{q} Q0 d{d} {rank} {rng.choice([1.0, 2.0, rng.random()])} r\n")
        path = tmp_path / f"{r}.run"
        path.write_text("".join(lines))
        paths.append(str(path))
    for options in [
        dict(k=60, weights=None, window=None, duplicates="first", limit=100),
        dict(k=10, weights=[1.0, 0.5, -0.25], window=50, duplicates="sum", limit=None),
    ]:
        expected = python_path(paths, options, "score", "t", str(tmp_path / "o"))
        assert native_path(paths, options, "score", "t") == expected


# --- the command ------------------------------------------------------------------------------


def command_outputs(tmp_path, capsys, monkeypatch, args, gz=False):
    """(status, output bytes, stderr) of the native command and of its Python path."""
    results = []
    for name, native in [("native", True), ("python", False)]:
        monkeypatch.setattr(cli, "_native", lambda args, native=native: native)
        out = tmp_path / (f"{name}.run" + (".gz" if gz else ""))
        status = cli.main([*args, "-o", str(out)])
        data = out.read_bytes() if out.exists() else None
        results.append((status, data, capsys.readouterr().err))
    monkeypatch.undo()
    return results


@pytest.mark.parametrize("gz", [False, True])
def test_command_native_and_python_paths_agree(tmp_path, capsys, monkeypatch, gz):
    rng = random.Random(99)
    checked = 0
    for case in range(100):
        paths, options, order, tag = random_case(rng, str(tmp_path), case)
        args = [
            "fuse",
            *paths,
            "--method",
            options["method"],
            "--duplicates",
            options["duplicates"],
        ]
        args += ["--order", order, "--tag", tag, "--limit", str(options["limit"] or 0)]
        if options["k"] is not None:
            args += ["-k", str(options["k"])]
        if options["weights"]:
            args += ["--weights=" + ",".join(map(str, options["weights"]))]
        if options.get("lower_is_better"):
            args += ["--lower-is-better", ",".join(map(str, options["lower_is_better"]))]
        for name in ("norm", "phi", "gamma", "sigma"):
            if options.get(name) is not None:
                args += [f"--{name}", str(options[name])]
        if options["window"]:
            args += ["--window", str(options["window"])]
        native, python = command_outputs(tmp_path, capsys, monkeypatch, args, gz=gz)
        assert native == python, (case, args)
        checked += native[0] == 0
        for name in ("native.run", "python.run"):
            for p in [tmp_path / name, tmp_path / (name + ".gz")]:
                if p.exists():
                    p.unlink()
    assert checked > 20


def test_command_warns_about_missing_queries_as_before(tmp_path, capsys, monkeypatch):
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_bytes(b"1 Q0 x 1 1 t\n2 Q0 x 1 1 t\nq\xc3\xa9 Q0 y 1 1 t\n")
    b.write_bytes(b"3 Q0 x 1 1 t\n1 Q0 z 1 1 t\n")
    native, python = command_outputs(tmp_path, capsys, monkeypatch, ["fuse", str(a), str(b)])
    assert native == python
    assert "b.run has no results for 2 of 4 queries (2, qé)" in native[2]
    assert "a.run has no results for 1 of 4 queries (3)" in native[2]


def test_command_to_stdout_through_a_subprocess(tmp_path):
    a, b = tmp_path / "a.run", tmp_path / "b.run.gz"
    a.write_bytes(b"1 Q0 x 1 3 t\n1 Q0 y 2 2 t\n2 Q0 u 1 5 t\n")
    b.write_bytes(gzip.compress(b"1 Q0 y 1 0.9 t\n3 Q0 v 1 0.7 t\n"))
    base = [sys.executable, "-m", "rankfusion", "fuse", str(a), str(b), "--weights", "1,0.5"]
    native = subprocess.run(base, capture_output=True, timeout=120)
    trace = ["--trace", str(tmp_path / "t.jsonl"), "-o", "-"]
    python = subprocess.run(base + trace, capture_output=True, timeout=120)
    assert native.returncode == python.returncode == 0
    assert native.stdout == python.stdout
    assert native.stderr == python.stderr
    assert native.stdout.startswith(b"1 Q0 y 1 0.024325753569539928 rankfusion\n")


def test_command_errors_write_nothing(tmp_path, capsys):
    a, bad = tmp_path / "a.run", tmp_path / "bad.run"
    a.write_bytes(b"1 Q0 x 1 1 t\n")
    bad.write_bytes(b"1 Q0 x 1 1 t\n1 Q0 y 2\n")
    out = tmp_path / "out.run"
    out.write_bytes(b"before")
    assert cli.main(["fuse", str(a), str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == f"rankfusion fuse: error: {bad}:2: expected 6 fields " + (
        "(qid Q0 docid rank score tag), found 4: '1 Q0 y 2'\n"
    )
    status = cli.main(
        ["fuse", str(a), str(a), "-k", "0", "--weights", "1e308,1e308", "-o", str(out)]
    )
    assert status == 1
    assert "query '1': the score of key 'x' is not finite (inf)" in capsys.readouterr().err
    assert out.read_bytes() == b"before"
    assert sorted(os.listdir(tmp_path)) == ["a.run", "bad.run", "out.run"]


@pytest.mark.parametrize("option", ["--window", "--limit"])
@pytest.mark.parametrize("value", [2**63 - 1, 2**63, 2**64, 10**30])
def test_command_huge_bounds_mean_no_bound_on_both_paths(
    tmp_path, capsys, monkeypatch, option, value
):
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_bytes(b"1 Q0 x 1 3 t\n1 Q0 y 2 2 t\n1 Q0 z 3 1 t\n2 Q0 u 1 5 t\n")
    b.write_bytes(b"1 Q0 z 1 0.9 t\n1 Q0 w 2 0.8 t\n3 Q0 v 1 0.7 t\n")
    args = ["fuse", str(a), str(b), "--limit", "0"]
    unbounded = command_outputs(tmp_path, capsys, monkeypatch, args)
    native, python = command_outputs(tmp_path, capsys, monkeypatch, [*args, option, str(value)])
    assert native == python == unbounded[0] == unbounded[1]
    assert native[0] == 0 and native[1].count(b"\n") == 6


def test_fuse_run_files_huge_bounds_mean_no_bound(tmp_path):
    a = tmp_path / "a.run"
    a.write_bytes(b"1 Q0 x 1 3 t\n1 Q0 y 2 2 t\n")
    files = trec._read_run_files([a, a])
    expected = trec._fuse_run_files(files)
    for huge in (2**64, 10**40):
        assert trec._fuse_run_files(files, window=huge, limit=huge) == expected
