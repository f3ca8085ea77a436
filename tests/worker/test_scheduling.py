"""SPEC sections 3 and 7, scheduling and retries on a real worker: enqueue_in(2) runs 2 to 3 s
later; a job failing twice then succeeding under Retry(max=3) ends finished after 3 attempts,
waiting `scheduled` for delays that grow; exhausted retries land in q.failed and
requeue_all() runs them again."""

import json
import time

from rqconc import Retry
from rqconc.connection.clients import connect
from rqconc.queue.job import JobStatus
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from tests.support.waiting import wait_for
from tests.support.worker_process import BACKENDS

QUEUE = "sched"


def runs(url, key):
    """Start times of the executions recorded under `key`."""
    return [json.loads(r)["at"] for r in connect(url).lrange(key, 0, -1)]


def started_workers(start_worker, url, backends=("threading",)):
    """One worker of 2 children per backend, each on its own queue named after it; returns
    when every child is idle (so the timings below are the scheduler's, not a start's)."""
    for backend in backends:
        start_worker(backend, 2, url, "-q", f"{QUEUE}-{backend}")
    client = connect(url)

    def all_idle():
        names = [n.decode() for n in client.zrange(KeySpace().workers, 0, -1)]
        return len(names) == len(backends) and all(
            client.hget(KeySpace().worker(n), "idle") == b"2" for n in names
        )

    wait_for(all_idle, timeout=30, message="workers up with every child idle")
    return [Queue(f"{QUEUE}-{backend}", url) for backend in backends]


def test_enqueue_in_2_s_runs_between_2_and_3_s_later_on_every_backend(redis_server, start_worker):
    # One worker per backend at once (the children's take loop is what wakes for the due
    # time); one 2 s wait instead of four.
    url = redis_server.url
    queues = started_workers(start_worker, url, BACKENDS)
    enqueued = {}
    jobs = []
    for backend, q in zip(BACKENDS, queues):
        enqueued[backend] = time.time()
        jobs.append(q.enqueue_in(2, "tests.worker.cron_jobs:record_run", url, backend))
    assert all(job.status == JobStatus.SCHEDULED for job in jobs)
    wait_for(
        lambda: all(runs(url, b) for b in BACKENDS), timeout=8, message="every delayed job ran"
    )
    delays = {b: round(runs(url, b)[0] - enqueued[b], 3) for b in BACKENDS}
    assert all(2.0 <= delay < 3.0 for delay in delays.values()), delays
    print(f"enqueue_in(2) started after: {delays}")
    wait_for(
        lambda: all(job.status == JobStatus.FINISHED for job in jobs), timeout=3, message="finished"
    )


def test_failing_twice_then_succeeding_with_retry_max_3_finishes_after_growing_delays(
    redis_server, start_worker
):
    url = redis_server.url
    (q,) = started_workers(start_worker, url)
    job = q.enqueue(
        "tests.worker.cron_jobs:fail_until",
        url,
        "runs",
        2,
        retry=Retry(max=3, backoff=0.5, factor=2, jitter=False),
    )
    # Between executions the job waits in the scheduled set, not in a sleeping worker.
    wait_for(
        lambda: job.status == JobStatus.SCHEDULED,
        timeout=5,
        interval=0.01,
        message="the job scheduled for its first retry",
    )
    assert job.get(timeout=15) == "succeeded on execution 3"
    assert job.status == JobStatus.FINISHED and job.attempts == 3
    first, second, third = runs(url, "runs")
    delays = [second - first, third - second]
    # Delay before re-run n: backoff * factor**(n-1) = 0.5 s, then 1 s (+ under 1 s to start).
    assert 0.5 <= delays[0] < 1.5 and 1.0 <= delays[1] < 2.0, delays
    assert delays[1] > delays[0], delays
    print(f"delays between executions: {delays[0]:.3f} s, {delays[1]:.3f} s")


def test_exhausted_retries_land_in_failed_and_requeue_all_runs_them_again(
    redis_server, start_worker
):
    url = redis_server.url
    (q,) = started_workers(start_worker, url)
    retry = Retry(max=1, backoff=0.2, jitter=False)
    jobs = [
        q.enqueue("tests.worker.cron_jobs:fail_until", url, f"runs-{n}", 2, retry=retry)
        for n in range(2)
    ]
    wait_for(lambda: len(q.failed) == 2, timeout=10, message="both jobs dead-lettered")
    for n, job in enumerate(jobs):
        assert job.status == JobStatus.FAILED and job.attempts == 2  # first run + 1 retry
        assert job.exc_info[0] == "ValueError" and len(runs(url, f"runs-{n}")) == 2
    assert set(q.failed.job_ids) == {j.id for j in jobs}

    assert q.failed.requeue_all() == 2
    assert [j.get(timeout=10) for j in jobs] == ["succeeded on execution 3"] * 2
    assert len(q.failed) == 0
    assert all(j.status == JobStatus.FINISHED and j.attempts == 1 for j in jobs)
    assert [len(runs(url, f"runs-{n}")) for n in range(2)] == [3, 3]
