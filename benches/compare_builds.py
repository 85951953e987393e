"""Two builds of rankfusion side by side: the speed of a change, before and after.

    python benches/compare_builds.py BEFORE_PYTHON AFTER_PYTHON [--rounds 7]

Each PYTHON is the interpreter of a virtualenv with one build installed (say, one made from the
commit before a change and one from after it). The workloads are those of
`benches/rrf_table.py` (``rrf`` on one query), `benches/batch_table.py` (``rrf_batch``,
``rrf_many``) and `benches/bench_trec.py` (the ``rankfusion fuse`` command on run files), using
only what every build since the first has: ``rrf``, ``rrf_batch``, ``rrf_many`` and the command.

Round by round, in alternating order, each build runs every workload in a fresh process of its
own (best of a few calls after a warm-up; the command is timed as a whole process), and the best
round of each build is kept: the two builds see the same machine, so the ratio after / before is
the point (absolute times on a shared machine are noise). The children may write bytecode caches
(``PYTHONDONTWRITEBYTECODE`` is dropped from their environment), as an installed wheel has them:
otherwise every start of the command compiles its modules again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# name -> (setup, call): run in the child; `setup` builds the input once.
WORKLOADS = {
    "rrf 2 x 100, full output": ("lists = str_lists(2, 100)", "rf.rrf(lists)"),
    "rrf 2 x 100, limit=10": ("lists = str_lists(2, 100)", "rf.rrf(lists, limit=10)"),
    "rrf 2 x 100, trace=True": ("lists = str_lists(2, 100)", "rf.rrf(lists, trace=True)"),
    "rrf 5 x 1000, full output": ("lists = str_lists(5, 1000)", "rf.rrf(lists)"),
    "rrf_batch 10,000 x 2 x 100, 1 thread": (
        "a = id_arrays(10_000, 2, 100)",
        "rf.rrf_batch(a, threads=1)",
    ),
    "rrf_batch 10,000 x 2 x 100, 2 threads": (
        "a = id_arrays(10_000, 2, 100)",
        "rf.rrf_batch(a, threads=2)",
    ),
    "rrf_batch 1,000 x 5 x 1,000, 2 threads": (
        "a = id_arrays(1_000, 5, 1_000)",
        "rf.rrf_batch(a, threads=2)",
    ),
    "rrf_many 10,000 x 2 x 100 (str ids)": (
        "q = str_queries(id_arrays(10_000, 2, 100))",
        "rf.rrf_many(q)",
    ),
}

CHILD = """
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, {benches!r})
from workloads import id_arrays, str_lists, str_queries
import rankfusion as rf
{setup}
f = lambda: {call}
f()
best, n, t0 = float("inf"), 0, time.perf_counter()
while n < 5 or time.perf_counter() - t0 < 0.3:
    s = time.perf_counter()
    f()
    best = min(best, time.perf_counter() - s)
    n += 1
print(json.dumps(best))
"""


def in_process(python: str, setup: str, call: str) -> float:
    code = CHILD.format(benches=str(HERE), setup=setup, call=call)
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=ENV)
    return json.loads(out.stdout)


def command(python: str, runs: list[str], out: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [python, "-m", "rankfusion", "fuse", *runs, "-o", out, "-q"],
        check=True,
        capture_output=True,
        env=ENV,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the Python of the build before")
    parser.add_argument("after", help="the Python of the build after")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_trec import make_runs

    builds = {"before": args.before, "after": args.after}
    names = [*WORKLOADS, "rankfusion fuse, 5 runs x 100 queries x 1000 docs"]
    best = {(b, n): float("inf") for b in builds for n in names}
    with tempfile.TemporaryDirectory() as folder:
        runs = [str(p) for p in make_runs(folder, 5, 100, 1000)]
        out = os.path.join(folder, "fused.run")
        print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
        for r in range(args.rounds):
            order = list(builds) if r % 2 == 0 else list(builds)[::-1]
            for b in order:
                for name, (setup, call) in WORKLOADS.items():
                    t = in_process(builds[b], setup, call)
                    best[b, name] = min(best[b, name], t)
                t = command(builds[b], runs, out)
                best[b, names[-1]] = min(best[b, names[-1]], t)
        print(f"load after: {os.getloadavg()[0]:.2f}")
    print("| workload | before | after | after / before |")
    print("|---|---|---|---|")
    for name in names:
        before, after = best["before", name], best["after", name]
        print(f"| {name} | {before * 1e3:.3f} ms | {after * 1e3:.3f} ms | {after / before:.3f} |")


if __name__ == "__main__":
    main()
