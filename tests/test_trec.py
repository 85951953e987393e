"""rankfusion.trec: reading, writing, interop, fusion and evaluation of TREC runs and qrels."""

from __future__ import annotations

import gzip
import io
import math
import os
import random
import stat

import pytest

from rankfusion import reference, trec
from rankfusion.trec import Ranking, TrecFormatError

# --- helpers ----------------------------------------------------------------------------------


def write(path, text, *, gz=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def run_text(rows, sep=" ", tag="t"):
    return "".join(f"{q}{sep}Q0{sep}{d}{sep}{r}{sep}{s}{sep}{tag}\n" for q, d, r, s in rows)


def leftovers(folder):
    """Temporary files left behind by a writer."""
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


# --- reading runs -----------------------------------------------------------------------------


def test_read_run_basic(tmp_path):
    p = write(
        tmp_path / "a.run",
        run_text([("q1", "d1", 1, 3.5), ("q1", "d2", 2, 2.0), ("q2", "x", 1, 1)]),
    )
    run = trec.read_run(p)
    assert list(run) == ["q1", "q2"]
    assert run["q1"] == Ranking(["d1", "d2"], [3.5, 2.0])
    assert run["q2"].docids == ["x"] and run["q2"].scores == [1.0]
    assert isinstance(run["q2"].scores[0], float)
    assert list(run["q1"].pairs()) == [("d1", 3.5), ("d2", 2.0)]


def test_trec_eval_tie_order(tmp_path):
    # Tied scores: trec_eval ranks by score descending, then doc id descending (strcmp), and
    # ignores the rank column entirely.
    text = run_text(
        [
            ("q", "d10", 1, 5.0),
            ("q", "d2", 2, 5.0),
            ("q", "d9", 3, 5.0),
            ("q", "a", 4, 7.0),  # best score, written fourth with rank 4
            ("q", "z", 5, 1.0),
            ("q", "b", 6, 1.0),
            ("q", "y", 7, -2.5),
        ]
    )
    run = trec.read_run(write(tmp_path / "t.run", text))
    assert run["q"].docids == ["a", "d9", "d2", "d10", "z", "b", "y"]
    assert run["q"].scores == [7.0, 5.0, 5.0, 5.0, 1.0, 1.0, -2.5]
    # order="file" keeps the lines' order
    run = trec.read_run(tmp_path / "t.run", order="file")
    assert run["q"].docids == ["d10", "d2", "d9", "a", "z", "b", "y"]


def test_trec_eval_order_matches_a_full_sort():
    rng = random.Random(7)
    for _ in range(2000):
        n = rng.randrange(0, 25)
        scores = [float(rng.randrange(4)) for _ in range(n)]
        if rng.random() < 0.6:
            scores.sort(reverse=True)
        docids = [f"d{rng.randrange(30)}" for _ in range(n)]
        got_d, got_s = trec._trec_eval_order(list(docids), list(scores))
        assert list(zip(got_s, got_d)) == sorted(zip(scores, docids), reverse=True)


def test_rank_column_is_not_used(tmp_path):
    text = "q Q0 a 17 1.0 t\nq Q0 b 3 2.0 t\nq Q0 c x 0.5 t\n"
    run = trec.read_run(write(tmp_path / "r.run", text))
    assert run["q"].docids == ["b", "a", "c"]


def test_whitespace_variants_blank_lines_crlf_tabs_bom(tmp_path):
    text = "\ufeffq1\tQ0\td1\t1\t2.5\tt\r\n\r\n  q1  Q0 d2 2   1.5 t  \r\nq2 Q0 d3 1 1e3 t"  # no final newline
    run = trec.read_run(write(tmp_path / "w.run", text))
    assert run == {"q1": Ranking(["d1", "d2"], [2.5, 1.5]), "q2": Ranking(["d3"], [1000.0])}


def test_gzip_is_recognised_by_content_not_name(tmp_path):
    text = run_text([("q", "d1", 1, 2.0), ("q", "d2", 2, 1.0)])
    a = trec.read_run(write(tmp_path / "plain.gz", text))  # .gz name, plain content
    b = trec.read_run(write(tmp_path / "packed.txt", text, gz=True))  # gzip under a .txt name
    assert a == b == {"q": Ranking(["d1", "d2"], [2.0, 1.0])}


def test_non_contiguous_query_lines_are_gathered(tmp_path):
    text = run_text([("q1", "a", 1, 3.0), ("q2", "x", 1, 9.0), ("q1", "b", 2, 4.0)])
    run = trec.read_run(write(tmp_path / "n.run", text))
    assert list(run) == ["q1", "q2"]
    assert run["q1"].docids == ["b", "a"]
    assert trec.read_run(tmp_path / "n.run", order="file")["q1"].docids == ["a", "b"]


def test_infinite_scores_are_accepted(tmp_path):
    text = "q Q0 a 1 inf t\nq Q0 b 2 -inf t\nq Q0 c 3 0 t\n"
    run = trec.read_run(write(tmp_path / "i.run", text))
    assert run["q"].docids == ["a", "c", "b"]
    assert run["q"].scores == [math.inf, 0.0, -math.inf]


def test_undecodable_bytes_round_trip(tmp_path):
    raw = b"q Q0 caf\xe9 1 1.0 t\nq Q0 \xc3\xa9t\xc3\xa9 2 0.5 t\n"  # latin-1 then UTF-8
    run = trec.read_run(write(tmp_path / "b.run", raw))
    assert run["q"].docids[1] == "\u00e9t\u00e9"
    trec.write_run(run, tmp_path / "out.run", tag="t")
    assert (
        tmp_path / "out.run"
    ).read_bytes() == b"q Q0 caf\xe9 1 1.0 t\nq Q0 \xc3\xa9t\xc3\xa9 2 0.5 t\n"


# --- malformed runs: each case gives the documented behaviour -------------------------------


@pytest.mark.parametrize("gz", [False, True])
def test_too_few_fields_names_file_and_line(tmp_path, gz):
    text = run_text([("q", "a", 1, 2.0)]) + "q Q0 b 2 1.0\n" + run_text([("q", "c", 3, 0.5)])
    p = write(tmp_path / "few.run", text, gz=gz)
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.path == str(p) and e.value.line == 2
    assert str(e.value).startswith(f"{p}:2: expected 6 fields")
    assert "found 5" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_too_many_fields(tmp_path):
    p = write(tmp_path / "many.run", "q Q0 a 1 2.0 t\n\nq Q0 b 2 1.0 t extra\n")
    with pytest.raises(TrecFormatError, match=r"many\.run:3: expected 6 fields .* found 7"):
        trec.read_run(p)


def test_lines_that_only_balance_out_are_caught(tmp_path):
    # 5 fields then 7 fields: 12 tokens on 2 lines, the counts alone would not notice.
    p = write(tmp_path / "bal.run", "q Q0 a 1 2.0\nq Q0 b 2 1.0 t t\n")
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.line == 1


@pytest.mark.parametrize("score", ["abc", "1,5", "", "0x10"])
def test_non_numeric_score(tmp_path, score):
    text = "q Q0 a 1 2.0 t\nq Q0 b 2 1.0 t\n" + f"q Q0 c 3 {score or '--'} t\n"
    p = write(tmp_path / "s.run", text)
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.line == 3
    assert "score is not a number" in str(e.value)


def test_nan_score(tmp_path):
    p = write(tmp_path / "nan.run", "q Q0 a 1 2.0 t\nq Q0 b 2 nan t\n")
    with pytest.raises(TrecFormatError, match=r"nan\.run:2: score is NaN"):
        trec.read_run(p)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file(tmp_path, content):
    p = write(tmp_path / "empty.run", content)
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.line is None and "empty run" in str(e.value)
    assert trec.read_run(p, allow_empty=True) == {}


def test_empty_gzip_file(tmp_path):
    p = write(tmp_path / "empty.run.gz", "", gz=True)
    with pytest.raises(TrecFormatError, match="empty run"):
        trec.read_run(p)


def test_corrupt_and_truncated_gzip(tmp_path):
    data = gzip.compress(run_text([("q", f"d{i}", i, 1.0 / (i + 1)) for i in range(2000)]).encode())
    p = write(tmp_path / "trunc.run.gz", data[: len(data) // 2])
    with pytest.raises(TrecFormatError, match="corrupt gzip"):
        trec.read_run(p)
    p = write(tmp_path / "bad.run.gz", data[:20] + bytes(len(data) - 20))
    with pytest.raises(TrecFormatError, match="corrupt gzip"):
        trec.read_run(p)


def test_missing_file_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        trec.read_run(tmp_path / "nope.run")


def test_duplicate_docids_within_a_query(tmp_path):
    text = run_text(
        [("q", "a", 1, 3.0), ("q", "b", 2, 2.0), ("q", "a", 3, 5.0), ("r", "a", 1, 1.0)]
    )
    p = write(tmp_path / "dup.run", text)
    # default: an error naming the second line and the first
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.line == 3
    assert "query 'q' has doc 'a' twice (first on line 1)" in str(e.value)
    # "first": the best-ranked line (here by score: line 3, score 5.0)
    assert trec.read_run(p, duplicates="first")["q"] == Ranking(["a", "b"], [5.0, 2.0])
    assert trec.read_run(p, duplicates="first", order="file")["q"] == Ranking(
        ["a", "b"], [3.0, 2.0]
    )
    # "keep": every line, for rrf(duplicates="first"|"sum")
    assert trec.read_run(p, duplicates="keep")["q"] == Ranking(["a", "a", "b"], [5.0, 3.0, 2.0])
    # the same doc id in another query is no duplicate
    assert trec.read_run(p, duplicates="keep")["r"].docids == ["a"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="order"):
        trec.read_run("x", order="rank")
    with pytest.raises(ValueError, match="duplicates"):
        trec.read_run("x", duplicates="last")


@pytest.mark.parametrize("chunk", [7, 40, 64, 1 << 22])
@pytest.mark.parametrize("messy", [False, True])
def test_streaming_in_chunks_keeps_line_numbers(tmp_path, monkeypatch, chunk, messy):
    monkeypatch.setattr(trec, "_CHUNK_CHARS", chunk)
    rows = [(f"q{i // 7}", f"d{i}", i, float(100 - i)) for i in range(60)]
    text = run_text(rows, sep="\t" if messy else " ")
    if messy:
        text = text.replace("\n", "\n\n", 5)
    p = write(tmp_path / "c.run", text)
    run = trec.read_run(p, order="file")
    assert [d for r in run.values() for d in r.docids] == [f"d{i}" for i in range(60)]
    # break line 45 of the file and check the error's line number
    lines = text.split("\n")
    lines[44] = "q Q0 broken"
    write(p, "\n".join(lines))
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.line == 45
    lines[44] = "q Q0 d 1 notascore t"
    write(p, "\n".join(lines))
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.line == 45


@pytest.mark.parametrize("chunk", [1, 7, 1 << 22])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("size", [0, 1, 1000])
def test_a_file_read_in_chunks_is_its_bytes(tmp_path, monkeypatch, chunk, gz, size):
    """A file is read in chunks (Ctrl-C handled between reads) that the core joins: the bytes
    are the file's, gunzipped, whatever the chunks."""
    monkeypatch.setattr(trec, "_CHUNK_CHARS", chunk)
    data = bytes(random.Random(size).randrange(256) for _ in range(size))
    p = tmp_path / "f.bin"
    p.write_bytes(gzip.compress(data) if gz else data)
    assert trec._read_bytes(p, False) == data
    assert trec._read_bytes(p, True) == data  # with a progress bar


@pytest.mark.skipif(os.name == "nt", reason="an open file cannot be removed on Windows")
@pytest.mark.parametrize("close", [True, False])
def test_a_discarded_output_leaves_no_file_and_no_target(tmp_path, close):
    """``discard`` removes the temporary file, whether it closes it (the default) or leaves it
    open for ``os._exit`` (the command's own process): no file is left, the target untouched."""
    target = tmp_path / "out.run"
    out = trec._AtomicFile(target)
    out.file.write("1 Q0 d 1 1.0 t\n" * 1000)
    out.file.flush()
    out.discard(close=close)
    assert sorted(os.listdir(tmp_path)) == []
    assert out._raw.closed is close
    if not close:  # still a file: writing to it works, and nothing reappears
        out._raw.write(b"x")
        out._raw.close()
        assert sorted(os.listdir(tmp_path)) == []


def test_an_output_that_cannot_be_renamed_into_place_is_named(tmp_path):
    """A rename that fails (here the temporary file was removed by someone else) names the
    output asked for, not its temporary name."""
    target = tmp_path / "out.run"
    out = trec._AtomicFile(target)
    out.file.write("1 Q0 d 1 1.0 t\n")
    (temporary,) = os.listdir(tmp_path)
    os.unlink(tmp_path / temporary)
    with pytest.raises(FileNotFoundError) as caught:
        out.commit()
    assert caught.value.filename == str(target) and caught.value.filename2 is None
    out.discard()
    assert os.listdir(tmp_path) == []


def test_the_core_reads_a_file_whose_size_changes_as_none(tmp_path):
    """``_core._read_file`` reads a plain file into one bytes of its size, calling ``progress``
    between pieces; a file that grows or shrinks meanwhile gives None (the caller reads it
    again another way), a missing one an OSError with its errno."""
    from rankfusion import _core

    p = tmp_path / "f.bin"
    data = bytes(range(256)) * 40 + b"end"
    p.write_bytes(data)
    seen = []
    assert _core._read_file(str(p), 1000, seen.append) == data
    assert seen == [1000 * i for i in range(1, 11)] + [len(data)]
    assert _core._read_file(str(p), 1 << 22) == data

    def grow(n):
        with open(p, "ab") as f:
            f.write(b"more")

    assert _core._read_file(str(p), 1000, grow) is None
    p.write_bytes(data)

    def shrink(n):
        os.truncate(p, 10)

    assert _core._read_file(str(p), 1000, shrink) is None
    assert trec._read_bytes(p, False) == data[:10]
    (tmp_path / "empty").write_bytes(b"")
    assert _core._read_file(str(tmp_path / "empty"), 1000) == b""
    with pytest.raises(FileNotFoundError) as caught:
        _core._read_file(str(tmp_path / "missing"), 1000)
    assert caught.value.errno == 2


def test_a_plain_file_is_read_without_a_second_copy(tmp_path, monkeypatch):
    """Reading a 16 MB run file allocates about its size at the peak (tracemalloc: Python's
    allocations, bytes included); joining 4 MB pieces took twice that."""
    import tracemalloc

    p = tmp_path / "big.run"
    p.write_bytes(b"1 Q0 d 1 1.0 t\n" * (16 * 2**20 // 15))

    def peak() -> float:
        tracemalloc.start()
        try:
            data = trec._read_bytes(p, False)
            return tracemalloc.get_traced_memory()[1] / len(data)
        finally:
            tracemalloc.stop()

    assert peak() < 1.2
    # read as a file that is not a regular one is read (a FIFO, say): the pieces joined
    monkeypatch.setattr(trec.stat, "S_ISREG", lambda mode: False)
    assert peak() > 1.8  # (the check can fail)


def test_ctrl_c_as_an_output_is_made_leaves_no_file(tmp_path, monkeypatch):
    """A KeyboardInterrupt between the creation of the temporary file and the end of
    ``_AtomicFile()`` (here from the hook that reports it) removes the file."""

    def interrupted(path):
        assert os.path.exists(path)
        raise KeyboardInterrupt

    monkeypatch.setattr(trec, "_made_temporary", interrupted)
    with pytest.raises(KeyboardInterrupt):
        trec._AtomicFile(tmp_path / "out.run")
    assert os.listdir(tmp_path) == []


def test_random_formatting_parses_the_same(tmp_path):
    rng = random.Random(3)
    for case in range(60):
        rows = []
        for q in range(rng.randrange(1, 5)):
            for i in range(rng.randrange(1, 12)):
                rows.append(
                    (
                        str(q),
                        f"D{rng.randrange(50)}{i}",
                        i + 1,
                        round(rng.uniform(-5, 5), rng.randrange(0, 4)),
                    )
                )
        lines = []
        for q, d, r, s in rows:
            fields = [q, "Q0", d, str(r), repr(s), "tag"]
            seps = [
                rng.choice([" ", "  ", "\t", " \t"]) if rng.random() < 0.2 else " "
                for _ in range(5)
            ]
            line = "".join(f + sep for f, sep in zip(fields, seps)) + fields[-1]
            lines.append(line)
            if rng.random() < 0.05:
                lines.append(rng.choice(["", "   ", "\t"]))
        text = "\n".join(lines) + rng.choice(["", "\n", "\r\n"])
        p = write(tmp_path / f"r{case}.run", text, gz=case % 2 == 1)
        got = trec.read_run(p, order="file", duplicates="keep")
        expected = {}
        for q, d, _, s in rows:
            ranking = expected.setdefault(q, Ranking([], []))
            ranking.docids.append(d)
            ranking.scores.append(float(s))
        assert got == expected


# --- qrels ------------------------------------------------------------------------------------


def test_read_qrels(tmp_path):
    p = write(tmp_path / "q.txt", "1 0 d1 2\n1 0 d2 0\n\n2 0 d1 -1\n2\t0\td9\t1\n")
    assert trec.read_qrels(p) == {"1": {"d1": 2, "d2": 0}, "2": {"d1": -1, "d9": 1}}


def test_qrels_malformed(tmp_path):
    p = write(tmp_path / "q.txt", "1 0 d1 2\n1 0 d2\n")
    with pytest.raises(TrecFormatError, match=r"q\.txt:2: expected 4 fields"):
        trec.read_qrels(p)
    p = write(tmp_path / "g.txt", "1 0 d1 2\n1 0 d2 1.5\n")
    with pytest.raises(TrecFormatError, match=r"g\.txt:2: gain is not an integer, got '1\.5'"):
        trec.read_qrels(p)
    p = write(tmp_path / "d.txt", "1 0 d1 2\n1 0 d1 1\n")
    with pytest.raises(TrecFormatError, match=r"d\.txt:2: query '1' judges doc 'd1' twice"):
        trec.read_qrels(p)
    assert trec.read_qrels(p, duplicates="first") == {"1": {"d1": 2}}
    p = write(tmp_path / "e.txt", "")
    with pytest.raises(TrecFormatError, match="empty qrels"):
        trec.read_qrels(p)
    assert trec.read_qrels(p, allow_empty=True) == {}


def test_qrels_round_trip(tmp_path):
    qrels = {"1": {"a": 3, "b": 0}, "10": {"a": -1}}
    for name in ["q.txt", "q.txt.gz"]:
        trec.write_qrels(qrels, tmp_path / name)
        assert trec.read_qrels(tmp_path / name) == qrels
    assert (tmp_path / "q.txt").read_text() == "1 0 a 3\n1 0 b 0\n10 0 a -1\n"
    with pytest.raises(ValueError, match="integer"):
        trec.write_qrels({"1": {"a": 0.5}}, tmp_path / "bad.txt")
    assert not (tmp_path / "bad.txt").exists()


# --- writing ----------------------------------------------------------------------------------


def test_write_run_format_and_round_trip(tmp_path):
    run = {"q1": Ranking(["b", "a"], [0.1 + 0.2, 1 / 3]), "q2": Ranking(["z"], [-0.0])}
    trec.write_run(run, tmp_path / "o.run", tag="sys")
    assert (tmp_path / "o.run").read_text() == (
        "q1 Q0 b 1 0.30000000000000004 sys\nq1 Q0 a 2 0.3333333333333333 sys\nq2 Q0 z 1 -0.0 sys\n"
    )
    back = trec.read_run(tmp_path / "o.run", order="file")
    assert back == run  # scores are written exactly
    trec.write_run(run, tmp_path / "o.run.gz")
    with gzip.open(tmp_path / "o.run.gz", "rt") as f:
        assert f.readline() == "q1 Q0 b 1 0.30000000000000004 rankfusion\n"
    assert trec.read_run(tmp_path / "o.run.gz", order="file") == run
    assert leftovers(tmp_path) == []


def test_write_run_accepts_pairs_mappings_and_hits(tmp_path):
    hits = reference.rrf([["a", "b"], ["b", "c"]])
    inputs = {"h": hits, "p": [("x", 2), ("y", 1.5)], "m": {"u": 1.0, 7: 0.5}}
    trec.write_run(inputs, tmp_path / "o.run")
    lines = (tmp_path / "o.run").read_text().splitlines()
    assert lines[0] == f"h Q0 b 1 {hits[0].score!r} rankfusion"
    assert lines[3:] == [
        "p Q0 x 1 2.0 rankfusion",
        "p Q0 y 2 1.5 rankfusion",
        "m Q0 u 1 1.0 rankfusion",
        "m Q0 7 2 0.5 rankfusion",
    ]


@pytest.mark.parametrize(
    "run, tag, match",
    [
        ({"q": [("a b", 1.0)]}, "t", "doc id"),
        ({"q": [("", 1.0)]}, "t", "doc id"),
        ({"q": [(" a", 1.0)]}, "t", "doc id"),
        ({"q 1": [("a", 1.0)]}, "t", "qid"),
        ({"q": [("a", 1.0)]}, "my tag", "tag"),
        ({"q": [("a", 1.0)]}, "", "tag"),
    ],
)
def test_write_run_rejects_whitespace_and_writes_nothing(tmp_path, run, tag, match):
    target = tmp_path / "o.run"
    with pytest.raises(ValueError, match=match):
        trec.write_run({"ok": [("d", 1.0)], **run}, target, tag=tag)
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_write_is_atomic_and_keeps_the_old_file_on_error(tmp_path):
    target = tmp_path / "o.run"
    target.write_text("old\n")

    class Exploding(dict):
        def items(self):
            yield "q1", [("a", 1.0)]
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        trec.write_run(Exploding(), target)
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_write_follows_symlinks_and_keeps_mode(tmp_path):
    real = tmp_path / "real.run"
    link = tmp_path / "link.run"
    real.write_text("old\n")
    link.symlink_to(real)
    trec.write_run({"q": [("a", 1.0)]}, link)
    assert link.is_symlink()
    assert real.read_text() == "q Q0 a 1 1.0 rankfusion\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(real.stat().st_mode) == 0o666 & ~umask


def test_write_to_an_open_file(tmp_path):
    import io

    out = io.StringIO()
    trec.write_run({"q": Ranking(["a"], [1.0])}, out, tag="x")
    assert out.getvalue() == "q Q0 a 1 1.0 x\n"


NAN = float("nan")


def nan_hit():
    from rankfusion import Hit

    return Hit("d", NAN)


@pytest.mark.parametrize(
    "ranked",
    [
        [("d", NAN)],
        [("ok", 1.0), ("d", NAN)],
        {"ok": 1.0, "d": NAN},
        Ranking(["ok", "d"], [1.0, NAN]),
        Ranking(("ok", "d"), (1.0, NAN)),
        "hits",
    ],
    ids=["pair", "second pair", "mapping", "Ranking", "Ranking of tuples", "hits"],
)
def test_write_run_refuses_a_nan_score_naming_query_and_doc(tmp_path, ranked):
    if ranked == "hits":
        ranked = [nan_hit()]
    target = tmp_path / "o.run"
    target.write_text("old\n")
    with pytest.raises(ValueError, match=r"query 'q'.*doc 'd'.*NaN"):
        trec.write_run({"first": [("x", 1.0)], "q": ranked}, target)
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []
    out = io.StringIO()  # an open file: nothing of the run is written either
    with pytest.raises(ValueError, match=r"query 'q'.*doc 'd'.*NaN"):
        trec.write_run({"first": [("x", 1.0)], "q": ranked}, out)
    assert out.getvalue() == ""


@pytest.mark.parametrize(
    "run, match",
    [
        ({"q": [(None, 1.0)]}, r"doc id of query 'q' must be a str or an int, got NoneType None"),
        ({"q": {None: 1.0}}, r"doc id of query 'q' must be a str or an int, got NoneType None"),
        ({"q": Ranking(["a", None], [2.0, 1.0])}, "doc id of query 'q' must be a str or an int"),
        ({"q": [(1.5, 1.0)]}, r"doc id of query 'q' must be a str or an int, got float 1.5"),
        ({"q": [(b"a", 1.0)]}, "doc id of query 'q' must be a str or an int, got bytes"),
        ({"q": [(True, 1.0)]}, "doc id of query 'q' must be a str or an int, got bool"),
        ({None: [("a", 1.0)]}, r"qid must be a str or an int, got NoneType None"),
        ({"q": [("d", "1.5")]}, r"query 'q': the score of doc 'd' must be a real number, got str"),
        ({"q": [("d", None)]}, r"query 'q': the score of doc 'd' must be a real number, got None"),
        ({"q": Ranking(["a", "d"], [1.0])}, r"query 'q': 2 doc ids but 1 scores"),
    ],
)
def test_write_run_refuses_what_read_run_would_not_read_back(tmp_path, run, match):
    target = tmp_path / "o.run"
    with pytest.raises(ValueError, match=match):
        trec.write_run({"ok": [("d", 1.0)], **run}, target)
    assert not target.exists()
    assert leftovers(tmp_path) == []
    out = io.StringIO()
    with pytest.raises(ValueError, match=match):
        trec.write_run({"ok": [("d", 1.0)], **run}, out)
    assert out.getvalue() == ""


def test_write_run_writes_what_read_run_reads_back(tmp_path):
    import numpy as np

    run = {
        "q": [("a", float("inf")), (7, 2), (np.int64(8), np.float32(0.5)), ("b", -float("inf"))],
        5: {"c": 1},
        "r": [("a", float("inf")), ("b", -float("inf"))],  # inf + -inf is NaN, neither score is
    }
    trec.write_run(run, tmp_path / "o.run")
    back = trec.read_run(tmp_path / "o.run", order="file")
    assert back == {
        "q": Ranking(["a", "7", "8", "b"], [float("inf"), 2.0, 0.5, -float("inf")]),
        "5": Ranking(["c"], [1.0]),
        "r": Ranking(["a", "b"], [float("inf"), -float("inf")]),
    }


def test_write_qrels_refuses_ids_read_qrels_would_not_read_back(tmp_path):
    target = tmp_path / "q.txt"
    with pytest.raises(
        ValueError, match="doc id of query 'q' must be a str or an int, got NoneType None"
    ):
        trec.write_qrels({"q": {"a": 1, None: 1}}, target)
    with pytest.raises(ValueError, match="qid must be a str or an int, got NoneType None"):
        trec.write_qrels({None: {"a": 1}}, target)
    assert not target.exists()
    trec.write_qrels({1: {2: 1, "d": 0}}, target)
    assert trec.read_qrels(target) == {"1": {"2": 1, "d": 0}}


# --- interop ----------------------------------------------------------------------------------


def test_dict_round_trip():
    d = {"q1": {"a": 1.0, "b": 3.0, "c": 3.0}, "q2": {"x": 0.5}}
    run = trec.from_dict(d)
    assert run["q1"] == Ranking(["c", "b", "a"], [3.0, 3.0, 1.0])  # trec_eval order
    assert trec.from_dict(d, order="insertion")["q1"].docids == ["a", "b", "c"]
    assert trec.to_dict(run) == d
    assert list(trec.to_dict(run)["q1"]) == ["c", "b", "a"]  # rank order


def test_from_dict_converts_ids_and_checks_scores():
    assert trec.from_dict({1: {2: 3}}) == {"1": Ranking(["2"], [3.0])}
    with pytest.raises(ValueError, match="NaN"):
        trec.from_dict({"q": {"a": float("nan")}})
    with pytest.raises(ValueError, match="not a number"):
        trec.from_dict({"q": {"a": "high"}})
    with pytest.raises(ValueError, match="doc id"):
        trec.from_dict({"q": {"a b": 1.0}})


def test_to_dict_of_duplicates_keeps_the_best_ranked():
    assert trec.to_dict({"q": Ranking(["a", "b", "a"], [3.0, 2.0, 1.0])}) == {
        "q": {"a": 3.0, "b": 2.0}
    }


def test_to_dict_of_fused_hits():
    hits = reference.rrf([["a", "b"], ["b"]])
    assert trec.to_dict({"q": hits}) == {"q": {"b": hits[0].score, "a": hits[1].score}}


def test_ranx_round_trip():
    ranx = pytest.importorskip("ranx")
    run = {"q1": Ranking(["a", "b"], [2.0, 1.0]), "q2": Ranking(["c"], [0.5])}
    r = trec.to_ranx(run, name="mine")
    assert isinstance(r, ranx.Run) and r.name == "mine"
    assert {q: dict(v) for q, v in r.to_dict().items()} == trec.to_dict(run)
    assert trec.from_ranx(r) == run


def test_ranx_missing_gives_a_helpful_import_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "ranx":
            raise ImportError("no ranx")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match="pip install ranx"):
        trec.to_ranx({})


# --- fusion -----------------------------------------------------------------------------------


def test_fuse_equals_rrf_per_query():
    rng = random.Random(11)
    runs = []
    for r in range(3):
        run = {}
        for q in range(8):
            if (q + r) % 5 == 0:
                continue  # some queries are missing from some runs
            docs = rng.sample(range(40), rng.randrange(0, 20))
            run[f"q{q}"] = Ranking([f"d{d}" for d in docs], [float(-i) for i in range(len(docs))])
        runs.append(run)
    options = dict(k=10, weights=[1.0, 0.5, 2.0], window=12, limit=15)
    fused = trec.fuse(runs, **options)
    # first-seen order: run 0 lacks q0 and q5, which run 1 brings in its own order
    assert list(fused) == ["q1", "q2", "q3", "q4", "q6", "q7", "q0", "q5"]
    for qid, hits in fused.items():
        lists = [run[qid].docids if qid in run else [] for run in runs]
        expected = reference.rrf(lists, **options)
        assert [(h.key, h.score) for h in hits] == [(h.key, h.score) for h in expected]


def test_fuse_query_missing_from_a_run_is_fused_from_the_others():
    a = {"q1": Ranking(["x", "y"], [2.0, 1.0]), "q2": Ranking(["z"], [1.0])}
    b = {"q1": Ranking(["y"], [9.0])}
    fused = trec.fuse([a, b], trace=True)
    assert [h.key for h in fused["q2"]] == ["z"]
    (c,) = fused["q2"][0].contributions
    assert (c.list_index, c.rank, c.score) == (0, 1, 1.0)
    # list_index is the run's index even when run 0 lacks the query
    fused = trec.fuse([b, a], trace=True)
    assert [c.list_index for c in fused["q2"][0].contributions] == [1]


def test_fuse_trace_carries_raw_scores_and_queries_filter():
    a = {"q": Ranking(["x", "y"], [2.5, 1.5]), "r": Ranking(["x"], [1.0])}
    b = {"q": Ranking(["y", "x"], [0.9, 0.8])}
    fused = trec.fuse([a, b], trace=True, queries=["q", "absent"])
    assert list(fused) == ["q"]
    top = fused["q"][0]
    assert [(c.list_index, c.rank, c.score) for c in top.contributions] in (
        [(0, 1, 2.5), (1, 2, 0.8)],
        [(0, 2, 1.5), (1, 1, 0.9)],
    )
    assert fused["q"][0].to_dict()["contributions"][0]["score"] in (2.5, 1.5)


def test_fuse_duplicates_modes():
    run = {"q": Ranking(["a", "b", "a"], [3.0, 2.0, 1.0])}
    assert [h.key for h in trec.fuse([run])["q"]] == ["a", "b"]
    summed = trec.fuse([run], duplicates="sum")["q"]
    assert summed[0].score == reference.rrf([["a", "b", "a"]], duplicates="sum")[0].score
    with pytest.raises(ValueError, match="query 'q'"):
        trec.fuse([run], duplicates="error")


def test_fuse_bad_options_raise():
    run = {"q": Ranking(["a"], [1.0])}
    with pytest.raises(ValueError):
        trec.fuse([run], k=-1)
    with pytest.raises(ValueError):
        trec.fuse([run], weights=[1.0, 2.0])


def test_fuse_no_runs_or_empty_runs():
    assert trec.fuse([]) == {}
    assert trec.fuse([{}, {}]) == {}


# --- evaluation -------------------------------------------------------------------------------


def test_parse_metrics_aliases():
    pytest.importorskip("ir_measures")
    names = [
        str(m) for m in trec.parse_metrics("ndcg@10, recall@100,map,mrr@10,P@5,ndcg_cut.20,R@1000")
    ]
    assert names == ["nDCG@10", "R@100", "AP", "RR@10", "P@5", "nDCG@20", "R@1000"]
    with pytest.raises(ValueError, match="unknown metric 'bogus@3'"):
        trec.parse_metrics("ndcg@10,bogus@3")
    with pytest.raises(ValueError, match="no metric"):
        trec.parse_metrics(" , ")


def test_evaluate_small_case():
    pytest.importorskip("ir_measures")
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": Ranking(["b", "a"], [2.0, 1.0])}
    result = trec.evaluate(run, qrels, "P@1,RR")
    assert result == {"P@1": 0.0, "RR": 0.5}


def test_evaluate_counts_a_judged_query_missing_from_the_run_as_zero():
    pytest.importorskip("ir_measures")
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": Ranking(["a"], [1.0]), "q3": Ranking(["c"], [1.0])}
    assert trec.evaluate(run, qrels, "P@1") == {"P@1": 0.5}


def test_evaluate_in_pieces_gives_ir_measures_values_bit_for_bit(monkeypatch):
    """pytrec_eval holds the GIL for a whole run (no Ctrl-C until it returns): evaluate hands
    it pieces of at most about _EVALUATE_ENTRIES entries, and adds each measure's values in the
    order ir-measures adds them, so the means are ir-measures' own, bit for bit."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures.providers.pytrec_eval_provider import PytrecEvalInvoker

    rng = random.Random(5)
    qids = [f"q{i}" for i in rng.sample(range(400), 300)]
    run = {}
    for q in qids[:250]:  # 50 judged queries that the run lacks
        n = rng.choice([0, 1, 3, 40])  # an empty ranking too
        docs = [f"d{j}" for j in rng.sample(range(60), n)]
        run[q] = Ranking(docs, [round(rng.uniform(-5, 5), 1) for _ in docs])
    qrels = {q: {f"d{j}": rng.choice([0, 1, 2]) for j in rng.sample(range(60), 9)} for q in qids}
    qrels.update({f"x{i}": {"d1": 1} for i in range(20)})  # judged, in no run
    metrics = "ndcg@10,recall@100,map,P@5,RR,Rprec,nDCG,success@3,bpref"
    measures = trec.parse_metrics(metrics)
    want = ir_measures.calc_aggregate(measures, qrels, trec.to_dict(run))
    sizes = []
    evaluate = PytrecEvalInvoker.iter_calc

    def recorded(self, piece):
        sizes.append(sum(map(len, piece.values())))
        return evaluate(self, piece)

    monkeypatch.setattr(PytrecEvalInvoker, "iter_calc", recorded)
    entries = sum(len(r.docids) for r in run.values())
    for most in (1, 7, 100, entries, 10**9):
        monkeypatch.setattr(trec, "_EVALUATE_ENTRIES", most)
        sizes.clear()
        got = trec.evaluate(run, qrels, metrics)
        assert got == {str(m): want[m] for m in measures}, most
        assert sum(sizes) >= entries  # every entry evaluated (once per invoker)
        assert max(sizes) < most + 40  # a piece ends at the first query that fills it
    monkeypatch.setattr(trec, "_EVALUATE_ENTRIES", 100)
    sizes.clear()
    trec.evaluate(run, qrels, "ndcg@10")
    assert len(sizes) > entries // 140 and max(sizes) < 140


def test_writing_into_a_missing_folder_names_the_file_asked_for(tmp_path):
    """Not the temporary name it is written under (.NAME.XXXXXXXX.tmp)."""
    target = tmp_path / "missing" / "out.run"
    with pytest.raises(FileNotFoundError) as caught:
        trec.write_run({"q": Ranking(["a"], [1.0])}, target)
    assert caught.value.filename == str(target)
    assert str(caught.value) == f"[Errno 2] No such file or directory: {str(target)!r}"
    pa = pytest.importorskip("pyarrow")  # the arrow extra, in the test extra (CI has it)
    from rankfusion import frame

    with pytest.raises(FileNotFoundError) as caught:
        frame.write_parquet(pa.table({"qid": ["q"]}), tmp_path / "missing" / "out.parquet")
    assert caught.value.filename == str(tmp_path / "missing" / "out.parquet")
