"""Ctrl-C latency: from a real SIGINT, sent by this process, to the KeyboardInterrupt in a child
that runs a long call, per workload.

    python benches/interrupt_latency.py                 # every workload, 5 signals each
    python benches/interrupt_latency.py --rounds 10 rrf_int cli
    python benches/interrupt_latency.py --queries 9000 cli cli_trace   # 18 M lines

Each workload runs in a child process of its own, at the sizes of the Ctrl-C item of issue 14
(rrf_batch and fuse_batch on 80 M entries, rrf and fuse on 2 x 4 M int or 2 x 2 M str keys). The
child builds the input and makes two uninterrupted calls (the second one timed); then,
`--rounds` times, it starts the call and this process sends SIGINT at a random moment between
5% and 60% of the time of a warm call. The latency is the moment the child's
`except KeyboardInterrupt` runs minus the moment the signal was sent (both CLOCK_MONOTONIC,
which the processes share). After the rounds the child makes one more uninterrupted call and
checks that it returns exactly the first call's result (the pools are usable). The `cli`
workloads are the command (`rankfusion fuse a.run b.run -o out`; `cli_trace` and `cli_qrels`
its Python path, with `--trace` and `--qrels`; `cli_parquet` its Arrow path; `cli_optimize`
`rankfusion optimize`): the signal is sent to the command's process group, as Ctrl-C at a
terminal sends it, and the latency runs from the signal to the exit of the process started
(status 130, no output file left; the command works in a forked worker, whose memory the kernel
may still be freeing then: docs/cli.md). The notes give the time to the message and to the end
of the command's pipes (a worker the process started had to kill holds them until the kernel
has freed its memory).

The machine's load is printed before and after: on a shared machine latencies grow with it.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# Before numpy is imported: its OpenBLAS threads would spin on the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROWS, COLS = 400_000, 100  # x 2 lists: 80 M entries
INT_KEYS, STR_KEYS = 4_000_000, 2_000_000  # per list, 2 lists
QUERIES, DEPTH = 2_000, 1_000  # per run file, 2 files: 4 M lines

WORKLOADS = {
    "rrf_batch_1": "rrf_batch, 2 x (400k x 100) int64, threads=1",
    "rrf_batch_all": "rrf_batch, 2 x (400k x 100) int64, all threads",
    "fuse_batch_1": "fuse_batch sum/z-score, 2 x (400k x 100) + scores, threads=1",
    "fuse_batch_all": "fuse_batch sum/z-score, 2 x (400k x 100) + scores, all threads",
    "rrf_int": "rrf, 2 x 4 M int keys",
    "rrf_str": "rrf, 2 x 2 M str keys",
    "fuse_int": "fuse sum/z-score, 2 x 4 M int keys + scores",
    "fuse_str": "fuse sum/z-score, 2 x 2 M str keys + scores",
    "revalidate_batch": "revalidate_batch, (800k x 100) int64 ids, numpy is_live",
    "read_run": "trec.read_run, 1 file x 2000 queries x 1000 docs (a str and a float a line)",
    "read_run_files": "trec._read_run_files, 2 files x 2000 queries x 1000 docs",
    "fuse_run_files": "trec._fuse_run_files (the command's native fusion), same files",
    "compare": "compare_per_query, 5 runs x 2 metrics x 2000 queries, 100,000 permutations",
    "compare_bootstrap": "compare_per_query, bootstrap, 5 runs x 2 metrics x 2000 queries",
    "cli": "rankfusion fuse a.run b.run -o out (the whole command, to its exit)",
    "cli_trace": "rankfusion fuse a.run b.run -o out --trace t.jsonl (the Python path)",
    "cli_qrels": "rankfusion fuse a.run b.run -o out --qrels q.txt (the Python path)",
    "cli_parquet": "rankfusion fuse a.parquet b.parquet -o out.parquet (the Arrow path)",
    "cli_optimize": "rankfusion optimize a.run b.run --qrels q.txt --method rrf --metric ndcg@10",
}
# The command's workloads: the arguments after the run files (OUT: the output to check).
CLI = {
    "cli": ["-o", "OUT"],
    "cli_trace": ["-o", "OUT", "--trace", "TRACE"],
    "cli_qrels": ["-o", "OUT", "--qrels", "QRELS"],
    "cli_parquet": ["-o", "OUT"],
    "cli_optimize": ["--qrels", "QRELS", "--method", "rrf", "--metric", "ndcg@10", "-o", "OUT"],
}


def run_files(folder: str) -> list:
    """Two run files of QUERIES x DEPTH lines (written once, kept in `folder`)."""
    import numpy as np

    rng = np.random.default_rng(3)
    paths = []
    for f in range(2):
        path = os.path.join(folder, f"{f}.run")
        paths.append(path)
        if os.path.exists(path):
            continue
        with open(path + ".tmp", "w") as out:
            scores = [f"{DEPTH - r} t\n" for r in range(DEPTH)]
            for q in range(QUERIES):
                docs = rng.permutation(3 * DEPTH)[:DEPTH].tolist()
                out.write(
                    "".join(
                        f"{q} Q0 d{x} {r + 1} {s}" for r, (x, s) in enumerate(zip(docs, scores))
                    )
                )
        os.replace(path + ".tmp", path)
    return paths


def child(workload: str, folder: str) -> None:
    """Runs in the child: the protocol of the module's doc, one line per step on stdout."""
    import numpy as np

    import rankfusion as rf
    from rankfusion import trec

    rng = np.random.default_rng(7)

    def arrays(r):
        return tuple(a.tobytes() for a in r if a is not None)

    def hits(r):
        return [(h.key, h.score) for h in r]

    def id_lists(n):
        return [rng.permutation(3 * n)[:n] for _ in range(2)]

    if workload.startswith(("rrf_batch", "fuse_batch")):
        ids = [rng.integers(0, 2**40, size=(ROWS, COLS)) for _ in range(2)]
        threads = 1 if workload.endswith("_1") else None
        if workload.startswith("rrf_batch"):
            call = lambda: rf.rrf_batch(ids, threads=threads)  # noqa: E731
        else:
            scores = [np.sort(rng.random((ROWS, COLS)), axis=1)[:, ::-1].copy() for _ in ids]
            call = lambda: rf.fuse_batch(  # noqa: E731
                ids, scores, method="sum", norm="z-score", threads=threads
            )
        digest = arrays
    elif workload in ("rrf_int", "rrf_str", "fuse_int", "fuse_str"):
        n = INT_KEYS if workload.endswith("int") else STR_KEYS
        lists = [a.tolist() for a in id_lists(n)]
        if workload.endswith("str"):
            lists = [[f"d{x}" for x in lst] for lst in lists]
        if workload.startswith("rrf"):
            call = lambda: rf.rrf(lists)  # noqa: E731
        else:
            scores = [sorted(rng.random(n).tolist(), reverse=True) for _ in lists]
            call = lambda: rf.fuse(lists, scores=scores, method="sum", norm="z-score")  # noqa: E731
        digest = hits
    elif workload == "revalidate_batch":
        ids = rng.integers(0, 2**40, size=(2 * ROWS, COLS))
        scores = rng.random((2 * ROWS, COLS))
        call = lambda: rf.revalidate_batch(ids, scores, lambda u: u % 3 != 0)  # noqa: E731
        digest = arrays
    elif workload == "read_run":
        path = run_files(folder)[0]
        call = lambda: trec.read_run(path)  # noqa: E731
        digest = lambda run: [(q, r.docids[:3], r.scores[-3:]) for q, r in run.items()]  # noqa: E731
    elif workload in ("read_run_files", "fuse_run_files"):
        paths = run_files(folder)
        files = trec._read_run_files(paths, duplicates="first")
        if workload == "read_run_files":
            call = lambda: trec._read_run_files(paths, duplicates="first")  # noqa: E731
            digest = lambda fs: [f.qids() for f in fs]  # noqa: E731
        else:
            call = lambda: trec._fuse_run_files(files)  # noqa: E731
            digest = bytes
    elif workload.startswith("compare"):
        per_query = {
            m: {f"r{i}": rng.random(2000).tolist() for i in range(5)} for m in ("m1", "m2")
        }
        test = "bootstrap" if workload.endswith("bootstrap") else "randomization"
        call = lambda: rf.compare_per_query(per_query, test=test)  # noqa: E731
        digest = lambda c: c.pairs  # noqa: E731
    else:
        raise SystemExit(f"unknown workload {workload}")

    expected = digest(call())
    start = time.monotonic()
    call()  # the time of a warm call
    print("full", time.monotonic() - start, flush=True)
    while True:
        try:
            if sys.stdin.readline().strip() != "go":
                break
            print("start", time.monotonic(), flush=True)
            try:
                call()
                print("finished", time.monotonic(), flush=True)
            except KeyboardInterrupt:
                print("caught", time.monotonic(), flush=True)
        except KeyboardInterrupt:  # a signal that came after the call had returned
            pass
    start = time.monotonic()
    same = digest(call()) == expected
    print("again", same, time.monotonic() - start, flush=True)


