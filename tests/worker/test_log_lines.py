"""Issue 15, items 8 and 11: the lines a worker logs, read from a real worker's output.

Per-job lines name the function and say the id once (the `job_id` field); the start line
names the queues, the Redis and the allow-list; a late outcome refused by the fence says
what became of the job instead of guessing. (The cancel line has its queue: read by
tests/worker/test_lifecycle.py's cancel test, on every backend, from its own worker.)
"""

import pytest

from rqconc import JobStatus, Queue
from rqconc.errors import JobFailed
from tests.support.worker_process import wait_for

JOBS = "tests.worker.jobs"


def lines_with(output: str, *parts: str) -> list:
    return [line for line in output.splitlines() if all(p in line for p in parts)]


def test_the_start_line_names_the_queues_the_redis_and_the_allow_list(redis_server, start_worker):
    worker = start_worker("forking", 1, redis_server.url, "--queues", "high,low")
    port = str(redis_server.url.rsplit(":", 1)[1].split("/")[0])
    found = wait_for(lambda: lines_with(worker.output(), "serves queues"), message="the start line")
    line = found[0]
    assert "queues high, low" in line and f":{port}" in line, line
    assert "allowed modules: tests" in line, line


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_per_job_lines_name_the_function_and_say_the_id_once(backend, redis_server, start_worker):
    worker = start_worker(backend, 1, redis_server.url)
    job = Queue(connection=redis_server.url).enqueue(f"{JOBS}:add", 1, 2)
    assert job.get(timeout=15) == 3
    finished = wait_for(
        lambda: lines_with(worker.output(), f"job {JOBS}:add finished in"),
        message="the finished line",
    )
    started = lines_with(worker.output(), f"job {JOBS}:add started")
    for line in started + finished:
        assert line.count(job.id) == 1 and f"job_id={job.id}" in line, line
        assert "queue=default" in line, line


def test_a_thread_abandoned_at_its_timeout_says_its_job_failed_not_that_it_runs_again(
    redis_server, start_worker
):
    worker = start_worker("threading", 1, redis_server.url)
    job = Queue(connection=redis_server.url).enqueue(f"{JOBS}:nap", 2.5, timeout=1)
    with pytest.raises(JobFailed):
        job.get(timeout=15)
    # The job's own timeout, not what was left of its deadline (0.999963 s).
    assert job.exc_info[1] == "the job ran past its timeout of 1 s and was stopped"
    line = wait_for(
        lambda: lines_with(worker.output(), "outcome is dropped", f"job_id={job.id}"),
        timeout=10,
        message="the late return's line",
    )[0]
    assert "failed meanwhile (rqconc.errors.JobTimeout" in line, line
    assert "dead letters" in line and "elsewhere" not in line, line
    assert job.status == JobStatus.FAILED
