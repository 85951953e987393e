"""The Rust TREC reader and writer against plain-Python oracles.

``read_run``/``read_qrels`` parse in the Rust core (rust/trec.rs). The oracles below read a file
the way docs/cli.md describes it, line by line with Python's own text decoding, ``str.split``,
``float`` and ``int``; Hypothesis feeds both messy files (every kind of whitespace and line break,
BOMs, undecodable bytes, odd numbers, wrong field counts, duplicates) and they must agree on the
result, or on the error (message and line). The writer's lines must equal the f-string it
replaced, ``f"{qid} Q0 {docid} {rank} {score!r} {tag}"``, for any float.
"""

from __future__ import annotations

import gzip
import io
import math
import random
import struct
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankfusion import Hit, _core, reference, trec
from rankfusion.trec import Ranking, TrecFormatError

# --- the oracles ------------------------------------------------------------------------------

RUN_FORMAT = "qid Q0 docid rank score tag"
QRELS_FORMAT = "qid 0 docid gain"


def _lines(path):
    """(line number, fields, line) of the file's non-blank lines: UTF-8 with surrogateescape,
    universal newlines (\\n, \\r\\n, lone \\r), a leading BOM dropped, fields split by
    ``str.split()``."""
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    text = data.decode("utf-8", "surrogateescape")
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return [(n, line.split(), line) for n, line in enumerate(text.split("\n"), 1) if line.split()]


def _check_fields(path, lines, n, fmt):
    for number, fields, line in lines:
        if len(fields) != n:
            shown = line.strip()
            if len(shown) > 80:
                shown = shown[:77] + "..."
            reason = f"expected {n} fields ({fmt}), found {len(fields)}: {shown!r}"
            raise TrecFormatError(path, number, reason)


def oracle_read_run(path, order="score", duplicates="error", allow_empty=False):
    lines = _lines(path)
    _check_fields(path, lines, 6, RUN_FORMAT)
    scores = []
    for number, fields, _ in lines:
        try:
            scores.append(float(fields[4]))
        except ValueError:
            reason = f"score is not a number, got {fields[4]!r}"
            raise TrecFormatError(path, number, reason) from None
    for (number, fields, _), score in zip(lines, scores):
        if math.isnan(score):
            raise TrecFormatError(path, number, f"score is NaN, got {fields[4]!r}")
    if not lines and not allow_empty:
        raise TrecFormatError(path, None, "empty run: the file has no lines")
    queries = {}
    for (number, fields, _), score in zip(lines, scores):
        queries.setdefault(fields[0], []).append((fields[2], score, number))
    run = {}
    for qid, rows in queries.items():
        if duplicates == "error":
            first = {}
            for docid, _, number in rows:
                if docid in first:
                    reason = f"query {qid!r} has doc {docid!r} twice (first on line {first[docid]})"
                    raise TrecFormatError(path, number, reason)
                first[docid] = number
        docids = [d for d, _, _ in rows]
        values = [s for _, s, _ in rows]
        if order == "score":
            docids, values = trec._trec_eval_order(docids, values)
        if duplicates == "first":
            kept = {}
            for d, s in zip(docids, values):
                kept.setdefault(d, s)
            docids, values = list(kept), list(kept.values())
        run[qid] = Ranking(docids, values)
    return run


def oracle_read_qrels(path, duplicates="error", allow_empty=False):
    lines = _lines(path)
    _check_fields(path, lines, 4, QRELS_FORMAT)
    gains = []
    for number, fields, _ in lines:
        try:
            gains.append(int(fields[3]))
        except ValueError:
            reason = f"gain is not an integer, got {fields[3]!r}"
            raise TrecFormatError(path, number, reason) from None
    qrels = {}
    for (number, fields, _), gain in zip(lines, gains):
        judged = qrels.setdefault(fields[0], {})
        if fields[2] in judged:
            if duplicates == "error":
                reason = f"query {fields[0]!r} judges doc {fields[2]!r} twice"
                raise TrecFormatError(path, number, reason)
            continue
        judged[fields[2]] = gain
    if not qrels and not allow_empty:
        raise TrecFormatError(path, None, "empty qrels: the file has no lines")
    return qrels


