"""Ctrl-C during long calls: a real SIGINT, sent from this process to a child running the call.

One child (tests/_interrupt_child.py) runs every workload in turn: it sizes the input so that
an uninterrupted call would take about 2 s on this machine (at most a size that keeps the memory
reasonable: ~1.5 s for rrf_batch here), starts the call, and this process sends SIGINT a quarter
of a second into it. The call must raise KeyboardInterrupt (or what the SIGINT handler raises)
within a second of the signal, where a call that only raised once its work was done would need
the rest of its time. Then the child makes a small call of the same function, whose result must
equal the reference's: the pools and engines are usable. The latencies, at the sizes of the
issue, are measured by benches/interrupt_latency.py; the bound here is generous, for a loaded
machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="SIGINT cannot be sent to another process on Windows"
)

CHILD = Path(__file__).with_name("_interrupt_child.py")
DELAY = 0.25  # seconds into the call

WORKLOADS = [
    "rrf_batch_1",
    "rrf_batch_all",
    "fuse_batch_all",
    "rrf_int",
    "fuse_str",
    "revalidate_batch",
    "fuse_run_files",
    "rrf_batch_all:raise",
    "rrf_batch_1:ignore",
]


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("interrupt")


@pytest.fixture(scope="module")
def interrupted(runs_folder) -> dict:
    """Each workload's outcome: what the call did, the latency, the check after it."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(runs_folder), *WORKLOADS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = {}
    try:
        for name in WORKLOADS:
            ready = child.stdout.readline().split()
            if not ready:
                break
            assert ready[:2] == ["ready", name], ready
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().split() == ["start", name]
            time.sleep(DELAY)
            sent = time.monotonic()
            os.kill(child.pid, signal.SIGINT)
            r = {"estimate": float(ready[2]), "late": False}
            for line in iter(child.stdout.readline, ""):
                what, *rest = line.split()
                if what == "caught":
                    r["outcome"] = f"caught {rest[0]}"
                    r["latency"] = float(rest[1]) - sent
                elif what == "finished":
                    r["outcome"] = "finished"
                    r["latency"] = float(rest[0]) - sent
                elif what == "late":
                    r["late"] = True
                elif what == "check":
                    r["check"] = rest[1] == "True"
                    break
            results[name] = r
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    return results


def prompt(r: dict) -> bool:
    """Raised within a second of the signal."""
    return r["latency"] < 1.0


@pytest.mark.parametrize("workload", [w for w in WORKLOADS if ":" not in w])
def test_sigint_raises_keyboard_interrupt_promptly(interrupted, workload):
    r = interrupted[workload]
    assert r["outcome"] == "caught KeyboardInterrupt", r
    assert prompt(r), r
    assert r["check"], r


def test_the_sigint_handlers_exception_is_raised(interrupted):
    r = interrupted["rrf_batch_all:raise"]
    assert r["outcome"] == "caught Stop", r
    assert prompt(r), r
    assert r["check"], r


def test_a_sigint_handler_that_returns_lets_the_call_finish_exactly(interrupted):
    # The check compares the finished call's result with an uninterrupted call's, and a small
    # call's with the reference.
    r = interrupted["rrf_batch_1:ignore"]
    assert r["outcome"] == "finished", r
    assert not r["late"] and r["check"], r


def test_the_command_exits_130_on_sigint_and_writes_nothing(interrupted, runs_folder):
    # The run files the child sized for about 2 s of native fusion (more with the parsing).
    a, b = runs_folder / "0.run", runs_folder / "1.run"
    out = runs_folder / "fused.run"
    rankfusion = [sys.executable, "-m", "rankfusion"]
    start = time.monotonic()
    subprocess.run([*rankfusion, "--version"], capture_output=True, check=True, timeout=60)
    startup = time.monotonic() - start
    child = subprocess.Popen(
        [*rankfusion, "fuse", a, b, "-o", out, "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(startup + DELAY)  # past the interpreter's start, into the work
        sent = time.monotonic()
        os.kill(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    latency = time.monotonic() - sent
    assert child.returncode == 130, stderr
    assert stderr == "rankfusion fuse: interrupted\n"
    assert stdout == ""
    assert not out.exists()
    assert latency < 1.0, latency
