"""The child process of tests/test_interrupt.py: long calls that the test interrupts with a real
SIGINT.

    python tests/_interrupt_child.py FOLDER WORKLOAD...

For each workload, in order, the child sizes the input so that an uninterrupted call would take
about `TARGET` seconds of CPU on this machine (extrapolated from the best of two calls on a small
input; at most a size that keeps the memory reasonable) and builds it. Then, for each trial, it
prints ``ready <name> <estimated seconds>`` and reads a line: ``next`` ends the workload's
trials; ``go`` starts one. It prints ``start <name>`` and makes the call; the parent sends
SIGINT. The child prints ``caught <exception type> <time>`` or ``finished <time>``
(CLOCK_MONOTONIC, which the processes share), then makes a small call of the same function and
prints ``check <name> <ok>``: whether its result equals the reference's (the pools and the
engines are usable after the interruption).

A workload's name may end in ``:raise`` (SIGINT's handler raises ``Stop``) or ``:ignore`` (the
handler returns: the call must finish, with the result of an uninterrupted call). The run files
of the native fusion are left in FOLDER (``0.run``, ``1.run``) for the command's test.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import rankfusion as rf
from rankfusion import reference as ref
from rankfusion import trec

TARGET = 2.0  # seconds of an uninterrupted call
IGNORED_TARGET = 0.6  # for ":ignore", which runs to the end (twice)
CHECK = 20  # rows or keys of the small call

rng = np.random.default_rng(7)


class Stop(Exception):
    """What SIGINT's handler raises in the ":raise" workloads."""


def same_arrays(a, b) -> bool:
    return all(
        x is None and y is None or x.dtype == y.dtype and x.tobytes() == y.tobytes()
        for x, y in zip(a, b)
    )


def same_hits(a, b) -> bool:
    return [(h.key, h.score) for h in a] == [(h.key, h.score) for h in b]


def ids(rows, n_lists=2, cols=100):
    return [rng.integers(0, 2**40, size=(rows, cols)) for _ in range(n_lists)]


def batch_workload(threads, method=None):
    """rrf_batch, or fuse_batch with `method` and z-score, of two (rows, 100) lists; the best
    10 of each row (the output stays small, the work is every entry's)."""

    def make(rows):
        arrays = ids(rows)
        if method is None:
            return (arrays,)
        scores = [np.sort(rng.random(a.shape), axis=1)[:, ::-1].copy() for a in arrays]
        return (arrays, scores)

    def call(data, core=rf):
        if method is None:
            return core.rrf_batch(data[0], limit=10, threads=threads)
        return core.fuse_batch(*data, method=method, norm="z-score", limit=10, threads=threads)

    def check(data):
        small = tuple([a[:CHECK] for a in part] for part in data)
        return same_arrays(call(small), call(small, ref))

    # At most 2 x 200,000 x 100 entries (~0.7 GB with the core's copy): rrf_batch fuses some
    # 40 M entries a second on one core, so the cap is what limits its time.
    return make, call, check, 4000, 200_000 if method is None else 100_000


def keys_workload(kind):
    """rrf of two lists of int keys, or fuse (sum, z-score) of two lists of str keys: every hit
    returned."""

    def make(n):
        # Keys drawn from 2n values: repeats in a list (counted once) and across the lists.
        lists = [rng.integers(0, 2 * n, size=n).tolist() for _ in range(2)]
        if kind == "int":
            return (lists,)
        lists = [[f"d{x}" for x in lst] for lst in lists]
        return (lists, [(np.arange(n, 0, -1) / n).tolist() for _ in lists])

    def call(data, core=rf):
        if kind == "int":
            return core.rrf(data[0])
        return core.fuse(data[0], scores=data[1], method="sum", norm="z-score")

    def check(data):
        small = tuple([lst[: 10 * CHECK] for lst in part] for part in data)
        return same_hits(call(small), call(small, ref))

    return make, call, check, 50_000, 3_000_000 if kind == "int" else 1_500_000


def revalidate_workload():
    def make(rows):
        return rng.integers(0, 2**40, size=(rows, 100)), rng.random((rows, 100))

    def call(data, core=rf):
        return core.revalidate_batch(*data, lambda unique: unique % 3 != 0)

    def check(data):
        small = (data[0][:CHECK], data[1][:CHECK])
        return same_arrays(call(small), call(small, ref))

    return make, call, check, 4000, 300_000


