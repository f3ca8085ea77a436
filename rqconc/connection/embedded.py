"""The embedded Redis (SPEC section 6): one private redis-server per user, started on first use.

It listens only on a unix socket under RQCONC_HOME (default ~/.local/share/rqconc), keeps an
append-only file there so queued jobs survive restarts, and daemonizes so that it outlives
the process that started it and serves every rqconc process of the user. An exclusive
`flock` on RQCONC_HOME/server.lock makes check-then-start atomic across processes, so
concurrent first uses start exactly one server. The config is rewritten at every start.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, Optional
from urllib.parse import quote

import psutil
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from rqconc import errors
from rqconc.connection.backoff import backoff_delays
from rqconc.connection.server_binary import (  # noqa: F401 - BINARY_ENV, MIN_VERSION: public
    BINARY_ENV,
    MIN_VERSION,
    binary_for,
    binary_version,
    find_binary,
    recorded,
)

log = logging.getLogger(__name__)

START_TIMEOUT = 10.0  # s for a fresh server to answer PING; renewed while it loads its AOF
LOADING_LIMIT = 600.0  # s: even a huge AOF must have loaded by then
STOP_TIMEOUT = 10.0
# sun_path holds 108 bytes on Linux, 104 on the BSDs and macOS, NUL included.
MAX_SOCKET_PATH = 107 if sys.platform.startswith("linux") else 103


@dataclass(frozen=True)
class Paths:
    """Where the embedded server keeps its files."""

    home: Path

    @property
    def socket(self) -> Path:
        return self.home / "redis.sock"

    @property
    def pidfile(self) -> Path:
        return self.home / "redis.pid"

    @property
    def logfile(self) -> Path:
        return self.home / "redis.log"

    @property
    def config(self) -> Path:
        return self.home / "redis.conf"

    @property
    def lockfile(self) -> Path:
        return self.home / "server.lock"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def record(self) -> Path:
        """The server binary and version that own `data` (written at its first start)."""
        return self.home / "server.json"


def paths() -> Paths:
    """The embedded server's files, under RQCONC_HOME (read at every call)."""
    home = os.environ.get("RQCONC_HOME") or os.path.join("~", ".local", "share", "rqconc")
    return Paths(Path(home).expanduser().absolute())


def url() -> str:
    """The `unix://` URL of the embedded server (whether it runs or not)."""
    return "unix://" + quote(str(paths().socket))


def ensure_running() -> str:
    """Start the embedded server unless it answers already; return its `unix://` URL."""
    where = paths()
    if _probe(where.socket) == "ready":  # the common case: no lock, one round trip
        return url()
    with _locked(where):
        state = _probe(where.socket)
        if state != "ready":
            if state is None and _server_pid(where) is None:
                _launch(where)
            _wait_ready(where)
    return url()


def status() -> Dict[str, Any]:
    """What `rqconc server status` shows; never starts anything."""
    where = paths()
    info = _info(where.socket)
    binary = info.get("executable") if info else None
    if not binary:
        try:
            owner = recorded(where.record)
            binary = str(owner["binary"]) if owner else find_binary()
        except errors.ConnectionError:
            binary = None
    return {
        "running": info is not None,
        "pid": int(info["process_id"]) if info else _server_pid(where),
        "socket": str(where.socket),
        "url": url(),
        "version": info.get("redis_version") if info else None,
        "used_memory_human": info.get("used_memory_human") if info else None,
        "dir": str(where.data),
        "log": str(where.logfile),
        "binary": binary,
    }


def stop(timeout: float = STOP_TIMEOUT) -> bool:
    """Shut the embedded server down (its AOF flushed); False when none was running."""
    where = paths()
    if not where.home.is_dir():
        return False
    with _locked(where):
        info = _info(where.socket)
        pid = int(info["process_id"]) if info else _server_pid(where)
        if pid is None:
            return False
        if info is not None:
            client = _client(where.socket)
            try:
                client.shutdown()  # plain SHUTDOWN: fsyncs the AOF, writes no RDB
            except redis.exceptions.ResponseError as exc:
                raise errors.RQConcError(
                    f"embedded Redis refused to shut down ({exc}); see {where.logfile}"
                ) from None
            finally:
                client.close()
        else:  # alive but not answering (hung, or still loading): SIGTERM is a clean shutdown
            _signal(pid, signal.SIGTERM)
        if not _wait_gone(pid, timeout):
            raise errors.RQConcError(
                f"embedded Redis (pid {pid}) still runs {timeout:g} s after SHUTDOWN; "
                f"see {where.logfile}"
            )
        log.info("stopped embedded Redis (pid %d)", pid)
        return True


