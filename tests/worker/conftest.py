import signal
import subprocess
import sys
import time

import pytest

from tests.support.worker_process import ROOT


class RedisWorker:
    """`python main.py BACKEND SIZE --url URL ...` on real Redis."""

    def __init__(self, backend, size, url, tmp_path, *extra):
        self.log_path = tmp_path / f"worker-{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")
        args = [
            sys.executable,
            str(ROOT / "main.py"),
            backend,
            str(size),
            "--url",
            url,
            "--allow",
            "tests",
            "--log-level",
            "DEBUG",
            *extra,
        ]
        self.process = subprocess.Popen(
            args, cwd=ROOT, stdout=self._log, stderr=self._log, start_new_session=True
        )
        self.pid = self.process.pid

    def output(self):
        return self.log_path.read_text(errors="replace")

    def signal(self, signum):
        self.process.send_signal(signum)

    def wait_exit(self, timeout):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker still running:\n{self.output()[-3000:]}") from None

    def close(self):
        if self.process.poll() is None:
            import psutil

            for child in psutil.Process(self.pid).children(recursive=True):
                child.kill()
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(5)
        self._log.close()


@pytest.fixture
def start_redis_worker(tmp_path):
    workers = []

    def start(backend, size, url, *extra):
        worker = RedisWorker(backend, size, url, tmp_path, *extra)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.close()
