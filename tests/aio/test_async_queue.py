"""rqconc.aio on real Redis and real workers (SPEC 15, first two bullets): the same jobs as
the sync API's, the same errors, eager mode, and no slow callback on the event loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from rqconc import errors
from rqconc.aio import AsyncEagerJob, AsyncJob, AsyncQueue
from rqconc.queue.queue import Queue
from rqconc.queue.workflow.groups import group
from rqconc.store.status import JobStatus
from tests.aio import tasks

ROOT = Path(__file__).resolve().parents[2]


def test_an_async_enqueue_runs_on_a_real_worker_and_get_awaits_it(
    redis_url, start_worker, monkeypatch
):
    monkeypatch.setenv("REDIS_URL", redis_url)  # the @task's connection: the precedence
    start_worker("threading", 2, redis_url, "-q", "aio")

    async def main():
        q = AsyncQueue("aio", redis_url)
        job = await q.enqueue(tasks.add, 2, 3, priority=5)
        assert isinstance(job, AsyncJob) and job.func_name == "tests.aio.tasks:add"
        assert await job.get(timeout=30) == 5
        await job.refresh()
        assert job.status is JobStatus.FINISHED and job.return_value == 5
        failing = await q.enqueue(tasks.boom, "no")
        with pytest.raises(errors.JobFailed, match="no"):
            await failing.get(timeout=30)
        many = await q.enqueue_many([(tasks.add, (i, i)) for i in range(5)])
        assert [await j.get(timeout=30) for j in many] == [0, 2, 4, 6, 8]
        assert await tasks.double.aenqueue(21) is not None
        assert await (await tasks.double.options(priority=9).aenqueue(4)).get(timeout=30) == 8
        grouped = await group(tasks.double.s(1), tasks.double.s(2)).aenqueue(q)
        assert await grouped.get(timeout=30) == [2, 4]
        await q.aclose()

    asyncio.run(main())


def test_a_job_enqueued_either_way_is_the_same_job(redis_url):
    sync_queue = Queue("aio", connection=redis_url)
    sync_job = sync_queue.enqueue(tasks.add, 1, 2, job_id="same-1", description="d")

    async def main():
        client = aioredis.Redis.from_url(redis_url)
        q = AsyncQueue("aio", client)
        fetched = await q.fetch_job("same-1")
        assert (fetched.args, fetched.description, fetched.queue_name) == ([1, 2], "d", "aio")
        async_job = await q.enqueue(tasks.add, 1, 2, job_id="same-2", description="d")
        assert await q.count() == 2
        found = await q.fetch_jobs(["same-1", "nope", "same-2"])
        assert [j and j.id for j in found] == ["same-1", None, "same-2"]
        # the same checks and refusals as the sync API
        with pytest.raises(ValueError, match="already exists"):
            await q.enqueue(tasks.add, 1, 2, job_id="same-1")
        with pytest.raises(ValueError, match="priority must be an int"):
            await q.enqueue(tasks.add, 1, 2, priority="high")
        with pytest.raises(errors.NoSuchJob):
            await q.fetch_job("nope")
        assert await async_job.cancel() is True
        assert await async_job.delete() is True
        await client.aclose()
        return async_job

    async_job = asyncio.run(main())
    stored = sync_queue.fetch_job(sync_job.id)
    assert stored.status is JobStatus.QUEUED and sync_queue.job_ids == ["same-1"]
    with pytest.raises(errors.NoSuchJob):
        sync_queue.fetch_job(async_job.id)


def test_get_of_a_sync_enqueued_job_returns_when_a_worker_runs_it(redis_url, start_worker):
    job = Queue("aio", connection=redis_url).enqueue(tasks.add, 20, 22)

    async def main():
        waiting = asyncio.ensure_future(AsyncQueue("aio", redis_url).fetch_job(job.id))
        fetched = await waiting
        with pytest.raises(TimeoutError):
            await fetched.get(timeout=0.2)  # nobody runs it yet: blocks, then times out
        start_worker("threading", 1, redis_url, "-q", "aio")
        return await fetched.get(timeout=30)

    assert asyncio.run(main()) == 42


def test_scheduled_and_unique_enqueues_share_the_sync_rules(redis_url):
    async def main():
        q = AsyncQueue("aio", redis_url)
        later = await q.enqueue_in(60, tasks.add, 1, 1)
        at = await q.enqueue_at(4_000_000_000, tasks.add, 1, 1)
        for job in (later, at):
            await job.refresh()
            assert job.status is JobStatus.SCHEDULED
        first = await q.enqueue(tasks.add, 1, 1, unique_key="k")
        second = await q.enqueue(tasks.add, 5, 5, unique_key="k")
        assert second.id == first.id and second.args == [1, 1]
        await q.aclose()

    asyncio.run(main())
    assert Queue("aio", connection=redis_url).scheduled_job_ids.__len__() == 2


def test_eager_mode_runs_inline_through_the_same_runner(monkeypatch):
    monkeypatch.setenv("RQCONC_EAGER", "1")

    async def main():
        q = AsyncQueue("aio")
        job = await q.enqueue(tasks.add, 2, 2)
        assert isinstance(job, AsyncEagerJob) and await job.get() == 4
        with pytest.raises(errors.JobFailed):
            await (await q.enqueue(tasks.boom)).get()
        assert await (await tasks.double.aenqueue(5)).get() == 10
        with pytest.raises(RuntimeError, match="eager"):
            await q.count()

    asyncio.run(main())


def test_a_blocking_client_is_refused_at_once(redis_url):
    import redis

    with pytest.raises(TypeError, match="redis.asyncio"):
        AsyncQueue("aio", redis.Redis.from_url(redis_url))


def test_a_thousand_enqueues_and_waits_never_block_the_event_loop(redis_url, start_worker):
    """SPEC 15: asyncio debug mode on, callbacks over 10 ms logged, 1,000 enqueues and 1,000
    result waits from 100 coroutines, in a process of their own (tests/aio/loop_probe.py:
    there the loop's thread is the only thread, so a callback that waited in the kernel made
    a blocking call, not a wait for another thread's GIL). Each slow callback is measured
    (tests/support/loop_watch.py): none may wait in the kernel, and none may compute 10 ms
    itself. On a loaded machine the OS preempts the loop's thread mid-callback (a loop
    without any I/O logs such callbacks there too), or a full garbage collection runs inside
    one: neither is the code's, and the failure message shows every kind.
    (redis-py 8 used to read its own version from the installed package's metadata for
    every new connection, 2-10 ms of the loop each, 100 of them here: rqconc.connection.aio
    now tells it.)"""
    start_worker("threading", 8, redis_url, "-q", "aio")
    ran = subprocess.run(
        [sys.executable, "-m", "tests.aio.loop_probe", redis_url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report["right"] and report["threads"] == ["MainThread"], report["threads"]
    kinds = {}
    for slow in report["found"]:
        kinds[slow["kind"]] = kinds.get(slow["kind"], 0) + 1
    summary = (
        f"{len(report['logged'])} slow callbacks logged ({kinds}; a loop without I/O logged "
        f"{report['logged_alone']} on this machine just before): {report['found']}"
    )
    assert not kinds.get("waited") and not kinds.get("computed"), summary
