"""Runs as Parquet tables: ``rankfusion fuse a.parquet ... -o out.parquet`` against the same runs
as TREC files (``rankfusion fuse a.run ... -o out.run``, the native path) and against ranx
(``Run.from_parquet`` x N + ``fuse(method="rrf")`` + ``Run.save("out.parquet")``).

    python benches/bench_frame.py                      # 5 runs x 10,000 queries x 1,000 docs
    python benches/bench_frame.py --ranx-queries 2000  # ranx on a smaller workload (see below)
    python benches/bench_frame.py --baseline OLD/python  # also another rankfusion's Parquet path

``--baseline DIR`` times the Parquet path of the rankfusion package in DIR (put first on
PYTHONPATH: e.g. an older commit's ``python/`` folder with this build's ``_core`` extension
copied in) in the same interleaved rounds, a row of its own.

Each contender is a whole process (interpreter start-up, imports, reading, fusing, writing), timed
wall-clock, with its peak RSS (``os.wait4``, from a small launcher process); rounds are interleaved (Parquet, TREC, Parquet,
TREC, ...) and the best of ``--rounds`` is kept, because the machine is shared and absolute
times are noise. ranx is timed once per workload (it is slow, and it JIT-compiles on first use:
that is part of its whole process). The ranx workload defaults to 2,000 queries: ranx holds every
run as numba dicts and peaked at 4.0 GB for 1,000 queries and 7.25 GB for 2,000 here, so the
full 10,000 would need about 36 GB on a 24 GB machine; rankfusion runs both sizes, so the ranx
ratio is side by side.

Memory: besides the whole process's peak RSS, ``frame.fuse`` + the Parquet write are measured in
a process of their own: peak RSS minus the RSS once the input tables are loaded, against the
Arrow bytes of the input (the target is <= 2x).

Checks: the Parquet output equals the TREC output document for document, rank for rank, score
bits included; ranx's output is compared on the documents both have (its fused scores add in
another order, and it orders ties its own way).

The workload: per query a pool of 3x``--docs`` doc ids ("doc<number>") shared by the runs; each
run draws ``--docs`` of them and gives them descending scores with ~5% ties written in no
particular order (so trec_eval's tie order has work to do), 6 decimals.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

K = 60
LIMIT = 1000
PYTHON = sys.executable

RANX_SCRIPT = (
    r"""
import sys, time
import pandas as pd
try:  # ranx's Run.from_df asserts object ids; pandas 3 reads str ids unless told otherwise
    pd.set_option("future.infer_string", False)
except Exception:
    pass
import warnings
warnings.filterwarnings("ignore")
from ranx import Run, fuse
paths, out = sys.argv[1:-1], sys.argv[-1]
t0 = time.perf_counter()
runs = [Run.from_parquet(p, q_id_col="qid", doc_id_col="docid", score_col="score") for p in paths]
t1 = time.perf_counter()
fused = fuse(runs, method="rrf", params={"k": %d})
t2 = time.perf_counter()
fused.save(out)
t3 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t2:.3f}")
"""
    % K
)

MEMORY_SCRIPT = (
    r"""
import json, resource, sys, time
import pyarrow as pa
from rankfusion import frame
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
paths, out = sys.argv[1:-1], sys.argv[-1]
base = rss()
tables = [frame.read_table(p) for p in paths]
loaded = rss()
t0 = time.perf_counter()
fused = frame.fuse(tables, limit=%d)
frame.write_parquet(fused, out)
t1 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"base": base, "loaded": loaded, "peak": peak, "input": sum(t.nbytes for t in tables),
                  "output": fused.nbytes, "seconds": t1 - t0}))
