"""The enqueue options, defined once: which keyword arguments are options, how each is
validated, and the hash fields they become.

`Queue.enqueue*`, cron entries (`q.cron`), flow stages (`Next`) and `rqconc enqueue` all
read their options through here, so a new option or rule is written in one place. A job's
hash stores only the fields that differ from their defaults (rqconc/store/defaults.py).
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timedelta, timezone
from enum import IntEnum
from functools import partial
from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple, Union

from rqconc.queue.limits.options import FLOW_OPTION_NAMES, flow_fields
from rqconc.queue.retry import Retry
from rqconc.queue.serialization import check_utf8, get_serializer
from rqconc.queue.workflow.callbacks import followup_fields
from rqconc.queue.workflow.dependency import parents_of
from rqconc.store.defaults import (
    DEFAULT_FAILURE_TTL,
    DEFAULT_PRIORITY,
    DEFAULT_RESULT_TTL,
    DEFAULT_TIMEOUT,
    ENQUEUE_MARK_MS,
    MAX_PRIORITY,
    MAX_TTL,
)

Func = Union[str, Callable[..., Any]]
Call = Tuple[Func, Tuple[Any, ...], Dict[str, Any]]

OPTION_NAMES = (
    "priority",
    "timeout",
    "soft_timeout",
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
    *FLOW_OPTION_NAMES,  # SPEC 11: group, ttl, unique_key, unique_for, debounce
)
_OPTIONS = frozenset(OPTION_NAMES)
_FOLLOWUPS = frozenset(("on_success", "on_failure", "success_url", "failure_url"))


class Priority(IntEnum):
    LOW = 0
    MODERATE = 1
    HIGH = 2


# RQ's names for rqconc's options: given to `enqueue`, they would go to the job's function,
# which fails in the worker only (unexpected keyword argument): refused at enqueue instead.
RQ_NAMES = {"job_timeout": "timeout"}


def take_options(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Take the enqueue options out of a call's keyword arguments (the rest are the call's)."""
    if not kwargs:
        return {}
    if not RQ_NAMES.keys().isdisjoint(kwargs):
        name = sorted(RQ_NAMES.keys() & kwargs.keys())[0]
        raise TypeError(
            f"{name}= is RQ's name: rqconc's option is {RQ_NAMES[name]}=; to pass {name} "
            "to the function itself, use enqueue_call(func, args, kwargs)"
        )
    return {name: kwargs.pop(name) for name in _OPTIONS.intersection(kwargs)}


def refuse(options: Dict[str, Any], names: Tuple[str, ...], why: str) -> None:
    """ValueError naming the options among `names` that were given (`why`: what refuses)."""
    given = [name for name in names if options.get(name) is not None]
    if given:
        raise ValueError(f"{why} cannot take {', '.join(given)}")


