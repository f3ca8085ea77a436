"""`q.failed`: the dead letters of a queue — jobs whose retries ran out or that failed for
good — with their tracebacks kept on the job (`Job.exc_info`).

A dead letter lasts its job's `failure_ttl`. The job hash expires by itself, but its id
stays in `failed:<queue>` until a maintenance pass trims it (lua/trim_ended.lua), so every
reader here leaves out the ids whose expiry (`failed_expiry:<queue>`) has passed.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import redis

from rqconc import errors
from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.job import Job
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps, now_ms, text


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

    @property
    def job_ids(self) -> List[str]:
        """Ids of the dead letters, oldest failure first."""
        failed, expiry = self._keys
        pipe = self.client.pipeline(transaction=True)  # one snapshot of both sets
        pipe.zrange(failed, 0, -1)
        pipe.zrangebyscore(expiry, "-inf", now_ms())
        with translated_errors(self.client):
            ids, expired = pipe.execute()
        gone = set(expired)
        return [text(i) for i in ids if i not in gone]

    def __len__(self) -> int:
        failed, expiry = self._keys
        pipe = self.client.pipeline(transaction=True)
        pipe.zcard(failed)
        pipe.zcount(expiry, "-inf", now_ms())
        with translated_errors(self.client):
            listed, expired = pipe.execute()
        return max(0, int(listed) - int(expired))

    def __contains__(self, job_id: str) -> bool:
        failed, expiry = self._keys
        pipe = self.client.pipeline(transaction=True)
        pipe.zscore(failed, job_id)
        pipe.zscore(expiry, job_id)
        with translated_errors(self.client):
            listed, expires = pipe.execute()
        return listed is not None and (expires is None or expires > now_ms())

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
        False if `job_id` is not a dead letter of this queue."""
        with translated_errors(self.client):
            return self._steps.requeue_failed(self.name, job_id)

    def requeue_all(self) -> int:
        """Requeue every dead letter (in failure order); returns how many."""
        return sum(self.requeue(job_id) for job_id in self.job_ids)

    def purge(self) -> int:
        """Delete every dead letter and its data; returns how many."""
        with translated_errors(self.client):
            return self._steps.purge_failed(self.name, self.job_ids)
