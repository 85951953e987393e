"""Tuning a fusion on qrels, side by side: ``rankfusion optimize`` vs ``ranx.optimize_fusion`` on
the shipped Cranfield runs.

Workloads (the ones docs/optimize.md quotes):
- ``wsum``: a min-max weighted sum of 3 runs (BM25, MiniLM and a third run made from MiniLM by
  tests/_third_run.py), weights in steps of 0.1 (rankfusion: all 66 triples; ranx: the 62 its
  float filter keeps), nDCG@10;
- ``rrf``: RRF of BM25 and MiniLM, k = 10, 20, ..., 100, nDCG@10.

What is timed, in rounds that alternate the tools (min of rounds; the machine is shared, so the
ratios matter, not the seconds):
- ``whole process, cold JIT``: ``rankfusion optimize ... -q`` (the command) vs ``python -c``
  running ranx the way its docs do it (``Run.from_file``, ``Qrels.from_file``,
  ``optimize_fusion``) with an empty numba cache (``NUMBA_CACHE_DIR`` a new folder): imports,
  reading, and ranx's JIT compilation, which a user pays on a first run;
- ``whole process, warm JIT``: the same with ranx's numba cache filled (ranx caches compiled
  code on disk, ``cache=True``): what a user pays on later runs (imports, reading, loading the
  compiled code);
- ``in-process``: ``rankfusion.optimize`` on the run files vs ``optimize_fusion`` on ranx Runs
  already read, each called once before the timed calls (ranx without any warm-up, and without
  reading the files, which rankfusion's figure includes);
- ``in-process, runs read``: the same with rankfusion given the runs and qrels already read
  (``trec.read_run``, ``trec.read_qrels``), as ranx is.

Both tools' choices are printed, with ranx's setting's score in rankfusion's table.

    python benches/bench_optimize.py [--rounds 3] [--data data/cranfield] [--workloads wsum,rrf]
                                     [--rows processes,inprocess]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _third_run import write_noisy_run  # noqa: E402  (tests/_third_run.py)

from rankfusion import trec  # noqa: E402

RANX_SCRIPT = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
from ranx import Qrels, Run, optimize_fusion
spec = json.loads(sys.argv[1])
runs = [Run.from_file(p, kind="trec") for p in spec["runs"]]
qrels = Qrels.from_file(spec["qrels"], kind="trec")
best = optimize_fusion(qrels, runs, norm=spec["norm"], method=spec["method"],
                       metric=spec["metric"], show_progress=False)
print(json.dumps({k: (list(map(float, v)) if isinstance(v, (list, tuple)) else v)
                  for k, v in best.items()}))
"""

WORKLOADS = {
    "wsum": dict(method="wsum", norm="min-max", metric="ndcg@10", runs=3),
    "rrf": dict(method="rrf", norm=None, metric="ndcg@10", runs=2),
}


def prepare(data: Path, folder: str) -> Dict[str, str]:
    """Plain-text copies of the runs and qrels (ranx reads no gzip), and the third run."""
    paths = {}
    for name in ("bm25", "minilm"):
        out = os.path.join(folder, f"{name}.run")
        trec.write_run(trec.read_run(data / f"{name}.run.gz"), out, tag=name)
        paths[name] = out
    paths["noisy"] = write_noisy_run(str(data / "minilm.run.gz"), os.path.join(folder, "noisy.run"))
    paths["qrels"] = os.path.join(folder, "qrels.txt")
    trec.write_qrels(trec.read_qrels(data / "qrels.txt"), paths["qrels"])
    return paths


def ours_command(files: Sequence[str], qrels: str, w: dict) -> float:
    command = [sys.executable, "-m", "rankfusion", "optimize", *files, "--qrels", qrels]
    command += ["--method", w["method"], "--metric", w["metric"], "-q"]
    if w["norm"]:
        command += ["--norm", w["norm"]]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def ranx_command(files: Sequence[str], qrels: str, w: dict, cache: Optional[str]) -> float:
    spec = {"runs": list(files), "qrels": qrels, "norm": w["norm"], "method": w["method"]}
    spec["metric"] = w["metric"]
    env = dict(os.environ)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", RANX_SCRIPT, json.dumps(spec)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    return time.perf_counter() - t0


