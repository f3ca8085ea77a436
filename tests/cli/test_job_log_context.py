"""Log records a job's own code emits carry the job's id, in text and JSON formats, on every
backend (issue 15, item 11)."""

import json

import pytest

from rqconc import Queue
from tests.cli import logging_jobs

BACKENDS = ["forking", "multiprocessing", "threading", "gevent"]


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_user_log_lines_carry_the_job_id(redis_server, start_worker, backend, fmt):
    job = Queue("logq", connection=redis_server.url).enqueue(logging_jobs.say, "hello")
    worker = start_worker(
        backend, 2, redis_server.url, "-q", "logq", "--burst", "--log-format", fmt
    )
    assert worker.wait_exit(60) == 0
    lines = [line for line in worker.output().splitlines() if "user code says hello" in line]
    assert len(lines) == 1, worker.output()
    if fmt == "json":
        record = json.loads(lines[0])
        assert record["logger"] == "myapp.tasks" and record["job_id"] == job.id
    else:
        assert f"job_id={job.id}" in lines[0]
