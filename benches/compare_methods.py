"""Two builds' fuse_batch methods side by side: the speed of a change to the engine.

    python benches/compare_methods.py BEFORE_DIR AFTER_DIR --workload A --threads 1 \\
        --cases rrf_batch,sum:none,sum:min-max,geometric_mean:min-max:w [--rounds 10] [--runs 3]

Each DIR holds a copy of the package built from one commit (``cp -r python/rankfusion DIR/``
after ``maturin develop --release``); it is put first on ``PYTHONPATH`` of a fresh process. A
case is ``rrf_batch``, or ``method[:norm[:w]][:name=value...]`` (``w``: the workload's
weights; ``phi=0.8``: a setting), called as
`benches/bench_methods.py` calls it, on its workloads (A = 10,000 x 2 x 100, B = 1,000 x 5 x
1,000). Run by run, alternating the builds, each process times every case (best of
``--rounds``, the cases interleaved round by round, the garbage collector off) and prints its
ratio to ``rrf_batch`` of the same process: compare the ratios, which a change of the machine's
load moves less than the times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import gc, math, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, {benches!r})
from bench_methods import WEIGHTS, WORKLOADS, score_arrays
from workloads import id_arrays
import rankfusion as rf
from rankfusion import reference as ref

q, n_lists, depth = WORKLOADS[{workload!r}]
ids, scores = id_arrays(q, n_lists, depth), score_arrays(q, n_lists, depth)
threads = {threads!r}
calls = {{}}
for case in {cases!r}:
    method, *rest = case.split(":")
    kwargs = {{}} if threads is None else {{"threads": threads}}
    if method == "rrf_batch":
        calls[case] = lambda kwargs=kwargs: rf.rrf_batch(ids, **kwargs)
        continue
    settings = [r for r in rest if "=" in r]
    rest = [r for r in rest if "=" not in r]
    kwargs.update((k, float(v)) for k, v in (r.split("=") for r in settings))
    if rest and rest[0]:
        kwargs["norm"] = rest[0]
    if rest[1:] == ["w"]:
        kwargs["weights"] = WEIGHTS[n_lists]
    s = scores if ref.METHODS[method].kind == "score" else None
    calls[case] = lambda m=method, s=s, kwargs=kwargs: rf.fuse_batch(ids, s, method=m, **kwargs)
best = dict.fromkeys(calls, math.inf)
for f in calls.values():
    f()
for _ in range({rounds}):
    for case, f in calls.items():
        gc.disable()
        t = time.perf_counter()
        f()
        t = time.perf_counter() - t
        gc.enable()
        best[case] = min(best[case], t)
base = best.get("rrf_batch")
print(rf.__file__)
for case, t in best.items():
    print(f"  {{case:36s}} {{t * 1e3:9.2f}} ms" + (f"  x{{t / base:.2f}}" if base else ""))
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--workload", default="A", choices=("A", "B"))
    parser.add_argument("--threads", type=int, default=None, help="default: every CPU")
    parser.add_argument("--cases", default="rrf_batch,sum:none,sum:min-max")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=2, help="processes per build, alternating")
    args = parser.parse_args()
    code = CHILD.format(
        benches=str(HERE),
        workload=args.workload,
        threads=args.threads,
        cases=args.cases.split(","),
        rounds=args.rounds,
    )
    for run in range(args.runs):
        for name, path in (("before", args.before), ("after", args.after)):
            env = {**os.environ, "PYTHONPATH": str(Path(path).resolve())}
            out = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True
            )
            print(f"--- run {run + 1}, {name}: {out.stdout}{out.stderr[-2000:]}", flush=True)


if __name__ == "__main__":
    main()
