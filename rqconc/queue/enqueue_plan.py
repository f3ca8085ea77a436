"""One enqueue, prepared for either transport: `Queue` (redis-py) and `rqconc.aio.AsyncQueue`
(redis.asyncio) both build an `EnqueuePlan`, run its `step` on their client, and hand the
reply back to it. So the checks, the fields stored, the Lua step and the refusals are one
implementation: a job enqueued either way is the same job.

Validation and serialization happen here, in Python, so bad input raises before anything is
written (job_fields.py). The fields a batch shares are sent once.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from rqconc.queue.job_fields import JobFields
from rqconc.queue.limits.options import with_expiry
from rqconc.queue.options import Call, may_vanish
from rqconc.queue.placement import check_call
from rqconc.queue.workflow.group_result import Prepare, new_group_id, prepare_group
from rqconc.queue.workflow.signature import Signature
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import Step, now_ms
from rqconc.store.steps.limits import enqueue_unique_step
from rqconc.store.steps.producer import EnqueueReply, enqueue_group_step, enqueue_step

Stored = List[Tuple[str, Dict[str, str]]]  # (id, fields) of each job handed out
Sent = Callable[[Optional[BaseException]], None]  # ends a traced enqueue, with its error
# Called once per traced enqueue with the queue and the jobs' (id, own fields): the fields
# every job of it stores (a trace context) and what ends its span.
Tracing = Callable[[str, Sequence[Tuple[str, Dict[str, str]]]], Tuple[Dict[str, str], Sent]]


def refusal(reason: EnqueueReply, job_id: str) -> ValueError:
    """Why the enqueue step stored nothing, for the caller."""
    if reason is EnqueueReply.EXISTS:
        return ValueError(f"a job with id {job_id!r} already exists; nothing was enqueued")
    return ValueError(
        f"depends_on names job {job_id!r}, which does not exist (or expired); nothing was enqueued"
    )


class EnqueuePlan:
    """The step storing `calls` (validated, serialized) and how its reply reads."""

    # Set by rqconc.contrib.otel.instrument() (the queue layer imports no contrib). While it
    # is None an enqueue pays one check here and one in `stored`, and stores nothing more.
    tracing: Optional[Tracing] = None
    sent: Optional[Sent] = None

    def __init__(
        self,
        fields: JobFields,
        keys: KeySpace,
        queue: str,
        calls: Sequence[Call],
        options: Dict[str, Any],
        due_ms: Optional[int],
    ) -> None:
        common, priority = fields.common(options)
        self.jobs = fields.own_many(calls, options)
        self.now, fresh_ids = now_ms(), not options.get("job_id")
        common = with_expiry(common, due_ms, self.now)
        self.queue = queue
        if self.tracing is not None:
            common = {**common, **self._traced(self.tracing)}
        self.unique = "unique_key" in common  # SPEC 11: the step may return the holder instead
        # Generated ids are 128 random bits: only a caller's own id can exist already. A
        # resend after a lost reply is safe (the step is idempotent per id); the unique
        # step is sent once.
        self.resendable = not self.unique
        if self.unique:
            self.step: Step = self._unique_step(keys, common, priority, due_ms)
            return
        if not fresh_ids:  # tells this call's own job from another one under that id
            common = {**common, "enqueue_token": os.urandom(8).hex()}
        self.common = common
        # A job that may be deleted before a resend gets there needs the step's mark (only
        # the caller that resends asks for it: the mark is one more write).
        self.step = enqueue_step(
            keys,
            queue,
            self.jobs,
            priority,
            due_ms,
            common,
            fresh_ids,
            self.now,
            may_vanish(common),
        )

    def _traced(self, tracing: Tracing) -> Dict[str, str]:
        """The trace context to store with the jobs; the span ends in `stored`/`abandoned`."""
        context, self.sent = tracing(self.queue, self.jobs)
        return context

    def _unique_step(
        self, keys: KeySpace, common: Dict[str, str], priority: int, due_ms: Optional[int]
    ) -> Step:
        if len(self.jobs) != 1:
            raise ValueError("unique_key holds one job: enqueue_many cannot take it")
        job_id, own = self.jobs[0]
        self.common = {**common, **own}
        return enqueue_unique_step(keys, self.queue, job_id, self.common, priority, due_ms)

    def stored(self, reply: Any) -> Stored:
        """(id, fields) of the jobs to hand out: those stored, or the job that holds the
        unique key instead. ValueError when the step refused (nothing written)."""
        if self.sent is not None:
            self.sent(None if self.unique or reply is None else refusal(*reply))
        if self.unique:
            _, holder = reply
            return [(holder, {**self.common, "queue": self.queue})]
        if reply is not None:
            raise refusal(*reply)
        stored = {"queue": self.queue, "created_at": str(self.now), **self.common}
        return [(job_id, {**stored, **own}) for job_id, own in self.jobs]

    def abandoned(self, error: BaseException) -> None:
        """The step raised (Redis away, a reply lost): a traced enqueue ends with the error."""
        if self.sent is not None:
            self.sent(error)

    def holder_is_another(self, reply: Any) -> bool:
        """Whether a unique key's holder is not the job this plan stores: its own fields are
        then to be read (the caller refreshes the job handed out)."""
        return self.unique and reply[1] != self.jobs[0][0]


def set_enqueue_tracing(tracing: Optional[Tracing]) -> None:
    """Have every later enqueue of this process call `tracing(queue, jobs)` and store the
    fields it returns with the jobs (rqconc.contrib.otel.instrument); None turns it off."""
    EnqueuePlan.tracing = tracing


def check_group(namespace: str, calls: Sequence[Any], chord: Optional[Signature]) -> None:
    """A group's calls and chord callback, placed in this namespace (placement.py)."""
    for call in calls:
        check_call(namespace, "a job of the group", call)
    if chord is not None:
        check_call(namespace, "the chord's callback", chord)


class GroupPlan:
    """The step storing a group (and its chord's callback), and the jobs to hand out."""

    def __init__(
        self,
        prepare: Prepare,
        keys: KeySpace,
        queue: str,
        calls: Sequence[Any],
        chord: Optional[Signature],
    ) -> None:
        members, callback, ttl = prepare_group(prepare, calls, chord)
        self.group_id = group_id = new_group_id()
        self.step = enqueue_group_step(keys, queue, group_id, members, callback, ttl)
        link = {"group_id": group_id}
        self.members: Stored = [
            (job_id, {**fields, **link, "group_index": str(i)})
            for i, (job_id, _, fields) in enumerate(members, 1)
        ]
        self.callback: Optional[Tuple[str, Dict[str, str]]] = None
        if callback is not None:
            self.callback = (callback[0], {**callback[1], "chord_of": group_id})
