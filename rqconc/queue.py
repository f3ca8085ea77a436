"""Queues: where jobs are enqueued (SPEC section 3).

Every enqueue is one Lua step (`lua/enqueue.lua`), also for a batch: validation and
serialization happen first, in Python, so bad input raises before anything is written.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from enum import IntEnum
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

from rqconc.connection import ConnectionLike, connect, translated_errors
from rqconc.job import Job
from rqconc.keys import KeySpace, check_queue_name
from rqconc.retry import Retry
from rqconc.scripts import Steps, now_ms, text
from rqconc.serialization import dump_arguments, function_name, get_serializer

Func = Union[str, Callable[..., Any]]

DEFAULT_TIMEOUT = 180
DEFAULT_RESULT_TTL = 500
DEFAULT_FAILURE_TTL = 365 * 24 * 3600  # dead letters are kept a year unless told otherwise
OPTION_NAMES = ("priority", "timeout", "retry", "result_ttl", "failure_ttl", "job_id",
                "depends_on", "on_success", "on_failure", "success_url", "failure_url",
                "description", "meta")


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
    if (isinstance(value, bool) or not isinstance(value, int) or value < -1
            or (value == 0 and not allow_zero)):
        allowed = "0 (keep none), " if allow_zero else ""
        raise ValueError(f"{name} must be seconds as an int > 0, {allowed}or -1 (forever), "
                         f"not {value!r}")
    return value


def _check_timeout(timeout: Any) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
    return timeout


def _dependency_ids(depends_on: Any) -> List[str]:
    items = depends_on if isinstance(depends_on, (list, tuple, set)) else [depends_on]
    ids = []
    for item in items:
        if isinstance(item, Job):
            ids.append(item.id)
        elif isinstance(item, str) and item:
            ids.append(item)
        else:
            raise ValueError(f"depends_on takes jobs or job ids, not {item!r}")
    return ids


def _describe_call(name: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    call = f"{name}({', '.join(parts)})"
    return call if len(call) <= 200 else call[:197] + "..."


def due_ms_at(when: Union[datetime, int, float]) -> int:
    """A datetime (naive means UTC) or a Unix timestamp, as ms since the epoch."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return int(when.timestamp() * 1000)
    if isinstance(when, bool) or not isinstance(when, (int, float)):
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
    if seconds < 0:
        raise ValueError(f"enqueue_in takes a delay >= 0, not {delay!r}")
    return now_ms() + int(seconds * 1000)


if TYPE_CHECKING:
    from rqconc.dead_letters import DeadLetters


