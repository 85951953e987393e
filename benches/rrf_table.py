"""One table: rrf core vs reference on the issue's workloads, measured side by side in one run.

python benches/rrf_table.py
"""

from __future__ import annotations

import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(__file__))

from bench_rrf import WORKLOADS, _same  # noqa: E402

import rankfusion  # noqa: E402
from rankfusion import reference  # noqa: E402


def best_time(fn, *args, **kwargs) -> float:
    timer = timeit.Timer(lambda: fn(*args, **kwargs))
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=5, number=number)) / number


def main() -> None:
    print(f"{'workload':<16}{'core':>12}{'reference':>14}{'ratio':>10}  same")
    for name, (lists, kwargs) in WORKLOADS.items():
        core = best_time(rankfusion.rrf, lists, **kwargs)
        ref = best_time(reference.rrf, lists, **kwargs)
        same = _same(rankfusion.rrf(lists, **kwargs), reference.rrf(lists, **kwargs))
        print(f"{name:<16}{core * 1e6:>10.1f}us{ref * 1e6:>12.1f}us{ref / core:>9.1f}x  {same}")


if __name__ == "__main__":
    main()
