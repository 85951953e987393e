"""Per-call cost, side by side: one query of ``rrf`` and one ``revalidate`` against what a user
would otherwise write, and the floor a hand-written C binding reaches.

    python benches/per_call.py

Competitors, timed interleaved round by round (best of the rounds):
- ``rankfusion.rrf`` on 2 lists x 100 str ids (~40% overlap): full output, ``limit=10``,
  ``trace=True``; a ``rankfusion.Fusion()`` made once and called (full output);
- ``rankfusion.fuse`` wsum over min-max with weights and ``limit=10`` on the same lists with
  scores, against the same ``Fusion`` made once and called (its settings checked once); that
  ``Fusion`` with the scores as numpy arrays and as ints, and RRF with a 100-key ``boost``;
- a plain Python dict RRF (what a user writes in six lines), and the same collecting each key's
  contributions for the trace row;
- ``cfloor``: a minimal hand-written C extension doing RRF over lists of str
  (``../shared/bench/cfloor.c``, built here into a temporary folder; skipped when it or a C
  compiler is absent);
- ``rankfusion.revalidate`` of 300 candidates against a dict-backed ``get_many``, and a plain
  Python loop doing the same (dedupe, one lookup, keep order, drop missing).
"""

from __future__ import annotations

import heapq
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_revalidate import MemoryStore, candidates, records  # noqa: E402
from workloads import str_lists  # noqa: E402

import rankfusion  # noqa: E402

CFLOOR = HERE.parent.parent / "shared" / "bench" / "cfloor.c"


