"""Smoke test of an installed rankfusion wheel: run with the Python of the virtualenv it is in.

    python .ci/smoke.py

Checks that the package comes from site-packages (not a source tree), that its version is the
installed metadata's, and one real call of each part a user meets first: rrf and rrf_batch (with
a batch large enough to run on the thread pool), revalidate and revalidate_batch, reading and
writing TREC runs and qrels (plain and gzip), and the ``rankfusion`` console script. Expected
values are written out by hand (1 / (k + rank) sums), never computed by the package.
"""

import gzip
import importlib.metadata
import os
import subprocess
import sys
import sysconfig
import tempfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numpy as np

import rankfusion
from rankfusion import _core, reference, trec


def check(condition, what):
    if not condition:
        raise SystemExit(f"smoke test failed: {what}")


def installed():
    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    package = Path(rankfusion.__file__).resolve().parent
    check(package.parent in site, f"rankfusion imported from {package}, not from {site}")
    core = Path(_core.__file__).name
    check(core.endswith(tuple(EXTENSION_SUFFIXES)), f"_core is not an extension module: {core}")
    if sys.platform != "win32":
        check(".abi3." in core, f"_core is not the abi3 build: {core}")
    version = importlib.metadata.version("rankfusion")
    check(rankfusion.__version__ == version, f"__version__ {rankfusion.__version__} != {version}")
    return version


def explained(hits):
    return [
        (
            h.key,
            h.score,
            [(c.list_index, c.rank, c.weight, c.contribution) for c in h.contributions],
        )
        for h in hits
    ]


def fusion():
    hits = rankfusion.rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2], trace=True)
    check([h.key for h in hits] == ["c2", "c3", "c1"], f"rrf order: {hits}")
    check([h.score for h in hits] == [1 / 12 + 2 / 11, 2 / 12, 1 / 11], f"rrf scores: {hits}")
    check(
        [(c.list_index, c.rank, c.contribution) for c in hits[0].contributions]
        == [(0, 2, 1 / 12), (1, 1, 2 / 11)],
        f"rrf trace: {hits[0].contributions}",
    )
    ref = reference.rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2], trace=True)
    check(explained(hits) == explained(ref), f"rrf {hits} != reference {ref}")
    # Inputs read in place where this CPython keeps them (rust/py/layout.rs, checked at import):
    # lists of float and int scores; str keys whose hash is computed already, and not yet.
    keys = [["".join(("d", str(i))) for i in range(50)], [f"d{i}" for i in range(60, 10, -1)]]
    scores = [[1.0 / (i + 1) for i in range(50)], list(range(50, 0, -1))]
    for method, norm in [("wsum", "min-max"), ("mnz", "z-score"), ("max", "sum")]:
        kw = dict(scores=scores, method=method, norm=norm, trace=True)
        got, want = rankfusion.fuse(keys, **kw), reference.fuse(keys, **kw)
        check(explained(got) == explained(want), f"{method} {got[:3]} != reference {want[:3]}")
    # Results are tuples: compared, ordered and hashed as their visible fields (the type's
    # tp_richcompare and tp_hash slots, made differently on CPython 3.9).
    plain = rankfusion.rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2])
    check(plain[0] == ("c2", 1 / 12 + 2 / 11) and plain[0] != plain[1], f"Hit equality: {plain}")
    check(plain[0] < plain[1] and sorted(plain)[0] == plain[2], f"Hit order: {plain}")
    check(hash(plain[0]) == hash(("c2", 1 / 12 + 2 / 11)), f"Hit hash: {plain[0]}")
    check(
        hits[0].contributions[0] == (0, 2, 1.0, 1 / 12, None), f"Contribution equality: {hits[0]}"
    )

    bm25 = np.array([[1, 2, 3], [4, 5, -1]])
    dense = np.array([[2, 1, -1], [6, 4, 5]])
    ids, scores, counts = rankfusion.rrf_batch([bm25, dense], pad=-1, limit=3)
    check(ids.tolist() == [[1, 2, 3], [4, 5, 6]], f"rrf_batch ids: {ids}")
    check(
        scores.tolist()
        == [[1 / 62 + 1 / 61, 1 / 62 + 1 / 61, 1 / 63], [1 / 62 + 1 / 61, 1 / 63 + 1 / 62, 1 / 61]],
        f"rrf_batch scores: {scores}",
    )
    check(counts.tolist() == [3, 3], f"rrf_batch counts: {counts}")

    # A batch past the parallel threshold: every row must equal rrf on that row.
    rng = np.random.default_rng(7)
    a = rng.permuted(np.tile(np.arange(200), (300, 1)), axis=1)[:, :50]
    b = rng.permuted(np.tile(np.arange(200), (300, 1)), axis=1)[:, :50]
    big = rankfusion.rrf_batch([a, b], limit=20, threads=2)
    for q in range(len(a)):
        row = rankfusion.rrf([a[q].tolist(), b[q].tolist()], limit=20)
        n = big.counts[q]
        check(big.ids[q, :n].tolist() == [h.key for h in row], f"rrf_batch row {q} ids")
        check(big.scores[q, :n].tolist() == [h.score for h in row], f"rrf_batch row {q} scores")


