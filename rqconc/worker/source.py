"""`RedisSource`: the WorkSource that takes jobs from Redis queues.

Children call `take` and `perform`; the supervisor calls the rest. Every step about a job
presents the claim of its take (the fencing token), so a worker that lost its lease can no
longer record anything about that job.

Redis going away never ends a child: `take` logs one line and backs off (capped), and the
bookkeeping of a job that ran is retried until Redis is back (the fence makes a repeated
completion safe: it either lands once or is refused as stale).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union
from urllib.parse import quote

import redis

from rqconc import errors
from rqconc.connection.clients import connect, describe
from rqconc.connection.direct import DirectConnection
from rqconc.engine.source import NextClaim, SupervisorInfo, WorkItem, WorkSource
from rqconc.queue.keys import KeySpace, check_queue_name
from rqconc.queue.retry import Backoff, policy_of
from rqconc.queue.serialization import mro_names, type_name
from rqconc.queue.steps import Steps, now_ms, text
from rqconc.worker.registry import DEFAULT_TTL, WorkerRegistry
from rqconc.worker.runner import REDIS_DOWN, JobRunner, Outcome, decoded
from rqconc.worker.scheduler import run_scheduler

log = logging.getLogger("rqconc.worker")

STRATEGIES = ("ordered", "round-robin")
MAX_BLOCK = 0.25  # longest BZPOPMIN: a stop request is seen at least this often
MIN_BLOCK = 0.01  # shortest BZPOPMIN whose timeout cannot truncate to 0 ("forever")
T = TypeVar("T")


def _number(value: Any, default: float) -> float:
    """A stored number, or `default` when the field is missing or corrupt."""
    try:
        number = float(text(value))
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


def url_of(client: redis.Redis) -> str:
    """A URL reaching the same server as `client`, for processes that cannot inherit it.
    (TLS certificate options are not carried over: pass a URL for those.)"""
    kwargs = client.connection_pool.connection_kwargs
    user, password = kwargs.get("username"), kwargs.get("password")
    auth = ""
    if password:
        auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@"
    if kwargs.get("path"):
        query = f"db={kwargs.get('db', 0)}" + (
            f"&password={quote(password, safe='')}" if password else ""
        )
        return f"unix://{kwargs['path']}?{query}"
    scheme = (
        "rediss"
        if issubclass(client.connection_pool.connection_class, redis.SSLConnection)
        else "redis"
    )
    return (
        f"{scheme}://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        f"/{kwargs.get('db', 0)}"
    )


def _work_item(claim: str, taken: Any) -> Optional[WorkItem]:
    """The WorkItem of a take's reply; None when it took nothing (a due time)."""
    if taken is None or isinstance(taken, int):
        return None
    job_id, fields = taken
    deadline = time.time() + _number(fields.get("timeout"), 180.0)
    return WorkItem(claim, job_id, deadline=deadline, payload=fields)


def _timed_out(seconds: float) -> Outcome:
    """A job that returned past its deadline failed, whatever it returned."""
    return Outcome(
        exc=(type_name(errors.JobTimeout), f"the job ran past its timeout of {seconds:g} s", ""),
        exc_mro=tuple(mro_names(errors.JobTimeout)),
        retryable=True,
    )


