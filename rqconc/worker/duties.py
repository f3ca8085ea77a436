"""The supervisor side of the work source: lease renewal, the worker registry's heartbeat,
recovery of expired leases behind the maintenance gate, the cron trigger, suspend and
cancel, and what becomes of jobs whose child the supervisor ended or lost.

Redis going away never raises here (leases cover the gap), and the steps that must not be
lost (an interrupted job put back, a timed-out or lost job failed) wait in `_pending` until
Redis answers: retried every tick, and for up to one lease when the supervisor exits.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import redis

from rqconc import errors
from rqconc.connection.backoff import REDIS_DOWN, Backoff
from rqconc.engine.source import SupervisorInfo
from rqconc.store.steps.core import text
from rqconc.store.steps.metrics import mark_metrics_minute
from rqconc.worker.clock import redis_time_ms
from rqconc.worker.connections import Connections
from rqconc.worker.listened import Listened
from rqconc.worker.outcomes import Recorder, log_transition
from rqconc.worker.registry import WorkerRegistry
from rqconc.worker.scheduler import run_scheduler

log = logging.getLogger("rqconc.worker")
T = TypeVar("T")
RENEWING = "renewing leases"
REQUEUEING = "requeueing an interrupted job"


class Duties:
    """What the supervisor of one worker does through Redis."""

    def __init__(
        self,
        connections: Connections,
        recorder: Recorder,
        queues: Listened,
        lease_seconds: float,
        max_lost: int,
        registry_ttl: float,
        maintenance_interval: float,
    ) -> None:
        self.connections = connections
        self.recorder = recorder
        self.worker = recorder.worker
        self.queues = queues
        self.lease_seconds = lease_seconds
        self.max_lost = max_lost
        self.registry_ttl = registry_ttl
        self.maintenance_interval = maintenance_interval
        self._recover_not_before = 0.0
        self._suspended = False
        self._pending: List[Tuple[str, Callable[[], Any]]] = []  # (doing, step), in order
        self._refusals: Dict[str, str] = {}  # duty -> the kind of error reply last logged
        self._leave = False  # another stop request came: end the wait at exit now

    def _guarded(self, doing: str, action: Callable[[], T]) -> Optional[T]:
        sent = time.monotonic()
        try:
            result = action()
        except REDIS_DOWN as exc:
            self._outage(exc, doing)
            return None
        except redis.exceptions.ResponseError as exc:
            self._refused(doing, exc)
            return None
        self.connections.redis_up(sent)
        if self._refusals.pop(doing, None) is not None:
            log.warning("Redis accepts %s again", doing)
        return result

    def _refused(self, doing: str, exc: redis.exceptions.ResponseError) -> None:
        """An error reply (OOM at maxmemory, MISCONF, an ACL's NOPERM) lasts until someone
        fixes Redis: the worker keeps its children, and says so once per duty and kind of
        refusal rather than at every tick."""
        # redis-py strips the reply's code for the types it maps (OOM, NOPERM): name both.
        reason = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        kind = " ".join(reason.split(" ", 2)[:2])
        if self._refusals.get(doing) != kind:
            self._refusals[doing] = kind
            log.error("Redis refused %s (%s); retrying until it accepts", doing, reason)
        if doing == RENEWING:  # other workers' renewals were likely refused too
            self._recover_not_before = time.monotonic() + self.lease_seconds

    def _outage(self, exc: Exception, doing: str) -> None:
        # After an outage, let live workers renew before their leases count as lost.
        self._recover_not_before = time.monotonic() + self.lease_seconds
        self.connections.redis_down(exc, doing)

    def _registry(self) -> WorkerRegistry:
        return WorkerRegistry(self.connections.client, self.connections.keys, self.registry_ttl)

    def started(self, info: SupervisorInfo) -> None:
        registry = self._registry()
        self._guarded("registering the worker", lambda: registry.register(info, self.queues.given))
        self._mark_metrics_minute()  # before any child of this worker finishes a job

    def _mark_metrics_minute(self) -> None:
        """The per-minute timeline's copy of the totals (lua/metrics_mark.lua): one cheap
        call per tick, a copy at the first of each minute."""
        client, keys = self.connections.client, self.connections.keys
        self._guarded("marking the metrics minute", lambda: mark_metrics_minute(client, keys))

    def stopped(self, info: SupervisorInfo) -> None:
        if self._pending:
            self._flush_before_exit()
        registry = self._registry()
        self._guarded("unregistering the worker", lambda: registry.unregister(info.name))

    def stop_waiting(self) -> None:
        self._leave = True  # from a signal handler: a flag only, read by the wait below

    def renew(self, claims: Sequence[str]) -> None:
        lease_ms = int(self.lease_seconds * 1000)
        steps = self.connections.steps
        self._guarded(RENEWING, lambda: steps.renew(list(claims), lease_ms))

    def is_suspended(self) -> bool:
        # While Redis is away, keep the last answer rather than guess.
        client, keys = self.connections.client, self.connections.keys
        found = self._guarded("reading the suspend flag", lambda: client.exists(keys.suspended))
        if found is not None:
            self._suspended = bool(found)
        return self._suspended

    def tick(self, info: SupervisorInfo) -> None:
        if self._pending:
            self._run_pending()
        registry = self._registry()
        self._guarded("heartbeating", lambda: registry.heartbeat(info, self.queues.given))
        self._mark_metrics_minute()
        if time.monotonic() >= self._recover_not_before:
            self._guarded("recovering expired leases", self.maintain)
        client, keys = self.connections.client, self.connections.keys
        self._guarded(
            "running the cron scheduler", lambda: run_scheduler(client, keys, self.worker)
        )

    def maintain(self) -> Tuple[int, int]:
        """Recover expired leases and trim expired finished and dead-letter entries, at most
        once per interval across all supervisors; returns (requeued, dead-lettered)."""
        gate = self.connections.client.set(
            self.connections.keys.maintenance,
            self.worker,
            nx=True,
            px=max(1, int(self.maintenance_interval * 1000)),
        )
        if not gate:
            return 0, 0
        steps = self.connections.steps
        requeued, dead = steps.recover(self.max_lost)
        if requeued or dead:
            log.warning(
                "recovered jobs whose worker vanished: %d requeued, %d dead-lettered "
                "after %d lost leases",
                requeued,
                dead,
                self.max_lost,
            )
        # Here, not in complete: a queue that gets no more completions would keep its
        # expired entries forever, and the per-job step stays as cheap as it is.
        steps.trim_ended()
        return requeued, dead

    def is_drained(self) -> bool:
        """No job waits in the listened queues and none of their scheduled jobs is due
        (burst mode does not wait for jobs scheduled later)."""
        client, keys = self.connections.client, self.connections.keys

        def check() -> bool:
            now = redis_time_ms(client)  # due times are on Redis' clock (clock.py)
            pipe = client.pipeline(transaction=False)
            for queue in self.queues.names(client):
                pipe.zcard(keys.queue(queue))
                pipe.zcount(keys.scheduled(queue), "-inf", now)
            return not any(pipe.execute())

        return bool(self._guarded("checking whether the queues are empty", check))

    # ---- jobs whose child the supervisor ended or lost: steps that must land ----
    def interrupted(self, claims: Sequence[str]) -> None:
        # Revoke first: a take that lands after this cannot lease anything under these
        # claims, and one that landed before is found and requeued next.
        claims, steps = list(claims), self.connections.steps
        self._pending.append(
            ("revoking the claims of ended children", lambda: steps.revoke(claims))
        )
        for claim in claims:
            self._pending.append((REQUEUEING, partial(self._requeue, claim)))
        self._run_pending()

    def _requeue(self, claim: str) -> bool:
        steps = self.connections.steps
        found = steps.claimed_job(claim)
        if found is None:
            return False
        job_id, fields = found
        queue = text(fields.get("queue", b""))
        requeued = steps.requeue_front(claim, job_id, queue, self.worker, "interrupted")
        if requeued:
            func = text(fields.get("func", b"?"))
            log_transition(self.worker, "interrupted", job_id, queue, func=func)
        return requeued

    def lost(self, claim: str, reason: str) -> None:
        message = f"the worker child running this job died: {reason}"
        self._fail_claim("failing a lost job", claim, errors.WorkerLost, message)

    def timed_out(self, claim: str, seconds: float) -> None:
        message = f"the job ran past its timeout of {seconds:g} s and was stopped"
        self._fail_claim("failing a timed-out job", claim, errors.JobTimeout, message)

    def _fail_claim(self, doing: str, claim: str, cls: type, message: str) -> None:
        self._pending.append((doing, lambda: self.recorder.fail_claim(claim, cls, message)))
        self._run_pending()

    def _run_pending(self, quiet: bool = False) -> bool:
        """Run the waiting steps in order; False when Redis is still away."""
        while self._pending:
            doing, step = self._pending[0]
            try:
                step()
            except REDIS_DOWN as exc:
                if not quiet:
                    self._outage(exc, doing)
                return False
            except Exception:
                self._pending.pop(0)  # not a transient error: retrying cannot help
                raise
            self._pending.pop(0)  # only once it landed: a repeat is fenced by the claim
        return True

    def _flush_before_exit(self) -> None:
        """Wait for Redis, up to one lease, for the steps that must land: a job interrupted
        by a cold shutdown must come back as an interruption, not as a lost lease (an
        attempt counted). Past a lease, recovery has its say anyway; another INT/TERM ends
        the wait at once (SPEC 2: gone within 1 s of a cold shutdown, when asked again)."""
        if self._run_pending(quiet=True):
            return
        log.warning(
            "Redis is unreachable: waiting up to %.0f s for it to record %d step(s) of ended "
            "children (interrupted jobs go back without counting an attempt); send "
            "SIGINT/SIGTERM again to leave now",
            self.lease_seconds,
            len(self._pending),
        )
        deadline = time.monotonic() + self.lease_seconds
        backoff = Backoff(first=0.1, cap=2.0)
        while time.monotonic() < deadline and not self._leave:
            self._pause(min(backoff.wait(), max(0.0, deadline - time.monotonic())))
            if not self._leave and self._run_pending(quiet=True):
                log.info("Redis is back: the steps of ended children are recorded")
                return
        if self._leave:
            log.warning(
                "asked to stop again: leaving %d interrupted job(s) to lease recovery",
                self._pending_interruptions(),
            )
            return
        log.error(
            "Redis stayed unreachable: %d step(s) of ended children are dropped; their jobs "
            "come back through lease recovery",
            len(self._pending),
        )

    def _pause(self, seconds: float) -> None:
        """Sleep, in slices short enough to notice `stop_waiting` within 0.1 s."""
        until = time.monotonic() + seconds
        while not self._leave and time.monotonic() < until:
            time.sleep(min(0.1, max(0.0, until - time.monotonic())))

    def _pending_interruptions(self) -> int:
        return sum(1 for doing, _ in self._pending if doing == REQUEUEING)

    # ---- cancel ----
    def stop_requested(self, claims: Sequence[str]) -> Sequence[str]:
        """The running claims whose jobs were canceled (job.cancel() / rqconc cancel)."""
        if not claims:
            return ()
        client, keys = self.connections.client, self.connections.keys

        def read() -> List[str]:
            pipe = client.pipeline(transaction=False)
            pipe.smembers(keys.canceling)
            pipe.hmget(keys.claims, list(claims))
            canceling, job_ids = pipe.execute()
            wanted = {text(i) for i in canceling}
            return [c for c, i in zip(claims, job_ids) if i is not None and text(i) in wanted]

        return self._guarded("reading cancel requests", read) or ()

    def canceled(self, claim: str) -> None:
        client, keys, steps = self.connections.client, self.connections.keys, self.connections.steps

        def cancel() -> None:
            job_id = client.hget(keys.claims, claim)
            if job_id is None:
                return
            func, queue = (
                text(v or b"") for v in client.hmget(keys.job(text(job_id)), "func", "queue")
            )
            if steps.cancel(text(job_id), claim, self.worker) == 1:
                log_transition(self.worker, "canceled", text(job_id), queue, func=func)

        self._guarded("canceling a stopped job", cancel)