def check_priority(priority: Any) -> int:
    """An int from 0 to 100 (higher runs first); bools and floats are refused."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 0 <= priority <= MAX_PRIORITY
    ):
        raise ValueError(f"priority must be an int from 0 to {MAX_PRIORITY}, not {priority!r}")
    return int(priority)


def _check_ttl(name: str, value: Any, allow_zero: bool) -> int:
    # The Lua steps treat a TTL above MAX_TTL as corrupt (and use the default): refuse it.
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not -1 <= value <= MAX_TTL
        or (value == 0 and not allow_zero)
    ):
        allowed = "0 (keep none), " if allow_zero else ""
        raise ValueError(
            f"{name} must be seconds as an int > 0 (at most {MAX_TTL}), {allowed}or -1 "
            f"(forever), not {value!r}"
        )
    return value


def _check_timeout(timeout: Any) -> float:
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not timeout > 0
        or not math.isfinite(timeout)
    ):
        raise ValueError(f"timeout must be a finite number of seconds > 0, not {timeout!r}")
    return timeout


def _check_soft_timeout(soft_timeout: Any, timeout: Any) -> float:
    """Seconds after which JobSoftTimeout is raised inside the job (SPEC 18): below its
    hard timeout, which still ends a job that ignores the soft one."""
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    try:
        _check_timeout(soft_timeout)
    except ValueError:
        raise ValueError(
            f"soft_timeout must be a finite number of seconds > 0, not {soft_timeout!r}"
        ) from None
    if not soft_timeout < timeout:
        raise ValueError(
            f"soft_timeout must be below the job's timeout ({timeout:g} s), not {soft_timeout!r}"
        )
    return soft_timeout


# Options stored as hash fields only when they differ from their defaults: (name, check, default).
_SETTINGS = (
    ("priority", check_priority, DEFAULT_PRIORITY),
    ("timeout", _check_timeout, DEFAULT_TIMEOUT),
    ("result_ttl", partial(_check_ttl, "result_ttl", allow_zero=True), DEFAULT_RESULT_TTL),
    ("failure_ttl", partial(_check_ttl, "failure_ttl", allow_zero=False), DEFAULT_FAILURE_TTL),
)


def common_fields(
    options: Dict[str, Any], queue: str, serializer: str
) -> Tuple[Dict[str, str], int]:
    """The hash fields every job of one call shares, validated, leaving out those equal to
    their defaults (and queue and created_at, which the enqueue step writes); and the jobs'
    priority. TypeError for an unknown option, ValueError for a bad value."""
    fields: Dict[str, str] = {}
    if serializer != "json":
        fields["serializer"] = serializer
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
    if options.get("soft_timeout") is not None:
        soft = _check_soft_timeout(options["soft_timeout"], options.get("timeout"))
        fields["soft_timeout"] = str(soft)
    priority = int(fields.get("priority", DEFAULT_PRIORITY))
    if retry is not None:
        fields["retry"] = retry.to_json()
    _add_meta_and_links(fields, options)
    fields.update(flow_fields(options))
    if not _FOLLOWUPS.isdisjoint(options):
        fields.update(followup_fields(queue, dict(fields, queue=queue), options))
    return fields, priority


EVENT_DETAILS = ("basic", "full")


def queue_defaults(timeout: Any, result_ttl: Any, retry: Any) -> Dict[str, Any]:
    """A queue's default options (`Queue(default_timeout=...)`), validated as the per-job
    options are; the ones left None are not defaults."""
    defaults = {"timeout": timeout, "result_ttl": result_ttl, "retry": retry}
    defaults = {name: value for name, value in defaults.items() if value is not None}
    try:
        common_fields(defaults, "default", "json")
    except ValueError as exc:
        raise ValueError(f"Queue(...): default_{exc}") from None
    return defaults


def with_defaults(options: Dict[str, Any], defaults: Dict[str, Any]) -> Dict[str, Any]:
    """A call's options, a queue's defaults filling those it does not set (or sets None)."""
    if not defaults:
        return options
    return {**defaults, **{name: value for name, value in options.items() if value is not None}}


def check_event_detail(detail: Any) -> str:
    if detail not in EVENT_DETAILS:
        raise ValueError(f"event_detail must be 'basic' or 'full', not {detail!r}")
    return str(detail)


def may_vanish(fields: Dict[str, str]) -> bool:
    """Whether jobs with these common fields may be deleted within ENQUEUE_MARK_MS of being
    stored (kept 0 s, or briefly, once they end). A resend of their enqueue after a lost
    reply could then miss them and store them again, so the step leaves a mark for it."""
    for name in ("result_ttl", "failure_ttl"):
        value = fields.get(name)
        if value is not None and 0 <= int(value) * 1000 < ENQUEUE_MARK_MS:
            return True
    return False


def _add_meta_and_links(fields: Dict[str, str], options: Dict[str, Any]) -> None:
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


def job_id_of(options: Dict[str, Any]) -> str:
    """The caller's `job_id`, checked, or a fresh random id."""
    job_id = options.get("job_id")
    if not job_id:
        return os.urandom(16).hex()  # as random as a uuid4, in a fifth of the time
    if not isinstance(job_id, str) or any(c.isspace() for c in job_id):
        raise ValueError(f"job_id must be a non-empty str without spaces, not {job_id!r}")
    check_utf8(job_id, "job_id", job_id)
    return job_id


# The latest due time accepted: the end of year 9999 UTC (what datetime can show), in ms.
MAX_DUE_MS = 253_402_300_799_000


def _bounded_due(due_ms: float, what: str, value: Any) -> int:
    """`due_ms` as an int, or ValueError naming `value` when it lies past year 9999 (a huge
    float would otherwise end in OverflowError, or a time no datetime can show)."""
    if not due_ms <= MAX_DUE_MS:
        raise ValueError(f"{what} {value!r} lies past the year 9999: give a nearer time")
    return int(due_ms)


def due_ms_at(when: Union[datetime, int, float]) -> int:
    """A datetime (naive means UTC) or a Unix timestamp, as ms since the epoch."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return _bounded_due(when.timestamp() * 1000, "enqueue_at time", when)
    if isinstance(when, bool) or not isinstance(when, (int, float)) or not math.isfinite(when):
        raise ValueError(f"enqueue_at takes a datetime or a Unix timestamp, not {when!r}")
    return _bounded_due(when * 1000, "enqueue_at time", when)


def due_ms_in(delay: Union[timedelta, int, float], now_ms: int) -> int:
    """A delay in seconds (int or float) or a timedelta, as a due time in ms."""
    if isinstance(delay, timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, bool) or not isinstance(delay, (int, float)):
        raise ValueError(f"enqueue_in takes seconds or a timedelta, not {delay!r}")
    else:
        seconds = delay
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"enqueue_in takes a finite delay >= 0, not {delay!r}")
    return _bounded_due(now_ms + seconds * 1000, "enqueue_in delay", delay)


__all__ = [
    "OPTION_NAMES",
    "Priority",
    "check_priority",
    "common_fields",
    "due_ms_at",
    "due_ms_in",
    "job_id_of",
    "queue_defaults",
    "take_options",
    "with_defaults",
]


def batch_of(calls: Iterable[Sequence[Any]], options: Dict[str, Any]) -> List[Call]:
    """enqueue_many's calls, each (func, args[, kwargs]), as calls to store."""
    if "job_id" in options:
        raise ValueError("enqueue_many does not take job_id: each job gets its own id")
    batch: List[Call] = []
    for call in calls:
        if not isinstance(call, (tuple, list)) or len(call) not in (2, 3):
            raise ValueError(
                f"enqueue_many takes (func, args) or (func, args, kwargs) tuples, not {call!r}"
            )
        kwargs = call[2] if len(call) == 3 else {}
        batch.append((call[0], tuple(call[1]), dict(kwargs or {})))
    return batch