def revalidation():
    records = {"a": {"title": "A"}, "c": {"title": "C"}}
    kept = rankfusion.revalidate([("a", 0.9), ("b", 0.8), ("c", 0.7)], records)
    check(
        [tuple(r) for r in kept] == [("a", records["a"], 0.9), ("c", records["c"], 0.7)],
        f"revalidate: {kept}",
    )
    batch = rankfusion.revalidate_batch(
        np.array([[1, 2, 3], [3, 4, -1]]),
        np.array([[0.9, 0.8, 0.7], [0.6, 0.5, 0.0]]),
        lambda ids: ids % 2 == 1,
    )
    check(batch.ids.tolist() == [[1, 3], [3, -1]], f"revalidate_batch ids: {batch.ids}")
    check(batch.counts.tolist() == [2, 1], f"revalidate_batch counts: {batch.counts}")
    check(
        batch.scores[0].tolist() == [0.9, 0.7]
        and batch.scores[1, 0] == 0.6
        and np.isnan(batch.scores[1, 1]),
        f"revalidate_batch scores: {batch.scores}",
    )


A_RUN = "1 Q0 d1 1 3.0 a\n1 Q0 d2 2 2.0 a\n1 Q0 d3 3 1.0 a\n2 Q0 d9 1 5.0 a\n"
# d3 and d1 tie at 0.9: trec_eval's order puts the larger doc id first (d3, then d1).
B_RUN = "1 Q0 d1 1 0.9 b\n1 Q0 d3 2 0.9 b\n2 Q0 d8 1 0.7 b\n"
# RRF k=60 of the two: query 1 d1 = 1/61 + 1/62, d3 = 1/63 + 1/61, d2 = 1/62; query 2 ties
# d9 and d8 at 1/61, and the first run's document comes first in the interleaved scan.
FUSED = [
    ("1", "d1", 1 / 62 + 1 / 61),
    ("1", "d3", 1 / 63 + 1 / 61),
    ("1", "d2", 1 / 62),
    ("2", "d9", 1 / 61),
    ("2", "d8", 1 / 61),
]


def fused_lines(tag):
    lines, rank, last = [], 0, None
    for qid, doc, score in FUSED:
        rank = rank + 1 if qid == last else 1
        last = qid
        lines.append(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")
    return "".join(lines)


def trec_files(tmp):
    a, b = tmp / "a.run", tmp / "b.run.gz"
    a.write_text(A_RUN)
    with gzip.open(b, "wt") as f:
        f.write(B_RUN)
    (tmp / "qrels.txt").write_text("1 0 d1 2\n1 0 d2 0\n2 0 d8 1\n")

    run_a, run_b = trec.read_run(a), trec.read_run(b)
    check(
        run_b["1"].docids == ["d3", "d1"] and run_b["1"].scores == [0.9, 0.9],
        f"read_run of a gzip'd run: {run_b}",
    )
    check(
        list(run_a) == ["1", "2"] and run_a["1"].docids == ["d1", "d2", "d3"], f"read_run: {run_a}"
    )
    qrels = trec.read_qrels(tmp / "qrels.txt")
    check(qrels == {"1": {"d1": 2, "d2": 0}, "2": {"d8": 1}}, f"read_qrels: {qrels}")

    fused = trec.fuse([run_a, run_b])
    out = tmp / "fused.run.gz"
    trec.write_run(fused, out, tag="smoke")
    with gzip.open(out, "rt") as f:
        text = f.read()
    check(text == fused_lines("smoke"), f"write_run wrote:\n{text}")
    back = trec.read_run(out, order="file")
    check(
        [(q, d) for q in back for d in back[q].docids] == [(q, d) for q, d, _ in FUSED],
        "the written run does not read back",
    )
    return a, b


def command(tmp, a, b):
    scripts = Path(sysconfig.get_paths()["scripts"])
    exe = scripts / ("rankfusion.exe" if sys.platform == "win32" else "rankfusion")
    check(exe.is_file(), f"no console script at {exe}")

    def run(*args):
        return subprocess.run(
            [str(exe), *map(str, args)], capture_output=True, text=True, cwd=tmp, timeout=120
        )

    p = run("--version")
    check(
        p.returncode == 0 and p.stdout == f"rankfusion {rankfusion.__version__}\n",
        f"rankfusion --version: {p}",
    )
    p = run("fuse", a, b, "-o", tmp / "cli.run")
    check(p.returncode == 0, f"rankfusion fuse: {p}")
    text = (tmp / "cli.run").read_text()
    check(text == fused_lines("rankfusion"), f"rankfusion fuse wrote:\n{text}")
    p = run("explain", a, b, "--query", "1", "--top", "1")
    check(
        p.returncode == 0 and "doc d1" in p.stdout and repr(1 / 62 + 1 / 61) in p.stdout,
        f"rankfusion explain: {p}",
    )
    (tmp / "bad.run").write_text("1 Q0 d1 1 abc x\n")
    p = run("fuse", a, tmp / "bad.run")
    check(
        p.returncode == 1 and "bad.run:1: score is not a number" in p.stderr,
        f"rankfusion fuse of a malformed run: {p}",
    )


def main():
    version = installed()
    fusion()
    revalidation()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        a, b = trec_files(tmp)
        command(tmp, a, b)
    print(
        f"smoke test passed: rankfusion {version} on Python {sys.version.split()[0]}, "
        f"{os.path.relpath(rankfusion.__file__, sys.prefix)}"
    )


if __name__ == "__main__":
    main()
