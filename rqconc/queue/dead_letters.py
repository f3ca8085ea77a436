"""`q.failed`: the dead letters of a queue — jobs whose retries ran out or that failed for
good — with their tracebacks kept on the job (`Job.exc_info`).

A dead letter lasts its job's `failure_ttl`. The job hash expires by itself, but its id
stays in `failed:<queue>` until a maintenance pass trims it (lua/trim_ended.lua), so every
reader leaves out the ids whose expiry (`failed_expiry:<queue>`) has passed, on Redis' clock
(store/clock.py: the clock the steps that wrote the expiries read). This module is the one
read of dead letters: `q.failed`, the CLI (`rqconc failed`), the dashboard's page and a
job's page, and the counts of `rqconc info` and metrics (counts.py) all read through it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import redis

from rqconc import errors
from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.job import Job
from rqconc.store.clock import redis_time_ms
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps, text


def count_expired(pipe: Any, keys: KeySpace, name: str, now: int) -> None:
    """Queue, on `pipe`, the count of queue `name`'s dead letters whose expiry has passed at
    `now` (ms, Redis' clock): subtracted from the size of `failed:<queue>` (counts.py)."""
    pipe.zcount(keys.failed_expiry(name), "-inf", now)


def newest_letters(
    client: redis.Redis, keys: KeySpace, names: List[str], offset: int, count: int
) -> Tuple[List[Tuple[str, str]], Dict[str, int]]:
    """`count` live dead letters of the queues `names` together from `offset`, latest
    failure first, as (job id, queue); and each queue's live letters. Each queue's first
    offset + count letters are merged, so the cost grows with the page's depth and the
    number of queues, never with the number of letters (the dashboard's page)."""
    now = redis_time_ms(client, keys)
    start = offset if len(names) == 1 else 0
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.zrevrange(keys.failed(name), start, offset + count - 1, withscores=True)
        pipe.zcard(keys.failed(name))
        count_expired(pipe, keys, name, now)
    replies = pipe.execute()
    letters, totals = [], {}
    for i, name in enumerate(names):
        listed, expired = replies[3 * i + 1], replies[3 * i + 2]
        totals[name] = max(0, int(listed) - int(expired))
        letters += [(score, text(m), name) for m, score in replies[3 * i]]
    letters.sort(key=lambda letter: letter[0], reverse=True)
    page = letters[offset - start :][:count]
    pipe = client.pipeline(transaction=False)
    for _, job_id, name in page:
        pipe.zscore(keys.failed_expiry(name), job_id)
    ends = pipe.execute() if page else []
    live = [(i, name) for (_, i, name), end in zip(page, ends) if end is None or end > now]
    return live, totals


class DeadLetters:
    """The dead letters of the queue `name` (what `Queue.failed` returns)."""

    def __init__(
        self, client: redis.Redis, keys: KeySpace, name: str, wait: Optional[ReplicaWait] = None
    ) -> None:
        self.client = client
        self.keys = keys
        self.name = name
        self.wait = wait  # the queue's wait_replicas: requeue and purge wait for them too

    @property
    def _steps(self) -> Steps:
        return Steps(self.client, self.keys, self.wait)

    @property
    def _keys(self) -> Tuple[str, str]:
        return self.keys.failed(self.name), self.keys.failed_expiry(self.name)

    def now(self) -> int:
        """Redis' time (ms), which the expiries are compared with."""
        return redis_time_ms(self.client, self.keys)

    @property
    def job_ids(self) -> List[str]:
        """Ids of the dead letters, oldest failure first."""
        failed, expiry = self._keys
        pipe = self.client.pipeline(transaction=True)  # one snapshot of both sets
        pipe.zrange(failed, 0, -1)
        pipe.zrangebyscore(expiry, "-inf", self.now())
        with translated_errors(self.client):
            ids, expired = pipe.execute()
        gone = set(expired)
        return [text(i) for i in ids if i not in gone]

    def __len__(self) -> int:
        failed, _ = self._keys
        pipe = self.client.pipeline(transaction=True)
        pipe.zcard(failed)
        count_expired(pipe, self.keys, self.name, self.now())
        with translated_errors(self.client):
            listed, expired = pipe.execute()
        return max(0, int(listed) - int(expired))

    def __contains__(self, job_id: str) -> bool:
        failed, expiry = self._keys
        pipe = self.client.pipeline(transaction=True)
        pipe.zscore(failed, job_id)
        pipe.zscore(expiry, job_id)
        with translated_errors(self.client):
            now = self.now()
            listed, expires = pipe.execute()
        return listed is not None and (expires is None or expires > now)

    def jobs(self) -> List[Job]:
        """The dead letters' jobs, oldest failure first (one that expires while they are
        read is left out)."""
        found = []
        for job_id in self.job_ids:
            try:
                found.append(Job.fetch(job_id, self.client, self.keys.namespace))
            except errors.NoSuchJob:
                continue
        return found

    def requeue(self, job_id: str) -> bool:
        """Run it again: back at the end of its queue, same id, attempts reset.
        False if `job_id` is not a dead letter of this queue; ValueError (naming the
        holder) if it is a unique job and another job holds its key."""
        with translated_errors(self.client):
            return self._steps.requeue_failed(self.name, job_id)

    def requeue_all(self) -> int:
        """Requeue every dead letter (in failure order); returns how many. A unique job
        whose key another job holds stays a dead letter (`requeue(job_id)` says which)."""
        requeued = 0
        for job_id in self.job_ids:
            try:
                requeued += self.requeue(job_id)
            except ValueError:
                continue
        return requeued

    def purge(self) -> int:
        """Delete every dead letter and its data; returns how many."""
        with translated_errors(self.client):
            return self._steps.purge_failed(self.name, self.job_ids)
