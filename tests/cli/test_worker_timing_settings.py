"""`--callback-timeout`, `--webhook-timeout` and `--worker-ttl` reach the worker's jobs and
its registry entry (SPEC section 14), on a real worker and real Redis."""

import os
import signal
import socket
import subprocess
import sys

from rqconc import JobStatus, Queue
from rqconc.store.keys import KeySpace
from tests.cli.test_commands import ENTRY
from tests.support.waiting import wait_for
from tests.support.worker_process import ROOT

KEYS = KeySpace("rqconc")


def test_callback_and_webhook_timeouts_and_worker_ttl_are_the_workers(tmp_path, redis_server):
    silent = socket.socket()  # accepts connections (its backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    argv = [sys.executable, "-c", ENTRY, "worker", "-b", "threading", "-n", "2"]
    argv += ["--url", redis_server.url, "-q", "timing", "--allow", "tests"]
    argv += ["--callback-timeout", "1", "--webhook-timeout", "0.5", "--worker-ttl", "33"]
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        q = Queue("timing", connection=redis_server.url)
        job = q.enqueue(
            "tests.queue.tasks:add",
            1,
            2,
            on_success="tests.cli.settings_jobs:slow_callback",
            success_url=f"http://127.0.0.1:{silent.getsockname()[1]}/hook",
        )
        assert job.get(timeout=15) == 3
        callback = q.fetch_job(f"{job.id}.on_success.1")
        hook = q.fetch_job(f"{job.id}.success_url.1")
        # The defaults (60 s, 15 s) would outlast these waits.
        wait_for(lambda: callback.status == JobStatus.FAILED, timeout=10, message="callback")
        assert "ran past its timeout of" in callback.exc_info[1]
        wait_for(lambda: hook.status == JobStatus.SCHEDULED, timeout=8, message="hook retry")
        assert "timed out" in hook.exc_info[1]
        names = wait_for(lambda: redis_server.client().zrange(KEYS.workers, 0, -1), timeout=10)
        ttl = redis_server.client().pttl(KEYS.worker(names[0].decode()))
        assert 0 < ttl <= 33_000
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        finally:
            worker.kill()
            silent.close()
