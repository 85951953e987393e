"""Ctrl-C during long calls: a real SIGINT, sent from this process to a child running the call.

One child (tests/_interrupt_child.py) runs every workload in turn: it sizes the input so that
an uninterrupted call would take about 2 s of CPU on this machine (at most a size that keeps
the memory reasonable: ~1.5 s for rrf_batch here), starts the call, and this process sends
SIGINT a quarter of a second into it. The call must raise KeyboardInterrupt (or what the SIGINT
handler raises) within a second of the signal, where a call that only raised once its work was
done would need the rest of its time. A trial whose signal could not be sent before the call
ended (this process lost the CPU that long, on a loaded machine) says nothing and is made again.
Then the child makes a small call of the same function, whose result must equal the
reference's: the pools and engines are usable. The latencies, at the sizes of the issue, are
measured by benches/interrupt_latency.py; the bound here is generous, for a loaded machine.
"""

from __future__ import annotations

import contextlib
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
    "compare",
    "compare_bootstrap",
    "rrf_batch_all:raise",
    "rrf_batch_1:ignore",
]


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("interrupt")


ATTEMPTS = 3  # trials of a workload whose signal could not be sent while its call ran


def default_sigint() -> None:
    """In a child before it runs Python: SIGINT's default disposition. A process started in the
    background by a shell without job control (`nohup cmd &`, some CI runners) ignores SIGINT,
    and so would every child it starts: Python then leaves SIGINT ignored, and the test would
    measure that, not the library."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_once(child, name: str, estimate: float) -> dict:
    """One trial: start the call, send SIGINT a quarter of a second into it, read the outcome.
    ``sent_in_call`` says whether the signal had been sent (``os.kill`` had returned) before the
    call ended: on a loaded machine this process can lose the CPU for longer than the call."""
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline().split() == ["start", name]
    time.sleep(DELAY)
    sent = time.monotonic()
    os.kill(child.pid, signal.SIGINT)
    delivered = time.monotonic()
    r = {"estimate": estimate, "late": False}
    for line in iter(child.stdout.readline, ""):
        what, *rest = line.split()
        if what == "caught":
            r["outcome"] = f"caught {rest[0]}"
            ended = float(rest[1])
        elif what == "finished":
            r["outcome"] = "finished"
            ended = float(rest[0])
        elif what == "late":
            r["late"] = True
        elif what == "check":
            r["check"] = rest[1] == "True"
            break
    r["latency"] = ended - sent
    r["sent_in_call"] = ended > delivered
    return r


@pytest.fixture(scope="module")
def interrupted(runs_folder) -> dict:
    """Each workload's outcome: what the call did, the latency, the check after it. A workload
    whose signal was not sent while its call ran is tried again (up to ATTEMPTS trials): such a
    trial says nothing about the call."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(runs_folder), *WORKLOADS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    results = {}
    try:
        for name in WORKLOADS:
            for attempt in range(ATTEMPTS + 1):
                ready = child.stdout.readline().split()  # "ready <name> <estimated seconds>"
                if not ready:
                    break
                assert ready[:2] == ["ready", name], ready
                if attempt == ATTEMPTS or attempt > 0 and results[name]["sent_in_call"]:
                    child.stdin.write("next\n")
                    child.stdin.flush()
                    break
                results[name] = interrupt_once(child, name, float(ready[2]))
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
    assert r["sent_in_call"], r
    assert r["outcome"] == "finished", r
    assert not r["late"] and r["check"], r


