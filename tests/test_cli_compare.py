"""``rankfusion compare`` and ``rankfusion fuse --qrels --compare`` on the shipped Vaswani runs:
what they print and write, equal to ``rankfusion.compare``'s results, and their usage errors
(exit 2, nothing written)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rankfusion
from rankfusion import trec

pytest.importorskip("ir_measures")

DATA = Path(__file__).resolve().parent.parent / "data" / "vaswani"
BM25, MINILM, QRELS = (
    str(DATA / "bm25.run.gz"),
    str(DATA / "minilm.run.gz"),
    str(DATA / "qrels.txt"),
)


def rankfusion_command(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "rankfusion", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_compare_prints_the_table_and_writes_json_and_latex(tmp_path):
    out_json, out_tex = tmp_path / "c.json", tmp_path / "c.tex"
    done = rankfusion_command(
        "compare", BM25, MINILM, "--qrels", QRELS, "--metrics", "ndcg@10,map",
        "--permutations", 5000, "--seed", 3, "--json", out_json, "--latex", out_tex,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    want = rankfusion.compare(
        [BM25, MINILM], QRELS, metrics=["ndcg@10", "map"], permutations=5000, seed=3
    )
    assert done.stdout == want.table()
    assert json.loads(out_json.read_text()) == json.loads(want.to_json())
    assert out_tex.read_text() == want.to_latex()
    assert "randomization test, 5,000 random sign vectors (seed 3)" in done.stdout


def test_compare_with_a_baseline_and_a_report(tmp_path):
    pytest.importorskip("matplotlib")
    report = tmp_path / "report.html"
    for baseline in (MINILM, "minilm.run.gz", "2"):
        done = rankfusion_command(
            "compare", BM25, MINILM, "--qrels", QRELS, "--baseline", baseline, "--test", "t",
            "--correction", "bh", "--report", report, "-q",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "paired t-test; bh correction over 1 test" in done.stdout
        assert "b minilm.run.gz" in done.stdout.splitlines()[-2]
        assert "a bm25.run.gz" in done.stdout.splitlines()[-2]
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<img ") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        ((BM25,), "compare needs at least 2 runs"),
        ((BM25, MINILM, "--metrics", "nope"), "--metrics: unknown metric"),
        ((BM25, MINILM, "--baseline", "x.run"), "--baseline 'x.run' is none of the runs"),
        ((BM25, MINILM, "--alpha", "2"), "argument --alpha: alpha must be between 0 and 1"),
        ((BM25, MINILM, "--confidence", "1"), "argument --confidence: confidence must be between"),
        ((BM25, MINILM, "--seed", str(2**64)), "argument --seed: seed must be below 2**64"),
        ((BM25, MINILM, "--permutations", str(2**41)), "argument --permutations: permutations"),
        ((BM25, BM25), "argument RUN: two runs have the same name"),
        ((BM25, MINILM, "--latex", "-"), "--latex needs a file name"),
        ((BM25, "missing.run"), "no such file: missing.run"),
    ],
)
def test_compare_usage_errors(tmp_path, args, message):
    done = rankfusion_command("compare", *args, "--qrels", QRELS, "--json", tmp_path / "x.json")
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and done.stdout == ""
    assert not (tmp_path / "x.json").exists()


def test_compare_needs_qrels():
    done = rankfusion_command("compare", BM25, MINILM)
    assert done.returncode == 2 and "--qrels" in done.stderr


def test_fuse_compare_tests_the_fusion_against_each_run(tmp_path):
    out = tmp_path / "fused.run"
    done = rankfusion_command(
        "fuse", BM25, MINILM, "--qrels", QRELS, "--metrics", "ndcg@10", "--compare", "-o", out
    )
    assert done.returncode == 0, done.stderr
    fused = trec.read_run(out)
    want = rankfusion.compare(
        [BM25, MINILM, trec.to_dict(fused)],
        QRELS,
        metrics=trec.parse_metrics("ndcg@10"),
        names=["bm25.run.gz", "minilm.run.gz", "fused (RRF k=60)"],
        pairs=[(2, 0), (2, 1)],
    )
    assert done.stdout.endswith("\n" + want.table())
    assert [line.split()[0] for line in done.stdout.splitlines()[-3:-1]] == ["c", "c"]
    twice = rankfusion_command(  # a run fused with itself: its two copies told apart
        "fuse", BM25, BM25, "--qrels", QRELS, "--metrics", "ndcg@10", "--compare", "-o", out, "-q"
    )
    assert twice.returncode == 0, twice.stderr
    assert f"a  {BM25} (#1)" in twice.stdout and f"b  {BM25} (#2)" in twice.stdout
    missing = rankfusion_command("fuse", BM25, MINILM, "--compare", "-o", out)
    assert missing.returncode == 2 and "--compare needs --qrels" in missing.stderr