"""
    % LIMIT
)


# --- workload ---------------------------------------------------------------------------------


def make_runs(
    folder: str, runs: int = 5, queries: int = 10_000, docs: int = 1000, seed: int = 0
) -> Tuple[List[str], List[str]]:
    """Writes the runs as Parquet (``qid, docid, score``) and as TREC files with the same scores;
    returns (parquet paths, trec paths). Reuses the files when ``folder`` holds this workload."""
    marker = os.path.join(folder, "workload.json")
    spec = {"runs": runs, "queries": queries, "docs": docs, "seed": seed}
    parquet = [os.path.join(folder, f"run{r}.parquet") for r in range(runs)]
    text = [os.path.join(folder, f"run{r}.run") for r in range(runs)]
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == spec:
                return parquet, text
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    pool = np.arange(queries * 3 * docs, dtype=np.uint64).reshape(queries, 3 * docs)
    pool = pool * np.uint64(2654435761) % np.uint64(1 << 32)  # distinct, scattered numbers
    qid = pa.array(np.repeat(np.arange(1, queries + 1), docs)).cast(pa.string())
    n = queries * docs
    for r in range(runs):
        chosen = rng.permuted(pool, axis=1)[:, :docs]
        steps = rng.random((queries, docs)) * 0.05
        steps[rng.random((queries, docs)) < 0.05] = 0.0  # ~5% of adjacent pairs tie
        steps[:, 0] = 0.0
        scores = np.round(30.0 - np.cumsum(steps, axis=1), 6).ravel()
        docid = pc.binary_join_element_wise("doc", pa.array(chosen.ravel()).cast(pa.string()), "")
        pq.write_table(pa.table({"qid": qid, "docid": docid, "score": scores}), parquet[r])
        lines = pa.table(
            {
                "qid": qid,
                "q0": pa.array(["Q0"]).take(pa.array(np.zeros(n, np.int32))),
                "docid": docid,
                "rank": pa.array(np.tile(np.arange(1, docs + 1), queries)),
                "score": scores,
                "tag": pa.array([f"run{r}"]).take(pa.array(np.zeros(n, np.int32))),
            }
        )
        options = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
        pcsv.write_csv(lines, text[r], options)
    with open(marker, "w") as f:
        json.dump(spec, f)
    return parquet, text


# --- running ----------------------------------------------------------------------------------


# Starts the command from a small process: a child forked from this one (which holds tables)
# would count this process's memory in its own peak RSS until it execs.
LAUNCHER = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
out = child.stdout.read()
_, status, usage = os.wait4(child.pid, 0)
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak": usage.ru_maxrss * 1024.0,
                  "status": os.waitstatus_to_exitcode(status), "stdout": out.decode()}))
"""


def run(command: Sequence[str]) -> Dict[str, float]:
    """Runs ``command``; its wall time, peak RSS (bytes) and stdout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    launched = subprocess.run(
        [PYTHON, "-c", LAUNCHER, *command], stdout=subprocess.PIPE, env=env, check=True
    )
    result = json.loads(launched.stdout)
    if result["status"]:
        raise RuntimeError(f"{command[:4]}... exited with {result['status']}")
    return result


def ours(paths: Sequence[str], out: str, baseline: Optional[str] = None) -> List[str]:
    command = [PYTHON, "-m", "rankfusion", "fuse", *paths, "-k", str(K), "--limit", str(LIMIT)]
    command += ["-o", out, "-q"]
    return command if baseline is None else ["env", f"PYTHONPATH={baseline}", *command]


def ranx_available() -> bool:
    try:
        import ranx  # noqa: F401
    except ImportError:
        return False
    return True


# --- checks -----------------------------------------------------------------------------------


def bits(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def same_output(parquet_out: str, trec_out: str) -> bool:
    """The Parquet output holds the TREC output's lines: qid, docid, rank, score bits."""
    table = pq.read_table(parquet_out)
    lines = pcsv.read_csv(
        trec_out,
        read_options=pcsv.ReadOptions(column_names=["qid", "q0", "docid", "rank", "score", "tag"]),
        parse_options=pcsv.ParseOptions(delimiter=" "),
        convert_options=pcsv.ConvertOptions(
            column_types={"qid": pa.string(), "docid": pa.string(), "score": pa.string()}
        ),
    )
    if table.num_rows != lines.num_rows:
        return False
    for column in ("qid", "docid", "rank"):
        if not table[column].cast(lines[column].type).equals(lines[column]):
            return False
    written = np.array([float(s) for s in lines["score"].to_pylist()])  # Python's own parse
    return bits(table["score"].to_numpy()) == bits(written)


def compare_ranx(ours_out: str, ranx_out: str) -> Tuple[float, float]:
    """(share of our (query, doc) pairs that ranx has too, largest |score difference|)."""
    a = pq.read_table(ours_out).select(["qid", "docid", "score"])
    b = pq.read_table(ranx_out).rename_columns(["qid", "docid", "ranx_score"])
    joined = a.join(b, ["qid", "docid"], join_type="inner")
    diff = pc.max(pc.abs(pc.subtract(joined["score"], joined["ranx_score"]))).as_py() or 0.0
    return joined.num_rows / max(a.num_rows, 1), diff


# --- the table ----------------------------------------------------------------------------------


