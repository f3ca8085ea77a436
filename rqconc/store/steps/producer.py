"""The steps a producer runs (enqueue, a group's enqueue, cancel, a result's wait), built as
`Step` values once for both transports: `Queue` runs them on redis-py (`Step.run`, through
`Steps`), `rqconc.aio` on `redis.asyncio` (`Step.arun`). So a job enqueued, canceled or
awaited either way is written and read by the same Lua with the same keys and arguments.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rqconc.store.fields import lean_marks, one_plain_job
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import (
    AwaitReply,
    CancelReply,
    EnqueueGroupReply,
    EnqueueReply,
    Step,
    now_ms,
    script,
    text,
)


def enqueue_step(
    k: KeySpace,
    queue: str,
    jobs: Sequence[Tuple[str, Dict[str, Any]]],
    priority: int = 1,
    due_ms: Optional[int] = None,
    common: Optional[Dict[str, Any]] = None,
    fresh_ids: bool = False,
    now: Optional[int] = None,
    mark: bool = False,
) -> Step:
    """Store jobs (id, fields) of one priority, each hash also holding the `common`
    fields, `queue` and `created_at` (`now`, ms). Returns None when stored, else why not:
    (EnqueueReply.EXISTS or MISSING_PARENT, the id); then nothing was written. `fresh_ids`:
    the ids were just generated at random, so they need no check that they are free. `mark`:
    leave the short-lived `enqueued:<first id>` mark a resend of this request finds."""
    common, leans = lean_marks(common or {}, jobs)
    if now is None:
        now = now_ms()
    if one_plain_job(jobs, due_ms, common, fresh_ids):  # what producers send in a loop
        return _enqueue_one_step(k, queue, jobs[0], priority, common, now, mark)
    keys = list(_queue_keys(k, queue))
    args: List[Any] = [
        queue,
        now,
        "" if due_ms is None else due_ms,
        len(jobs),
        k.prefix,
        priority,
        "" if fresh_ids else "1",  # a caller's ids: each checked free
        len(common),
    ]
    args.extend(chain.from_iterable(common.items()))
    job_prefix = k.job_prefix
    for (job_id, fields), lean in zip(jobs, leans):
        keys.append(job_prefix + job_id)
        args += (job_id, len(fields) + lean)
        for pair in fields.items():
            args += pair
        if lean:
            args += ("lean", "1")
    if mark:
        keys.append(k.enqueued(jobs[0][0]))
    return Step(script("enqueue"), keys, args, _enqueued)


def _enqueue_one_step(
    k: KeySpace,
    queue: str,
    job: Tuple[str, Dict[str, Any]],
    priority: int,
    common: Dict[str, Any],
    now: int,
    mark: bool,
) -> Step:
    """enqueue_one.lua: one job, its common fields then its own (a single job's `lean` is
    among the common ones, lean_marks)."""
    job_id, fields = job
    args: List[Any] = [queue, now, k.prefix, priority, job_id]
    for pair in common.items():
        args += pair
    for pair in fields.items():
        args += pair
    keys = [k.job_prefix + job_id]
    if mark:
        keys.append(k.enqueued(job_id))
    return Step(script("enqueue_one"), keys, args, _stored_one)


def _stored_one(reply: Any) -> None:
    return None  # enqueue_one stores, or finds its own job stored: it refuses nothing


# The first keys of every enqueue of a queue, by (namespace prefix, queue): names made
# once, not six KeySpace calls per enqueue. Bounded: queue names come from callers.
_QUEUE_KEYS: Dict[Tuple[str, str], Tuple[str, ...]] = {}
_QUEUE_KEYS_LIMIT = 1024


def _queue_keys(k: KeySpace, queue: str) -> Tuple[str, ...]:
    known = _QUEUE_KEYS.get((k.prefix, queue))
    if known is None:
        known = (k.seq, k.queues, k.queue(queue), k.marker(queue), k.scheduled(queue), k.events)
        if len(_QUEUE_KEYS) < _QUEUE_KEYS_LIMIT:
            _QUEUE_KEYS[(k.prefix, queue)] = known
    return known


def _enqueued(reply: Any) -> Optional[Tuple[EnqueueReply, str]]:
    code, detail = reply
    if code == 1:
        return None
    return EnqueueReply(code), text(detail)


def enqueue_group_step(
    k: KeySpace,
    queue: str,
    group_id: str,
    jobs: Sequence[Tuple[str, int, Dict[str, Any]]],
    chord: Optional[Tuple[str, Dict[str, Any]]],
    ttl: int,
) -> Step:
    """Store a group's members (id, priority, fields), its record (kept `ttl` s once it
    ended) and its chord callback (id, fields) deferred, in one step: an EnqueueGroupReply."""
    keys = [k.seq, k.queues, k.queue(queue), k.marker(queue), k.events, k.group(group_id)]
    keys.append(k.deferred(queue))
    args = [queue, now_ms(), len(jobs), k.prefix, group_id, ttl, chord[0] if chord else ""]
    for job_id, priority, fields in jobs:
        keys.append(k.job(job_id))
        args += [job_id, priority, len(fields), *chain.from_iterable(fields.items())]
    if chord:
        keys.append(k.job(chord[0]))
        args += [len(chord[1]), *chain.from_iterable(chord[1].items())]
    return Step(script("enqueue_group"), keys, args, EnqueueGroupReply)


def cancel_step(k: KeySpace, job_id: str, claim: str = "", worker: str = "") -> Step:
    """Cancel a job: a CancelReply."""
    keys = [k.job(job_id), k.canceling, k.active, k.claims, k.seq, k.events]
    return Step(script("cancel"), keys, [job_id, k.prefix, claim, worker], CancelReply)


def await_step(k: KeySpace, job_id: str) -> Step:
    """(PUSHED, [outcome]); (MISSING, []) when the job does not exist; else (PENDING,
    [status, serializer, result, exc_type, exc_message, traceback]), and the job is
    marked as waited for if it has not ended."""
    return Step(script("await"), [k.job(job_id), k.done(job_id)], [], _awaited)


def _awaited(reply: Any) -> Tuple[AwaitReply, List[Any]]:
    return AwaitReply(reply[0]), list(reply[1:])