def default_sigint() -> None:
    """In a child before it runs Python: SIGINT's default disposition (a process started in the
    background by a shell without job control ignores SIGINT, and so would its children; see
    tests/test_interrupt.py)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def measure(workload: str, rounds: int, folder: str) -> dict:
    """Latencies of `rounds` signals into `workload` (see the module's doc)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--child",
            workload,
            "--folder",
            folder,
            "--queries",
            str(QUERIES),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    full = float(proc.stdout.readline().split()[1])
    latencies, finished = [], 0
    for _ in range(rounds):
        proc.stdin.write("go\n")
        proc.stdin.flush()
        proc.stdout.readline()  # "start"
        time.sleep(random.uniform(0.05, 0.6) * full)
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        what, when = proc.stdout.readline().split()
        if what == "caught":
            latencies.append(float(when) - sent)
        else:
            finished += 1
    proc.stdin.write("stop\n")
    proc.stdin.flush()
    again = proc.stdout.readline().split()
    proc.wait()
    return {"full": full, "latencies": latencies, "finished": finished, "again": again[1]}


def qrels_file(folder: str) -> str:
    """Judgments of every query: 10 documents of each (written once, kept in `folder`)."""
    path = os.path.join(folder, "qrels.txt")
    if not os.path.exists(path):
        with open(path, "w") as out:
            out.writelines(
                f"{q} 0 d{q * 11 % 3000 + j} {j % 3}\n" for q in range(QUERIES) for j in range(10)
            )
    return path


def parquet_files(folder: str) -> list:
    """The run files as Parquet (written once, kept in `folder`)."""
    from rankfusion import frame

    paths = []
    for path in run_files(folder):
        target = path + ".parquet"
        if not os.path.exists(target):
            frame.write_parquet(frame.read_trec(path, duplicates="keep"), target)
        paths.append(target)
    return paths


def cpu_seconds(pid: int) -> float:
    """The CPU time a running process and its descendants have used (Linux's /proc; 0 once it
    is gone): the command works in a forked child of the process started."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
    except (OSError, IndexError):
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return own + sum(cpu_seconds(int(c)) for c in children)


def measure_cli(rounds: int, folder: str, workload: str = "cli") -> dict:
    """The command, interrupted `rounds` times: latency to its message (``interrupted`` on
    stderr) and to the exit of the process started (its worker may still be ending)."""
    import resource

    paths = parquet_files(folder) if workload == "cli_parquet" else run_files(folder)
    out = os.path.join(folder, "fused.parquet" if workload == "cli_parquet" else "fused.run")
    trace = os.path.join(folder, "trace.jsonl")
    names = {
        "OUT": out,
        "TRACE": trace,
        "QRELS": qrels_file(folder) if "QRELS" in CLI[workload] else "",
    }
    subcommand = "optimize" if workload == "cli_optimize" else "fuse"
    extra = [names.get(a, a) for a in CLI[workload]]
    command = [sys.executable, "-m", "rankfusion", subcommand, *paths, *extra, "-q"]
    if BASELINE:  # another rankfusion package's command (--baseline)
        command = ["env", f"PYTHONPATH={BASELINE}", *command]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "rankfusion", "--version"], capture_output=True)
    startup = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    startup_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    full = time.monotonic() - start
    with open(out, "rb") as f:
        expected = f.read()
    for path in (out, trace):  # a round checks that neither is left
        if os.path.exists(path):
            os.unlink(path)
    latencies, messages, eofs, finished = [], [], [], 0
    for _ in range(rounds):
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=default_sigint,
            start_new_session=True,  # its own process group, as a shell's job
        )
        # past the interpreter's start (its CPU time: a loaded machine stretches the wall
        # time), then a random moment of the work
        while proc.poll() is None and cpu_seconds(proc.pid) < startup_cpu + 0.05:
            time.sleep(0.002)
        time.sleep(random.uniform(0.0, 0.55) * (full - startup))
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # to the whole job, as Ctrl-C at a terminal
        line = proc.stderr.readline()
        message = time.monotonic()
        proc.wait()  # the process started: what a shell waits for (stdout is empty here)
        end = time.monotonic()
        proc.communicate()  # the end of its pipes: a killed worker holds them while the
        eof = time.monotonic()  # kernel frees its memory
        clean = not os.path.exists(out) and not os.path.exists(trace)
        if proc.returncode == 130 and clean and line.endswith(b"interrupted\n"):
            latencies.append(end - sent)
            messages.append(message - sent)
            eofs.append(eof - sent)
        else:
            finished += 1
            left = [p for p in (out, trace) if os.path.exists(p)]
            print(f"# not interrupted: status {proc.returncode}, {line!r}, left {left}")
        for path in (out, trace):
            if os.path.exists(path):
                os.unlink(path)
    subprocess.run(command, check=True, capture_output=True)
    with open(out, "rb") as f:
        same = f.read() == expected
    for path in (out, trace):
        if os.path.exists(path):
            os.unlink(path)
    return {
        "full": full,
        "latencies": latencies,
        "messages": messages,
        "eofs": eofs,
        "finished": finished,
        "again": str(same),
    }


BASELINE = ""  # --baseline: a folder holding another rankfusion package, for the cli workloads


def main() -> None:
    global BASELINE, QUERIES
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workloads", nargs="*", help=f"any of {', '.join(WORKLOADS)}")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--queries",
        type=int,
        default=QUERIES,
        help="queries per run file, for the workloads that read run files (2,000: 4 M lines in "
        "all; 9,000: 18 M)",
    )
    parser.add_argument(
        "--baseline",
        default="",
        help="the command workloads run the rankfusion package in this folder (put first on "
        "PYTHONPATH: e.g. an older commit's python/ with this build's extension)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    QUERIES = args.queries
    if args.child:
        child(args.child, args.folder)
        return
    BASELINE = args.baseline
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    print(f"# load average at start: {os.getloadavg()}")
    print(f"{'workload':<18}{'call':>9}{'min':>9}{'median':>9}{'max':>9}  (ms)  notes")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.workloads or WORKLOADS:
            if name in CLI:
                r = measure_cli(args.rounds, folder, name)
            else:
                r = measure(name, args.rounds, folder)
            lat = sorted(x * 1e3 for x in r["latencies"]) or [float("nan")]
            notes = [WORKLOADS[name]]
            if r.get("messages"):
                said = sorted(x * 1e3 for x in r["messages"])
                notes.append(
                    f"to the message {said[0]:.1f} / {statistics.median(said):.1f} / "
                    f"{said[-1]:.1f} ms, the rest is the exit"
                )
                eof = sorted(x * 1e3 for x in r["eofs"])
                notes.append(
                    f"to the end of its pipes {eof[0]:.1f} / {statistics.median(eof):.1f} / "
                    f"{eof[-1]:.1f} ms"
                )
            if r["finished"]:
                notes.append(f"{r['finished']} call(s) finished before the signal was handled")
            if r["again"] != "True":
                notes.append("THE CALL AFTER THE INTERRUPTIONS DIFFERS")
            print(
                f"{name:<18}{r['full'] * 1e3:>9.0f}{lat[0]:>9.1f}{statistics.median(lat):>9.1f}"
                f"{lat[-1]:>9.1f}        {'; '.join(notes)}",
                flush=True,
            )
    print(f"# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
