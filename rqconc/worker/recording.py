"""Recording how a job ended: finished (maybe taking the next job in the same step), or
failed, where the job's retry policy decides between a re-run and a dead letter.

There is one failure path for every cause: an exception of the job (`JobRunner`), a refusal,
a timeout or a child that died (the supervisor's duties) all end in `Recorder.fail`.
A job that ran is never lost: `until_recorded` retries its bookkeeping until Redis is back
(the claim fences it: a repeated step lands once or is refused as stale).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from rqconc import errors
from rqconc.connection.backoff import REDIS_DOWN, Backoff
from rqconc.engine.source import WorkItem
from rqconc.queue.retry import policy_of
from rqconc.queue.serialization import mro_names, type_name
from rqconc.queue.workflow.callbacks import CALLBACK_TIMEOUT
from rqconc.store.defaults import DEFAULT_TIMEOUT
from rqconc.store.steps.core import CompleteReply, text
from rqconc.store.steps.reporting import ReportSteps
from rqconc.worker.completions import CombinedCompletions
from rqconc.worker.connections import Connections
from rqconc.worker.runner import Outcome

log = logging.getLogger("rqconc.worker")


def seal_job_log(connections: Connections, job_id: str) -> None:
    """Once a run's outcome is recorded: the job's log (if it has one) expires with the job
    (lua/seal_log.lua). Never raises: a log left unsealed keeps the bound each of its lines
    gave it (lua/job_log.lua)."""
    try:
        ReportSteps(connections.client, connections.keys).seal_log(job_id)
    except Exception as exc:
        log.warning("job %s: could not set its log's expiry: %s", job_id, exc)


ExcInfo = Tuple[str, str, str]  # type name, message, traceback
# Told how a failure was recorded: (FailReply code, retry delay in s or None).
Notify = Optional[Callable[[int, Optional[float]], None]]
NotifyFor = Callable[[str, Dict[str, str], BaseException], Notify]


def stored_number(value: Any, default: float) -> float:
    """A stored number, or `default` when the field is missing or corrupt. float() reads
    bytes and str alike: no text() call (job_timeout runs for every job). A missing field is
    answered before float(): float(None) raises, and a raised and caught TypeError cost
    every job without a timeout of its own about 7,000 instructions (callgrind)."""
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


def job_timeout(fields: Dict[Any, Any], callback_timeout: float) -> float:
    """A job's timeout: its own, else the worker's callback timeout for a follow-up job (a
    callback or a webhook, whose spec carries none), else the default."""
    default = callback_timeout if fields.get("callback_of") is not None else DEFAULT_TIMEOUT
    return stored_number(fields.get("timeout"), default)


def work_item(claim: str, taken: Any, callback_timeout: float) -> Optional[WorkItem]:
    """The WorkItem of a take's reply; None when it took nothing (a due time)."""
    if taken is None or isinstance(taken, int):
        return None
    job_id, fields = taken
    deadline = time.time() + job_timeout(fields, callback_timeout)
    return WorkItem(claim, job_id, deadline=deadline, payload=fields)


def log_transition(
    worker: str,
    event: str,
    job_id: str,
    queue: str,
    duration: Optional[float] = None,
    exc: Optional[ExcInfo] = None,
    func: Optional[str] = None,
) -> None:
    """One structured line per transition this worker makes (events.py has the stream). The
    message names the job's function; its id is the `job_id` field, said once."""
    if not log.isEnabledFor(logging.INFO):
        return
    extra: Dict[str, Any] = {"event": event, "job_id": job_id, "queue": queue, "worker": worker}
    detail = ""
    if duration is not None:
        extra["duration"] = round(duration, 6)
        detail = f" in {duration:.3f} s"
    if exc is not None:
        extra["exc_type"] = exc[0]
        detail += f": {exc[0]}: {exc[1]}"[:300]
        if exc[2]:  # the traceback: after the text line, the `exc` field in JSON (logs.py)
            extra["exc"] = exc[2]
    log.info("job %s %s%s", func or "?", event, detail, extra=extra)


def until_recorded(connections: Connections, record: Callable[[], Any]) -> None:
    """Retry a job's bookkeeping until Redis takes it: a job that ran is never lost."""
    backoff = Backoff(first=0.1, cap=5.0)
    while True:
        try:
            record()
            return
        except REDIS_DOWN as exc:
            delay = backoff.wait()
            connections.redis_down(exc, "recording a job's outcome", delay)
            time.sleep(delay)


