"""SPEC 18, soft timeouts, on real workers of every backend (and a process child with
`--slots`): JobSoftTimeout is raised inside the job after `soft_timeout` seconds, a job that
catches it and returns finishes with its value, one that lets it propagate fails with it
(retried as its policy says), and one that ignores it is still ended by the hard timeout."""

import time

import pytest

from rqconc import JobFailed, JobStatus, Queue, Retry
from tests.support.worker_process import BACKENDS

JOBS = "tests.worker.soft_timeout_jobs"
SOFT, HARD = 0.3, 2.0
KINDS = [("plain", ""), ("async", "_async")]
# Every backend, and a forking child running its jobs in slot threads (the threads' way).
WORKERS = [(backend, ()) for backend in BACKENDS] + [("forking", ("--slots", "3"))]


def failure(job, timeout=15):
    with pytest.raises(JobFailed) as info:
        job.get(timeout=timeout)
    return info.value


@pytest.mark.parametrize(
    "backend, extra", WORKERS, ids=[f"{b}{'-slots' if e else ''}" for b, e in WORKERS]
)
def test_soft_timeout_is_raised_inside_the_job_and_the_hard_one_still_ends_it(
    backend, extra, redis_server, start_worker
):
    url, client = redis_server.url, redis_server.client()
    q = Queue(connection=url)
    soft = {"soft_timeout": SOFT, "timeout": HARD}
    # The jobs the hard timeout ends go first, so that they run beside the short ones.
    ignoring = {
        kind: q.enqueue(f"{JOBS}:ignores{suffix}", url, f"ignored:{kind}", **soft)
        for kind, suffix in KINDS
    }
    cleaning = {
        kind: q.enqueue(f"{JOBS}:cleans_up{suffix}", url, f"cleaned:{kind}", **soft)
        for kind, suffix in KINDS
    }
    failing = {
        kind: q.enqueue(f"{JOBS}:propagates{suffix}", retry=Retry(max=1, backoff=0), **soft)
        for kind, suffix in KINDS
    }
    plain = q.enqueue("tests.worker.jobs:add", 1, 2)  # no soft timeout: as before
    began = time.monotonic()
    start_worker(backend, 4, url, *extra)

    assert plain.get(timeout=30) == 3
    for kind, job in cleaning.items():
        assert job.get(timeout=15) == "cleaned up", kind
        assert job.status == JobStatus.FINISHED
        assert client.get(f"cleaned:{kind}") == b"cleaned"
    for kind, job in failing.items():
        error = failure(job)
        assert error.exc_type.endswith("JobSoftTimeout"), (kind, error)
        assert "soft timeout" in error.exc_message
        assert job.attempts == 2, kind  # retried once, as any failure is
    for kind, job in ignoring.items():
        error = failure(job)
        assert error.exc_type.endswith(".JobTimeout"), (kind, error)
        assert client.get(f"ignored:{kind}") == b"ignored", kind  # it did see the soft one
    # Nothing waited for the jobs' 30 s sleeps (worker start included).
    assert time.monotonic() - began < 25


def test_a_job_without_a_soft_timeout_stores_none(redis_server):
    q = Queue(connection=redis_server.url)
    job = q.enqueue("tests.worker.jobs:add", 1, 2)
    assert job.soft_timeout is None
    assert b"soft_timeout" not in redis_server.client().hkeys(q.keys.job(job.id))
    assert q.enqueue("tests.worker.jobs:add", 1, 2, soft_timeout=5).soft_timeout == 5
