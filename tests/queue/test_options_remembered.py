"""An enqueue loop's options are validated once per distinct set (rqconc/queue/job_fields.py),
for `Queue` and `AsyncQueue` alike: what is stored stays what each call's options say."""

from __future__ import annotations

import asyncio

import pytest

from rqconc.aio import AsyncQueue
from rqconc.queue import job_fields
from rqconc.queue.queue import Queue
from tests.aio import tasks


@pytest.fixture
def validations(monkeypatch):
    seen = []
    real = job_fields.common_fields

    def counted(options, *rest):
        seen.append(dict(options))
        return real(options, *rest)

    monkeypatch.setattr(job_fields, "common_fields", counted)
    return seen


def test_an_option_set_of_scalars_is_validated_once_per_queue(redis_url, validations):
    q = Queue("opts", connection=redis_url)
    same = [q.enqueue(tasks.add, i, i, priority=3, result_ttl=0) for i in range(5)]
    own_ids = [q.enqueue(tasks.add, 1, 1, priority=3, result_ttl=0, job_id=f"j{i}") for i in (1, 2)]
    assert len(validations) == 1  # job_id is each job's own, not part of the set
    other = q.enqueue(tasks.add, 1, 1, priority=4, result_ttl=0)
    assert len(validations) == 2
    stored = {job.id: q.fetch_job(job.id).priority for job in [*same, *own_ids, other]}
    assert list(stored.values()) == [3] * 7 + [4]


def test_bad_options_and_unhashable_ones_are_checked_on_every_call(redis_url, validations):
    q = Queue("opts", connection=redis_url)
    for _ in range(2):
        with pytest.raises(ValueError, match="priority"):
            q.enqueue(tasks.add, 1, 1, priority=True)  # True is not 1: the type counts
        q.enqueue(tasks.add, 1, 1, meta={"n": 1})
    assert len(validations) == 4
    q.enqueue(tasks.add, 1, 1, priority=1)
    assert len(validations) == 5


def test_an_async_queue_remembers_them_too(redis_url, validations):
    async def main():
        q = AsyncQueue("opts", redis_url)
        jobs = await asyncio.gather(*(q.enqueue(tasks.add, i, i, timeout=7) for i in range(20)))
        await q.aclose()
        return jobs

    jobs = asyncio.run(main())
    assert len(validations) == 1
    assert {Queue("opts", connection=redis_url).fetch_job(j.id).timeout for j in jobs} == {7}
