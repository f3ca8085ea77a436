"""SPEC 10: `async def` jobs on every backend: the result is awaited, each child reuses one
event loop, and a timeout, `job.cancel()` or a cold shutdown cancels the job's task."""

import signal
import time

import pytest

from rqconc import JobFailed, JobStatus, Queue
from rqconc.worker.registry import list_workers
from tests.support.lua_calls import step_calls
from tests.support.waiting import promised
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
    # Ending a thread or greenlet child cancels its coroutine's task (a process dies whole).
    threaded = backend in ("threading", "asyncio", "gevent")
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


# (backend, size, options, async jobs running at once): every backend that runs async jobs,
# with many of them where the backend runs many at once (issue 31: 200 on asyncio).
COLD_SHUTDOWNS = [
    pytest.param("asyncio", 200, (), 200, id="asyncio-200"),
    pytest.param("threading", 50, (), 50, id="threading-50"),
    pytest.param("gevent", 50, (), 50, id="gevent-50"),
    pytest.param("forking", 3, (), 3, id="forking-3"),
    pytest.param("multiprocessing", 3, (), 3, id="multiprocessing-3"),
    pytest.param("forking", 2, ("--slots", "50"), 100, id="forking-2-slots-50"),
]


@pytest.mark.parametrize("backend, size, options, count", COLD_SHUTDOWNS)
def test_a_cold_shutdown_puts_every_running_async_job_back_in_time_without_an_attempt(
    backend, size, options, count, redis_server, start_worker
):
    """SPEC 2 and 10: the cancelled task of an interrupted async job is the supervisor's to
    settle (put back at the front, no attempt counted), never a failure its slot records;
    and the worker is gone within 1 s of the second signal."""
    worker = start_worker(backend, size, redis_server.url, *options)
    q = Queue(connection=redis_server.url)
    running = q.enqueue_many([(f"{JOBS}:add_later", (1, 2, 60)) for _ in range(count)])
    wait_for(lambda: all(j.status == JobStatus.STARTED for j in running), 60, message="all started")
    waiting = q.enqueue(f"{JOBS}:add_later", 0, 0)
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
    worker.signal(signal.SIGTERM)
    signalled = time.monotonic()
    assert worker.wait_exit(10) == 1
    took = time.monotonic() - signalled
    statuses = {(j.status, j.attempts) for j in running}
    assert statuses == {(JobStatus.QUEUED, 0)}, (statuses, worker.output()[-3000:])
    assert len(q.failed) == 0
    assert q.job_ids[-1] == waiting.id
    assert set(q.job_ids[:-1]) == {j.id for j in running}
    assert "MaxConnectionsError" not in worker.output()
    assert took <= promised(1.0), f"the worker needed {took:.2f} s to exit"


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
    takes = step_calls(client)
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