def outcome(read, *args, **kwargs):
    """What a read gives: the parsed data with scores as bits, or the error's message and line."""
    try:
        result = read(*args, **kwargs)
    except TrecFormatError as e:
        return ("error", str(e), e.line)
    out = []
    for qid, value in result.items():
        if isinstance(value, Ranking):
            bits = [struct.pack("<d", s) for s in value.scores]
            out.append((qid, value.docids, bits, [type(s) for s in value.scores]))
        else:
            out.append((qid, list(value.items()), [type(g) for g in value.values()]))
    return ("ok", out)


# --- messy files ------------------------------------------------------------------------------

SEPARATORS = [" ", " ", " ", "\t", "  ", " \t", "\x0b", "\x0c", "\x1c", "\x1f", "\xa0", "\u3000"]
SEPARATORS += ["\u2028", "\x85", "\u2000", "\u200a", "\u1680", "\u205f", "\u202f"]
BREAKS = ["\n", "\n", "\n", "\r\n", "\r", "\n\n", "\n \t\n", "\r\r\n", "\x0c\n"]
QIDS = ["q1", "q2", "10", "é", "\udce9q"]
DOCIDS = ["a", "b", "c", "d10", "d2", "d9", "A", "é", "ß", "€", "\U0001f600", "\x00x", "\x7f"]
DOCIDS += ["caf\udce9", "\udce2\udc82", "\udce2\udc82A", "\udcff", "\udced\udca0\udc80", "a\u200b"]
SCORES = ["1", "2.5", "-1", "0", "-0.0", "0.0", "+1.5", ".5", "5.", "1e3", "1E-2", "1.e5", "inf"]
SCORES += ["-inf", "Infinity", "-INFINITY", "+inF", "1_0", "1_000.5", "1e1_0", "1e400", "-1e400"]
SCORES += ["1e-400", "3", "3", "2", "2", "1__0", "_1", "1_", "1_.5", "nan", "-NaN", "x", "1,5"]
SCORES += ["0x10", "", "e5", "1e", ".", "--1", "１.５", "١٢", "٣_٤", "\u0669e\u0661", "\udce9"]
GAINS = ["0", "1", "2", "-1", "+3", "007", "1_0", "-0", "99999999999999999999999", "1.5", "x"]
GAINS += ["-9223372036854775809", "9223372036854775807", "１", "٣", "_1", "1__0", "", "1e3"]


@st.composite
def messy_file(draw, qrels=False):
    """File bytes: mostly well-formed lines with every kind of separator and line break."""
    nfields = 4 if qrels else 6
    lines = []
    for _ in range(draw(st.integers(0, 14))):
        if draw(st.integers(0, 19)) == 0:
            n = draw(st.sampled_from([0, 1, 3, 5, 7, 8]))
        else:
            n = nfields
        fields = []
        for i in range(n):
            if i == 0:
                pool = QIDS
            elif i == 2:
                pool = DOCIDS
            elif i == nfields - 2 and not qrels:
                pool = SCORES
            elif i == 3 and qrels:
                pool = GAINS
            else:
                pool = ["Q0", "0", "1", "t", "x"]
            fields.append(draw(st.sampled_from(pool)) or "-")
        seps = [draw(st.sampled_from(SEPARATORS)) for _ in fields]
        lead = draw(st.sampled_from(["", "", " ", "\t", "\xa0"]))
        line = lead + "".join(f + s for f, s in zip(fields, seps))
        lines.append(line + draw(st.sampled_from(BREAKS)))
    text = "".join(lines)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no final newline
    if draw(st.integers(0, 9)) == 0:
        text = "\ufeff" + text
    data = text.encode("utf-8", "surrogateescape")
    if draw(st.integers(0, 4)) == 0:
        data = gzip.compress(data)
    return data


