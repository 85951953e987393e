"""Real runs: Cranfield and Vaswani, BM25 + MiniLM, from ../shared/data and from the repo's copies.

Skips cleanly when a collection is absent. Checks that fusing the files gives exactly what the
reference ``rrf`` gives on the parsed lists, that the single runs evaluate to the numbers
published in shared/data/README.md, and that the fusion beats both inputs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rankfusion import reference, trec

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"shared": ROOT.parent / "shared" / "data", "repo": ROOT / "data"}

# nDCG@10 of the single runs, as published in shared/data/README.md, and the fusion (RRF k=60)
PUBLISHED = {
    "cranfield": {"bm25": 0.3730, "minilm": 0.3817, "fused": 0.42},
    "vaswani": {"bm25": 0.4280, "minilm": 0.4335, "fused": 0.49},
}
CASES = [(source, collection) for source in SOURCES for collection in PUBLISHED]


def collection_dir(source: str, collection: str) -> Path:
    folder = SOURCES[source] / collection
    files = ["bm25.run.gz", "minilm.run.gz", "qrels.txt"]
    if not all((folder / f).is_file() for f in files):
        where = "../shared/data beside the repository" if source == "shared" else "the repository"
        pytest.skip(f"{folder} is absent (the {collection} collection of {where})")
    return folder


@pytest.fixture(scope="module")
def loaded():
    cache = {}

    def load(source, collection):
        key = (source, collection)
        if key not in cache:
            folder = collection_dir(source, collection)
            cache[key] = (
                trec.read_run(folder / "bm25.run.gz"),
                trec.read_run(folder / "minilm.run.gz"),
                trec.read_qrels(folder / "qrels.txt"),
            )
        return cache[key]

    return load


@pytest.mark.parametrize("source, collection", CASES)
def test_fusion_equals_reference_rrf(loaded, source, collection):
    bm25, minilm, _ = loaded(source, collection)
    assert len(bm25) == len(minilm) > 0
    fused = trec.fuse([bm25, minilm])
    assert list(fused) == list(bm25)
    for qid, hits in fused.items():
        expected = reference.rrf([bm25[qid].docids, minilm[qid].docids])
        assert [h.key for h in hits] == [h.key for h in expected], qid
        assert [h.score for h in hits] == [h.score for h in expected], qid  # bit-identical


@pytest.mark.parametrize("source, collection", CASES)
def test_traced_fusion_equals_reference(loaded, source, collection):
    bm25, minilm, _ = loaded(source, collection)
    qids = list(bm25)[:20]
    fused = trec.fuse([bm25, minilm], trace=True, queries=qids, window=50, weights=[1.0, 0.7])
    for qid in qids:
        expected = reference.rrf(
            [bm25[qid].docids, minilm[qid].docids],
            scores=[bm25[qid].scores, minilm[qid].scores],
            trace=True,
            window=50,
            weights=[1.0, 0.7],
        )
        assert [h.to_dict() for h in fused[qid]] == [h.to_dict() for h in expected]


@pytest.mark.parametrize("source, collection", CASES)
def test_single_runs_match_published_ndcg_and_fusion_beats_both(loaded, source, collection):
    pytest.importorskip("ir_measures")
    bm25, minilm, qrels = loaded(source, collection)
    published = PUBLISHED[collection]
    got_bm25 = trec.evaluate(bm25, qrels, "ndcg@10")["nDCG@10"]
    got_minilm = trec.evaluate(minilm, qrels, "ndcg@10")["nDCG@10"]
    assert round(got_bm25, 4) == published["bm25"]
    assert round(got_minilm, 4) == published["minilm"]
    fused = trec.evaluate(trec.fuse([bm25, minilm]), qrels, "ndcg@10")["nDCG@10"]
    assert fused > max(got_bm25, got_minilm)
    assert fused == pytest.approx(published["fused"], abs=0.01)


@pytest.mark.parametrize("source, collection", CASES)
def test_tie_order_is_trec_evals(loaded, source, collection):
    # The BM25 runs contain tied scores: reading by score must give trec_eval's order.
    bm25, _, _ = loaded(source, collection)
    ties = 0
    for ranking in bm25.values():
        pairs = list(zip(ranking.scores, ranking.docids))
        assert pairs == sorted(pairs, reverse=True)
        ties += sum(a[0] == b[0] for a, b in zip(pairs, pairs[1:]))
    assert ties > 0


@pytest.mark.parametrize("collection", list(PUBLISHED))
def test_repo_copies_equal_shared_data(collection):
    shared = collection_dir("shared", collection)
    repo = collection_dir("repo", collection)
    for name in ["bm25.run.gz", "minilm.run.gz", "qrels.txt"]:
        assert (repo / name).read_bytes() == (shared / name).read_bytes(), name


@pytest.mark.parametrize("source, collection", CASES)
def test_command_on_real_runs(tmp_path, source, collection):
    pytest.importorskip("ir_measures")
    folder = collection_dir(source, collection)
    out = tmp_path / "fused.run"
    p = subprocess.run(
        [
            sys.executable, "-m", "rankfusion", "fuse",
            folder / "bm25.run.gz", folder / "minilm.run.gz",
            "--qrels", folder / "qrels.txt", "--metrics", "ndcg@10",
            "-o", out, "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line.split()[-1] for line in p.stdout.splitlines()[1:]}
    published = PUBLISHED[collection]
    assert rows[str(folder / "bm25.run.gz")] == f"{published['bm25']:.4f}"
    assert rows[str(folder / "minilm.run.gz")] == f"{published['minilm']:.4f}"
    assert float(rows["fused"]) > published["minilm"]
    # the file holds the reference fusion, ranks 1..n, exact scores
    written = trec.read_run(out, order="file")
    bm25 = trec.read_run(folder / "bm25.run.gz")
    minilm = trec.read_run(folder / "minilm.run.gz")
    for qid, ranking in written.items():
        expected = reference.rrf([bm25[qid].docids, minilm[qid].docids], limit=1000)
        assert ranking.docids == [h.key for h in expected]
        assert ranking.scores == [h.score for h in expected]
    ranks = [line.split()[3] for line in out.read_text().splitlines() if line.startswith(f"{qid} ")]
    assert ranks == [str(i) for i in range(1, len(ranks) + 1)]


def test_a_clone_without_shared_data_says_why_tests_skip(tmp_path):
    """In a clone with no ../shared/data beside it (CI's), the summary names each skip's
    reason (pytest's -rs, in pyproject.toml): the folder that is absent."""
    clone = tmp_path / "clone"
    (clone / "tests").mkdir(parents=True)
    for name in ("conftest.py", "test_real_data.py"):
        (clone / "tests" / name).write_bytes((ROOT / "tests" / name).read_bytes())
    (clone / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    (clone / "data").symlink_to(ROOT / "data")
    assert not (clone.parent / "shared").exists()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not clone"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for collection in PUBLISHED:
        reason = (
            f"{clone.parent / 'shared' / 'data' / collection} is absent (the {collection} "
            "collection of ../shared/data beside the repository)"
        )
        found = re.search(r"SKIPPED \[\d+\] tests/test_real_data.py:\d+: (.*)", done.stdout)
        assert found and reason in re.findall(r"test_real_data.py:\d+: (.*)", done.stdout), (
            done.stdout
        )