class Queue:
    """A named queue of jobs. `connection`: a URL, a `redis.Redis`, or None (SPEC section 6)."""

    def __init__(self, name: str = "default", connection: ConnectionLike = None,
                 serializer: str = "json", namespace: str = "rqconc") -> None:
        self.name = check_queue_name(name)
        self.serializer = get_serializer(serializer)
        self.keys = KeySpace(namespace)
        self._connection_arg = connection
        self._client: Optional[redis.Redis] = None

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
        from rqconc.dead_letters import DeadLetters

        return DeadLetters(self)

    # ---- enqueueing ----
    def enqueue(self, func: Func, *args: Any, **kwargs: Any) -> Job:
        """Store a job calling func(*args, **kwargs); the keyword options of OPTION_NAMES are
        taken out of kwargs (use `enqueue_call` for a function that needs those names)."""
        options = {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}
        return self.enqueue_call(func, args, kwargs, **options)

    def enqueue_call(self, func: Func, args: Sequence[Any] = (),
                     kwargs: Optional[Dict[str, Any]] = None, **options: Any) -> Job:
        return self._store([(func, tuple(args), dict(kwargs or {}))], options, None)[0]

    def enqueue_at(self, when: Union[datetime, int, float], func: Func, *args: Any,
                   **kwargs: Any) -> Job:
        """Like `enqueue`, but the job waits (status `scheduled`) until `when`."""
        options = {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}
        return self._store([(func, args, kwargs)], options, due_ms_at(when))[0]

    def enqueue_in(self, delay: Union[timedelta, int, float], func: Func, *args: Any,
                   **kwargs: Any) -> Job:
        """Like `enqueue`, but the job waits (status `scheduled`) for `delay`."""
        options = {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}
        return self._store([(func, args, kwargs)], options, due_ms_in(delay))[0]

    def enqueue_many(self, calls: Iterable[Sequence[Any]], **options: Any) -> List[Job]:
        """Store a batch in one round trip: [(func, args), (func, args, kwargs), ...]. The
        options apply to every job; returns the jobs in order."""
        if "job_id" in options:
            raise ValueError("enqueue_many does not take job_id: each job gets its own id")
        batch = []
        for call in calls:
            if not isinstance(call, (tuple, list)) or len(call) not in (2, 3):
                raise ValueError(f"enqueue_many takes (func, args) or (func, args, kwargs) "
                                 f"tuples, not {call!r}")
            kwargs = call[2] if len(call) == 3 else {}
            batch.append((call[0], tuple(call[1]), dict(kwargs or {})))
        return self._store(batch, options, None) if batch else []

    def _store(self, calls: Sequence[Tuple[Func, Tuple[Any, ...], Dict[str, Any]]],
               options: Dict[str, Any], due_ms: Optional[int]) -> List[Job]:
        unknown = set(options) - set(OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown enqueue option(s): {', '.join(sorted(unknown))}")
        common = self._common_fields(options)
        jobs = [self._job_fields(func, args, kwargs, options, common)
                for func, args, kwargs in calls]
        steps = Steps(self.connection, self.keys)
        with translated_errors(self.connection):
            existing = steps.enqueue(self.name, jobs, due_ms)
        if existing is not None:
            raise ValueError(f"a job with id {existing!r} already exists; nothing was enqueued")
        return [Job(job_id, self.connection, self.keys.namespace, fields)
                for job_id, _, fields in jobs]

    def _common_fields(self, options: Dict[str, Any]) -> Dict[str, Any]:
        """Validated options shared by every job of one call, as hash fields."""
        retry = options.get("retry")
        if retry is not None and not isinstance(retry, Retry):
            raise ValueError(f"retry must be a rqconc.Retry, not {retry!r}")
        fields: Dict[str, Any] = {
            "queue": self.name,
            "serializer": self.serializer.name,
            "priority": check_priority(options.get("priority", Priority.MODERATE)),
            "timeout": _check_timeout(options.get("timeout", DEFAULT_TIMEOUT)),
            "result_ttl": _check_ttl("result_ttl", options.get(
                "result_ttl", DEFAULT_RESULT_TTL), allow_zero=True),
            "failure_ttl": _check_ttl("failure_ttl", options.get(
                "failure_ttl", DEFAULT_FAILURE_TTL), allow_zero=False),
            "attempts": 0,
            "lost": 0,
            "created_at": now_ms(),
        }
        if retry is not None:
            fields["retry"] = retry.to_json()
        if options.get("meta") is not None:
            meta = options["meta"]
            if not isinstance(meta, dict):
                raise ValueError(f"meta must be a dict, not {meta!r}")
            fields["meta"] = get_serializer("json").dumps(meta, "meta value")
        if options.get("depends_on") is not None:
            fields["depends_on"] = json.dumps(_dependency_ids(options["depends_on"]))
        for name in ("on_success", "on_failure"):
            if options.get(name) is not None:
                fields[name] = function_name(options[name])
        for name in ("success_url", "failure_url"):
            if options.get(name) is not None:
                fields[name] = str(options[name])
        return fields

    def _job_fields(self, func: Func, args: Tuple[Any, ...], kwargs: Dict[str, Any],
                    options: Dict[str, Any], common: Dict[str, Any]
                    ) -> Tuple[str, int, Dict[str, Any]]:
        name = function_name(func)
        args_data, kwargs_data = dump_arguments(self.serializer, args, kwargs)
        job_id = options.get("job_id") or uuid.uuid4().hex
        if not isinstance(job_id, str) or any(c.isspace() for c in job_id):
            raise ValueError(f"job_id must be a non-empty str without spaces, not {job_id!r}")
        description = options.get("description") or _describe_call(name, args, kwargs)
        fields = dict(common, id=job_id, func=name, args=args_data, kwargs=kwargs_data,
                      description=str(description))
        return job_id, common["priority"], fields

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
        return [Job(job_id, self.connection, self.keys.namespace) for job_id in self.job_ids]

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
        return Job.fetch(job_id, self.connection, self.keys.namespace)

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
                self.connection.delete(*[self.keys.job(i) for i in ids],
                                       *[self.keys.done(i) for i in ids])
                removed += len(ids)

    purge = empty


def queue_names(connection: ConnectionLike = None, namespace: str = "rqconc") -> List[str]:
    """Names of every queue that ever received a job, sorted."""
    client = connect(connection)
    with translated_errors(client):
        return sorted(text(n) for n in client.smembers(KeySpace(namespace).queues))


__all__ = ["Queue", "Priority", "Job", "check_priority", "queue_names"]
