"""Jobs that freeze the supervisor's loop (issue 14, item 7), on real workers and Redis: a
greenlet computing without yielding must not lose its lease (renewed from an OS thread), and
a job that returns past its timeout is failed with JobTimeout, never recorded finished."""

import pytest

from rqconc import JobFailed, JobStatus, Queue
from tests.support.worker_process import wait_for

JOBS = "tests.engine.starving_jobs"


def executions(server):
    return [v.decode() for v in server.client().lrange("executions", 0, -1)]


def test_a_greenlet_that_never_yields_keeps_its_lease(redis_server, start_worker):
    url = redis_server.url
    start_worker("gevent", 1, url, "--lease-seconds", "1")
    q = Queue(connection=url)
    job = q.enqueue(f"{JOBS}:compute", url, "cpu", 5.0, timeout=60)
    wait_for(lambda: executions(redis_server) == ["cpu"], message="job started")
    # A second worker recovers every lease that runs out while the first one computes.
    start_worker("threading", 1, url, "--lease-seconds", "1")
    assert job.get(timeout=30) == "cpu"
    assert executions(redis_server) == ["cpu"]


@pytest.mark.parametrize(
    "backend,function,argument",
    [("gevent", "compute", 3.0), ("threading", "backtrack", 26)],
)
def test_a_job_that_returns_past_its_timeout_is_failed_not_finished(
    backend, function, argument, redis_server, start_worker
):
    url = redis_server.url
    start_worker(backend, 1, url)
    q = Queue(connection=url)
    job = q.enqueue(f"{JOBS}:{function}", url, "late", argument, timeout=1)
    with pytest.raises(JobFailed) as info:
        job.get(timeout=60)
    assert "JobTimeout" in info.value.exc_type
    assert job.status == JobStatus.FAILED
    assert executions(redis_server) == ["late"]
