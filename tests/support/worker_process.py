"""Drive `python main.py ...` as a real subprocess and read what it does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import psutil

from tests.support.waiting import wait_for  # noqa: F401 - re-exported for the tests

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["forking", "multiprocessing", "threading", "gevent"]
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


class Worker:
    """One `python main.py BACKEND SIZE --source fake ...` subprocess."""

    def __init__(
        self, backend: str, size: int, spool: Spool, *extra: str, new_session: bool = True
    ) -> None:
        args = [
            sys.executable,
            str(ROOT / "main.py"),
            backend,
            str(size),
            "--source",
            "fake",
            "--fake-spool",
            str(spool.dir),
            "--fake-log",
            str(spool.log),
            "--log-level",
            "DEBUG",
            *extra,
        ]
        self.stderr_path = spool.dir.parent / f"worker-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            args, cwd=ROOT, stdout=self._stderr, stderr=self._stderr, start_new_session=new_session
        )
        self.pid = self.process.pid
        self.size = size

    def output(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def child_pids(self) -> List[int]:
        try:
            children = psutil.Process(self.pid).children()
        except psutil.NoSuchProcess:
            return []
        # multiprocessing also starts a resource tracker: not one of ours.
        return [c.pid for c in children if "resource_tracker" not in " ".join(_cmdline(c))]

    def signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def signal_group(self, signum: int) -> None:
        os.killpg(self.pid, signum)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"worker still running {timeout}s later:\n{self.output()}"
            ) from None

    def close(self) -> None:
        if self.process.poll() is None:
            for child in self.child_pids():
                _kill(child)
            self.process.kill()
            self.process.wait(5)
        self._stderr.close()


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
