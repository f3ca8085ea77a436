"""SPEC 10: `async def` jobs on every backend: the result is awaited, each child reuses one
event loop, and a timeout or `job.cancel()` cancels the job's task."""

import pytest

from rqconc import JobFailed, JobStatus, Queue
from rqconc.worker.registry import list_workers
from tests.support.worker_process import BACKENDS, wait_for

JOBS = "tests.worker.async_jobs"


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_jobs_are_awaited_in_one_loop_and_a_timeout_or_cancel_cancels_their_task(
    backend, redis_server, start_worker
):
    # One worker per backend for the three promises: a worker start is most of the cost.
    start_worker(backend, 1, redis_server.url)
    q = Queue(connection=redis_server.url)
    from tests.worker.async_jobs import add_later  # enqueued by reference, not only by name

    assert q.enqueue(add_later, 2, 3, 0.01).get(timeout=20) == 5
    with pytest.raises(JobFailed) as info:
        q.enqueue(f"{JOBS}:fails").get(timeout=20)
    assert info.value.exc_type == "KeyError" and "async boom" in info.value.exc_message
    # The child keeps one event loop over many jobs.
    assert len({q.enqueue(f"{JOBS}:loop_identity").get(timeout=20) for _ in range(4)}) == 1

    client = redis_server.client()
    threaded = backend in ("threading", "asyncio")  # a thread's coroutine is cancelled
    timed = q.enqueue(f"{JOBS}:sleep_then_mark", redis_server.url, "timed", 30, timeout=1)
    with pytest.raises(JobFailed) as info:
        timed.get(timeout=15)
    assert info.value.exc_type.endswith("JobTimeout")
    if threaded:
        wait_for(lambda: client.lrange("timed", 0, -1) == [b"cancelled"], 10, message="cancel")

    canceled = q.enqueue(f"{JOBS}:sleep_then_mark", redis_server.url, "canceled", 30)
    wait_for(lambda: canceled.status == JobStatus.STARTED, 15, message="started")
    canceled.cancel()
    wait_for(lambda: canceled.status == JobStatus.CANCELED, 5, message="canceled")
    # The worker keeps its capacity: the next async job runs.
    assert q.enqueue(f"{JOBS}:add_later", 2, 2).get(timeout=15) == 4
    if threaded:
        wait_for(lambda: client.lrange("canceled", 0, -1) == [b"cancelled"], 10, message="cancel")


def test_asyncio_runs_many_async_jobs_at_once_and_plain_ones_in_its_threads(
    redis_server, start_worker
):
    start_worker("asyncio", 20, redis_server.url)
    q = Queue(connection=redis_server.url)
    jobs = [q.enqueue(f"{JOBS}:add_later", n, 0, 1.0) for n in range(20)]
    # 20 one-second sleeps at once, not in turn.
    wait_for(lambda: all(j.status == JobStatus.FINISHED for j in jobs), 8, message="all done")
    assert [j.return_value for j in jobs] == list(range(20))
    assert q.enqueue(f"{JOBS}:plain_thread_name").get(timeout=15).startswith("rqconc-child-")


def test_asyncio_idle_slots_share_their_takes_so_a_burst_costs_fewer_steps_than_jobs(
    redis_server, start_worker
):
    """SPEC 10 / issue 18: at 200 slots a take must not cost a round trip per job; idle slots
    share one take step (lua/take_many.lua), each job leased under its own slot's claim."""
    slots = 20
    start_worker("asyncio", slots, redis_server.url)
    client = redis_server.client()
    wait_for(
        lambda: (w := list_workers(client)) and w[0]["idle"] == slots, 20, message="slots idle"
    )
    q = Queue(connection=redis_server.url)
    client.config_resetstat()
    url = redis_server.url
    jobs = q.enqueue_many([(f"{JOBS}:sleep_then_mark", (url, f"m{n}", 1.0)) for n in range(slots)])
    wait_for(lambda: all(j.status == JobStatus.STARTED for j in jobs), 20, message="started")
    # One script call per take, plus the odd idle take before the burst: a take per slot
    # would be 20 or more.
    takes = int(client.info("commandstats")["cmdstat_evalsha"]["calls"])
    assert takes < slots, takes
    wait_for(lambda: all(j.status == JobStatus.FINISHED for j in jobs), 20, message="finished")
    assert [client.lrange(f"m{n}", 0, -1) for n in range(slots)] == [[b"finished"]] * slots


def test_an_eager_async_job_is_awaited_even_from_inside_a_running_loop():
    import asyncio

    q = Queue(eager=True)
    assert q.enqueue(f"{JOBS}:add_later", 4, 5).return_value == 9

    async def enqueue_from_async_code():
        return q.enqueue(f"{JOBS}:add_later", 1, 2).return_value

    assert asyncio.run(enqueue_from_async_code()) == 3
