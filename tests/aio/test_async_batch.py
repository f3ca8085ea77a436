"""The enqueues of one event loop turn, sent as one pipeline (rqconc/aio/batch.py), on real
Redis: the order they were issued in, each caller's own reply or error, NOSCRIPT, and a
Redis killed while a pipeline is out."""

from __future__ import annotations

import asyncio
import contextlib
import signal

import pytest
import redis

from rqconc import errors
from rqconc.aio import AsyncQueue, batch
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from tests.aio import tasks


@pytest.fixture
def pipelines(monkeypatch):
    """How many pipelines the batches sent (the real ones: this only counts them)."""
    sent = []
    real = batch.pipelined

    async def counted(client, commands, *rest):
        sent.append(len(commands))
        return await real(client, commands, *rest)

    monkeypatch.setattr(batch, "pipelined", counted)
    return sent


def test_a_thousand_concurrent_enqueues_land_in_the_order_they_were_issued(redis_url, pipelines):
    async def main():
        q = AsyncQueue("aio", redis_url)
        await q.enqueue(tasks.add, 0, 0)  # connected, the script loaded
        redis.Redis.from_url(redis_url).script_flush()  # the batch meets NOSCRIPT first
        pipelines.clear()
        issued = []

        async def one(i):
            issued.append(i)  # in the same step as the enqueue's call goes on the batch
            return (i, await q.enqueue(tasks.add, i, 0, result_ttl=0))

        done = await asyncio.gather(*(one(i) for i in reversed(range(1000))))
        await q.aclose()
        return issued, dict(done)

    issued, jobs = asyncio.run(main())
    assert Queue("aio", connection=redis_url).job_ids[1:] == [jobs[i].id for i in issued]
    # One pipeline of 1,000 EVALSHAs, the same calls again after loading the script.
    assert pipelines == [1000, 1000]


def test_jobs_of_one_coroutine_keep_their_order_within_each_priority(redis_url):
    """On every deployment (tests/scale/test_deployments.py: a Cluster client's steps are
    not batched, a Sentinel one's are)."""

    async def producer(q, n):
        return [(await q.enqueue(tasks.add, n, i, priority=i % 3)).id for i in range(30)]

    async def main():
        q = AsyncQueue("aio", redis_url)
        sent = await asyncio.gather(*(producer(q, n) for n in range(20)))
        await q.aclose()
        return sent

    sent = asyncio.run(main())
    queued = Queue("aio", connection=redis_url).job_ids  # the order workers take them
    position = {job_id: i for i, job_id in enumerate(queued)}
    assert len(queued) == 600
    for ids in sent:
        for priority in range(3):
            mine = ids[priority::3]
            assert sorted(mine, key=position.__getitem__) == mine


def test_one_bad_job_among_concurrent_ones_fails_alone(redis_url, pipelines):
    client = redis.Redis.from_url(redis_url)
    client.set(KeySpace("rqconc").job("clash"), "not a job hash")  # WRONGTYPE in the step

    async def main():
        q = AsyncQueue("aio", redis_url)
        await q.enqueue(tasks.add, 0, 0, job_id="taken")
        pipelines.clear()
        bad = {
            10: {"job_id": "clash"},  # a Redis error reply
            20: {"job_id": "taken"},  # the step's refusal
            30: {"priority": "high"},  # refused before Redis
        }
        calls = [q.enqueue(tasks.add, i, i, **bad.get(i, {})) for i in range(50)]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        await q.aclose()
        return outcomes

    outcomes = asyncio.run(main())
    assert isinstance(outcomes[10], redis.exceptions.ResponseError)
    assert "WRONGTYPE" in str(outcomes[10])
    assert isinstance(outcomes[20], ValueError) and "already exists" in str(outcomes[20])
    assert isinstance(outcomes[30], ValueError) and "priority" in str(outcomes[30])
    good = [job for i, job in enumerate(outcomes) if i not in (10, 20, 30)]
    assert not any(isinstance(job, BaseException) for job in good)
    assert Queue("aio", connection=redis_url).job_ids == ["taken"] + [job.id for job in good]
    assert pipelines == [49]  # the bad ones went in the same pipeline as the good


def test_a_killed_redis_fails_each_caller_of_the_pipeline_with_the_one_line_error(
    redis_server, pipelines
):
    async def main():
        q = AsyncQueue("aio", redis_server.url)
        await q.enqueue(tasks.add, 0, 0)
        pipelines.clear()
        redis_server.process.send_signal(signal.SIGSTOP)  # the pipeline's replies never come
        calls = asyncio.gather(
            *(q.enqueue(tasks.add, i, i) for i in range(100)), return_exceptions=True
        )
        while not pipelines:  # the batch is being sent: each call is in it
            await asyncio.sleep(0.001)
        redis_server.kill()
        outcomes = await calls
        redis_server.start()  # the same port: the next calls are a pipeline of their own
        after = await q.enqueue(tasks.add, 1, 2)
        await q.aclose()
        return outcomes, after

    outcomes, after = asyncio.run(main())
    assert pipelines[0] == 100
    for outcome in outcomes:
        assert isinstance(outcome, errors.ConnectionError), outcome
        assert "cannot reach Redis" in str(outcome) and "\n" not in str(outcome)
    assert Queue("aio", connection=redis_server.url).job_ids == [after.id]


def test_a_lone_enqueue_is_sent_at_once_and_a_canceled_one_is_not_sent(redis_url, pipelines):
    async def main():
        q = AsyncQueue("aio", redis_url)
        alone = await asyncio.wait_for(q.enqueue(tasks.add, 1, 1), timeout=10)
        first = asyncio.ensure_future(q.enqueue(tasks.add, 2, 2))
        canceled = asyncio.ensure_future(q.enqueue(tasks.add, 3, 3))
        await asyncio.sleep(0)  # both calls are on the batch, not sent yet
        canceled.cancel()
        kept = await first
        with pytest.raises(asyncio.CancelledError):
            await canceled
        await q.aclose()
        return [alone.id, kept.id]

    sent = asyncio.run(main())
    assert Queue("aio", connection=redis_url).job_ids == sent
    assert pipelines == [1, 1]


@contextlib.contextmanager
def _callbacks_scheduled_by_each_callback(loop, found):
    """How many callbacks each callback of `loop` schedules (what debug mode pays a stack
    walk for), while inside: load-independent, unlike the time a callback takes."""
    original = asyncio.events.Handle._run

    def run(handle):
        before = len(loop._ready)
        try:
            return original(handle)
        finally:
            found.append(len(loop._ready) - before)

    asyncio.events.Handle._run = run
    try:
        yield
    finally:
        asyncio.events.Handle._run = original


def test_no_callback_wakes_more_than_a_slice_of_a_big_batch(redis_url, pipelines):
    """SPEC 15's no slow callback in debug mode, for the one place that could grow with
    the load: the reply of a pipeline of 1,000 calls is read and handed out a slice per
    callback (each scheduled callback is a stack walk in debug mode)."""
    found = []

    async def main():
        q = AsyncQueue("aio", redis_url)
        await q.enqueue(tasks.add, 0, 0)
        pipelines.clear()
        calls = asyncio.gather(*(q.enqueue(tasks.add, i, 0) for i in range(1000)))
        with _callbacks_scheduled_by_each_callback(asyncio.get_running_loop(), found):
            await calls  # the 1,000 task steps were scheduled by gather, above
        await q.aclose()

    asyncio.run(main(), debug=True)
    assert pipelines == [1000]
    # SLICE (16) wakeups, the slice's own next turn, a done task's gather callback.
    assert 0 < max(found) <= 16 + 2, sorted(found)[-5:]