@given(
    data=messy_file(),
    order=st.sampled_from(["score", "file"]),
    duplicates=st.sampled_from(["error", "first", "keep"]),
    allow_empty=st.booleans(),
)
def test_read_run_matches_the_oracle(tmp_path_factory, data, order, duplicates, allow_empty):
    path = tmp_path_factory.mktemp("messy") / "r.run"
    path.write_bytes(data)
    options = dict(order=order, duplicates=duplicates, allow_empty=allow_empty)
    expected = outcome(oracle_read_run, str(path), **options)
    assert outcome(trec.read_run, str(path), **options) == expected


@given(
    data=messy_file(qrels=True),
    duplicates=st.sampled_from(["error", "first"]),
    allow_empty=st.booleans(),
)
def test_read_qrels_matches_the_oracle(tmp_path_factory, data, duplicates, allow_empty):
    path = tmp_path_factory.mktemp("messy") / "q.txt"
    path.write_bytes(data)
    options = dict(duplicates=duplicates, allow_empty=allow_empty)
    expected = outcome(oracle_read_qrels, str(path), **options)
    assert outcome(trec.read_qrels, str(path), **options) == expected


@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]),
            st.sampled_from(DOCIDS[:12] + ["caf\udce9", "\udce2\udc82A"]),
            st.sampled_from([3.0, 2.0, 2.0, 1.0, 0.0, -0.0, math.inf, -math.inf, 0.5]),
        ),
        max_size=40,
    ),
    by_score=st.booleans(),
)
def test_rankings_with_many_ties_match_the_oracle(tmp_path_factory, rows, by_score):
    # Many ties, sorted or not, ids that are not UTF-8: trec_eval's order in every branch.
    if by_score:
        rows = sorted(rows, key=lambda r: -r[2])
    text = "".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, d, s in rows)
    path = tmp_path_factory.mktemp("ties") / "t.run"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    for duplicates in ("first", "keep"):
        expected = outcome(oracle_read_run, str(path), duplicates=duplicates, allow_empty=True)
        got = outcome(trec.read_run, str(path), duplicates=duplicates, allow_empty=True)
        assert got == expected


# --- documented cases -------------------------------------------------------------------------


def write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))
    return path


def test_error_priority(tmp_path):
    # Field counts first, then a score that is not a number, then NaN, then duplicates: within a
    # file, whatever their lines.
    p = write(tmp_path / "p.run", "q Q0 a 1 nan t\nq Q0 a 1 x t\nq Q0 b 1\n")
    with pytest.raises(TrecFormatError, match=r"p\.run:3: expected 6 fields"):
        trec.read_run(p)
    write(p, "q Q0 a 1 nan t\nq Q0 a 1 x t\n")
    with pytest.raises(TrecFormatError, match=r"p\.run:2: score is not a number, got 'x'"):
        trec.read_run(p)
    write(p, "q Q0 a 1 1 t\nq Q0 a 1 nan t\n")
    with pytest.raises(TrecFormatError, match=r"p\.run:2: score is NaN, got 'nan'"):
        trec.read_run(p)
    q = write(tmp_path / "q.txt", "1 0 a 1\n1 0 a 1.5\n1 0 b\n")
    with pytest.raises(TrecFormatError, match=r"q\.txt:3: expected 4 fields"):
        trec.read_qrels(q)
    write(q, "1 0 a 1\n1 0 a 1.5\n")
    with pytest.raises(TrecFormatError, match=r"q\.txt:2: gain is not an integer"):
        trec.read_qrels(q)


def test_a_file_with_only_a_bom_is_empty(tmp_path):
    # (The Python reader used to fail on it with an IndexError.)
    p = write(tmp_path / "bom.run", b"\xef\xbb\xbf")
    with pytest.raises(TrecFormatError, match="empty run"):
        trec.read_run(p)
    assert trec.read_run(p, allow_empty=True) == {}


