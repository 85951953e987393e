"""TREC runs end to end: read + fuse (RRF, k=60) + write, rankfusion vs ranx vs trectools.

The workload is the issue's: 5 runs x 100 queries x 1000 docs (500,000 lines), generated here
(scores descending with about 5% ties written in no particular order, doc ids drawn from a pool
per query shared by the runs, so that they overlap as real runs do).

- pytest-benchmark: ``python -m pytest benches/bench_trec.py --benchmark-only``
  (ranx and trectools are skipped when not installed: ``pip install ".[bench]" trectools``)
- one table of times and ratios from one run: ``python benches/bench_trec.py``
  (``--runs 5 --queries 100 --docs 1000 --repeat 3``, ``--skip ranx,trectools``)

What is timed, per tool (best of ``--repeat``; imports excluded for ranx and trectools):
- ``rankfusion fuse`` the command, in a subprocess: wall time including interpreter start-up
  (bytecode cached by the warm-up run, as in an installed package);
- rankfusion native, in-process: what the command runs (no --qrels, no --trace): the files'
  bytes read and parsed by the core into byte ranges (``trec._read_run_files``; the bytes and
  the parse are also reported apart), fused and formatted by the core
  (``trec._fuse_run_files``, reported as "fuse"), the bytes written atomically; so the command's
  time splits into read / fuse / write / start-up;
- rankfusion with Python objects, in-process: ``trec.read_run`` x5 (parse), ``trec.fuse`` (rrf
  per query), ``trec.write_run`` (what the command runs with --qrels or --trace);
- ranx: ``Run.from_file`` x5 + ``fuse(method="rrf")`` + ``Run.save(kind="trec")``, after one
  untimed pass over the same data (numba compiles per string length, so a toy warm-up is not
  enough);
- trectools: ``TrecRun`` x5 + ``fusion.reciprocal_rank_fusion(max_docs=1000)`` + ``print_subset``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Callable, Dict, List, Optional, Sequence

import pytest

from rankfusion import _core, reference, trec

K = 60
LIMIT = 1000


# --- workload ---------------------------------------------------------------------------------


def make_runs(
    folder: str, runs: int = 5, queries: int = 100, docs: int = 1000, seed: int = 0
) -> List[str]:
    """Write ``runs`` TREC run files into ``folder``; returns their paths."""
    rng = random.Random(seed)
    pools = [rng.sample(range(10 * docs * queries), 3 * docs) for _ in range(queries)]
    paths = []
    for r in range(runs):
        lines = []
        for q, pool in enumerate(pools):
            chosen = rng.sample(pool, docs)
            score = 30.0
            for rank, d in enumerate(chosen, 1):
                if rng.random() >= 0.05:  # ~5% of adjacent pairs tie
                    score -= rng.random() * 0.05
                lines.append(f"{q + 1} Q0 doc{d} {rank} {score:.6f} system{r}\n")
        path = os.path.join(folder, f"run{r}.txt")
        with open(path, "w") as f:
            f.writelines(lines)
        paths.append(path)
    return paths


# --- the pipelines ----------------------------------------------------------------------------


def ours_in_process(paths: Sequence[str], out: str) -> Dict[str, float]:
    t0 = time.perf_counter()
    runs = [trec.read_run(p, duplicates="keep") for p in paths]  # as the command reads them
    t1 = time.perf_counter()
    fused = trec.fuse(runs, k=K, limit=LIMIT)
    t2 = time.perf_counter()
    trec.write_run(fused, out, tag="rankfusion")
    t3 = time.perf_counter()
    return {"read": t1 - t0, "fuse": t2 - t1, "write": t3 - t2, "total": t3 - t0}


def ours_native(paths: Sequence[str], out: str) -> Dict[str, float]:
    t0 = time.perf_counter()
    datas = [trec._read_bytes(p, False) for p in paths]
    t1 = time.perf_counter()
    files = _core._parse_run_files(datas, paths, "score", "keep")
    t2 = time.perf_counter()
    assert all(isinstance(f, _core._RunFile) and len(f) for f in files)
    data = trec._fuse_run_files(files, k=K, limit=LIMIT, tag="rankfusion")
    t3 = time.perf_counter()
    pending = trec._AtomicFile(out)
    pending.write_bytes(data)
    pending.commit()
    t4 = time.perf_counter()
    return {
        "bytes": t1 - t0,
        "parse": t2 - t1,
        "read": t2 - t0,
        "fuse": t3 - t2,
        "write": t4 - t3,
        "total": t4 - t0,
    }


def ours_command(paths: Sequence[str], out: str) -> Dict[str, float]:
    command = [sys.executable, "-m", "rankfusion", "fuse", *paths, "-k", str(K)]
    command += ["--limit", str(LIMIT), "-o", out, "--quiet"]
    # As installed: bytecode cached (PYTHONDONTWRITEBYTECODE would recompile every module each run).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return {"total": time.perf_counter() - t0}


def ranx_pipeline(paths: Sequence[str], out: str) -> Dict[str, float]:
    from ranx import Run, fuse

    t0 = time.perf_counter()
    runs = [Run.from_file(p, kind="trec") for p in paths]
    t1 = time.perf_counter()
    fused = fuse(runs, method="rrf", params={"k": K})
    t2 = time.perf_counter()
    fused.save(out, kind="trec")
    t3 = time.perf_counter()
    return {"read": t1 - t0, "fuse": t2 - t1, "write": t3 - t2, "total": t3 - t0}


def trectools_pipeline(paths: Sequence[str], out: str) -> Dict[str, float]:
    from trectools import TrecRun, fusion

    t0 = time.perf_counter()
    runs = [TrecRun(p) for p in paths]
    t1 = time.perf_counter()
    fused = fusion.reciprocal_rank_fusion(runs, k=K, max_docs=LIMIT)
    t2 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # print_subset prints "File ... written."
        fused.print_subset(out, topics=fused.topics())
    t3 = time.perf_counter()
    return {"read": t1 - t0, "fuse": t2 - t1, "write": t3 - t2, "total": t3 - t0}


# --- checks -----------------------------------------------------------------------------------


def matches_reference(paths: Sequence[str], out: str, queries: int = 5) -> bool:
    """The fused file holds, for the first queries, exactly the reference rrf of the inputs."""
    runs = [trec.read_run(p, duplicates="keep") for p in paths]
    written = trec.read_run(out, order="file")
    for qid in list(written)[:queries]:
        expected = reference.rrf([r[qid].docids for r in runs if qid in r], k=K, limit=LIMIT)
        if written[qid].docids != [h.key for h in expected]:
            return False
        if written[qid].scores != [h.score for h in expected]:
            return False
    return True


def max_score_difference(ours: str, theirs: str) -> float:
    """Largest |score difference| over the docs both fused files hold (same formula, other
    summation order and tie order)."""
    a = trec.to_dict(trec.read_run(ours))
    b = trec.to_dict(trec.read_run(theirs, duplicates="first"))
    worst = 0.0
    for qid, docs in a.items():
        other = b.get(qid, {})
        for docid, score in docs.items():
            if docid in other:
                worst = max(worst, abs(score - other[docid]))
    return worst


def best_of(repeat: int, fn: Callable[..., Dict[str, float]], *args) -> Dict[str, float]:
    results = [fn(*args) for _ in range(repeat)]
    return min(results, key=lambda r: r["total"])


# --- pytest-benchmark -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("trec-bench"))
    return folder, make_runs(folder)


def _pedantic(benchmark, fn, *args, rounds=3, warmup=0):
    return benchmark.pedantic(fn, args=args, rounds=rounds, iterations=1, warmup_rounds=warmup)


def test_parse_500k_lines(benchmark, workload):
    _, paths = workload
    benchmark.group = "trec parse 500k lines"
    runs = _pedantic(benchmark, lambda: [trec.read_run(p, duplicates="keep") for p in paths])
    assert sum(len(r.docids) for run in runs for r in run.values()) == 500_000


def test_fuse_100_queries(benchmark, workload):
    _, paths = workload
    runs = [trec.read_run(p, duplicates="keep") for p in paths]
    benchmark.group = "trec fuse only"
    fused = _pedantic(benchmark, trec.fuse, runs)
    assert len(fused) == 100


@pytest.mark.parametrize(
    "tool", ["rankfusion-command", "rankfusion-native", "rankfusion", "ranx", "trectools"]
)
def test_end_to_end(benchmark, workload, tool):
    folder, paths = workload
    out = os.path.join(folder, f"{tool}.run")
    benchmark.group = "trec read + fuse + write, 5 x 100 x 1000"
    if tool == "rankfusion-command":
        _pedantic(benchmark, ours_command, paths, out)
    elif tool == "rankfusion-native":
        _pedantic(benchmark, ours_native, paths, out)
    elif tool == "rankfusion":
        _pedantic(benchmark, ours_in_process, paths, out)
    elif tool == "ranx":
        pytest.importorskip("ranx")
        warnings.filterwarnings("ignore")
        _pedantic(benchmark, ranx_pipeline, paths, out, rounds=2, warmup=1)
    else:
        pytest.importorskip("trectools")
        _pedantic(benchmark, trectools_pipeline, paths, out, rounds=2)
    if tool.startswith("rankfusion"):
        benchmark.extra_info["matches_reference"] = matches_reference(paths, out)
        assert benchmark.extra_info["matches_reference"]
    else:
        ours = os.path.join(folder, "check.run")
        ours_in_process(paths, ours)
        benchmark.extra_info["max_score_difference"] = max_score_difference(ours, out)


# --- script mode ------------------------------------------------------------------------------


def _version(module: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--skip", default="", help="comma-separated: ranx,trectools")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    warnings.filterwarnings("ignore")

    with tempfile.TemporaryDirectory() as folder:
        paths = make_runs(folder, args.runs, args.queries, args.docs)
        lines = args.runs * args.queries * args.docs
        out = os.path.join(folder, "{}.run")
        rows: Dict[str, Dict[str, float]] = {}
        notes: List[str] = []

        ours_command(paths, out.format("warm"))  # page cache, .pyc files
        rows["rankfusion fuse (command)"] = best_of(
            args.repeat, ours_command, paths, out.format("cmd")
        )
        rows["rankfusion native (in-process)"] = best_of(
            args.repeat, ours_native, paths, out.format("native")
        )
        rows["rankfusion Python objects (in-process)"] = best_of(
            args.repeat, ours_in_process, paths, out.format("ours")
        )
        native = rows["rankfusion native (in-process)"]
        notes.append(
            f"native split: read the bytes {native['bytes']:.3f}, parse (Rust, "
            f"{os.environ.get('RAYON_NUM_THREADS') or os.cpu_count()} threads) {native['parse']:.3f}, fuse + format (Rust) "
            f"{native['fuse']:.3f}, write {native['write']:.3f}"
        )
        same = matches_reference(paths, out.format("cmd"))
        notes.append(f"rankfusion output == reference rrf (first 5 queries, bit for bit): {same}")
        with open(out.format("cmd"), "rb") as a, open(out.format("ours"), "rb") as b:
            same = a.read() == b.read()
        notes.append(f"command output == Python-objects path output, byte for byte: {same}")

        if "ranx" not in skip:
            try:
                import ranx  # noqa: F401
            except ImportError:
                notes.append("ranx: not installed (pip install ranx)")
            else:
                ranx_pipeline(paths, out.format("ranx"))  # JIT warm-up on the same data
                name = f"ranx {_version('ranx')} (warm JIT)"
                rows[name] = best_of(args.repeat, ranx_pipeline, paths, out.format("ranx"))
                diff = max_score_difference(out.format("ours"), out.format("ranx"))
                notes.append(
                    f"ranx: largest fused-score difference on shared docs {diff:.1e} "
                    "(ranx orders tied input scores its own way, so tied docs get other ranks)"
                )
        if "trectools" not in skip:
            try:
                import trectools  # noqa: F401
            except ImportError:
                notes.append("trectools: not installed (pip install trectools)")
            else:
                name = f"trectools {_version('trectools')}"
                rows[name] = best_of(args.repeat, trectools_pipeline, paths, out.format("tt"))
                diff = max_score_difference(out.format("ours"), out.format("tt"))
                notes.append(
                    f"trectools: largest fused-score difference on shared docs {diff:.1e} "
                    "(trectools breaks input ties by doc id ascending, trec_eval descending)"
                )

    command = rows["rankfusion fuse (command)"]["total"]
    in_process = rows["rankfusion native (in-process)"]["total"]
    print(
        f"{args.runs} runs x {args.queries} queries x {args.docs} docs = {lines:,} lines, "
        f"RRF k={K}, top {LIMIT} written; best of {args.repeat}; seconds"
    )
    header = ["tool", "read", "fuse", "write", "total", "x command", "x native in-process"]
    table = [header]
    for name, r in rows.items():
        cells = [name] + [f"{r[c]:.3f}" if c in r else "-" for c in ("read", "fuse", "write")]
        cells += [f"{r['total']:.3f}", f"{r['total'] / command:.1f}x"]
        cells += [f"{r['total'] / in_process:.1f}x"]
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print(
            "  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])])
        )
    start_up = command - in_process
    print(f"command start-up (interpreter + imports + argument checks): {start_up:.3f}")
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
