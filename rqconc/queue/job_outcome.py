"""Waiting for a job's outcome without polling: `Job.get()` reads it at once if the job has
ended, else blocks on the job's done:<id> list, which the step that ends the job pushes to
(lua/complete.lua, fail.lua, cancel.lua) when a waiter marked the job (lua/await.lua).

An outcome travels as one string: "finished:<serializer>:<result>", "failed:<JSON of
[exc_type, message, traceback]>" or "canceled:"; `Job.get()` decodes it.
"""

from __future__ import annotations

import json
import time
from typing import Optional

import redis

from rqconc import errors
from rqconc.connection.clients import connection_kwargs
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus
from rqconc.store.steps.core import AwaitReply, Steps, text

# The longest single BLMOVE when the client has no socket timeout: a wait is a sequence of
# blocking calls (never a sleep-and-poll loop), each shorter than the client's socket timeout.
MAX_BLOCK = 30.0


def missing_job(job_id: str) -> errors.NoSuchJob:
    return errors.NoSuchJob(
        f"no job {job_id!r} (never enqueued, or its result_ttl / failure_ttl expired)"
    )


def outcome_now(client: redis.Redis, keys: KeySpace, job_id: str) -> Optional[str]:
    """The outcome if the job has ended, else None (the job is then marked as waited for);
    NoSuchJob if it is gone without one."""
    code, fields = Steps(client, keys).await_outcome(job_id)
    if code is AwaitReply.PUSHED:
        return text(fields[0])
    if code is AwaitReply.MISSING:
        raise missing_job(job_id)
    status, serializer, result, *exc = [None if v is None else text(v) for v in fields]
    if status == JobStatus.FINISHED and result is not None:
        return f"finished:{serializer or 'json'}:{result}"
    if status == JobStatus.FAILED:
        return "failed:" + json.dumps([x or "" for x in exc])
    if status == JobStatus.CANCELED:
        return "canceled:"
    return None


def _block_length(client: redis.Redis) -> float:
    """How long one BLMOVE may block: under the client's socket timeout, if it has one."""
    socket_timeout = connection_kwargs(client).get("socket_timeout")
    if not socket_timeout:
        return MAX_BLOCK
    margin = socket_timeout - 1.0 if socket_timeout > 2 else socket_timeout / 2
    return max(0.05, min(MAX_BLOCK, margin))


def wait_for_outcome(
    client: redis.Redis, keys: KeySpace, job_id: str, timeout: Optional[float]
) -> str:
    """Block until the job ends (TimeoutError after `timeout` seconds; None: for ever)."""
    # BLMOVE done -> done (RIGHT to LEFT) returns the element without consuming it when the
    # list holds one: every waiter sees the outcome, however many there are.
    deadline = None if timeout is None else time.monotonic() + timeout
    chunk, done = _block_length(client), keys.done(job_id)
    while True:
        left = chunk if deadline is None else min(chunk, deadline - time.monotonic())
        if left <= 0:
            raise TimeoutError(f"job {job_id} did not end within {timeout} s")
        # Redis truncates the timeout to whole milliseconds and reads 0 as "forever":
        # never block for less than 10 ms (overshooting the deadline by that is harmless).
        left = max(round(left, 2), 0.01)
        pushed = client.blmove(done, done, left, "RIGHT", "LEFT")  # type: ignore[arg-type]
        if pushed is not None:
            return text(pushed)
        outcome = outcome_now(client, keys, job_id)  # between blocks: gone, or ended otherwise
        if outcome is not None:
            return outcome