def test_scores_and_gains_as_float_and_int_read_them(tmp_path):
    scores = ["1_000.5", "1e1_0", "+.5", "5.", "-INFINITY", "１.５", "١٢", "1e400"]
    text = "".join(f"q Q0 d{i} 1 {s} t\n" for i, s in enumerate(scores))
    run = trec.read_run(write(tmp_path / "s.run", text), order="file")
    assert run["q"].scores == [float(s) for s in scores]
    for bad in ["1__0", "_1", "1_", "1_.5", "1._5", "0x10", "1,5", "١_"]:
        write(tmp_path / "s.run", f"q Q0 a 1 1 t\nq Q0 b 1 {bad} t\n")
        with pytest.raises(TrecFormatError, match=r":2: score is not a number"):
            trec.read_run(tmp_path / "s.run")
    gains = ["1_0", "007", "-0", "+3", "12345678901234567890123", "-9223372036854775809", "٣"]
    text = "".join(f"1 0 d{i} {g}\n" for i, g in enumerate(gains))
    qrels = trec.read_qrels(write(tmp_path / "g.txt", text))
    assert list(qrels["1"].values()) == [int(g) for g in gains]


def test_every_unicode_decimal_digit_reads_as_float_and_int_do(tmp_path):
    digits = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.decimal(chr(c), -1) >= 0]
    text = "".join(f"q Q0 d{i} 1 {d}.{d}e{d} t\n" for i, d in enumerate(digits))
    run = trec.read_run(write(tmp_path / "u.run", text), order="file")
    assert run["q"].scores == [float(f"{d}.{d}e{d}") for d in digits]
    text = "".join(f"1 0 d{i} -{d}{d}\n" for i, d in enumerate(digits))
    qrels = trec.read_qrels(write(tmp_path / "u.txt", text))
    assert list(qrels["1"].values()) == [int(f"-{d}{d}") for d in digits]


def test_error_messages_quote_with_python_repr(tmp_path):
    p = write(tmp_path / "r.run", 'q Q0 a 1 1 t\nq Q0 "it\'s" 1 \udce9\u00e9\x01 t\n')
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.reason == f"score is not a number, got {chr(0xDCE9) + 'é' + chr(1)!r}"
    line = "\t\xa0q Q0 " + "é" * 90 + "\x85 \r\n"
    write(p, "q Q0 a 1 1 t\n" + line)
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    shown = line.strip()[:77] + "..."
    assert e.value.reason == f"expected 6 fields ({RUN_FORMAT}), found 3: {shown!r}"
    assert e.value.line == 2
    write(p, 'q Q0 "it\'s" 1 1 t\nq Q0 "it\'s" 2 1 t\n')
    with pytest.raises(TrecFormatError) as e:
        trec.read_run(p)
    assert e.value.reason == "query 'q' has doc '\"it\\'s\"' twice (first on line 1)"


def test_read_with_a_progress_bar_reads_the_same(tmp_path, capsys):
    text = "".join(f"q{i % 3} Q0 d{i} {i} {1 / (i + 1)!r} t\n" for i in range(500))
    for gz in (False, True):
        data = gzip.compress(text.encode()) if gz else text.encode()
        p = write(tmp_path / "p.run", data)
        plain = trec.read_run(p)
        assert trec.read_run(p, progress={"delay": 0, "mininterval": 0}) == plain


def test_parse_run_is_not_public_and_checks_its_arguments():
    assert "_parse_run" not in dir(__import__("rankfusion"))
    with pytest.raises(ValueError, match="order"):
        _core._parse_run(b"", "x", "rank", "error")
    with pytest.raises(TypeError):
        _core._parse_run("text", "x", "score", "error")


# --- writing ----------------------------------------------------------------------------------


