"""One worker slot of the chaos run: a `python main.py BACKEND SIZE` process the driver
kills and restarts, optionally with a wall clock that is off (tests/support/clock.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import List, Optional

import psutil
import redis

from rqconc.store.keys import KeySpace
from tests.support.clock import clock_env
from tests.support.worker_process import WorkerProcess, main_py_argv

QUEUE = "chaos"
LEASE_SECONDS = 2


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class ChaosWorker:
    """One worker slot: a `python main.py BACKEND SIZE` process, restarted by the driver."""

    def __init__(
        self, backend: str, size: int, url: str, log_dir: Path, clock: Path, skew: float = 0.0
    ) -> None:
        self.backend, self.size, self.url = backend, size, url
        self.clock, self.skew = clock, skew  # seconds its wall clock is off, at its next start
        self.log_path = log_dir / f"worker-{backend}.log"
        self.incarnation = 0
        self.current: Optional[WorkerProcess] = None
        self.process: Optional[subprocess.Popen] = None
        self.exit_codes: List[int] = []

    @property
    def name(self) -> str:
        return f"chaos-{self.backend}-{self.incarnation}"

    def start(self) -> None:
        self.incarnation += 1
        with open(self.log_path, "ab") as log:
            log.write(f"==== incarnation {self.incarnation}, clock {self.skew:+.1f} s\n".encode())
        if self.current is not None:
            self.current.close()  # the previous incarnation's log handle
        # Through env(1), which execs: the pid is the worker's. A skew of 0 still loads the
        # clock module, a no-op then.
        env = [f"{name}={value}" for name, value in clock_env(self.clock, self.skew).items()]
        argv = ["env", *env] + main_py_argv(
            self.backend,
            self.size,
            *("--url", self.url, "-q", QUEUE, "--allow", "tests", "--name", self.name),
            *("--lease-seconds", str(LEASE_SECONDS), "--log-level", "INFO"),
        )
        self.current = WorkerProcess(argv, self.log_path, self.size)
        self.process = self.current.process

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def children(self) -> List[int]:
        try:
            kids = psutil.Process(self.pid).children()
        except psutil.NoSuchProcess:
            return []
        pids = []
        for kid in kids:
            try:
                if "resource_tracker" in " ".join(kid.cmdline()):
                    continue  # multiprocessing's helper, not a worker child
                if kid.status() != psutil.STATUS_ZOMBIE:
                    pids.append(kid.pid)
            except psutil.Error:
                continue
        return pids

    def wait(self, timeout: float) -> Optional[int]:
        assert self.process is not None
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.exit_codes.append(code)
        return code

    def kill_all(self) -> None:
        """SIGKILL the supervisor and anything it left (test clean-up only)."""
        if self.current is not None:
            self.current.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def runs_async_jobs(direct: redis.Redis, keys: KeySpace, worker: ChaosWorker) -> bool:
    """Whether `worker` is running an `async def` job now (tests/chaos/jobs.record_async)."""
    running = [i.decode() for i in direct.zrange(keys.started(QUEUE), 0, -1)]
    pipe = direct.pipeline(transaction=False)
    for job_id in running:
        pipe.hmget(keys.job(job_id), "worker", "func")
    mine = (worker.name.encode(), b"tests.chaos.jobs:record_async")
    return any(tuple(fields) == mine for fields in pipe.execute())
