"""SPEC 17, logs with the job: inside a job, `get_current_job().log(message)` and records of
the logger `rqconc.job` are kept with the job (the newest 100 lines, at most 64 KB), as long
as its result, and deleted with it; concurrent jobs of one worker never mix their lines."""

import pytest

from rqconc import JobStatus, Queue
from tests.support.worker_process import BACKENDS, wait_for

JOBS = "tests.worker.job_log_jobs"


def messages(job):
    """The lines without their time stamp ("2026-01-01 12:00:00.000 ")."""
    return [line.split(" ", 2)[2] for line in job.logs()]


def expected(tag, lines):
    return [f"{tag} line {n}" if n % 2 == 0 else f"INFO {tag} record {n}" for n in range(lines)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_jobs_lines_are_kept_with_it_as_long_as_its_result(backend, redis_server, start_worker):
    start_worker(backend, 3, redis_server.url)
    client = redis_server.client()
    q = Queue(connection=redis_server.url)
    # Three at once on one worker (threads, greenlets, tasks side by side; the process
    # backends one each): none gets another's lines.
    jobs = [q.enqueue(f"{JOBS}:talk", f"job{n}", 12, result_ttl=300) for n in range(2)]
    jobs.append(q.enqueue(f"{JOBS}:talk_async", "coro", 12, result_ttl=300))
    failing = q.enqueue(f"{JOBS}:talk_then_fail", "bad", failure_ttl=900)
    gone = q.enqueue(f"{JOBS}:talk", "brief", 2, result_ttl=0)
    silent = q.enqueue(f"{JOBS}:silent")
    hung = q.enqueue(f"{JOBS}:talk_then_hang", "hung", timeout=1, failure_ttl=300)
    assert [j.get(timeout=30) for j in jobs] == ["job0", "job1", "coro"]
    for job in jobs:
        assert messages(job) == expected(job.args[0], 12)
        # The worker gives the log its TTL just after it recorded the outcome get() saw.
        log_key = q.keys.log(job.id)
        wait_for(lambda k=log_key: 0 < client.pttl(k) <= 300_000, 10, message="log TTL")
        log_ttl, job_ttl = client.pttl(q.keys.log(job.id)), client.pttl(q.keys.job(job.id))
        assert 0 < job_ttl <= 300_000 and abs(log_ttl - job_ttl) < 2_000, (log_ttl, job_ttl)
    wait_for(lambda: failing.status is JobStatus.FAILED, 20, message="the failing job failed")
    kept = messages(failing)
    assert kept[0] == "bad before the failure"
    assert kept[1].startswith("ERROR bad failed\nTraceback") and "KeyError: 'bad'" in kept[1]
    wait_for(lambda: 800_000 < client.pttl(q.keys.log(failing.id)) <= 900_000, 10)
    # result_ttl=0: the job is deleted at once, its lines with it.
    wait_for(lambda: not client.exists(q.keys.job(gone.id)), 20, message="brief job deleted")
    wait_for(lambda: not client.exists(q.keys.log(gone.id)), 10, message="its log deleted")
    assert silent.get(timeout=20) == "nothing logged"
    assert silent.logs() == [] and not client.exists(q.keys.log(silent.id))
    # A timeout is recorded by the supervisor, which gives the log the job's TTL itself.
    wait_for(lambda: hung.status is JobStatus.FAILED, 20, message="the hung job timed out")
    assert messages(hung) == ["hung before the timeout"]
    wait_for(lambda: 200_000 < client.pttl(q.keys.log(hung.id)) <= 300_000, 10)  # not 500 s
    # Deleted with the job.
    jobs[0].delete()
    assert not client.exists(q.keys.log(jobs[0].id))
