"""rankfusion.pgserver.EmbeddedServer: the server goes when the process that started it dies,
however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

START = """
import sys
from rankfusion.pgserver import EmbeddedServer
server = EmbeddedServer()
print(server.folder, server.pid(), flush=True)
sys.stdin.read()  # until killed
"""


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_process_leaves_no_server(how):
    child = subprocess.Popen(
        [sys.executable, "-c", START], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    folder, pid = child.stdout.readline().split()
    folder, pid = Path(folder), int(pid)
    assert alive(pid) and (folder / "data" / "postmaster.pid").exists()
    os.kill(child.pid, how)
    child.wait(timeout=30)
    deadline = time.monotonic() + 60
    while alive(pid) or folder.exists():
        assert time.monotonic() < deadline, "the server outlived the process that started it"
        time.sleep(0.1)
    child.stdin.close()
    child.stdout.close()
