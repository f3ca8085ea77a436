"""Queues: where jobs are enqueued (SPEC section 3).

Every enqueue is one Lua step (`lua/enqueue.lua`), also for a batch: validation and
serialization happen first, in Python, so bad input raises before anything is written.
A job's hash stores only the fields that differ from their defaults (rqconc/job.py), and
the fields a batch shares are sent once.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timedelta, timezone
from enum import IntEnum
from functools import partial
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import redis

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.connection.pooled import pooled_or_plain
from rqconc.queue.callbacks import followup_fields
from rqconc.queue.dependency import parents_of
from rqconc.queue.job import (
    DEFAULT_FAILURE_TTL,
    DEFAULT_PRIORITY,
    DEFAULT_RESULT_TTL,
    DEFAULT_TIMEOUT,
    Job,
    describe_call,
)
from rqconc.queue.keys import KeySpace, check_queue_name
from rqconc.queue.retry import Retry
from rqconc.queue.serialization import check_utf8, dump_arguments, function_name, get_serializer
from rqconc.queue.steps import Steps, now_ms, text

Func = Union[str, Callable[..., Any]]
Call = Tuple[Func, Tuple[Any, ...], Dict[str, Any]]

OPTION_NAMES = (
    "priority",
    "timeout",
    "retry",
    "result_ttl",
    "failure_ttl",
    "job_id",
    "depends_on",
    "on_success",
    "on_failure",
    "success_url",
    "failure_url",
    "description",
    "meta",
)
_OPTIONS = frozenset(OPTION_NAMES)
_FOLLOWUPS = frozenset(("on_success", "on_failure", "success_url", "failure_url"))


class Priority(IntEnum):
    LOW = 0
    MODERATE = 1
    HIGH = 2


def check_priority(priority: Any) -> int:
    """An int from 0 to 100 (higher runs first); bools and floats are refused."""
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 100:
        raise ValueError(f"priority must be an int from 0 to 100, not {priority!r}")
    return int(priority)


def _check_ttl(name: str, value: Any, allow_zero: bool) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < -1
        or (value == 0 and not allow_zero)
    ):
        allowed = "0 (keep none), " if allow_zero else ""
        raise ValueError(
            f"{name} must be seconds as an int > 0, {allowed}or -1 (forever), not {value!r}"
        )
    return value


def _check_timeout(timeout: Any) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
    return timeout


# Options stored as hash fields only when they differ from their defaults: (name, check, default).
_SETTINGS = (
    ("priority", check_priority, DEFAULT_PRIORITY),
    ("timeout", _check_timeout, DEFAULT_TIMEOUT),
    ("result_ttl", partial(_check_ttl, "result_ttl", allow_zero=True), DEFAULT_RESULT_TTL),
    ("failure_ttl", partial(_check_ttl, "failure_ttl", allow_zero=False), DEFAULT_FAILURE_TTL),
)


def due_ms_at(when: Union[datetime, int, float]) -> int:
    """A datetime (naive means UTC) or a Unix timestamp, as ms since the epoch."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return int(when.timestamp() * 1000)
    if isinstance(when, bool) or not isinstance(when, (int, float)) or not math.isfinite(when):
        raise ValueError(f"enqueue_at takes a datetime or a Unix timestamp, not {when!r}")
    return int(when * 1000)


def due_ms_in(delay: Union[timedelta, int, float]) -> int:
    """A delay in seconds (int or float) or a timedelta, as a due time in ms."""
    if isinstance(delay, timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, bool) or not isinstance(delay, (int, float)):
        raise ValueError(f"enqueue_in takes seconds or a timedelta, not {delay!r}")
    else:
        seconds = delay
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"enqueue_in takes a finite delay >= 0, not {delay!r}")
    return now_ms() + int(seconds * 1000)


if TYPE_CHECKING:
    from rqconc.queue.cron import CronEntry
    from rqconc.queue.dead_letters import DeadLetters