def workload_rows(
    folder: str, queries: int, args: argparse.Namespace, with_ranx: bool
) -> Tuple[Dict[str, Dict[str, float]], List[str]]:
    parquet, text = make_runs(folder, args.runs, queries, args.docs)
    n_rows = sum(pq.read_metadata(p).num_rows for p in parquet)
    out = os.path.join(folder, "out")
    notes = []
    rows: Dict[str, Dict[str, float]] = {}
    contenders = [
        ("rankfusion fuse, Parquet -> Parquet", ours(parquet, out + ".parquet")),
        ("rankfusion fuse, TREC -> TREC (native)", ours(text, out + ".run")),
    ]
    if args.baseline:
        contenders.append(
            ("the baseline's Parquet -> Parquet", ours(parquet, out + ".b.parquet", args.baseline))
        )
    for _, command in contenders:
        run(command)  # page cache, .pyc files
    for _ in range(args.rounds):
        for name, command in contenders:
            result = run(command)
            best = rows.get(name)
            if best is None or result["seconds"] < best["seconds"]:
                rows[name] = result
    notes.append(
        "Parquet output == TREC output (docs, ranks, score bits): "
        f"{same_output(out + '.parquet', out + '.run')}"
        + (
            f"; the baseline's too: {same_output(out + '.b.parquet', out + '.run')}"
            if args.baseline
            else ""
        )
    )
    memory = json.loads(run([PYTHON, "-c", MEMORY_SCRIPT, *parquet, out + ".m.parquet"])["stdout"])
    extra = memory["peak"] - memory["loaded"]
    notes.append(
        f"frame.fuse + write_parquet in-process: {memory['seconds']:.2f} s; input "
        f"{memory['input'] / 1e9:.2f} GB of Arrow ({n_rows:,} rows), output "
        f"{memory['output'] / 1e9:.2f} GB; RSS {memory['base'] / 1e9:.2f} GB after imports, "
        f"{memory['loaded'] / 1e9:.2f} GB with the input loaded, peak {memory['peak'] / 1e9:.2f}"
        f" GB: extra peak {extra / 1e9:.2f} GB = {extra / memory['input']:.2f}x the input "
        "(target <= 2x)"
    )
    if with_ranx:
        result = run([PYTHON, "-c", RANX_SCRIPT, *parquet, out + ".ranx.parquet"])
        read, fuse, save = (float(x) for x in result["stdout"].split())
        rows["ranx (from_parquet + fuse + save), once"] = result
        share, diff = compare_ranx(out + ".parquet", out + ".ranx.parquet")
        notes.append(
            f"ranx: read {read:.1f} s, fuse {fuse:.1f} s, save {save:.1f} s in-process; it has "
            f"{share:.1%} of our (query, doc) pairs (it keeps every doc, we the top {LIMIT}), "
            f"largest fused-score difference on them {diff:.1e}"
        )
    return rows, notes


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--ranx-queries", type=int, default=2000, help="0: skip ranx")
    parser.add_argument("--rounds", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--dir", help="keep the workloads here (reused when they match)")
    parser.add_argument(
        "--baseline", help="a folder holding another rankfusion package: its Parquet path too"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = args.dir or scratch
        sizes = [args.queries]
        if args.ranx_queries and ranx_available() and args.ranx_queries != args.queries:
            sizes.insert(0, args.ranx_queries)
        print(f"load average at start: {os.getloadavg()}")
        for queries in sizes:
            with_ranx = (
                bool(args.ranx_queries) and ranx_available() and queries == args.ranx_queries
            )
            folder = os.path.join(root, f"{args.runs}x{queries}x{args.docs}")
            rows, notes = workload_rows(folder, queries, args, with_ranx)
            lines = args.runs * queries * args.docs
            print(
                f"\n{args.runs} runs x {queries:,} queries x {args.docs:,} docs = {lines:,} rows, "
                f"RRF k={K}, top {LIMIT} written; whole processes, best of {args.rounds}"
            )
            ref = rows["rankfusion fuse, Parquet -> Parquet"]["seconds"]
            print(f"{'':42} {'seconds':>8} {'peak RSS':>9} {'vs Parquet':>10}")
            for name, r in rows.items():
                print(
                    f"{name:42} {r['seconds']:8.2f} {r['peak'] / 1e9:7.2f}GB "
                    f"{r['seconds'] / ref:9.2f}x"
                )
            for note in notes:
                print(note)
        print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
