"""Queues: where jobs are enqueued (SPEC section 3).

Every enqueue is one Lua step (`lua/enqueue.lua`), also for a batch: validation and
serialization happen first, in Python, so bad input raises before anything is written.
The fields a batch shares are sent once (job_fields.py). Limits, pause and cron entries
are the queue's collaborators (`q.limiter`, `q.crontab`), dead letters `q.failed`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import redis

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.connection.direct import ReplyLost
from rqconc.connection.pooled import pooled_or_plain
from rqconc.connection.replicas import DEFAULT_WAIT_TIMEOUT, ReplicaWait
from rqconc.queue import admin
from rqconc.queue.dead_letters import DeadLetters
from rqconc.queue.eager import EagerRunner, eager_mode
from rqconc.queue.eager.group import EagerGroup
from rqconc.queue.eager.limits import EagerLimiter
from rqconc.queue.enqueue_plan import EnqueuePlan, GroupPlan, check_group
from rqconc.queue.job import Job
from rqconc.queue.job_fields import JobFields
from rqconc.queue.limits.parked import waiting_count
from rqconc.queue.limits.settings import Limiter, Limits
from rqconc.queue.options import (
    Call,
    Func,
    Priority,
    batch_of,
    check_event_detail,
    check_priority,
    due_ms_at,
    due_ms_in,
    queue_defaults,
    take_options,
)
from rqconc.queue.placement import check_options
from rqconc.queue.retry import Retry
from rqconc.queue.schedule.cron import CronEntry
from rqconc.queue.schedule.crontab import CronTab
from rqconc.queue.serialization import get_serializer
from rqconc.queue.workflow.group_result import Group
from rqconc.queue.workflow.signature import Signature
from rqconc.store.keys import KeySpace, check_queue_name
from rqconc.store.scripts import now_ms
from rqconc.store.steps.core import Steps, text


class Queue:
    """A named queue of jobs. `connection`: a URL, a `redis.Redis`, or None (SPEC section 6)."""

    def __init__(
        self,
        name: str = "default",
        connection: ConnectionLike = None,
        serializer: str = "json",
        namespace: str = "rqconc",
        default_timeout: Optional[float] = None,
        default_result_ttl: Optional[int] = None,
        default_retry: Optional[Retry] = None,
        event_detail: str = "basic",
        eager: Optional[bool] = None,
        wait_replicas: int = 0,
        wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
    ) -> None:
        self.name = check_queue_name(name)
        # SPEC section 8: enqueue and each state change wait for N replicas (replicas.py).
        self.wait = ReplicaWait(wait_replicas, wait_timeout)
        self.serializer = get_serializer(serializer)
        self.keys = KeySpace(namespace)
        self.defaults = queue_defaults(default_timeout, default_result_ttl, default_retry)
        self.event_detail = check_event_detail(event_detail)
        self.fields = JobFields(name, namespace, self.serializer, self.defaults, event_detail)
        self._connection_arg = connection
        self._client: Optional[redis.Redis] = None
        self._steps: Optional[Steps] = None
        # Eager mode (for application tests, docs/testing.md): jobs run inline at enqueue,
        # and nothing here ever reaches Redis. None: the RQCONC_EAGER environment variable.
        self._eager = EagerRunner(self) if eager_mode(eager) else None
        # Collaborators: its limits and pause (kept in this process when eager), its crons.
        self._stored_limits = Limiter(lambda: self.connection, self.keys, self.name, self.wait)
        self.limiter: Union[Limiter, EagerLimiter] = (
            self._stored_limits if self._eager is None else EagerLimiter(namespace, self.name)
        )
        self.crontab = CronTab(
            lambda: self.connection, self.keys, self.name, self.prepare, self.wait
        )

    @property
    def eager(self) -> bool:
        return self._eager is not None

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, namespace={self.keys.namespace!r})"

    @property
    def connection(self) -> redis.Redis:
        # Opened on first use: creating a Queue touches nothing (nor starts any server).
        if self._client is None:
            if self._eager is not None:
                raise RuntimeError(f"{self!r} is eager (docs/testing.md): it has no Redis")
            self._client = connect(self._connection_arg)
        return self._client

    @property
    def failed(self) -> DeadLetters:
        """The dead letters of this queue: `len`, `job_ids`, `requeue(id)`, `requeue_all()`,
        `purge()`."""
        return DeadLetters(self.connection, self.keys, self.name, self.wait)

    # ---- enqueueing ----
    def enqueue(self, func: Func, *args: Any, **kwargs: Any) -> Job:
        """Store a job calling func(*args, **kwargs); the keyword options (options.OPTION_NAMES)
        are taken out of kwargs (use `enqueue_call` for a function that needs those names)."""
        options = take_options(kwargs)
        return self._store([(func, args, kwargs)], options, None)[0]

    def enqueue_call(
        self,
        func: Func,
        args: Sequence[Any] = (),
        kwargs: Optional[Dict[str, Any]] = None,
        **options: Any,
    ) -> Job:
        return self._store([(func, tuple(args), dict(kwargs or {}))], options, None)[0]

    def enqueue_at(
        self, when: Union[datetime, int, float], func: Func, *args: Any, **kwargs: Any
    ) -> Job:
        """Like `enqueue`, but the job waits (status `scheduled`) until `when`."""
        options = take_options(kwargs)
        return self._store([(func, args, kwargs)], options, due_ms_at(when))[0]

    def enqueue_in(
        self, delay: Union[timedelta, int, float], func: Func, *args: Any, **kwargs: Any
    ) -> Job:
        """Like `enqueue`, but the job waits (status `scheduled`) for `delay`."""
        options = take_options(kwargs)
        return self._store([(func, args, kwargs)], options, due_ms_in(delay, now_ms()))[0]

    def enqueue_many(self, calls: Iterable[Sequence[Any]], **options: Any) -> List[Job]:
        """Store a batch in one round trip: [(func, args), (func, args, kwargs), ...]. The
        options apply to every job; returns the jobs in order."""
        batch = batch_of(calls, options)
        return self._store(batch, options, None) if batch else []

    def enqueue_group(
        self, calls: Sequence[Any], chord: Optional[Signature] = None
    ) -> Union[Group, EagerGroup]:
        """Store a group of jobs (Signatures or (func, args[, kwargs]) tuples), and a chord's
        callback (run with their results once all finished), in one step; what
        `rqconc.group(...).enqueue(queue)` calls (queue/workflow/groups.py). An eager queue runs
        them inline (rqconc/queue/eager/__init__.py)."""
        check_group(self.keys.namespace, calls, chord)
        if self._eager is not None:
            return self._eager.enqueue_group(calls, chord)
        plan = GroupPlan(self.prepare, self.keys, self.name, calls, chord)
        client = self.connection
        if self._steps is None:
            self._steps = Steps(pooled_or_plain(client, self.keys.seq), self.keys, self.wait)
        with translated_errors(client):
            try:
                self._steps.run(plan.step)
            except ReplyLost:  # it may have run: the step stores a group id once
                self._steps.run(plan.step)
        keys = self.keys
        jobs = self._handed_out([Job.stored(i, client, keys, f) for i, f in plan.members])
        if plan.callback is None:
            return Group(plan.group_id, jobs)
        (callback_job,) = self._handed_out(
            [Job.stored(*plan.callback[:1], client, keys, plan.callback[1])]
        )
        return Group(plan.group_id, jobs, callback_job)

    def _store(
        self, calls: Sequence[Call], options: Dict[str, Any], due_ms: Optional[int]
    ) -> List[Job]:
        check_options(self.keys.namespace, options)  # parents, callbacks: ours (placement.py)
        if self._eager is not None:
            return self._eager.run(calls, options, due_ms)
        plan = EnqueuePlan(self.fields, self.keys, self.name, calls, options, due_ms)
        try:  # free unless it raises (3.11); a traced enqueue's span ends with the error
            client = self.connection
            if self._steps is None:
                self._steps = Steps(pooled_or_plain(client, self.keys.seq), self.keys, self.wait)
            run = self._steps.run if plan.resendable else Steps(client, self.keys, self.wait).run
            with translated_errors(client):
                try:
                    reply = run(plan.step)
                except ReplyLost:
                    if not plan.resendable:
                        raise
                    # It may have run: the step is idempotent per id, so the same request
                    # again stores each job once (and tells ours from another under an id).
                    reply = run(plan.step)
        except BaseException as error:
            plan.abandoned(error)
            raise
        keys = self.keys
        jobs = self._handed_out(
            [Job.stored(job_id, client, keys, fields) for job_id, fields in plan.stored(reply)]
        )
        if plan.holder_is_another(reply):  # the job that holds the key: its own fields
            jobs[0].refresh()
        return jobs

    def _handed_out(self, jobs: List[Job]) -> List[Job]:
        """Jobs this queue returns act with its wait_replicas (cancel, delete)."""
        for job in jobs:
            job.wait = self.wait
        return jobs

    def prepare(
        self, calls: Sequence[Call], options: Dict[str, Any]
    ) -> List[Tuple[str, int, Dict[str, str]]]:
        """Validate and serialize jobs of this queue as (id, priority, hash fields), writing
        nothing: bad input raises here, before any Redis step (job_fields.py)."""
        return self.fields.prepare(calls, options)

    # ---- limits and pause (limits.py; an eager queue's: eager/limits.py) ----
    def set_limits(self, concurrency: Optional[int] = None, rate: Optional[str] = None) -> None:
        """Cap the queue's running jobs and starts ("100/s"); no argument: remove both."""
        self.limiter.set(concurrency, rate)

    def set_group_limits(
        self, concurrency: Optional[int] = None, rate: Optional[str] = None
    ) -> None:
        """The same caps for each group (`enqueue(..., group="acme")`) of the queue apart."""
        self.limiter.set_group(concurrency, rate)

    def pause(self) -> None:
        """Workers stop taking this queue's jobs (running ones finish); others go on."""
        self.limiter.pause()

    def resume(self) -> None:
        self.limiter.resume()

    @property
    def limits(self) -> Limits:
        """The queue's settings (pause, caps, group caps), as stored now."""
        return self.limiter.read()

    @property
    def is_paused(self) -> bool:
        return self.limiter.read().paused

    # ---- cron entries (scheduling.py) ----
    def cron(
        self, expr: str, func: Func, *args: Any, id: Optional[str] = None, **kwargs: Any
    ) -> CronEntry:
        """Run func(*args, **kwargs) at every tick of `expr`, once (CronTab.cron: also tz,
        times, start, end, skip_if_running)."""
        return self.crontab.cron(expr, func, *args, id=id, **kwargs)

    def every(
        self, seconds: float, func: Func, *args: Any, id: Optional[str] = None, **kwargs: Any
    ) -> CronEntry:
        """Run func(*args, **kwargs) in this queue every `seconds` (see CronTab.every)."""
        return self.crontab.every(seconds, func, *args, id=id, **kwargs)

    def crons(self) -> List[CronEntry]:
        return self.crontab.crons()

    def remove_cron(self, id: str) -> bool:
        return self.crontab.remove_cron(id)

    # ---- inspection ----
    @property
    def count(self) -> int:
        """How many jobs wait in the queue, with those parked behind their group's cap (not
        counting scheduled or running ones)."""
        with translated_errors(self.connection):
            return waiting_count(self.connection, self.keys, self.name)

    def __len__(self) -> int:
        return self.count

    @property
    def job_ids(self) -> List[str]:
        """Ids of the waiting jobs, in the order they will be taken."""
        with translated_errors(self.connection):
            return [text(i) for i in self.connection.zrange(self.keys.queue(self.name), 0, -1)]

    @property
    def jobs(self) -> List[Job]:
        pickled = self.serializer.name == "pickle"
        return self._handed_out(
            [
                Job(job_id, self.connection, self.keys.namespace, allow_pickle=pickled)
                for job_id in self.job_ids
            ]
        )

    @property
    def scheduled_job_ids(self) -> List[str]:
        """Ids of delayed and retrying jobs, earliest due first."""
        with translated_errors(self.connection):
            key = self.keys.scheduled(self.name)
            return [text(i) for i in self.connection.zrange(key, 0, -1)]

    @property
    def started_job_ids(self) -> List[str]:
        with translated_errors(self.connection):
            key = self.keys.started(self.name)
            return [text(i) for i in self.connection.zrange(key, 0, -1)]

    def fetch_job(self, job_id: str) -> Job:
        pickled = self.serializer.name == "pickle"  # a JSON queue's client never unpickles
        (job,) = self._handed_out(
            [Job.fetch(job_id, self.connection, self.keys.namespace, allow_pickle=pickled)]
        )
        return job

    def fetch_jobs(self, job_ids: Sequence[str]) -> List[Optional[Job]]:
        """Load jobs in one round trip, in order; None where a job does not exist (any more)."""
        jobs = Job.fetch_many(list(job_ids), self.connection, self.keys.namespace)
        found = self._handed_out([job for job in jobs if job is not None])
        for job in found:
            job.allow_pickle = self.serializer.name == "pickle"
        return jobs

    # ---- admin (rqconc/queue/admin.py) ----
    def delete(self) -> int:
        """Delete this queue: its cron entries and every job of it that is not running
        (waiting, scheduled, deferred, finished, dead letters); returns how many jobs.
        Running jobs finish as usual (`job.cancel()` stops one); see rqconc/queue/admin.py."""
        # Crons first, or a tick could enqueue into the queue while it is being emptied.
        for entry in self.crons():
            self.remove_cron(entry.id)
        return admin.delete_queue(self.connection, self.keys, self.name, self.wait)

    def promote(self, job_id: Union[str, Job]) -> bool:
        """Make a scheduled or deferred job of this queue run now (it joins the back of the
        queue; a deferred one no longer waits for its parents). False if it is neither;
        `NoSuchJob` if there is no such job, ValueError if it is of another queue."""
        job_id = job_id.id if isinstance(job_id, Job) else job_id
        return admin.promote(self.connection, self.keys, self.name, job_id, self.wait)

    def empty(self) -> int:
        """Delete every waiting job, those parked behind their group's cap too (not
        scheduled or running ones); returns how many. Each ends as a deleted job does
        (admin.py): its dependents canceled, its group's chord canceled, its unique key
        ended, its waiters woken with JobCanceled."""
        return admin.empty_queue(self.connection, self.keys, self.name, self.wait)

    purge = empty


__all__ = ["Queue", "Priority", "Job", "check_priority"]
