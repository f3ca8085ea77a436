"""`rqconc worker -b BACKEND -n SIZE` itself (not `python main.py`) on real Redis: it runs
jobs, a SIGTERM is a warm shutdown (exit 0), and `--burst` exits 0 once drained."""

import os
import signal
import subprocess
import sys

from rqconc import JobStatus, Queue
from tests.cli.test_commands import ENTRY
from tests.support.worker_process import ROOT


def rqconc_worker(url, *extra, log_path):
    """`rqconc worker -b threading -n 2 --url URL -q cli-worker ...`, logging to `log_path`."""
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    log = open(log_path, "wb")
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                ENTRY,
                "worker",
                "-b",
                "threading",
                "-n",
                "2",
                "--url",
                url,
                "-q",
                "cli-worker",
                "--allow",
                "tests",
                *extra,
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    finally:
        log.close()  # the child has its own copy


def exit_code(process, log_path, timeout):
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
        raise AssertionError(f"worker still running:\n{log_path.read_text()[-3000:]}") from None


def test_rqconc_worker_runs_jobs_and_exits_0_on_sigterm(redis_server, tmp_path):
    log_path = tmp_path / "worker.log"
    process = rqconc_worker(redis_server.url, "--name", "cli-made", log_path=log_path)
    try:
        q = Queue("cli-worker", redis_server.url)
        assert q.enqueue("tests.worker.jobs:add", 2, 3).get(timeout=20) == 5
        process.send_signal(signal.SIGTERM)
        assert exit_code(process, log_path, 10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
    assert "cli-made" in log_path.read_text()


def test_rqconc_worker_burst_exits_0_once_its_queue_is_drained(redis_server, tmp_path):
    q = Queue("cli-worker", redis_server.url)
    jobs = [q.enqueue("tests.worker.jobs:add", n, n) for n in range(5)]
    log_path = tmp_path / "worker.log"
    process = rqconc_worker(redis_server.url, "--burst", log_path=log_path)
    assert exit_code(process, log_path, 30) == 0
    assert [job.status for job in jobs] == [JobStatus.FINISHED] * 5
    assert [job.return_value for job in jobs] == [0, 2, 4, 6, 8]
    assert q.count == 0 and q.started_job_ids == []
