"""Tuning a fusion on qrels, whole process, side by side: ``rankfusion optimize`` vs
``ranx.optimize_fusion``, on the shipped Cranfield runs.

Workloads (the ones the optimize docs quote):
- ``wsum``: a min-max weighted sum of 3 runs (BM25, MiniLM and a third run made from MiniLM by
  tests/_third_run.py), weights in steps of 0.1 (rankfusion: all 66 triples; ranx: the 62 its
  float filter keeps), nDCG@10;
- ``rrf``: RRF of BM25 and MiniLM, k = 10, 20, ..., 100, nDCG@10.

What is timed, in rounds that alternate the tools (min of rounds; the machine is shared):
- whole processes: ``rankfusion optimize ... -q`` (the command) and ``python -c`` running ranx
  the way its docs do it (``Run.from_file``, ``Qrels.from_file``, ``optimize_fusion``): imports,
  reading and, for ranx, numba's JIT warm-up included, since a user pays them every time (ranx
  caches compiled code on disk, ``cache=True``; one untimed ranx process fills that cache first);
- in-process, after warm-up: ``rankfusion.optimize`` on the run files vs ``optimize_fusion`` on
  ranx Runs already read, each called once before the timed calls (ranx without its JIT
  warm-up, and without reading the files, which rankfusion's figure includes).

Both tools' choices are printed, and whether ranx's best setting has the same score in
rankfusion's table (to 1e-12).

    python benches/bench_optimize.py [--rounds 3] [--data data/cranfield]
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
from typing import Dict, List, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _third_run import write_noisy_run  # noqa: E402  (tests/_third_run.py)

from rankfusion import trec  # noqa: E402

RANX_SCRIPT = r"""
import json, sys, time, warnings
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


def run_files(paths: Dict[str, str], n: int) -> List[str]:
    return [paths["bm25"], paths["minilm"], paths["noisy"]][:n]


def ours_command(files: Sequence[str], qrels: str, w: dict) -> float:
    command = [sys.executable, "-m", "rankfusion", "optimize", *files, "--qrels", qrels]
    command += ["--method", w["method"], "--metric", w["metric"], "-q"]
    if w["norm"]:
        command += ["--norm", w["norm"]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def ranx_command(files: Sequence[str], qrels: str, w: dict) -> float:
    spec = {"runs": list(files), "qrels": qrels, "norm": w["norm"], "method": w["method"]}
    spec["metric"] = w["metric"]
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", RANX_SCRIPT, json.dumps(spec)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per tool (default 3)")
    parser.add_argument("--data", default=str(ROOT / "data" / "cranfield"))
    parser.add_argument("--workloads", default="wsum,rrf")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from ranx import Qrels, Run, optimize_fusion

    import rankfusion

    with tempfile.TemporaryDirectory() as folder:
        paths = prepare(Path(args.data), folder)
        print(f"data: {args.data}; min of {args.rounds} interleaved rounds; seconds")
        header = f"{'workload':<8} {'what':<34} {'rankfusion':>10} {'ranx':>10} {'ratio':>7}"
        print(header)
        for name in args.workloads.split(","):
            w = WORKLOADS[name]
            files = run_files(paths, w["runs"])
            # untimed: .pyc files, the page cache, ranx's numba cache on disk
            ours_command(files, paths["qrels"], w)
            ranx_command(files, paths["qrels"], w)
            whole: Dict[str, List[float]] = {"ours": [], "ranx": []}
            for _ in range(args.rounds):
                whole["ours"].append(ours_command(files, paths["qrels"], w))
                whole["ranx"].append(ranx_command(files, paths["qrels"], w))
            a, b = min(whole["ours"]), min(whole["ranx"])
            print(f"{name:<8} {'whole process (JIT warm-up incl.)':<34} {a:10.3f} {b:10.3f} "
                  f"{b / a:6.1f}x")  # fmt: skip

            rruns = [Run.from_file(f, kind="trec") for f in files]
            rqrels = Qrels.from_file(paths["qrels"], kind="trec")
            kwargs = {"method": w["method"], "norm": w["norm"], "metric": w["metric"]}
            ours = rankfusion.optimize(files, paths["qrels"], **kwargs)  # warm-up
            theirs, report = optimize_fusion(
                rqrels, rruns, **kwargs, show_progress=False, return_optimization_report=True
            )
            inproc: Dict[str, List[float]] = {"ours": [], "ranx": []}
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                rankfusion.optimize(files, paths["qrels"], **kwargs)
                t1 = time.perf_counter()
                optimize_fusion(rqrels, rruns, **kwargs, show_progress=False)
                t2 = time.perf_counter()
                inproc["ours"].append(t1 - t0)
                inproc["ranx"].append(t2 - t1)
            a, b = min(inproc["ours"]), min(inproc["ranx"])
            print(f"{'':<8} {'in-process, after warm-up':<34} {a:10.3f} {b:10.3f} {b / a:6.1f}x")

            key = "k" if w["method"] == "rrf" else "weights"
            value = theirs[key]
            value = tuple(float(x) for x in value) if key == "weights" else value
            table = {tuple(s[key]) if key == "weights" else s[key]: v for s, v in
                     zip(ours.settings, ours.scores)}  # fmt: skip
            ranx_score = dict(zip(report.configs, report.results))[str(theirs[key])]
            print(
                f"{'':<8} settings: rankfusion {len(ours.settings)}, ranx {len(report.configs)}; "
                f"best: rankfusion {key}={ours.best[key]} {ours.best_score:.6f}, ranx {key}="
                f"{value} (its score {ranx_score:.6f}; in rankfusion's table "
                f"{table[value]:.6f}, |diff| {abs(table[value] - ranx_score):.1e})"
            )


if __name__ == "__main__":
    main()
