"""SPEC 17, logs with the job, on the store: the bounds (the newest 100 lines, at most
64 KB), the expiry that follows the job's outcome, and every way a job is deleted taking
its log along; eager mode keeps them too. A real worker on every backend:
tests/worker/test_job_logs.py."""

import pytest

from rqconc import Job, JobStatus, Queue
from rqconc.queue.job_logs import keep_job_records
from rqconc.store.defaults import LOG_BYTES, LOG_LINES
from tests.queue.helpers import take_and_run

JOBS = "tests.worker.job_log_jobs"


def messages(job):
    return [line.split(" ", 2)[2] for line in job.logs()]


def test_a_log_keeps_its_newest_100_lines(queue):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    for n in range(150):
        job.log(f"line {n}")
    assert messages(job) == [f"line {n}" for n in range(50, 150)] and LOG_LINES == 100


def test_a_log_keeps_at_most_64_kb_and_a_longer_line_is_cut(queue, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    for n in range(10):
        job.log(f"{n} " + "x" * 20_000)
    kept = job.logs()
    assert sum(len(line.encode()) for line in kept) <= LOG_BYTES
    assert [line.split(" ", 3)[2] for line in kept] == ["7", "8", "9"]  # the newest, whole
    job.log("é" * 100_000)  # two bytes each: cut on a character, within the bound
    (line,) = job.logs()
    assert len(line.encode()) <= LOG_BYTES and line.endswith("é\u2026")
    assert client.memory_usage(keys.log(job.id)) < 2 * LOG_BYTES


def test_a_log_expires_with_the_jobs_result_and_goes_with_result_ttl_0(make_source, client, keys):
    keep_job_records()
    source = make_source(allow=["tests"])
    q = Queue(connection=source.url)
    kept = q.enqueue(f"{JOBS}:talk", "kept", 4, 0, result_ttl=120)
    gone = q.enqueue(f"{JOBS}:talk", "gone", 2, 0, result_ttl=0)
    failed = q.enqueue(f"{JOBS}:talk_then_fail", "bad", failure_ttl=600)
    silent = q.enqueue(f"{JOBS}:silent")
    for _ in range(4):
        take_and_run(source)
    assert messages(kept) == [
        "kept line 0",
        "INFO kept record 1",
        "kept line 2",
        "INFO kept record 3",
    ]
    assert 110_000 < client.pttl(keys.log(kept.id)) <= client.pttl(keys.job(kept.id)) + 5
    assert not client.exists(keys.job(gone.id)) and not client.exists(keys.log(gone.id))
    assert failed.status is JobStatus.FAILED
    assert 590_000 < client.pttl(keys.log(failed.id)) <= 600_000
    assert not client.exists(keys.log(silent.id)) and silent.logs() == []


def test_a_log_goes_with_its_job_however_it_is_deleted(queue, make_source, client, keys):
    deleted, emptied = (queue.enqueue("tests.queue.tasks:add", 1, n) for n in range(2))
    for job in (deleted, emptied):
        job.log("a line")
    assert deleted.delete() and queue.empty() == 1
    source = make_source()
    purged, requeued = (queue.enqueue("tests.queue.tasks:boom") for _ in range(2))
    for job in (purged, requeued):
        job.log("before it failed")
        take_and_run(source)
        assert job.status is JobStatus.FAILED
    assert queue.failed.requeue(requeued.id) and queue.failed.purge() == 1
    assert not any(client.exists(keys.log(j.id)) for j in (deleted, emptied, purged, requeued))
    deleted.log("after its deletion")  # a log is never made for a job that is gone
    assert not client.exists(keys.log(deleted.id))


def test_an_eager_job_keeps_its_lines_too():
    q = Queue(eager=True)
    job = q.enqueue(f"{JOBS}:talk", "eager", 3, 0)
    assert job.get() == "eager"
    assert messages(job) == ["eager line 0", "INFO eager record 1", "eager line 2"]
    for n in range(150):
        job.log(f"more {n}")
    assert len(job.logs()) == 100 and messages(job)[-1] == "more 149"


@pytest.mark.parametrize("transport", ["sync", "async"])
def test_any_client_reads_a_jobs_lines(queue, redis_url, transport):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    job.log("read anywhere")
    if transport == "sync":
        lines = Job.fetch(job.id, connection=redis_url).logs()
    else:
        import asyncio

        from rqconc.aio import AsyncQueue

        async def read():
            found = await AsyncQueue(connection=redis_url).fetch_job(job.id)
            return await found.logs()

        lines = asyncio.run(read())
    assert [line.split(" ", 2)[2] for line in lines] == ["read anywhere"]