def floats(rng, n):
    """Random bit patterns, RRF-like sums, binary fractions with short decimal expansions (where
    two shortest decimals can tie), powers of two, integers, rounded decimals."""
    out = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(n)]
    out += [
        sum(1 / (60 + rng.randint(1, 1000)) for _ in range(rng.randint(1, 5))) for _ in range(n)
    ]
    out += [
        (rng.getrandbits(rng.randint(1, 53)) * 2 + 1) / 2 ** rng.randint(0, 30) for _ in range(n)
    ]
    out += [math.ldexp(1.0, rng.randint(-1074, 1023)) for _ in range(n)]
    out += [float(rng.randint(-(2**70), 2**70)) for _ in range(n)]
    out += [round(rng.uniform(-100, 100), rng.randint(0, 9)) for _ in range(n)]
    out += [2.0**50 + 0.25, 2.0**50 + 0.75, 2.0**51 + 0.5, 1e16, 1e15, 1e-4, 1e-5, 5e-324]
    out += [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 1e22, 1.7976931348623157e308]
    return out


def expected_lines(qid, docids, scores, tag):
    return "".join(
        f"{qid} Q0 {d} {r} {s!r} {tag}\n" for r, (d, s) in enumerate(zip(docids, scores), 1)
    )


def test_run_lines_write_scores_exactly_as_repr():
    rng = random.Random(20)
    for _ in range(5):
        scores = [s for s in floats(rng, 4000) if not math.isnan(s)]  # NaN: see below
        docids = [f"d{i}" for i in range(len(scores))]
        got = _core._run_lines("q", docids, scores, "t")
        assert got == expected_lines("q", docids, scores, "t")


def test_run_lines_leave_a_nan_score_to_python():
    # read_run refuses NaN, so the writer does: the core hands such a query back (None)
    assert _core._run_lines("q", ["a", "b"], [1.0, math.nan], "t") is None
    assert _core._run_lines("q", [Hit("a", 1.0), Hit("b", -math.nan)], None, "t") is None


def test_write_run_of_rankings_and_hits_is_the_old_format(tmp_path):
    rng = random.Random(21)
    scores = [s for s in floats(rng, 200) if not math.isnan(s)]
    docids = [f"d{i}" for i in range(len(scores))]
    hits = reference.rrf([["é", "b", "c"], ["c", "€"]])
    run = {"q": Ranking(docids, scores), "h": hits, "t": Ranking(("x", "y"), (1.0, 2.0))}
    out = io.StringIO()
    trec.write_run(run, out, tag="sys")
    assert out.getvalue() == (
        expected_lines("q", docids, scores, "sys")
        + expected_lines("h", [h.key for h in hits], [h.score for h in hits], "sys")
        + expected_lines("t", ["x", "y"], [1.0, 2.0], "sys")
    )


@pytest.mark.parametrize(
    "docids, scores, tag",
    [
        (["a", 7], [1.0, 2.0], "t"),  # a non-str id: str()
        (["a", "b"], [1, 2.5], "t"),  # a non-float score: float()
        (["caf\udce9"], [1.0], "t"),  # an undecodable byte, written back as it was
        (["a"], [1.0], "t\udce9"),
    ],
)
def test_write_run_falls_back_to_python_and_writes_the_same(tmp_path, docids, scores, tag):
    run = {"q": Ranking(docids, scores)}
    assert _core._run_lines("q", docids, scores, tag) is None
    trec.write_run(run, tmp_path / "o.run", tag=tag)
    expected = expected_lines("q", [str(d) for d in docids], [float(s) for s in scores], tag)
    assert (tmp_path / "o.run").read_bytes() == expected.encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("bad", ["a b", "", "a\xa0b", "a\u3000", "\x1c"])
def test_write_run_still_rejects_bad_ids(tmp_path, bad):
    assert _core._run_lines("q", ["ok", bad], [1.0, 2.0], "t") is None
    with pytest.raises(ValueError, match="doc id of query 'q'"):
        trec.write_run({"q": Ranking(["ok", bad], [1.0, 2.0])}, tmp_path / "o.run")
    assert not (tmp_path / "o.run").exists()
