"""The child side of the work source: take a job, perform it, give it back.

Redis going away never ends a child: a take logs one line and backs off (capped, shared by
the children of one process), and a take whose reply was lost leaves its claims as
*orphans* of the process (connections.Orphans), whose jobs go back at the front once Redis
answers, before any take goes out under those claims again.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import redis

from rqconc import errors
from rqconc.connection.backoff import REDIS_DOWN, Backoff
from rqconc.connection.direct import ReplyLost
from rqconc.engine.source import FAILED, FINISHED, NextClaim, WorkItem
from rqconc.queue import current
from rqconc.queue.serialization import mro_names, type_name
from rqconc.store.steps.batch import take_many, wait_then_take_many
from rqconc.store.steps.core import Steps, text
from rqconc.worker import logs
from rqconc.worker.connections import Connections
from rqconc.worker.hooks import Hooks
from rqconc.worker.job_scope import JobScope
from rqconc.worker.listened import Listened
from rqconc.worker.recording import (
    Notify,
    Recorder,
    job_timeout,
    log_transition,
    until_recorded,
    work_item,
)
from rqconc.worker.refusals import Refusals
from rqconc.worker.runner import JobRunner, Outcome, decoded

log = logging.getLogger("rqconc.worker")

STRATEGIES = ("ordered", "round-robin")
# The default longest BZPOPMIN (`--take-wait`): a stop request is seen at least this often.
MAX_BLOCK = 0.25
MIN_BLOCK = 0.01  # shortest BZPOPMIN whose timeout cannot truncate to 0 ("forever")


def overrun(seconds: float) -> Outcome:
    """A job that returned past its deadline failed, whatever it returned: the supervisor
    could not end it in time (a GIL-holding C call, a greenlet that never yielded)."""
    return Outcome(
        exc=(type_name(errors.JobTimeout), errors.JobTimeout.describe(seconds, False), ""),
        exc_mro=tuple(mro_names(errors.JobTimeout)),
    )


class Taker:
    """Takes and performs the jobs of `queues` for the children of one worker."""

    def __init__(
        self,
        connections: Connections,
        runner: JobRunner,
        recorder: Recorder,
        queues: Listened,
        strategy: str,
        lease_seconds: float,
        take_wait: float = MAX_BLOCK,
        refusals: Optional[Refusals] = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        self.connections = connections
        self.runner = runner
        self.recorder = recorder
        self.worker = recorder.worker
        self.queues = queues
        self.strategy = strategy
        self.lease_ms = int(lease_seconds * 1000)
        self.take_wait = take_wait
        self._rotation = 0
        self.hooks = Hooks()  # the worker's job hooks (RedisSource sets them)
        # Jobs the allow-list refuses go back (refusals.py).
        self.refusals = refusals or Refusals()
        self._backoff = Backoff(first=0.1, cap=30.0, jitter=True)

    def child_started(self, forked: bool) -> None:
        if forked:  # the parent's outage and cached functions are not this child's
            self._backoff = Backoff(first=0.1, cap=30.0, jitter=True)
            self.runner.forget_functions()

    def child_stopping(self) -> List[str]:
        """A child ending normally puts back what lost replies may have taken; the claims of
        its own slot it could not (Redis away) are returned, for the supervisor to put back."""
        orphans = self.connections.orphans
        if orphans:
            try:
                self._put_back(orphans.checkout(())[0])
            except REDIS_DOWN as exc:
                self.connections.redis_down(exc, "putting back jobs of lost take replies")
        return orphans.hand_over(self.connections.child())

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        return self._guarded([claim], timeout, lambda steps, c: self._take(steps, c[0], timeout))

    def take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        """Up to one job per claim in one step (store/steps/batch.take_many), each leased under
        its own claim; for a child whose several slots are idle at once. The first claim is
        the caller's own (a combined take's leader asks first, engine/slots/takes.py)."""
        found = self._guarded(claims, timeout, lambda s, c: self._take_many(s, c, timeout))
        return found or []

    def _guarded(
        self,
        claims: Sequence[str],
        timeout: float,
        attempt: Callable[[Steps, Sequence[str]], Any],
    ) -> Any:
        """`attempt` with this child's steps, or None when Redis is away or refuses (never
        an end of the child). A take whose request left but whose reply was lost (ReplyLost)
        may have run: its claims are kept as orphans, whose jobs go back before any take
        goes out under them again (connections.Orphans: whichever thread sends it). One that
        never left (refused, unreachable) leased nothing: a child that ends then leaves no
        claim behind for the supervisor to wait on."""
        wait = self._backoff.remaining()
        if wait > 0:
            time.sleep(min(wait, max(timeout, 0.0)))
            return None
        child, orphans = self.connections.child(), self.connections.orphans
        sent = time.monotonic()
        sending: Sequence[str] = ()
        try:
            if orphans:
                claims = self.put_back_before(claims)
                if not claims:  # another thread is putting their jobs back: take next round
                    time.sleep(min(max(timeout, 0.0), MIN_BLOCK))
                    return None
            sending = claims
            found = attempt(child.steps, claims)
        except REDIS_DOWN as exc:
            if isinstance(exc, ReplyLost) and sending:  # it left: it may have leased jobs
                orphans.file(sending, child, owned=1)  # the first claim is this child's own
            delay = self._backoff.failed()
            if delay is not None:
                self.connections.redis_down(exc, "taking a job", delay)
            return None
        except redis.exceptions.ResponseError as exc:  # e.g. OOM: never end the child for it
            delay = self._backoff.failed()
            if delay is not None:
                log.error(
                    "Redis refused a take (%s); retrying in %.1f s", str(exc).splitlines()[0], delay
                )
            return None
        if self._backoff.reset():
            self.connections.redis_up(sent)
        return found

    def backing_off(self) -> bool:
        """Whether this process is waiting out a failed take (Redis away or refusing)."""
        return self._backoff.remaining() > 0

    def take_order(self, client: redis.Redis, keep_on_error: bool = False) -> List[str]:
        order = self.queues.names(client, keep_on_error)
        if self.strategy == "round-robin" and order:
            shift = self._rotation % len(order)
            self._rotation += 1
            order = order[shift:] + order[:shift]
        return order

    def _take(self, hot: Steps, claim: str, timeout: float) -> Optional[WorkItem]:
        order = self.take_order(hot.client)
        if not order:  # `-q all` in a namespace without queues yet: wait as a take would
            time.sleep(min(max(timeout, 0.0), MAX_BLOCK))
            return None
        taken = hot.take(claim, order, self.lease_ms, self.worker)
        if isinstance(taken, int):
            # Nothing waits: block on the queues' markers (enqueue and take set them), but no
            # longer than until the earliest scheduled job is due (a delay by Redis' clock:
            # this host's may be off), and take again in the same round trip. A child
            # suspended or retiring meanwhile hands that job back (the child loop checks
            # after every take).
            wait = min(timeout, self.take_wait)
            if taken >= 0:
                wait = min(wait, taken / 1000)
            # Redis turns the timeout into whole milliseconds by truncation, and 0 means
            # "block forever": a wait of about 1 ms could hang the child. Below 10 ms, retake.
            if wait < MIN_BLOCK:
                return None
            taken = hot.wait_then_take(round(wait, 2), claim, order, self.lease_ms, self.worker)
            if isinstance(taken, int):
                return None
        return work_item(claim, taken, self.recorder.callback_timeout)

    def _take_many(self, hot: Steps, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        """As `_take`, for several claims at once."""
        order = self.take_order(hot.client)
        if not order:
            time.sleep(min(max(timeout, 0.0), MAX_BLOCK))
            return []
        found = take_many(hot, claims, order, self.lease_ms, self.worker)
        if isinstance(found, int):
            wait = min(timeout, self.take_wait)
            if found >= 0:
                wait = min(wait, found / 1000)
            if wait < MIN_BLOCK:  # see _take
                return []
            found = wait_then_take_many(
                hot, round(wait, 2), claims, order, self.lease_ms, self.worker
            )
            if isinstance(found, int):
                return []
        items = [work_item(claim, job, self.recorder.callback_timeout) for claim, job in found]
        return [item for item in items if item is not None]

    def put_back_before(self, claims: Sequence[str]) -> Sequence[str]:
        """Before a take: every orphan no other thread is putting back goes back first (so
        none of `claims` is one when the take leaves); returns `claims` less those another
        thread is putting back right now (see connections.Orphans)."""
        mine, busy = self.connections.orphans.checkout(claims)
        self._put_back(mine)
        return [claim for claim in claims if claim not in busy] if busy else claims

    def _put_back(self, claims: Sequence[str]) -> None:
        """Put back the jobs of checked-out orphans; those Redis did not answer for (it
        raises) stay orphans."""
        orphans, steps = self.connections.orphans, self.connections.steps
        try:
            for claim in claims:
                found = steps.claimed_job(claim)
                if found is not None:
                    job_id, fields = found
                    queue = text(fields.get("queue", b""))
                    steps.requeue_front(claim, job_id, queue, self.worker, "requeued")
                orphans.settled(claim)  # only once put back: a failure above keeps it
        finally:
            orphans.release(claims)

    def perform(self, item: WorkItem, chain: Optional[NextClaim] = None) -> Optional[WorkItem]:
        fields, corrupt = decoded(item.payload)
        refusal = None if corrupt else self.runner.not_allowed(fields.get("func", ""))
        if refusal is not None:  # not this job's failure: back for a worker that allows it
            self._requeue_front(item, "refused", front=False)
            self.refusals.refused(refusal, item.item_id, fields.get("queue", ""))
            return None
        self.refusals.ran()
        log_transition(
            self.worker, "started", item.item_id, fields.get("queue", ""), func=fields.get("func")
        )
        scope = JobScope(self.hooks, self.connections, item.item_id, fields)
        # Tokens rather than with-blocks: this runs for every job (bench/compare_revisions.py).
        token = current.enter(scope)  # get_current_job(), for the job and the hooks
        try:
            started = time.monotonic()
            log_token = logs.JOB_ID.set(item.item_id)  # its log lines name it
            try:
                if scope.hooks is not None:  # no hooks (most workers): no call
                    scope.before()
                outcome = corrupt or self.runner.run(fields)
            finally:
                logs.JOB_ID.reset(log_token)
            duration = time.monotonic() - started
            if item.overran():  # returned too late to be ended (held the GIL, never yielded)
                outcome = overrun(job_timeout(fields, self.recorder.callback_timeout))
            # Counted by the engine in the worker's totals (SPEC 17), whatever the record did.
            item.outcome = FINISHED if outcome.exc is None else FAILED
            notify = scope.notify(outcome) if scope.hooks is not None else None
            following = self.record(item, fields, outcome, duration, chain, notify)
            if scope.hooks is not None or scope.made_job is not None:
                scope.after(outcome)
        finally:
            current.leave(token)
        return following

    def record(
        self,
        item: WorkItem,
        fields: Dict[str, str],
        outcome: Outcome,
        duration: float,
        chain: Optional[NextClaim],
        notify: Notify,
    ) -> Optional[WorkItem]:
        # Failures are rare: only a success takes the next job in the same step.
        next_claim = chain() if chain is not None and outcome.exc is None else None
        take = None
        if next_claim is not None:
            client = self.connections.child().steps.client
            order = self.take_order(client, keep_on_error=True)
            take = (next_claim, order, self.lease_ms) if order else None
            next_claim = next_claim if order else None  # no queue yet: no take to chain
        try:
            return self.recorder.record(item, fields, outcome, duration, take, notify)
        except REDIS_DOWN as exc:
            self.connections.redis_down(exc, "recording a job's outcome")
            if next_claim is not None:
                # The step may have run with its reply lost: a job it took under the next
                # claim goes back once Redis answers; retries take nothing.
                self.connections.orphans.file([next_claim], self.connections.child(), owned=1)
        until_recorded(
            self.connections,
            lambda: self.recorder.record(item, fields, outcome, duration, notify=notify),
        )
        return None

    def give_back(self, item: WorkItem) -> None:
        self._requeue_front(item, "requeued")

    def _requeue_front(self, item: WorkItem, event: str, front: bool = True) -> None:
        """The job back in its queue, untouched (no attempt counted): at the front, or for a
        refusal behind the jobs waiting (so it cannot stand in front of jobs that can run)."""
        queue = text(item.payload.get("queue", b""))
        steps = self.connections.steps
        until_recorded(
            self.connections,
            lambda: steps.requeue_front(item.claim, item.item_id, queue, self.worker, event, front),
        )