def dict_rrf(lists, k=60.0, limit=None):
    scores = {}
    for lst in lists:
        for rank, key in enumerate(lst, 1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    return ranked if limit is None else ranked[:limit]


def dict_rrf_top(lists, k=60.0, limit=10):
    scores = {}
    for lst in lists:
        for rank, key in enumerate(lst, 1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return heapq.nlargest(limit, scores.items(), key=lambda kv: kv[1])


def dict_rrf_traced(lists, k=60.0):
    scores, why = {}, {}
    for i, lst in enumerate(lists):
        for rank, key in enumerate(lst, 1):
            c = 1.0 / (k + rank)
            scores[key] = scores.get(key, 0.0) + c
            why.setdefault(key, []).append((i, rank, c))
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    return [(key, score, why[key]) for key, score in ranked]


def plain_revalidate(cands, store):
    ids = list(dict.fromkeys(i for i, _ in cands))
    found = store.get_many(ids)
    return [(i, found[i], s) for i, s in cands if found.get(i) is not None]


def build_cfloor():
    """The cfloor module, built into a temporary folder, or None."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None or not CFLOOR.exists():
        return None
    build = tempfile.mkdtemp(prefix="cfloor-")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = os.path.join(build, "cfloor" + suffix)
    include = sysconfig.get_paths()["include"]
    cmd = [cc, "-O2", "-shared", "-fPIC", f"-I{include}", str(CFLOOR), "-o", target]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        return None
    spec = importlib.util.spec_from_file_location("cfloor", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interleaved(calls: dict, rounds: int = 30, min_time: float = 0.05) -> dict:
    """Best seconds per call of each function, the functions taking turns round by round."""
    best = dict.fromkeys(calls, float("inf"))
    loops = {}
    for name, f in calls.items():
        f()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < min_time:
            f()
            n += 1
        loops[name] = max(1, n)
    for _ in range(rounds):
        for name, f in calls.items():
            n = loops[name]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            best[name] = min(best[name], (time.perf_counter() - t0) / n)
    return best


def main() -> None:
    print(f"# per-call cost, Python {sys.version.split()[0]}, load {os.getloadavg()}")
    lists = str_lists(2, 100)
    cfloor = build_cfloor()
    if cfloor is None:
        print("(cfloor not built: no C compiler or no ../shared/bench/cfloor.c)")
    # The results agree: same keys and scores (cfloor breaks ties by key, rrf by first sight).
    want = {h.key: h.score for h in rankfusion.rrf(lists)}
    assert want == dict(dict_rrf(lists)), "dict RRF differs"
    if cfloor is not None:
        assert want == dict(cfloor.rrf(lists)), "cfloor differs"

    scores = [[1.0 / (1 + i) for i in range(len(lst))] for lst in lists]
    wsum = dict(method="wsum", norm="min-max", weights=[0.3, 0.7], limit=10)
    fusion_rrf, fusion_wsum = rankfusion.Fusion(), rankfusion.Fusion(**wsum)
    assert fusion_rrf(lists) == rankfusion.rrf(lists)
    assert fusion_wsum(lists, scores) == rankfusion.fuse(lists, scores=scores, **wsum)

    # The same call with other forms of its inputs: numpy score arrays, integer scores, a boost.
    score_arrays = [np.asarray(s) for s in scores]
    int_scores = [list(range(len(lst), 0, -1)) for lst in lists]
    boost = {key: float(i) for i, key in enumerate(lists[0])}
    fusion_boost = rankfusion.Fusion(boost_weight=0.5, limit=10)
    assert fusion_wsum(lists, score_arrays) == fusion_wsum(lists, scores)

    calls = {
        "Fusion(wsum) numpy scores": lambda: fusion_wsum(lists, score_arrays),
        "Fusion(wsum) int scores": lambda: fusion_wsum(lists, int_scores),
        "Fusion(boost) 100-key boost": lambda: fusion_boost(lists, boost=boost),
        "rrf full": lambda: rankfusion.rrf(lists),
        "Fusion() full": lambda: fusion_rrf(lists),
        "fuse wsum limit=10": lambda: rankfusion.fuse(lists, scores=scores, **wsum),
        "Fusion(wsum) limit=10": lambda: fusion_wsum(lists, scores),
        "dict RRF full": lambda: dict_rrf(lists),
        "rrf limit=10": lambda: rankfusion.rrf(lists, limit=10),
        "dict RRF limit=10": lambda: dict_rrf(lists, limit=10),
        "dict RRF heapq top 10": lambda: dict_rrf_top(lists),
        "rrf trace": lambda: rankfusion.rrf(lists, trace=True),
        "dict RRF + contributions": lambda: dict_rrf_traced(lists),
    }
    if cfloor is not None:
        calls["cfloor full"] = lambda: cfloor.rrf(lists)
        calls["cfloor top 10"] = lambda: cfloor.rrf(lists, 60.0, 10)
    store = MemoryStore(records())
    cands = candidates()
    assert [(r.id, r.score) for r in rankfusion.revalidate(cands, store)] == [
        (i, s) for i, _, s in plain_revalidate(cands, store)
    ]
    calls["revalidate 300"] = lambda: rankfusion.revalidate(cands, store)
    calls["plain Python revalidate 300"] = lambda: plain_revalidate(cands, store)

    best = interleaved(calls)
    for name, secs in best.items():
        print(f"{name:<30}{secs * 1e6:>9.2f} us")

    def ratio(slow, fast):
        return best[slow] / best[fast]

    print("\n# ratios (same run; > 1: rankfusion is faster)")
    rows = [
        ("rrf full vs dict RRF", ratio("dict RRF full", "rrf full"), ">= 2.5"),
        ("rrf limit=10 vs dict RRF", ratio("dict RRF limit=10", "rrf limit=10"), ">= 6"),
        (
            "rrf trace vs dict RRF + contributions",
            ratio("dict RRF + contributions", "rrf trace"),
            ">= 2.5",
        ),
        (
            "revalidate vs plain Python",
            ratio("plain Python revalidate 300", "revalidate 300"),
            ">= 1.2",
        ),
    ]
    rows.append(
        (
            "Fusion(wsum) vs fuse(...), limit=10",
            ratio("fuse wsum limit=10", "Fusion(wsum) limit=10"),
            ">= 1.3",
        )
    )
    if cfloor is not None:
        rows.insert(0, ("rrf full vs cfloor (C floor)", ratio("cfloor full", "rrf full"), ">= 1.0"))
        rows.insert(
            1,
            ("Fusion() full vs cfloor (C floor)", ratio("cfloor full", "Fusion() full"), ">= 1.15"),
        )
    for label, r, target in rows:
        print(f"{label:<42}{r:>7.2f}x   target {target}")


if __name__ == "__main__":
    main()