def cpu_seconds(pid: int) -> float | None:
    """The CPU time a running process and its descendants have used (Linux's /proc: the command
    works in a forked child of the process started), or None where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return own + sum(cpu_seconds(int(c)) or 0.0 for c in children)


def wait_for_the_group_to_end(pgid: int, seconds: float = 60.0) -> bool:
    """Whether every process of the group `pgid` has ended within `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize(
    "path, sent",
    [("native", "group"), ("trace", "group"), ("trace", "process"), ("qrels", "process")],
)
def test_the_command_exits_130_on_sigint_and_writes_nothing(interrupted, runs_folder, path, sent):
    """The native path, and the Python path (--trace, --qrels), whose runs are Python objects:
    the message within a second, status 130, no file written (nor its temporary file). The
    signal is sent as a terminal's Ctrl-C is, to the whole process group (the supervisor and
    its worker), or to the process started alone (which passes it on to its worker); either
    way no process of the command outlives it for long."""
    import resource  # Unix only

    # The run files the child sized for about 2 s of CPU of native fusion (more with the parsing).
    a, b = runs_folder / "0.run", runs_folder / "1.run"
    out = runs_folder / "fused.run"
    trace = runs_folder / "trace.jsonl"
    extra = []
    if path == "trace":
        extra = ["--trace", trace]
    elif path == "qrels":
        pytest.importorskip("ir_measures")  # the eval extra, in the test extra (CI has it)
        qrels = runs_folder / "qrels.txt"
        qrels.write_text("".join(f"{q} 0 d{q * 7} 1\n" for q in range(50)))
        extra = ["--qrels", qrels]
    rankfusion = [sys.executable, "-m", "rankfusion"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([*rankfusion, "--version"], capture_output=True, check=True, timeout=60)
    startup = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    startup_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    child = subprocess.Popen(
        [*rankfusion, "fuse", a, b, "-o", out, "-q", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
        start_new_session=True,  # its own process group, as a shell's job
    )
    try:
        # Past the interpreter's start, into the work: by the CPU time the child has used where
        # it is known (a loaded machine stretches the start-up's wall time), else by the clock.
        if cpu_seconds(child.pid) is None:
            time.sleep(startup + DELAY)
        else:
            while child.poll() is None and cpu_seconds(child.pid) < startup_cpu + DELAY:
                time.sleep(0.005)
        assert child.poll() is None, child.communicate()
        start = time.monotonic()
        if sent == "group":
            os.killpg(child.pid, signal.SIGINT)
        else:
            os.kill(child.pid, signal.SIGINT)
        # The latency: until the message (not the exit after it, which frees the runs read).
        message = child.stderr.readline()
        latency = time.monotonic() - start
        stdout, stderr = child.communicate(timeout=60)
        stderr = message + stderr
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # only when the test failed
    assert wait_for_the_group_to_end(child.pid)
    assert child.returncode == 130, stderr
    assert stderr == "rankfusion fuse: interrupted\n"
    assert stdout == ""
    assert not out.exists() and not trace.exists()
    assert not [f for f in os.listdir(runs_folder) if f.endswith(".tmp")]
    assert latency < 1.0, latency


def test_sigterm_to_the_command_ends_its_worker_and_it_by_the_same_signal(interrupted, runs_folder):
    """SIGTERM sent to the process started (the supervisor) alone is passed on to the worker,
    whose end by SIGTERM ends the supervisor by SIGTERM too: nothing goes on in the background."""
    a, b = runs_folder / "0.run", runs_folder / "1.run"
    out = runs_folder / "terminated.run"
    child = subprocess.Popen(
        [sys.executable, "-m", "rankfusion", "fuse", a, b, "-o", out, "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        while child.poll() is None and (cpu_seconds(child.pid) or 0.0) < 0.5:  # working
            time.sleep(0.005)
        assert child.poll() is None, child.communicate()
        os.kill(child.pid, signal.SIGTERM)
        child.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # only when the test failed
    assert child.returncode == -signal.SIGTERM
    assert wait_for_the_group_to_end(child.pid)


def test_an_interrupted_command_ends_its_process_without_the_teardown(tmp_path):
    """Ctrl-C ends the `rankfusion` process at once (os._exit) once its message is out, with
    status 130: the interpreter's teardown, which would free every object read one by one
    (up to seconds for a run on the Python path), never runs: an atexit function neither."""
    run = tmp_path / "a.run"
    run.write_text(
        "".join(f"{q} Q0 d{d} {d + 1} {1000 - d} t\n" for q in range(300) for d in range(1000))
    )
    code = (
        "import atexit, sys, time\n"
        "atexit.register(lambda: sys.stderr.write('teardown\\n'))\n"
        "from rankfusion import cli, trec\n"
        "fuse = trec.fuse\n"
        "def slow(*args, **kwargs):\n"  # the fusion, then a wait for the signal
        "    fused = fuse(*args, **kwargs)\n"
        "    print('fused', flush=True)\n"
        "    time.sleep(60)\n"
        "trec.fuse = slow\n"
        f"sys.argv = ['rankfusion', 'fuse', {str(run)!r}, {str(run)!r}, '--trace', "
        f"{str(tmp_path / 't.jsonl')!r}, '-o', {str(tmp_path / 'o.run')!r}, '-q']\n"
        "sys.exit(cli.main())\n"
    )
    with _program_in_its_session(code, "fused") as child:
        os.kill(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    assert (child.returncode, stderr) == (130, "rankfusion fuse: interrupted\n")
    assert sorted(os.listdir(tmp_path)) == ["a.run"]


def test_main_called_with_arguments_returns_130(tmp_path, monkeypatch, capsys):
    """main(argv), called by a program (or a test) with its arguments, returns 130: it never
    ends the caller's process."""
    from rankfusion import cli, trec

    run = tmp_path / "a.run"
    run.write_text("1 Q0 d 1 1.0 t\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trec, "fuse", interrupted)
    assert cli.main(["fuse", str(run), str(run), "--trace", str(tmp_path / "t.jsonl")]) == 130
    assert capsys.readouterr().err == "rankfusion fuse: interrupted\n"
    assert sorted(os.listdir(tmp_path)) == ["a.run"]


def _command_at_its_outputs(tmp_path, step: str, first: str) -> tuple[str, list[str]]:
    """A `python -c` program that runs the `rankfusion` command (with its worker) on a small
    run, --trace and -o, running the statements ``first`` just before the first call of
    ``trec._AtomicFile.<step>`` ("finish": both outputs written under their temporary names;
    "commit": they are being renamed into place); and the command's arguments."""
    run = tmp_path / "a.run"
    run.write_text(
        "".join(f"{q} Q0 d{d} {d + 1} {100 - d} t\n" for q in range(20) for d in range(50))
    )
    argv = ["fuse", str(run), str(run), "--trace", str(tmp_path / "t.jsonl")]
    argv += ["-o", str(tmp_path / "o.run"), "-q"]
    code = (
        "import os, signal, sys, time\n"
        "from rankfusion import cli, trec\n"
        f"step = trec._AtomicFile.{step}\n"
        "def first(self):\n"
        f"    trec._AtomicFile.{step} = step\n"
        f"    {first}\n"
        "    step(self)\n"
        f"trec._AtomicFile.{step} = first\n"
        f"sys.argv = ['rankfusion', *{argv!r}]\n"
        "sys.exit(cli.main())\n"
    )
    return code, argv


def _paused(tmp_path, step: str, word: str, pause: str) -> str:
    """The program of :func:`_command_at_its_outputs` printing ``word`` at ``step``, then
    running ``pause`` (a statement) before it goes on."""
    return _command_at_its_outputs(tmp_path, step, f"print({word!r}, flush=True); {pause}")[0]


@contextlib.contextmanager
def _program_in_its_session(code: str, ready: str, preexec_fn=default_sigint):
    """`python -c code` in a session (a process group) of its own, once it has printed the line
    ``ready``; the group is killed at the end if anything is left of it (a test that failed)."""
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
        start_new_session=True,
    )
    try:
        assert child.stdout.readline() == ready + "\n"
        yield child
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)


@pytest.mark.parametrize("when", ["finish", "commit"])
def test_sigint_while_the_outputs_are_put_in_place_leaves_all_or_none(tmp_path, when):
    """Ctrl-C while the outputs are completed (``finish``) ends the command with 130 and removes
    every one; once they are being renamed into place (``commit``: the first rename's SIGINT
    waits for the others) the command has done its work and ends with 0, every output in
    place and whole, no message and no traceback."""
    out, trace = tmp_path / "o.run", tmp_path / "t.jsonl"
    # Ctrl-C reaches the command at its first file's step
    code, argv = _command_at_its_outputs(tmp_path, when, "os.kill(os.getpid(), signal.SIGINT)")
    child = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_sigint,
    )
    if when == "finish":
        assert (child.returncode, child.stderr) == (130, "rankfusion fuse: interrupted\n")
        assert sorted(os.listdir(tmp_path)) == ["a.run"]
        return
    assert (child.returncode, child.stderr) == (0, "")
    assert sorted(os.listdir(tmp_path)) == ["a.run", "o.run", "t.jsonl"]
    from rankfusion import cli

    expected = tmp_path / "expected"
    expected.mkdir()
    argv = [
        a.replace(str(tmp_path), str(expected)) if a in (str(out), str(trace)) else a for a in argv
    ]
    assert cli.main(argv) == 0
    assert out.read_bytes() == (expected / "o.run").read_bytes()
    assert trace.read_bytes() == (expected / "t.jsonl").read_bytes()


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_remove_the_temporary_files_then_end_the_command(tmp_path, name):
    """SIGTERM or SIGHUP sent to the process started, while its outputs are written under
    temporary names: the worker removes them, then it and the process started end by the
    signal (docs/cli.md: nothing is half-written)."""
    signo = getattr(signal, name)
    code = _paused(tmp_path, "finish", "written", "time.sleep(60)")
    with _program_in_its_session(code, "written") as child:
        assert len([f for f in os.listdir(tmp_path) if f.endswith(".tmp")]) == 2
        os.kill(child.pid, signo)
        stdout, stderr = child.communicate(timeout=60)
        assert wait_for_the_group_to_end(child.pid)
    assert (child.returncode, stdout, stderr) == (-signo, "", "")
    assert sorted(os.listdir(tmp_path)) == ["a.run"]


def test_a_command_started_with_sigint_ignored_leaves_it_ignored(tmp_path):
    """`trap '' INT; rankfusion ...` (a background job of a script): Ctrl-C sent to its group
    changes nothing, as for any program; the command ends with 0, its outputs in place."""

    def sigint_ignored() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    code = _paused(tmp_path, "finish", "written", "time.sleep(0.5)")
    with _program_in_its_session(code, "written", preexec_fn=sigint_ignored) as child:
        os.killpg(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    assert (child.returncode, stdout, stderr) == (0, "", "")
    assert sorted(os.listdir(tmp_path)) == ["a.run", "o.run", "t.jsonl"]


@pytest.mark.parametrize("args", [["--version"], ["--no-such-option"], ["fuse"]])
def test_the_command_ends_when_started_with_sigchld_ignored(args):
    """An ignored SIGCHLD is inherited (a launcher that reaps nothing): the kernel would reap
    the worker unseen, and the process started would wait for ever for a worker that ends
    without telling it (argparse's exits)."""

    def sigchld_ignored() -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    done = subprocess.run(
        [sys.executable, "-m", "rankfusion", *args],
        capture_output=True,
        text=True,
        preexec_fn=sigchld_ignored,
        timeout=60,
    )
    assert done.returncode == (0 if args == ["--version"] else 2), done.stderr
    assert ("rankfusion" in done.stdout) if args == ["--version"] else ("usage" in done.stderr)


def test_without_sigwaitinfo_the_command_runs_in_its_own_process(tmp_path):
    """macOS has os.fork but not signal.sigwaitinfo: the command runs in the process started,
    never forking a worker it could not wait for."""
    run = tmp_path / "a.run"
    run.write_text("1 Q0 d 1 1.0 t\n")
    code = (
        "import os, signal, sys\n"
        "del signal.sigwaitinfo\n"
        "def fork():\n"
        "    raise AssertionError('forked')\n"
        "os.fork = fork\n"
        "from rankfusion import cli\n"
        f"sys.argv = ['rankfusion', 'fuse', {str(run)!r}, {str(run)!r}, '-o', "
        f"{str(tmp_path / 'o.run')!r}]\n"
        "sys.exit(cli.main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "o.run").read_text() == "1 Q0 d 1 0.03278688524590164 rankfusion\n"


def test_ctrl_c_in_a_long_call_that_holds_python_ends_the_command_from_its_supervisor(tmp_path):
    """A worker inside one long call that never returns to Python meanwhile (a pyarrow or numpy
    function on tens of millions of rows; here `sum` over a range) cannot run its SIGINT
    handler: after a grace of 50 ms the process started ends the command itself, as the
    handler would have: the worker killed, its temporary files removed, the message, 130."""
    # minutes of C, holding Python
    code = _paused(tmp_path, "finish", "written", "sum(range(10**10))")
    with _program_in_its_session(code, "written") as child:
        assert len([f for f in os.listdir(tmp_path) if f.endswith(".tmp")]) == 2
        sent = time.monotonic()
        os.killpg(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
        took = time.monotonic() - sent
        assert wait_for_the_group_to_end(child.pid)
    assert (child.returncode, stdout, stderr) == (130, "", "rankfusion fuse: interrupted\n")
    assert sorted(os.listdir(tmp_path)) == ["a.run"]
    assert took < 5.0, took  # the call alone would take minutes


@pytest.mark.parametrize("closed", [(1, 2), (0, 1), (0, 2)])
def test_the_status_survives_standard_streams_closed_at_the_start(tmp_path, closed):
    """`rankfusion ... >&- 2>&-`: with two of fds 0-2 closed the pipe to the process started
    would get their numbers, which the worker closes before it tells its status."""
    run = tmp_path / "a.run"
    run.write_text("1 Q0 d 1 1.0 t\n")

    def close_them() -> None:
        for fd in closed:
            os.close(fd)

    done = subprocess.run(
        [sys.executable, "-m", "rankfusion", "fuse", run, run, "-o", tmp_path / "o.run"],
        preexec_fn=close_them,
        timeout=60,
    )
    assert done.returncode == 0
    assert (tmp_path / "o.run").read_text() == "1 Q0 d 1 0.03278688524590164 rankfusion\n"


def test_ctrl_c_while_the_outputs_are_renamed_slowly_waits_for_them(tmp_path):
    """A worker that has said it is renaming its outputs is never killed, however long the
    renames take (ext4 allocates a replaced file's blocks then): the process started stops it at
    the end of the grace, sees that it said so, and lets it go on; the command ends with 0, its
    outputs whole, and no message."""
    code = _paused(tmp_path, "commit", "renaming", "time.sleep(0.5)")
    with _program_in_its_session(code, "renaming") as child:
        os.killpg(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    assert (child.returncode, stdout, stderr) == (0, "", "")
    assert sorted(os.listdir(tmp_path)) == ["a.run", "o.run", "t.jsonl"]