class RedisSource(WorkSource):
    """Takes jobs from `queues` in a Redis namespace (see docs/architecture.md)."""

    def __init__(
        self,
        url: Union[str, redis.Redis, None] = None,
        queues: Sequence[str] = ("default",),
        strategy: str = "ordered",
        allow: Sequence[str] = (),
        lease_seconds: float = 15,
        max_lost: int = 3,
        namespace: str = "rqconc",
        name: Optional[str] = None,
        registry_ttl: float = DEFAULT_TTL,
        maintenance_interval: float = 1.0,
        allow_pickle: bool = False,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        if not queues:
            raise ValueError("a worker needs at least one queue")
        self._client: Optional[redis.Redis] = None
        self._client_pid = 0
        self._steps: Optional[Steps] = None
        # Per child (thread-local: greenlet-local under gevent): the steps on its own
        # connection, for the take, completion and marker wait that every job pays for.
        self._child = threading.local()
        if isinstance(url, redis.Redis):  # used as is here; other processes get its URL
            self._client, self._client_pid = url, os.getpid()
            url = url_of(url)
        self.url = url
        self.queues = [check_queue_name(q) for q in queues]
        self.strategy = strategy
        self.runner = JobRunner(self, allow, allow_pickle)
        self.lease_seconds = lease_seconds
        self.max_lost = max_lost
        self.keys = KeySpace(namespace)
        self.name = name or f"{socket.gethostname()}.{os.getpid()}"
        self.registry_ttl = registry_ttl
        self.maintenance_interval = maintenance_interval
        self._rotation = 0
        self._backoff = Backoff()
        self._orphans: List[str] = []  # claims whose take reply was lost on the way
        self._recover_not_before = 0.0
        self._suspended = False

    def __getstate__(self) -> Dict[str, Any]:
        # No socket crosses a process boundary: each process opens its own client.
        state = self.__dict__.copy()
        state["_client"], state["_client_pid"], state["_steps"] = None, 0, None
        del state["_child"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._child = threading.local()

    @property
    def client(self) -> redis.Redis:
        if self._client is None or self._client_pid != os.getpid():
            self._client = connect(self.url)
            self._client_pid = os.getpid()
        return self._client

    @property
    def steps(self) -> Steps:
        client = self.client
        if self._steps is None or self._steps.client is not client:
            self._steps = Steps(client, self.keys)
        return self._steps

    @property
    def hot_steps(self) -> Steps:
        """This child's steps on its own connection (see direct_connection.py)."""
        steps = getattr(self._child, "steps", None)
        if steps is None or getattr(self._child, "pid", 0) != os.getpid():
            steps = Steps(DirectConnection(self.client), self.keys)  # type: ignore[arg-type]
            self._child.steps, self._child.pid = steps, os.getpid()
        return steps

    def _redis_down(self, exc: Exception, doing: str, delay: Optional[float] = None) -> None:
        retry = f"; retrying in {delay:.1f} s" if delay is not None else ""
        where = describe(self._client) if self._client is not None else "Redis"
        log.warning(
            "cannot reach Redis at %s while %s (%s)%s", where, doing, exc.__class__.__name__, retry
        )

    # ---- child side ----
    def child_started(self, child_index: int) -> None:
        if self._client_pid != os.getpid():  # forked: drop the parent's client and state
            self._client, self._client_pid = None, 0
            self._orphans = []
            self._backoff = Backoff()
            self.runner.forget_functions()
        self._child.steps = None  # a thread or greenlet of the supervisor's process: its own

    def child_stopping(self) -> None:
        steps = getattr(self._child, "steps", None)
        if steps is not None:
            steps.client.close()
            self._child.steps = None

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        wait = self._backoff.remaining()
        if wait > 0:
            time.sleep(min(wait, max(timeout, 0.0)))
            return None
        try:
            self._requeue_orphans()
            item = self._take(claim, timeout)
        except REDIS_DOWN as exc:
            # The take may have run with its reply lost: put that job back once Redis is up.
            self._orphans.append(claim)
            delay = self._backoff.failed()
            if delay is not None:
                self._redis_down(exc, "taking a job", delay)
            return None
        except redis.exceptions.ResponseError as exc:  # e.g. OOM: never end the child for it
            delay = self._backoff.failed()
            if delay is not None:
                log.error(
                    "Redis refused a take (%s); retrying in %.1f s", str(exc).splitlines()[0], delay
                )
            return None
        if self._backoff.reset():
            log.info("Redis at %s is reachable again", describe(self.client))
        return item

    def _take_order(self) -> List[str]:
        order = self.queues
        if self.strategy == "round-robin":
            shift = self._rotation % len(order)
            self._rotation += 1
            order = order[shift:] + order[:shift]
        return order

    def _take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        order = self._take_order()
        lease_ms = int(self.lease_seconds * 1000)
        hot = self.hot_steps
        taken = hot.take(claim, order, lease_ms, self.name)
        if isinstance(taken, int):
            # Nothing waits: block on the queues' markers (enqueue and take set them), but no
            # longer than until the earliest scheduled job is due, and take again in the same
            # round trip. A child suspended or retiring meanwhile hands that job back (the
            # child loop checks after every take).
            wait = min(timeout, MAX_BLOCK)
            if taken >= 0:
                wait = min(wait, max(0.0, (taken - now_ms()) / 1000))
            # Redis turns the timeout into whole milliseconds by truncation, and 0 means
            # "block forever": a wait of about 1 ms could hang the child. Below 10 ms, retake.
            if wait < MIN_BLOCK:
                return None
            taken = hot.wait_then_take(round(wait, 2), claim, order, lease_ms, self.name)
            if isinstance(taken, int):
                return None
        return _work_item(claim, taken)

    def _requeue_orphans(self) -> None:
        while self._orphans:
            claim = self._orphans[0]
            found = self.steps.claimed_job(claim)
            if found is not None:
                job_id, fields = found
                self.steps.requeue_front(
                    claim, job_id, text(fields.get("queue", b"")), self.name, "requeued"
                )
            self._orphans.pop(0)

    def perform(self, item: WorkItem, chain: Optional[NextClaim] = None) -> Optional[WorkItem]:
        fields, corrupt = decoded(item.payload)
        self._log_transition("started", item.item_id, fields.get("queue", ""))
        started = time.monotonic()
        outcome = corrupt or self.runner.run(fields)
        duration = time.monotonic() - started
        if item.overran():  # returned too late to be ended (held the GIL, never yielded)
            outcome = _timed_out(_number(fields.get("timeout"), 180.0))
        # Failures are rare: only a success takes the next job in the same step.
        next_claim = chain() if chain is not None and outcome.exc is None else None
        try:
            return self._record(item, fields, outcome, duration, next_claim)
        except REDIS_DOWN as exc:
            self._redis_down(exc, "recording a job's outcome")
            if next_claim is not None:
                # The step may have run with its reply lost: a job it took under the next
                # claim goes back once Redis answers; retries take nothing.
                self._orphans.append(next_claim)
        self._until_recorded(lambda: self._record(item, fields, outcome, duration))
        return None

    def _record(
        self,
        item: WorkItem,
        fields: Dict[str, str],
        outcome: Outcome,
        duration: float,
        next_claim: Optional[str] = None,
    ) -> Optional[WorkItem]:
        """Record the outcome; with a next claim, a success also takes the next job, which
        is returned."""
        queue = fields.get("queue", "")
        following = None
        if outcome.exc is None:
            if next_claim is None:
                recorded = self.hot_steps.complete(
                    item.claim,
                    item.item_id,
                    queue,
                    outcome.result,
                    outcome.serializer,
                    self.name,
                    outcome.next_stage,
                )
            else:
                take = (next_claim, self._take_order(), int(self.lease_seconds * 1000))
                recorded, taken = self.hot_steps.complete(
                    item.claim,
                    item.item_id,
                    queue,
                    outcome.result,
                    outcome.serializer,
                    self.name,
                    outcome.next_stage,
                    take,
                )
                following = _work_item(next_claim, taken)
            event = "finished"
        else:
            retry_at = None
            if outcome.retryable:
                attempts = int(_number(fields.get("attempts"), 0)) + 1
                delay = policy_of(fields.get("retry")).next_delay(outcome.exc_mro, attempts)
                retry_at = None if delay is None else now_ms() + int(delay * 1000)
            code = self.steps.fail(
                item.claim, item.item_id, queue, outcome.exc, retry_at, self.name
            )
            recorded, event = code != -1, ("retry" if code == 2 else "failed")
        if not recorded:
            log.warning(
                "job %s: its lease was lost (claim %s is stale), so its outcome is "
                "dropped; the job runs again elsewhere",
                item.item_id,
                item.claim,
            )
        else:
            self._log_transition(event, item.item_id, queue, duration, outcome.exc)
        return following

    def _log_transition(
        self,
        event: str,
        job_id: str,
        queue: str,
        duration: Optional[float] = None,
        exc: Optional[Tuple[str, str, str]] = None,
    ) -> None:
        """One structured line per transition this worker makes (events.py has the stream)."""
        if not log.isEnabledFor(logging.INFO):
            return
        extra: Dict[str, Any] = {
            "event": event,
            "job_id": job_id,
            "queue": queue,
            "worker": self.name,
        }
        detail = ""
        if duration is not None:
            extra["duration"] = round(duration, 6)
            detail = f" in {duration:.3f} s"
        if exc is not None:
            extra["exc_type"] = exc[0]
            detail += f": {exc[0]}: {exc[1]}"[:300]
        log.info("job %s %s%s", job_id, event, detail, extra=extra)

    def _until_recorded(self, record: Callable[[], None]) -> None:
        """Retry a job's bookkeeping until Redis takes it: a job that ran is never lost."""
        backoff = Backoff(first=0.1, cap=5.0)
        while True:
            try:
                record()
                return
            except REDIS_DOWN as exc:
                delay = backoff.failed() or backoff.remaining()
                self._redis_down(exc, "recording a job's outcome", delay)
                time.sleep(delay)

    def give_back(self, item: WorkItem) -> None:
        queue = text(item.payload.get("queue", b""))
        self._until_recorded(
            lambda: self.steps.requeue_front(item.claim, item.item_id, queue, self.name, "requeued")
        )

    # ---- supervisor side: never raises because Redis is away (leases cover the gap) ----
    def _guarded(self, doing: str, action: Callable[[], T]) -> Optional[T]:
        try:
            return action()
        except REDIS_DOWN as exc:
            # After an outage, let live workers renew before their leases count as lost.
            self._recover_not_before = time.monotonic() + self.lease_seconds
            self._redis_down(exc, doing)
            return None

    def supervisor_started(self, info: SupervisorInfo) -> None:
        registry = WorkerRegistry(self.client, self.keys, self.registry_ttl)
        self._guarded("registering the worker", lambda: registry.register(info, self.queues))

    def supervisor_stopped(self, info: SupervisorInfo) -> None:
        registry = WorkerRegistry(self.client, self.keys, self.registry_ttl)
        self._guarded("unregistering the worker", lambda: registry.unregister(info.name))

    def renew(self, claims: Sequence[str]) -> None:
        lease_ms = int(self.lease_seconds * 1000)
        self._guarded("renewing leases", lambda: self.steps.renew(list(claims), lease_ms))

    def renew_interval(self) -> float:
        return self.lease_seconds / 3

    def is_suspended(self) -> bool:
        # While Redis is away, keep the last answer rather than guess.
        found = self._guarded(
            "reading the suspend flag", lambda: self.client.exists(self.keys.suspended)
        )
        if found is not None:
            self._suspended = bool(found)
        return self._suspended

    def tick(self, info: SupervisorInfo) -> None:
        registry = WorkerRegistry(self.client, self.keys, self.registry_ttl)
        self._guarded("heartbeating", lambda: registry.heartbeat(info, self.queues))
        if time.monotonic() >= self._recover_not_before:
            self._guarded("recovering expired leases", self.maintain)
        self._guarded(
            "running the cron scheduler", lambda: run_scheduler(self.client, self.keys, self.name)
        )

    def maintain(self) -> Tuple[int, int]:
        """Recover expired leases and trim expired finished and dead-letter entries, at most
        once per interval across all supervisors; returns (requeued, dead-lettered)."""
        gate = self.client.set(
            self.keys.maintenance,
            self.name,
            nx=True,
            px=max(1, int(self.maintenance_interval * 1000)),
        )
        if not gate:
            return 0, 0
        requeued, dead = self.steps.recover(self.max_lost)
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
        self.steps.trim_ended()
        return requeued, dead

    def is_drained(self) -> bool:
        """No job waits in the listened queues and none of their scheduled jobs is due
        (burst mode does not wait for jobs scheduled later)."""

        def check() -> bool:
            pipe = self.client.pipeline(transaction=False)
            for queue in self.queues:
                pipe.zcard(self.keys.queue(queue))
                pipe.zcount(self.keys.scheduled(queue), "-inf", now_ms())
            return not any(pipe.execute())

        return bool(self._guarded("checking whether the queues are empty", check))

    def interrupted(self, claims: Sequence[str]) -> None:
        # Revoke first: a take that lands after this cannot lease anything under these
        # claims, and one that landed before is found and requeued below.
        self._guarded("revoking the claims of ended children", lambda: self.steps.revoke(claims))
        for claim in claims:
            self._guarded("requeueing an interrupted job", lambda c=claim: self._requeue(c))

    def _requeue(self, claim: str) -> bool:
        found = self.steps.claimed_job(claim)
        if found is None:
            return False
        job_id, fields = found
        queue = text(fields.get("queue", b""))
        requeued = self.steps.requeue_front(claim, job_id, queue, self.name, "interrupted")
        if requeued:
            self._log_transition("interrupted", job_id, queue)
        return requeued

    def lost(self, claim: str, reason: str) -> None:
        message = f"the worker child running this job died: {reason}"
        self._guarded(
            "failing a lost job", lambda: self._fail_claim(claim, errors.WorkerLost, message)
        )

    def timed_out(self, claim: str, seconds: float) -> None:
        message = f"the job ran past its timeout of {seconds:g} s and was stopped"
        self._guarded(
            "failing a timed-out job", lambda: self._fail_claim(claim, errors.JobTimeout, message)
        )

    def _fail_claim(self, claim: str, cls: type, message: str) -> int:
        """Fail the job a claim holds, as if it had raised `cls`; -1 if the claim is stale."""
        found = self.steps.claimed_job(claim)
        if found is None:
            return -1
        job_id, raw = found
        fields = {name: text(value) for name, value in raw.items()}
        attempts = int(_number(fields.get("attempts"), 0)) + 1
        delay = policy_of(fields.get("retry")).next_delay(mro_names(cls), attempts)
        retry_at = None if delay is None else now_ms() + int(delay * 1000)
        code = self.steps.fail(
            claim,
            job_id,
            fields.get("queue", ""),
            (type_name(cls), message, ""),
            retry_at,
            self.name,
        )
        if code != -1:
            self._log_transition(
                "retry" if code == 2 else "failed",
                job_id,
                fields.get("queue", ""),
                exc=(type_name(cls), message, ""),
            )
        return code

    def stop_requested(self, claims: Sequence[str]) -> Sequence[str]:
        """The running claims whose jobs were canceled (job.cancel() / rqconc cancel)."""
        if not claims:
            return ()

        def read() -> List[str]:
            pipe = self.client.pipeline(transaction=False)
            pipe.smembers(self.keys.canceling)
            pipe.hmget(self.keys.claims, list(claims))
            canceling, job_ids = pipe.execute()
            wanted = {text(i) for i in canceling}
            return [c for c, i in zip(claims, job_ids) if i is not None and text(i) in wanted]

        return self._guarded("reading cancel requests", read) or ()

    def canceled(self, claim: str) -> None:
        def cancel() -> None:
            job_id = self.client.hget(self.keys.claims, claim)
            if job_id is not None and self.steps.cancel(text(job_id), claim, self.name) == 1:
                self._log_transition("canceled", text(job_id), "")

        self._guarded("canceling a stopped job", cancel)
