"""Jobs that report on themselves (SPEC 10) for tests/worker/test_reporting.py."""

from __future__ import annotations

import asyncio

import redis

from rqconc import get_current_job


def report(release_key: str) -> str:
    """Mark meta, report half way, wait until the test read it, report done."""
    job = get_current_job()
    assert job is not None
    job.meta["seen_by"] = "sync"
    job.save_meta()
    job.set_progress(0.5, "half")
    redis.Redis.from_url(_url(job)).blpop([release_key], timeout=30)
    job.set_progress(1.0)
    return job.id


async def report_async(release_key: str) -> str:
    job = get_current_job()
    assert job is not None
    job.meta["seen_by"] = "async"
    job.save_meta()
    job.set_progress(0.25, "a quarter")
    client = redis.Redis.from_url(_url(job))
    while not client.exists(release_key):  # a poll that yields, so sibling tasks run
        await asyncio.sleep(0.02)
    job.set_progress(1.0, "done")
    return job.id


async def who_am_i(seconds: float) -> str:
    """The current job after an await, while sibling tasks run theirs."""
    first = get_current_job()
    await asyncio.sleep(seconds)
    second = get_current_job()
    assert first is not None and second is not None
    return f"{first.id}:{second.id}"


def meta_of_enqueue() -> dict:
    job = get_current_job()
    assert job is not None
    return job.meta


def report_eagerly() -> str:
    job = get_current_job()
    assert job is not None
    job.meta["seen"] = True
    job.save_meta()
    job.set_progress(0.75, "most")
    return job.id


def _url(job) -> str:
    kwargs = job.connection.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"