class Recorder:
    """Writes the outcomes of one worker's jobs."""

    def __init__(
        self, connections: Connections, worker: str, callback_timeout: float = CALLBACK_TIMEOUT
    ) -> None:
        self.connections = connections
        self.worker = worker
        self.completions = CombinedCompletions(connections, worker)
        self.callback_timeout = callback_timeout  # of follow-up jobs that carry none

    def record(
        self,
        item: WorkItem,
        fields: Dict[str, str],
        outcome: Outcome,
        duration: float,
        take: Optional[Tuple[str, Sequence[str], int]] = None,
        notify: Notify = None,
    ) -> Optional[WorkItem]:
        """Record the outcome; with `take` (next claim, queues, lease ms), a success also
        takes the next job, which is returned. `notify` hears how a failure was recorded."""
        if outcome.exc is not None:
            code = self.fail(
                item.claim, item.item_id, fields, outcome.exc, outcome.exc_mro, duration, notify
            )
            if code == -1:
                self.stale(item, fields)
            return None
        queue = fields.get("queue", "")
        code, following = self._complete(item, queue, outcome, take)
        if code is CompleteReply.RECORDED:
            log_transition(
                self.worker, "finished", item.item_id, queue, duration, func=fields.get("func")
            )
        elif code is CompleteReply.NEXT_ID_TAKEN:
            self._next_id_taken(item, fields, outcome, duration)
        else:
            self.stale(item, fields)
        return following

    def _complete(
        self,
        item: WorkItem,
        queue: str,
        outcome: Outcome,
        take: Optional[Tuple[str, Sequence[str], int]],
    ) -> Tuple[CompleteReply, Optional[WorkItem]]:
        """How the completion ended (nothing written unless RECORDED), and the job taken
        next."""
        args = (item.claim, item.item_id, queue, outcome.result, outcome.serializer)
        if outcome.next_stage is not None:  # a flow's next stage: complete.lua, alone
            hot = self.connections.child().steps
            if take is None:
                return hot.complete(*args, self.worker, outcome.next_stage), None
            code, taken = hot.complete(*args, self.worker, outcome.next_stage, take)
        else:  # with the completions of this process's other slots (completions.py)
            code, taken = self.completions.complete((*args, ""), take)
        if take is None:
            return code, None
        return code, work_item(take[0], taken, self.callback_timeout)

    def _next_id_taken(
        self, item: WorkItem, fields: Dict[str, str], outcome: Outcome, duration: float
    ) -> None:
        """The stage's `Next(..., job_id=X)` passed the check when it returned, but X was
        created before the completion: the step wrote nothing and the claim still holds,
        so the stage fails now as it would have at the check (a final failure, no retry)
        instead of waiting out its lease and counting a lost one."""
        next_id = outcome.next_stage[0] if outcome.next_stage else ""
        message = (
            f"Next(..., job_id={next_id!r}): a job with that id already exists (created "
            "while this stage completed); the next stage was not enqueued"
        )
        code = self.fail(
            item.claim, item.item_id, fields, ("ValueError", message, ""), (), duration
        )
        if code == -1:
            self.stale(item, fields)

    def fail(
        self,
        claim: str,
        job_id: str,
        fields: Dict[str, str],
        exc: ExcInfo,
        exc_mro: Sequence[str] = (),
        duration: Optional[float] = None,
        notify: Notify = None,
    ) -> int:
        """Fail the job; its policy retries it when `exc_mro` (empty: a final failure, such
        as a refusal) matches. 2: retry scheduled, 1: failed for good, -1: stale claim."""
        retry_in = None  # ms from now, on Redis' clock (lua/fail.lua)
        if exc_mro:
            attempts = int(stored_number(fields.get("attempts"), 0)) + 1
            delay = policy_of(fields.get("retry")).next_delay(exc_mro, attempts)
            retry_in = None if delay is None else int(delay * 1000)
        queue = fields.get("queue", "")
        code = int(self.connections.steps.fail(claim, job_id, queue, exc, retry_in, self.worker))
        if code != -1:
            event = "retry" if code == 2 else "failed"
            log_transition(self.worker, event, job_id, queue, duration, exc, fields.get("func"))
        if notify is not None:
            notify(code, None if retry_in is None else retry_in / 1000)
        return code

    def fail_claim(
        self, claim: str, cls: type, message: str, notify_for: Optional[NotifyFor] = None
    ) -> int:
        """Fail the job a claim holds as if it had raised `cls` (a timeout, a child that
        died); -1 if the claim is stale. `notify_for(job_id, fields, exception)` gives what
        hears how the failure was recorded (the supervisor's job hooks, end_hooks.py)."""
        found = self.connections.steps.claimed_job(claim)
        if found is None:
            return -1
        job_id, raw = found
        fields = {name: text(value) for name, value in raw.items()}
        if cls is errors.JobTimeout:  # quote the job's timeout, not its deadline's remainder
            message = errors.JobTimeout.describe(stored_number(fields.get("timeout"), 180.0))
        notify = None if notify_for is None else notify_for(job_id, fields, cls(message))
        exc = (type_name(cls), message, "")
        code = self.fail(claim, job_id, fields, exc, mro_names(cls), notify=notify)
        # Its child ended before it could seal the job's log (job_scope.py): a log, if the
        # run left one, expires with the job from now on (one step on this rare path).
        seal_job_log(self.connections, job_id)
        return code

    def stale(self, item: WorkItem, fields: Dict[str, str]) -> None:
        """This run's outcome was refused (its claim no longer holds the job): say what
        became of the job instead, read from Redis."""
        try:
            happened = self._what_happened(item.item_id)
        except REDIS_DOWN:
            happened = "what became of it is unknown (Redis is unreachable)"
        log.warning(
            "job %s: this run's outcome is dropped: %s",
            fields.get("func") or "?",
            happened,
            extra={"job_id": item.item_id, "queue": fields.get("queue", ""), "claim": item.claim},
        )

    def _what_happened(self, job_id: str) -> str:
        client, keys = self.connections.client, self.connections.keys
        raw = client.hmget(keys.job(job_id), "status", "worker", "exc_type", "exc_message")
        status, worker, exc_type, exc_message = (None if v is None else text(v) for v in raw)
        failure = f"{exc_type}: {exc_message}"[:200]
        if status is None:
            return "the job was deleted meanwhile"
        if status == "finished":
            if worker == self.worker:  # a completion sent again after its reply was lost
                return "it is recorded finished already by this worker (a reply was lost)"
            return f"it was finished meanwhile by worker {worker} (this run's lease was lost)"
        if status == "failed":
            return f"it failed meanwhile ({failure}) and is in the dead letters"
        if status == "scheduled":
            return f"it failed meanwhile ({failure}) and waits for a retry"
        if status == "canceled":
            return "it was canceled meanwhile"
        return f"this run's lease was lost; the job is {status} and runs again elsewhere"
