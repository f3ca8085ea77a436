"""Waiting for a job's outcome without polling: `Job.get()` reads it at once if the job has
ended, else blocks on the job's done:<id> list, which the step that ends the job pushes to
(lua/complete.lua, fail.lua, cancel.lua) when a waiter marked the job (lua/await.lua).

An outcome travels as one string: "finished:<serializer>:<result>", "failed:<JSON of
[exc_type, message, traceback]>" or "canceled:"; `Job.get()` decodes it.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, List, Optional, Tuple

import redis

from rqconc import errors
from rqconc.connection.clients import connection_kwargs
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus
from rqconc.store.steps.core import AwaitReply, CancelReply, Steps, text
from rqconc.store.steps.producer import await_step

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
    return outcome_of(job_id, Steps(client, keys).run(await_step(keys, job_id)))


def outcome_of(job_id: str, awaited: Tuple[AwaitReply, List[Any]]) -> Optional[str]:
    """The outcome string the await step's reply (await_step) tells, or None (not ended)."""
    code, fields = awaited
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


def block_length(client: Any) -> float:
    """How long one BLMOVE may block: under the client's socket timeout, if it has one."""
    socket_timeout = connection_kwargs(client).get("socket_timeout")
    if not socket_timeout:
        return MAX_BLOCK
    margin = socket_timeout - 1.0 if socket_timeout > 2 else socket_timeout / 2
    return max(0.05, min(MAX_BLOCK, margin))


class BlockLengths:
    """How long each blocking call of one wait may block, up to the wait's deadline."""

    def __init__(self, job_id: str, timeout: Optional[float], chunk: float) -> None:
        self.job_id, self.timeout, self.chunk = job_id, timeout, chunk
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def next(self) -> float:
        """The next block (s); TimeoutError once the deadline passed."""
        left = self.chunk
        if self.deadline is not None:
            left = min(left, self.deadline - time.monotonic())
        if left <= 0:
            raise TimeoutError(f"job {self.job_id} did not end within {self.timeout} s")
        # Redis truncates the timeout to whole milliseconds and reads 0 as "forever":
        # never block for less than 10 ms (overshooting the deadline by that is harmless).
        return max(round(left, 2), 0.01)


def result_of(job_id: str, outcome: str, loads: Callable[[str, str, str], Any]) -> Any:
    """The return value an outcome string carries (decoded by `loads(serializer, data,
    what)`, the job's own), or the JobFailed it stands for."""
    status, _, rest = outcome.partition(":")
    if status == JobStatus.FINISHED:
        serializer, _, data = rest.partition(":")
        return loads(serializer, data, "result")
    if status == JobStatus.CANCELED:
        raise errors.JobFailed(job_id, "rqconc.errors.JobCanceled", "the job was canceled", "")
    exc_type, message, trace = json.loads(rest)
    raise errors.JobFailed(job_id, exc_type, message, trace)


def wait_for_outcome(
    client: redis.Redis, keys: KeySpace, job_id: str, timeout: Optional[float]
) -> str:
    """Block until the job ends (TimeoutError after `timeout` seconds; None: for ever)."""
    # BLMOVE done -> done (RIGHT to LEFT) returns the element without consuming it when the
    # list holds one: every waiter sees the outcome, however many there are.
    blocks = BlockLengths(job_id, timeout, block_length(client))
    done = keys.done(job_id)
    while True:
        left = blocks.next()
        pushed = client.blmove(done, done, left, "RIGHT", "LEFT")  # type: ignore[arg-type]
        if pushed is not None:
            return text(pushed)
        outcome = outcome_now(client, keys, job_id)  # between blocks: gone, or ended otherwise
        if outcome is not None:
            return outcome


def canceled(job_id: str, code: CancelReply) -> bool:
    """What `cancel()` returns for the cancel step's reply (NoSuchJob when it is gone)."""
    if code is CancelReply.MISSING:
        raise missing_job(job_id)
    return code is not CancelReply.ENDED
