"""SPEC 10: inside a job, `rqconc.get_current_job()` returns it (per thread, greenlet and
task), `job.meta` is saved with `save_meta()`, and `job.set_progress()` is readable by any
client as `job.progress` and appends a `progress` event."""

import pytest

from rqconc import EventStream, Job, JobStatus, Queue, get_current_job
from tests.support.worker_process import BACKENDS, wait_for

JOBS = "tests.worker.reporting_jobs"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_reports_meta_and_progress_that_any_client_reads(backend, redis_server, start_worker):
    """Then, on the same worker (a worker costs ~1 s of CPU to start): three async jobs at
    once each report as their own job."""
    worker = start_worker(backend, 3, redis_server.url)
    q = Queue(connection=redis_server.url)
    plain = q.enqueue(f"{JOBS}:report", "go:plain", meta={"given": 1})
    coro = q.enqueue(f"{JOBS}:report_async", "go:coro")
    reader = Job.fetch(plain.id, connection=redis_server.url)  # another client
    wait_for(lambda: reader.progress == (0.5, "half"), 20, message="half way")
    wait_for(lambda: coro.progress == (0.25, "a quarter"), 20, message="a quarter")
    assert plain.status == JobStatus.STARTED
    client = redis_server.client()
    client.rpush("go:plain", 1)
    client.set("go:coro", 1)
    assert plain.get(timeout=20) == plain.id and coro.get(timeout=20) == coro.id
    assert plain.progress == (1.0, None) and coro.progress == (1.0, "done")
    plain.refresh()
    coro.refresh()
    assert plain.meta == {"given": 1, "seen_by": "sync"} and coro.meta == {"seen_by": "async"}
    events = [e for e in EventStream(redis_server.url).for_job(plain.id)]
    progress = [(e["progress"], e.get("message")) for e in events if e["event"] == "progress"]
    assert progress == [("0.5", "half"), ("1.0", None)]
    first = next(e for e in events if e["event"] == "progress")
    assert int(first["attempt"]) == 1 and first["func"] == f"{JOBS}:report"
    assert events[-1]["event"] == "finished" and events[-2]["worker"]
    three_async_jobs_at_once_each_report_as_their_own_job(q, client, worker)


def three_async_jobs_at_once_each_report_as_their_own_job(q, client, worker):
    """Issue 31: each child runs coroutines while its siblings run theirs (gevent's greenlets
    share one thread, whose running loop a second child took for its own)."""
    assert worker.process.poll() is None
    jobs = [q.enqueue(f"{JOBS}:report_async", f"go:{n}") for n in range(3)]
    # All three half way at once: they run side by side, none waits for another.
    wait_for(
        lambda: all(j.progress == (0.25, "a quarter") for j in jobs),
        20,
        message=f"three jobs running: {[j.status for j in jobs]}",
    )
    for n in range(3):
        client.set(f"go:{n}", 1)
    assert [j.get(timeout=20) for j in jobs] == [j.id for j in jobs]
    assert [j.progress for j in jobs] == [(1.0, "done")] * 3


def test_each_task_of_the_asyncio_backend_sees_its_own_job(redis_server, start_worker):
    start_worker("asyncio", 10, redis_server.url)
    q = Queue(connection=redis_server.url)
    jobs = [q.enqueue(f"{JOBS}:who_am_i", 0.2 + n / 100) for n in range(10)]
    assert [j.get(timeout=20) for j in jobs] == [f"{j.id}:{j.id}" for j in jobs]


def test_no_current_job_outside_a_job_and_progress_outside_0_to_1_is_refused(redis_server):
    assert get_current_job() is None
    job = Queue(connection=redis_server.url).enqueue(f"{JOBS}:meta_of_enqueue")
    for bad in (-0.1, 1.5, float("nan"), "half", True):
        with pytest.raises(ValueError, match="progress must be"):
            job.set_progress(bad)
    assert job.set_progress(0.5) is False  # queued, not running: nothing stored
    assert job.progress == (0.0, None)
    job.meta["note"] = "kept"
    job.save_meta()
    assert Job.fetch(job.id, connection=redis_server.url).meta == {"note": "kept"}


def test_an_eager_job_sees_itself_and_reports_as_on_a_worker():
    q = Queue(eager=True)
    assert q.enqueue(f"{JOBS}:meta_of_enqueue", meta={"eager": True}).return_value == {
        "eager": True
    }
    job = q.enqueue(f"{JOBS}:report_eagerly")
    assert job.return_value == job.id
    assert job.meta == {"seen": True} and job.progress == (0.75, "most")
    with pytest.raises(ValueError):
        job.set_progress(2)
