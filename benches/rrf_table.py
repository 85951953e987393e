"""One table: ``rrf`` on one query against what a user would otherwise write, side by side.

    python benches/rrf_table.py

For each workload (str ids, ~40% overlap): ``rankfusion.rrf``; a plain Python dict RRF (the six
lines a user writes: ``dict_rrf``, ``dict_rrf_top`` with ``heapq`` for ``limit=10``,
``dict_rrf_traced`` collecting each key's contributions for ``trace=True``; from
benches/per_call.py); and ``rankfusion.reference`` (written to be read, not to be fast). The
implementations are timed interleaved, round by round, and the best round of each is kept.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from bench_rrf import WORKLOADS, _same  # noqa: E402
from per_call import dict_rrf, dict_rrf_top, dict_rrf_traced  # noqa: E402

import rankfusion  # noqa: E402
from rankfusion import reference  # noqa: E402


def plain(kwargs):
    """The dict RRF a user would write for these arguments."""
    if kwargs.get("trace"):
        return dict_rrf_traced
    if kwargs.get("limit") is not None:
        return lambda lists: dict_rrf_top(lists, limit=kwargs["limit"])
    return dict_rrf


def per_call(fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def main(rounds: int = 15) -> None:
    print(
        f"{'workload':<16}{'rrf':>10}{'dict RRF':>12}{'reference':>12}{'vs dict':>9}{'vs ref':>8}"
    )
    for name, (lists, kwargs) in WORKLOADS.items():
        assert _same(rankfusion.rrf(lists, **kwargs), reference.rrf(lists, **kwargs))
        mine = plain(kwargs)
        calls = {
            "core": lambda lists=lists, kwargs=kwargs: rankfusion.rrf(lists, **kwargs),
            "plain": lambda lists=lists, mine=mine: mine(lists),
            "reference": lambda lists=lists, kwargs=kwargs: reference.rrf(lists, **kwargs),
        }
        # about 20 ms of calls per round for each
        numbers = {n: max(1, int(0.02 / per_call(f, 3))) for n, f in calls.items()}
        best = dict.fromkeys(calls, float("inf"))
        for _ in range(rounds):
            for n, f in calls.items():
                best[n] = min(best[n], per_call(f, numbers[n]))
        core, dict_time, ref = best["core"], best["plain"], best["reference"]
        print(
            f"{name:<16}{core * 1e6:>8.1f}us{dict_time * 1e6:>10.1f}us{ref * 1e6:>10.1f}us"
            f"{dict_time / core:>8.1f}x{ref / core:>7.0f}x"
        )


if __name__ == "__main__":
    main()