@contextmanager
def _locked(where: Paths) -> Iterator[None]:
    """Hold the exclusive lock that serialises starting and stopping across processes.

    The kernel drops a flock when its holder dies, so a crash never leaves it taken.
    """
    try:
        where.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(where.lockfile, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise errors.ConnectionError(
            f"cannot use {where.home} for the embedded Redis ({exc.strerror}); "
            "set RQCONC_HOME to a writable directory, or pass --url / set REDIS_URL"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _client(socket_path: Path) -> redis.Redis:
    # No retries: a probe must answer "is it up now?", and SHUTDOWN must not be re-sent.
    return redis.Redis(
        unix_socket_path=str(socket_path),
        socket_connect_timeout=2.0,
        socket_timeout=5.0,
        retry=Retry(NoBackoff(), 0),
    )


def _probe(socket_path: Path) -> Optional[str]:
    """'ready' if the server answers PING, 'loading' while it loads its data, else None."""
    if not socket_path.exists():
        return None
    client = _client(socket_path)
    try:
        client.ping()
        return "ready"
    except redis.exceptions.BusyLoadingError:
        return "loading"
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return None
    finally:
        client.close()


def _info(socket_path: Path) -> Optional[Dict[str, Any]]:
    """INFO of the running server (INFO works while loading, too), None if none answers."""
    if not socket_path.exists():
        return None
    client = _client(socket_path)
    try:
        info = client.info("server")
        info.update(client.info("memory"))
        return info
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return None
    finally:
        client.close()


def _server_pid(where: Paths) -> Optional[int]:
    """The pidfile's pid if that process lives and is our redis-server, else None.

    A stale pidfile's pid may have been reused after a crash or a reboot, even by another
    redis-server (which `server stop` must never shut down): only a process whose command
    line names our config or socket (redis-server retitles itself "unixsocket:PATH"), or
    that works in our data directory, is ours.
    """
    try:
        pid = int(where.pidfile.read_text().strip())
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or "redis" not in process.name():
            return None
        return pid if _is_ours(process, where) else None
    except (OSError, ValueError, psutil.Error):
        return None


def _is_ours(process: psutil.Process, where: Paths) -> bool:
    cmdline = process.cmdline()
    if any(str(where.socket) in part or str(where.config) == part for part in cmdline):
        return True
    try:
        return Path(process.cwd()) == where.data  # redis-server chdirs to its `dir`
    except psutil.AccessDenied:  # another user's process: not ours
        return False


def _config_text(where: Paths) -> str:
    def quoted(path: Path) -> str:  # redis.conf strings: double quotes, backslash escapes
        return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'

    return "\n".join(
        [
            "# Written by rqconc at every start of the embedded server: edits are overwritten.",
            "port 0",  # no TCP at all: only the user's processes can reach it, via the socket
            f"unixsocket {quoted(where.socket)}",
            "unixsocketperm 700",
            f"dir {quoted(where.data)}",
            "appendonly yes",
            "appendfsync everysec",
            'save ""',  # the AOF is the persistence; RDB snapshots would only add forks
            "daemonize yes",
            f"pidfile {quoted(where.pidfile)}",
            f"logfile {quoted(where.logfile)}",
            "loglevel notice",
            "",
        ]
    )


def _launch(where: Paths) -> None:
    """Start a daemonized redis-server (the caller holds the lock and saw none running)."""
    if len(os.fsencode(str(where.socket))) > MAX_SOCKET_PATH:
        raise errors.ConnectionError(
            f"the embedded server's socket path {where.socket} is too long for a unix "
            "socket; set RQCONC_HOME to a shorter directory"
        )
    where.data.mkdir(mode=0o700, parents=True, exist_ok=True)
    binary = binary_for(where.data, where.record)
    for stale in (where.pidfile, where.socket):  # left behind by a crash
        stale.unlink(missing_ok=True)
    where.config.write_text(_config_text(where))
    # redis-server forks and exits at once; what it prints before that (config errors)
    # goes to a file rather than a pipe, which the daemon could hold open.
    with tempfile.TemporaryFile() as output:
        try:
            code = subprocess.call(
                [binary, str(where.config)],
                cwd=where.home,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise errors.ConnectionError(
                f"cannot start the embedded Redis ({binary}): {exc}; see {where.logfile}"
            ) from None
        output.seek(0)
        said = output.read().decode(errors="replace").strip()
    if code != 0:
        raise errors.ConnectionError(
            f"the embedded Redis ({binary}) failed to start (exit {code}): "
            f"{said.splitlines()[-1] if said else 'no output'}; see {where.logfile}"
        )
    log.info("started embedded Redis %s on %s", binary, where.socket)


def _wait_ready(where: Paths) -> None:
    """Wait until the server answers PING; a clear error naming the log when it does not."""
    started = time.monotonic()
    deadline = started + START_TIMEOUT
    pauses = backoff_delays(cap=0.1, base=0.005, jitter=False)
    while time.monotonic() < deadline:
        state = _probe(where.socket)
        if state == "ready":
            return
        if state == "loading":  # alive and working through its AOF: give it more time
            deadline = min(time.monotonic() + START_TIMEOUT, started + LOADING_LIMIT)
        elif where.pidfile.exists() and _server_pid(where) is None:
            break  # it wrote its pidfile, then died (a corrupt AOF, say)
        time.sleep(next(pauses))
    raise errors.ConnectionError(
        f"the embedded Redis did not come up at {where.socket}; see {where.logfile}"
        f"{_last_log_line(where)}"
    )


def _last_log_line(where: Paths) -> str:
    try:
        lines = where.logfile.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f" (last line: {lines[-1].strip()})" if lines else ""


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True  # dead, only waiting for whoever started it to reap it
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.01)
    return False
