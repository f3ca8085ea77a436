"""Drive `python main.py ...` as a real subprocess and read what it does: the one helper
every test that runs a worker process uses (the `start_worker` fixture hands them out)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Union

import psutil

from tests.support.waiting import wait_for  # also re-exported for the tests

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["forking", "multiprocessing", "threading", "gevent", "asyncio"]
PROCESS_BACKENDS = ["forking", "multiprocessing"]


class Spool:
    """Items for the fake source, and the event log it writes."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "spool"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log = root / "events.jsonl"
        self._count = 0

    def add(self, **spec: object) -> str:
        self._count += 1
        name = f"item{self._count:05d}"
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(json.dumps(spec))
        tmp.rename(self.dir / f"{name}.json")  # appears whole, never half-written
        return name

    def events(self, kind: Optional[str] = None) -> List[Dict]:
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines() if line]
        return [e for e in lines if kind is None or e["event"] == kind]

    def items(self, kind: str) -> List[str]:
        return [e.get("item") or e.get("claim") for e in self.events(kind)]

    def status(self) -> Dict:
        path = self.dir / "supervisor-status"
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def wait_idle(self, size: int, timeout: float = 15) -> Dict:
        """Wait until the supervisor reports `size` idle children; its status then."""
        return wait_for(
            lambda: self.status().get("idle") == size and self.status(),
            timeout,
            message=f"{size} idle children",
        )

    def waiting(self) -> List[str]:
        return sorted(p.stem for p in self.dir.glob("*.json"))


def default_sigint() -> None:
    """A Popen preexec_fn: SIGINT back to its default in the child, as in a terminal. A test
    runner started in the background of a shell without job control ignores SIGINT, and an
    ignored SIGINT is inherited across exec: a command under test would never see Ctrl+C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def main_py_argv(backend: str, size: int, *extra: str) -> List[str]:
    return [sys.executable, str(ROOT / "main.py"), backend, str(size), *extra]


class WorkerProcess:
    """One worker command line as a real subprocess (its own session unless told otherwise:
    signals sent to the test's group never reach it), with stdout and stderr in a log file."""

    def __init__(
        self, argv: List[str], log_path: Path, size: int = 0, new_session: bool = True
    ) -> None:
        self.log_path = log_path
        self.size = size
        # Appending: a restarted worker (the chaos run) keeps its earlier incarnations' lines.
        self._log = open(log_path, "ab")
        self.process = subprocess.Popen(
            argv, cwd=ROOT, stdout=self._log, stderr=self._log, start_new_session=new_session
        )
        self.new_session = new_session
        self.pid = self.process.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def child_pids(self) -> List[int]:
        try:
            children = psutil.Process(self.pid).children()
        except psutil.NoSuchProcess:
            return []
        # multiprocessing also starts a resource tracker: not one of ours.
        return [c.pid for c in children if "resource_tracker" not in " ".join(_cmdline(c))]

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)  # a no-op once reaped, never a recycled pid

    def signal_group(self, signum: int) -> None:
        os.killpg(self.pid, signum)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"worker still running {timeout}s later:\n{self.output()[-3000:]}"
            ) from None

    def close(self) -> None:
        """SIGKILL the worker and everything below it, and return once all of it is gone.

        SIGKILL only starts a process' end: a child killed here may live on for a moment,
        and its socket with it. A request it left blocked in Redis (a marker wait with its
        take pipelined behind) would then still lease a job that the next test enqueues on
        the same shared server, to a claim nobody renews (a CI run saw that job come back
        15 s later as lost). So close waits until none of them holds a socket any more."""
        if self.process.poll() is None:
            try:
                descendants = psutil.Process(self.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                descendants = []
            for child in descendants:
                _kill(child.pid)
            self.process.kill()
            self.process.wait(5)
            gone = [child.pid for child in descendants]
            if self.new_session:  # children forked after the list above share its group
                gone += self._kill_group()
            wait_for(
                lambda: not any(pid_alive(pid) for pid in gone),
                timeout=15,
                message=f"the processes of worker {self.pid} to end",
            )
        self._log.close()

    def _kill_group(self) -> List[int]:
        """SIGKILL what is left of the worker's own process group; their pids."""
        left = []
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == self.pid:
                    left.append(proc.pid)
            except (ProcessLookupError, psutil.Error):
                pass
        for pid in left:
            _kill(pid)
        return left


def fake_source_worker(
    backend: str, size: int, spool: Spool, *extra: str, new_session: bool = True
) -> WorkerProcess:
    """`python main.py BACKEND SIZE --source fake ...`: the engine alone, items from `spool`."""
    argv = main_py_argv(
        backend,
        size,
        *("--source", "fake", "--fake-spool", str(spool.dir), "--fake-log", str(spool.log)),
        *("--log-level", "DEBUG", *extra),
    )
    log_path = spool.dir.parent / f"worker-{time.monotonic_ns()}.log"
    return WorkerProcess(argv, log_path, size, new_session)


def redis_worker(
    backend: str, size: int, url: str, log_dir: Path, *extra: str, new_session: bool = True
) -> WorkerProcess:
    """`python main.py BACKEND SIZE --url URL ...` on real Redis; runs the tests' jobs."""
    argv = main_py_argv(
        backend, size, "--url", url, "--allow", "tests", "--log-level", "DEBUG", *extra
    )
    log_path = log_dir / f"worker-{time.monotonic_ns()}.log"
    return WorkerProcess(argv, log_path, size, new_session)


class WorkerProcesses:
    """What the `start_worker` fixture hands out: starts workers, and kills them all after."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: List[WorkerProcess] = []

    def __call__(
        self, backend: str, size: int, source: Union[str, Spool], *extra: str, **kwargs: bool
    ) -> WorkerProcess:
        """A worker on the Redis at `source` (a URL), or on the fake source of a Spool."""
        if isinstance(source, Spool):
            worker = fake_source_worker(backend, size, source, *extra, **kwargs)
        else:
            worker = redis_worker(backend, size, source, self.log_dir, *extra, **kwargs)
        self.started.append(worker)
        return worker

    def close(self) -> None:
        for worker in self.started:
            worker.close()


def _cmdline(proc: psutil.Process) -> List[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def pid_alive(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