def run_files_workload(folder):
    """The native fusion of the command (`trec._fuse_run_files`) of two run files of n queries
    of 1000 documents."""
    depth = 1000

    def write(n, prefix):
        paths = []
        for f in range(2):
            docs = rng.permutation(3 * depth)[:depth]
            block = "".join(f"QID Q0 d{x} {r + 1} {depth - r} t\n" for r, x in enumerate(docs))
            block = block.encode()
            path = os.path.join(folder, f"{prefix}{f}.run")
            with open(path, "wb") as out:
                out.write(b"".join(block.replace(b"QID", b"q%d" % q) for q in range(n)))
            paths.append(path)
        return paths

    def make(n):
        return trec._read_run_files(write(n, ""), duplicates="first")

    def call(files):
        return trec._fuse_run_files(files)

    def check(_):
        paths = write(CHECK, "small")
        text = io.StringIO()
        runs = [trec.read_run(p, duplicates="first") for p in paths]
        trec.write_run(trec.fuse(runs), text)
        native = call(trec._read_run_files(paths, duplicates="first"))
        return native == text.getvalue().encode()

    return make, call, check, 50, 20_000


def compare_workload(test):
    """compare_per_query of 4 runs (6 pairs) on one metric of n queries, 100,000 sign vectors
    or resamples each."""

    def make(n):
        return {"m": {f"r{i}": rng.random(n).tolist() for i in range(4)}}

    def call(data):
        return rf.compare_per_query(data, test=test, permutations=100_000)

    def check(data):
        small = {"m": {name: values[:CHECK] for name, values in data["m"].items()}}
        got = rf.compare_per_query(small, test=test, permutations=200)
        return got.pairs == ref.compare_per_query(small, test=test, permutations=200)

    return make, call, check, 50, 50_000


def workloads(folder):
    return {
        "rrf_batch_1": batch_workload(1),
        "rrf_batch_all": batch_workload(None),
        "fuse_batch_all": batch_workload(None, method="sum"),
        "rrf_int": keys_workload("int"),
        "fuse_str": keys_workload("str"),
        "revalidate_batch": revalidate_workload(),
        "fuse_run_files": run_files_workload(folder),
        "compare": compare_workload("randomization"),
        "compare_bootstrap": compare_workload("bootstrap"),
    }


def timed(call, data) -> float:
    """The CPU time of ``call(data)`` (all threads): unlike the clock's, it does not shrink the
    sizes when the machine is loaded while the child measures."""
    start = time.process_time()
    call(data)
    return time.process_time() - start


def sized(make, call, n0, cap, target):
    """The size for which `call` would take about `target` seconds of CPU, and that estimate."""
    data = make(n0)
    call(data)  # warm: pools, engines
    t = max(min(timed(call, data) for _ in range(2)), 1e-3)
    n = max(n0, min(cap, int(n0 * target / t)))
    return n, t * n / n0


def raise_stop(*_):
    raise Stop


def main() -> None:
    folder, names = sys.argv[1], sys.argv[2:]
    table = workloads(folder)
    for name in names:
        base, _, mode = name.partition(":")
        make, call, check, n0, cap = table[base]
        target = IGNORED_TARGET if mode == "ignore" else TARGET
        n, estimate = sized(make, call, n0, cap, target)
        data = make(n)
        expected = call(data) if mode == "ignore" else None
        handler = {"raise": raise_stop, "ignore": lambda *_: None}.get(mode)
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        result = None
        # Trials until the parent says "next".
        while True:
            print("ready", name, estimate, flush=True)
            if sys.stdin.readline().strip() != "go":
                break
            print("start", name, flush=True)
            try:
                try:
                    result = call(data)
                    print("finished", time.monotonic(), flush=True)
                except (KeyboardInterrupt, Stop) as e:
                    result = None
                    print("caught", type(e).__name__, time.monotonic(), flush=True)
                ok = check(data)
                if mode == "ignore":
                    ok = ok and result is not None and same_result(result, expected)
            except (KeyboardInterrupt, Stop):  # a signal handled after the call had returned
                print("late", time.monotonic(), flush=True)
                ok = check(data)
            print("check", name, ok, flush=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        del data, expected, result


def same_result(a, b) -> bool:
    if isinstance(a, rf.Comparison):
        return a.pairs == b.pairs
    if isinstance(a, bytes):
        return a == b
    if isinstance(a, list):
        return same_hits(a, b)
    return same_arrays(a, b)


if __name__ == "__main__":
    main()