def row(name: str, what: str, ours: List[float], ranx: List[float]) -> None:
    a, b = min(ours), min(ranx)
    print(f"{name:<8} {what:<28} {a:10.3f} {b:10.3f} {b / a:7.1f}x")


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per tool (default 3)")
    parser.add_argument("--data", default=str(ROOT / "data" / "cranfield"))
    parser.add_argument("--workloads", default="wsum,rrf")
    parser.add_argument("--rows", default="processes,inprocess", help="which rows to time")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from ranx import Qrels, Run, optimize_fusion

    import rankfusion

    with tempfile.TemporaryDirectory() as folder:
        paths = prepare(Path(args.data), folder)
        warm_cache = os.path.join(folder, "numba-warm")
        print(f"data: {args.data}; min of {args.rounds} interleaved rounds; seconds")
        print(f"{'workload':<8} {'what':<28} {'rankfusion':>10} {'ranx':>10} {'ratio':>8}")
        for name in args.workloads.split(","):
            w = WORKLOADS[name]
            files = [paths["bm25"], paths["minilm"], paths["noisy"]][: w["runs"]]
            if "processes" in args.rows:
                # untimed: the page cache, and ranx's numba cache for the warm rows
                ours_command(files, paths["qrels"], w)
                ranx_command(files, paths["qrels"], w, warm_cache)
                cold: Dict[str, List[float]] = {"ours": [], "ranx": []}
                warm: Dict[str, List[float]] = {"ours": [], "ranx": []}
                for r in range(args.rounds):
                    cold["ours"].append(ours_command(files, paths["qrels"], w))
                    empty = os.path.join(folder, f"numba-cold-{name}-{r}")
                    cold["ranx"].append(ranx_command(files, paths["qrels"], w, empty))
                    warm["ours"].append(ours_command(files, paths["qrels"], w))
                    warm["ranx"].append(ranx_command(files, paths["qrels"], w, warm_cache))
                row(name, "whole process, cold JIT", cold["ours"], cold["ranx"])
                row("", "whole process, warm JIT", warm["ours"], warm["ranx"])
            if "inprocess" not in args.rows:
                continue

            rruns = [Run.from_file(f, kind="trec") for f in files]
            rqrels = Qrels.from_file(paths["qrels"], kind="trec")
            kwargs = {"method": w["method"], "norm": w["norm"], "metric": w["metric"]}
            ours = rankfusion.optimize(files, paths["qrels"], **kwargs)  # warm-up
            theirs, report = optimize_fusion(
                rqrels, rruns, **kwargs, show_progress=False, return_optimization_report=True
            )
            runs = [trec.read_run(f) for f in files]
            qrels = trec.read_qrels(paths["qrels"])
            inproc: Dict[str, List[float]] = {"ours": [], "read": [], "ranx": []}
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                rankfusion.optimize(files, paths["qrels"], **kwargs)
                t1 = time.perf_counter()
                optimize_fusion(rqrels, rruns, **kwargs, show_progress=False)
                t2 = time.perf_counter()
                rankfusion.optimize(runs, qrels, **kwargs)
                t3 = time.perf_counter()
                inproc["ours"].append(t1 - t0)
                inproc["ranx"].append(t2 - t1)
                inproc["read"].append(t3 - t2)
            row(name, "in-process, after warm-up", inproc["ours"], inproc["ranx"])
            row("", "in-process, runs read", inproc["read"], inproc["ranx"])

            key = "k" if w["method"] == "rrf" else "weights"
            value = theirs[key]
            value = tuple(float(x) for x in value) if key == "weights" else value
            table = {s[key]: v for s, v in zip(ours.settings, ours.scores)}
            ranx_score = dict(zip(report.configs, report.results))[str(theirs[key])]
            print(
                f"{'':<8} settings: rankfusion {len(ours.settings)}, ranx {len(report.configs)}; "
                f"rankfusion's choice {key}={ours.best[key]} {ours.best_score:.6f}; ranx's "
                f"{key}={value} (ranx's figure {ranx_score:.6f}, rankfusion's {table[value]:.6f})"
            )


if __name__ == "__main__":
    main()
