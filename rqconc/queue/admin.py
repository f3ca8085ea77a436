"""Deleting and promoting jobs (SPEC section 12): what `Queue.delete`, `Queue.promote` and
`Job.delete` and `Queue.empty` do, through the Lua steps lua/delete_jobs.lua,
lua/empty_queue.lua, lua/drop_parked.lua and lua/promote.lua.

What removing a job that has not ended does (`job.delete()`, `q.delete()`, `q.empty()`
alike, lua/include/removal.lua): it ends as a job that did not finish. Its dependents are
canceled (those that allow failure are released), its group fails and its chord callback
is canceled, its unique key ends, and a caller blocked in its `get()` wakes with
`JobFailed` (`JobCanceled`).

What `q.delete()` does to running jobs: nothing. A job's worker owns it while it runs, and
stopping it is `job.cancel()`'s business; it finishes (or fails) as usual, its outcome is
recorded and its waiters get it, and its hash then expires by its result_ttl or failure_ttl.
The queue's name stays listed (`rqconc info`) until no job of it runs, so that the sets those
jobs end in are still trimmed.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import redis

from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.job_outcome import missing_job
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import PromoteReply, Steps, text
from rqconc.store.steps.removal import RemovalSteps, delete_jobs_step

# Ids read and deleted per step: bounds how long one step holds Redis.
DELETE_BATCH = 500


def _ids_of(client: redis.Redis, sets: List[str]) -> List[str]:
    """Up to DELETE_BATCH ids from each set, in one round trip, without repeats."""
    pipe = client.pipeline(transaction=False)
    for key in sets:
        pipe.zrange(key, 0, DELETE_BATCH - 1)
    return list(dict.fromkeys(text(i) for found in pipe.execute() for i in found))


def delete_queue(
    client: redis.Redis, keys: KeySpace, name: str, wait: Optional[ReplicaWait] = None
) -> int:
    """Delete every job of queue `name` that is not running (waiting, parked behind a
    group's cap, scheduled, deferred, finished, dead letters); returns how many. Its cron
    entries go first (Queue.delete)."""
    with translated_errors(client):
        steps, deleted = RemovalSteps(client, keys, wait), 0
        sets = [keys.queue(name), keys.scheduled(name), keys.deferred(name)]
        sets += [keys.finished(name), keys.failed(name), keys.failed_expiry(name)]
        # Every id a pass reads leaves these sets (lua/delete_jobs.lua), so passes end
        # unless producers keep enqueueing faster. A take may park a job it popped from
        # the queue meanwhile: parked jobs go last, until neither place holds any.
        while True:
            ids = _ids_of(client, sets)
            if ids:
                deleted += steps.delete_jobs(ids, name)[0]
                continue
            dropped = steps.drop_parked(name)
            deleted += dropped
            if not dropped and not client.zcard(keys.queue(name)):
                break
        client.delete(keys.marker(name))
        if not client.zcard(keys.started(name)):
            client.srem(keys.queues, name)
    return deleted


def empty_queue(
    client: redis.Redis, keys: KeySpace, name: str, wait: Optional[ReplicaWait] = None
) -> int:
    """Delete every waiting job of queue `name`, those parked behind a group's cap too;
    returns how many. Each step pops and ends a batch, so no take sees a job half-deleted."""
    with translated_errors(client):
        steps = RemovalSteps(client, keys, wait)
        return steps.empty_queue(name) + steps.drop_parked(name)


def delete_job(
    client: redis.Redis, keys: KeySpace, job_id: str, wait: Optional[ReplicaWait] = None
) -> bool:
    """Delete one job that is not running; False if there was none. ValueError for a
    running job: cancel() it, or delete it once it ended."""
    with translated_errors(client):
        reply = RemovalSteps(client, keys, wait).run(delete_jobs_step(keys, [job_id]))
    return job_deleted(job_id, reply)


def job_deleted(job_id: str, reply: Tuple[int, int]) -> bool:
    """What deleting one job did (delete_jobs_step's reply), for its caller (also
    rqconc.aio's): ValueError when it runs."""
    deleted, running = reply
    if running:
        raise ValueError(
            f"job {job_id} is running: cancel() it first, or delete it once it has ended"
        )
    return deleted == 1


def promote(
    client: redis.Redis,
    keys: KeySpace,
    queue: str,
    job_id: str,
    wait: Optional[ReplicaWait] = None,
) -> bool:
    """Make a scheduled or deferred job of `queue` run now (the back of its queue); False
    if it is neither (waiting already, running or ended). NoSuchJob if there is no such
    job, ValueError if it belongs to another queue."""
    with translated_errors(client):
        reply = Steps(client, keys, wait).promote(queue, job_id)
    if reply is PromoteReply.MISSING:
        raise missing_job(job_id)
    if reply is PromoteReply.OTHER_QUEUE:
        raise ValueError(f"job {job_id} is not a job of queue {queue!r}")
    return reply is PromoteReply.PROMOTED