class Queue:
    """A named queue of jobs. `connection`: a URL, a `redis.Redis`, or None (SPEC section 6)."""

    def __init__(
        self,
        name: str = "default",
        connection: ConnectionLike = None,
        serializer: str = "json",
        namespace: str = "rqconc",
    ) -> None:
        self.name = check_queue_name(name)
        self.serializer = get_serializer(serializer)
        self.keys = KeySpace(namespace)
        self._connection_arg = connection
        self._client: Optional[redis.Redis] = None
        self._steps: Optional[Steps] = None

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, namespace={self.keys.namespace!r})"

    @property
    def connection(self) -> redis.Redis:
        # Opened on first use: creating a Queue touches nothing (nor starts any server).
        if self._client is None:
            self._client = connect(self._connection_arg)
        return self._client

    @property
    def failed(self) -> DeadLetters:
        """The dead letters of this queue: `len`, `job_ids`, `requeue(id)`, `requeue_all()`,
        `purge()`."""
        from rqconc.queue.dead_letters import DeadLetters

        return DeadLetters(self)

    # ---- enqueueing ----
    def enqueue(self, func: Func, *args: Any, **kwargs: Any) -> Job:
        """Store a job calling func(*args, **kwargs); the keyword options of OPTION_NAMES are
        taken out of kwargs (use `enqueue_call` for a function that needs those names)."""
        options = {name: kwargs.pop(name) for name in _OPTIONS.intersection(kwargs)}
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
        options = {name: kwargs.pop(name) for name in _OPTIONS.intersection(kwargs)}
        return self._store([(func, args, kwargs)], options, due_ms_at(when))[0]

    def enqueue_in(
        self, delay: Union[timedelta, int, float], func: Func, *args: Any, **kwargs: Any
    ) -> Job:
        """Like `enqueue`, but the job waits (status `scheduled`) for `delay`."""
        options = {name: kwargs.pop(name) for name in _OPTIONS.intersection(kwargs)}
        return self._store([(func, args, kwargs)], options, due_ms_in(delay))[0]

    def enqueue_many(self, calls: Iterable[Sequence[Any]], **options: Any) -> List[Job]:
        """Store a batch in one round trip: [(func, args), (func, args, kwargs), ...]. The
        options apply to every job; returns the jobs in order."""
        if "job_id" in options:
            raise ValueError("enqueue_many does not take job_id: each job gets its own id")
        batch = []
        for call in calls:
            if not isinstance(call, (tuple, list)) or len(call) not in (2, 3):
                raise ValueError(
                    f"enqueue_many takes (func, args) or (func, args, kwargs) tuples, not {call!r}"
                )
            kwargs = call[2] if len(call) == 3 else {}
            batch.append((call[0], tuple(call[1]), dict(kwargs or {})))
        return self._store(batch, options, None) if batch else []

    def _store(
        self, calls: Sequence[Call], options: Dict[str, Any], due_ms: Optional[int]
    ) -> List[Job]:
        common, priority = self._common_fields(options)
        jobs = [self._own_fields(func, args, kwargs, options) for func, args, kwargs in calls]
        client = self.connection
        if self._steps is None:
            self._steps = Steps(pooled_or_plain(client), self.keys)
        now = now_ms()
        with translated_errors(client):
            # Generated ids are 128 random bits: only a caller's own id can exist already.
            refused = self._steps.enqueue(
                self.name,
                jobs,
                priority,
                due_ms,
                common,
                fresh_ids=not options.get("job_id"),
                now=now,
            )
        if refused is not None:
            reason, job_id = refused
            if reason == "exists":
                raise ValueError(f"a job with id {job_id!r} already exists; nothing was enqueued")
            raise ValueError(
                f"depends_on names job {job_id!r}, which does not exist (or "
                "expired); nothing was enqueued"
            )
        keys, stored = self.keys, {"queue": self.name, "created_at": str(now), **common}
        return [Job.stored(job_id, client, keys, {**stored, **own}) for job_id, own in jobs]

    def prepare(
        self, calls: Sequence[Call], options: Dict[str, Any]
    ) -> List[Tuple[str, int, Dict[str, str]]]:
        """Validate and serialize jobs of this queue as (id, priority, hash fields), writing
        nothing: bad input raises here, before any Redis step."""
        common, priority = self._common_fields(options)
        common = {"queue": self.name, "created_at": str(now_ms()), **common}
        return [
            (job_id, priority, {**common, **own})
            for job_id, own in (
                self._own_fields(func, args, kwargs, options) for func, args, kwargs in calls
            )
        ]

    def _common_fields(self, options: Dict[str, Any]) -> Tuple[Dict[str, str], int]:
        """The hash fields every job of one call shares, validated, leaving out those equal
        to their defaults (and queue and created_at, which the enqueue step writes); and the
        jobs' priority."""
        fields: Dict[str, str] = {}
        if self.serializer.name != "json":
            fields["serializer"] = self.serializer.name
        if not options:
            return fields, DEFAULT_PRIORITY
        if not _OPTIONS.issuperset(options):
            unknown = sorted(set(options) - _OPTIONS)
            raise TypeError(f"unknown enqueue option(s): {', '.join(unknown)}")
        retry = options.get("retry")
        if retry is not None and not isinstance(retry, Retry):
            raise ValueError(f"retry must be a rqconc.Retry, not {retry!r}")
        for name, check, default in _SETTINGS:
            if name in options:
                value = check(options[name])
                if value != default:
                    fields[name] = str(value)
        priority = int(fields.get("priority", DEFAULT_PRIORITY))
        if retry is not None:
            fields["retry"] = retry.to_json()
        meta = options.get("meta")
        if meta is not None:
            if not isinstance(meta, dict):
                raise ValueError(f"meta must be a dict, not {meta!r}")
            if meta:
                fields["meta"] = get_serializer("json").dumps(meta, "meta value")
        if options.get("depends_on") is not None:
            parents, allow_failure = parents_of(options["depends_on"])
            if parents:
                fields["depends_on"] = json.dumps(parents)
            if allow_failure:
                fields["allow_failure"] = "1"
        description = options.get("description")
        if description:
            check_utf8(str(description), "description", description)
            fields["description"] = str(description)
        if not _FOLLOWUPS.isdisjoint(options):
            fields.update(followup_fields(self.name, dict(fields, queue=self.name), options))
        return fields, priority

    def _own_fields(
        self, func: Func, args: Tuple[Any, ...], kwargs: Dict[str, Any], options: Dict[str, Any]
    ) -> Tuple[str, Dict[str, str]]:
        """One job's id and the hash fields of its own call (empty arguments left out)."""
        fields = {"func": function_name(func)}
        if args or kwargs or self.serializer.name != "json":
            args_data, kwargs_data = dump_arguments(self.serializer, args, kwargs)
            if args_data != "[]":
                fields["args"] = args_data
            if kwargs_data != "{}":
                fields["kwargs"] = kwargs_data
        if self.serializer.name != "json" and not options.get("description"):
            # Job.description derives a JSON job's from its call; a pickled call stays opaque.
            description = describe_call(fields["func"], args, kwargs)
            check_utf8(description, "description", description)
            fields["description"] = description
        job_id = options.get("job_id")
        if not job_id:
            return os.urandom(16).hex(), fields  # as random as a uuid4, in a fifth of the time
        if not isinstance(job_id, str) or any(c.isspace() for c in job_id):
            raise ValueError(f"job_id must be a non-empty str without spaces, not {job_id!r}")
        check_utf8(job_id, "job_id", job_id)
        return job_id, fields

    # ---- inspection ----
    @property
    def count(self) -> int:
        """How many jobs wait in the queue (not counting scheduled or running ones)."""
        with translated_errors(self.connection):
            return int(self.connection.zcard(self.keys.queue(self.name)))

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
        return [
            Job(job_id, self.connection, self.keys.namespace, allow_pickle=pickled)
            for job_id in self.job_ids
        ]

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
        return Job.fetch(job_id, self.connection, self.keys.namespace, allow_pickle=pickled)

    def empty(self) -> int:
        """Delete every waiting job (not scheduled or running ones); returns how many.
        Jobs are popped before they are deleted, so none can be taken half-deleted."""
        removed = 0
        with translated_errors(self.connection):
            while True:
                popped = self.connection.zpopmin(self.keys.queue(self.name), 1000)
                if not popped:
                    return removed
                ids = [text(member) for member, _ in popped]
                self.connection.delete(
                    *[self.keys.job(i) for i in ids], *[self.keys.done(i) for i in ids]
                )
                removed += len(ids)

    purge = empty

    # ---- cron (rqconc/cron.py; fired by rqconc/scheduler.py) ----
    def cron(
        self, expr: str, func: Func, *args: Any, id: Optional[str] = None, **kwargs: Any
    ) -> CronEntry:
        """Run func(*args, **kwargs) in this queue at every tick of `expr` (5 fields, or 6
        with seconds last; UTC), exactly once per tick however many workers run. `id`
        (default: the function's name) names the entry; registering it again replaces it.
        The enqueue options (priority, timeout, retry, ...) apply to every tick's job."""
        from rqconc.queue.cron import register

        return register(self, expr, func, args, kwargs, id)

    def crons(self) -> List[CronEntry]:
        """This queue's cron entries (id, expr, func, queue, next_run, last_tick), by id."""
        from rqconc.queue.cron import entries

        return [e for e in entries(self.connection, self.keys) if e.queue == self.name]

    def remove_cron(self, id: str) -> bool:
        """Remove this queue's cron entry `id` and its jobs enqueued ahead that have not
        started; False if it has none of that id."""
        from rqconc.queue.cron import remove

        return remove(self.connection, self.keys, id, queue=self.name)


def queue_names(connection: ConnectionLike = None, namespace: str = "rqconc") -> List[str]:
    """Names of every queue that ever received a job, sorted."""
    client = connect(connection)
    with translated_errors(client):
        return sorted(text(n) for n in client.smembers(KeySpace(namespace).queues))


__all__ = ["Queue", "Priority", "Job", "check_priority", "queue_names"]
