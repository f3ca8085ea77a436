"""Cron entries: `q.cron(expr, func, *args, id=...)`, `q.crons()`, `q.remove_cron(id)`.

An entry lives in one Redis hash of the namespace (`crons`: id -> JSON). It holds the
expression and a *job template*: the hash fields `Queue.prepare` made at registration, so a
bad function, argument or option raises then, never at a tick. The scheduler
(rqconc/scheduler.py) turns each tick into a job made from that template.

Expressions: standard 5 fields (minute hour day month weekday), or 6 with seconds as the
last field (croniter's convention), or one of the @hourly/@daily/... aliases; evaluated in
UTC. Entry ids are unique in the namespace (registering an id again replaces the entry) and
name the tick jobs: `cron.<id>.<tick in Unix seconds>`.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import redis

from rqconc.connection.clients import translated_errors
from rqconc.queue.job import description_of
from rqconc.queue.keys import KeySpace, check_queue_name
from rqconc.queue.serialization import function_name
from rqconc.queue.steps import script, text

if TYPE_CHECKING:
    from rqconc.queue.queue import Func, Queue

log = logging.getLogger("rqconc.queue.cron")

ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# Options a cron's jobs cannot take: each tick's job gets its own id, and a tick cannot
# wait for a job that was enqueued once.
REFUSED_OPTIONS = ("job_id", "depends_on")
# Fields of a prepared job that belong to one job, not to the template.
PER_JOB_FIELDS = ("id", "created_at")
PUT_ATTEMPTS = 20


def _croniter(expr: str, start: float) -> Any:
    # Imported on first use: every worker process imports this module (its supervisor runs
    # the scheduler), and most have no cron entry; croniter is slow to import.
    from croniter import croniter

    return croniter(expr, start)


def check_expression(expr: Any) -> str:
    """The expression, whitespace normalized; ValueError unless croniter accepts it as 5
    fields, 6 with seconds last, or an alias, and it fires at least once."""
    if not isinstance(expr, str):
        raise ValueError(f"a cron expression is a str, not {expr!r}")
    normalized = " ".join(expr.split())
    fields = normalized.split(" ")
    if normalized.startswith("@"):
        if normalized.lower() not in ALIASES:
            raise ValueError(
                f"invalid cron expression {expr!r}: known aliases are {', '.join(ALIASES)}"
            )
    elif len(fields) not in (5, 6):
        raise ValueError(
            f"invalid cron expression {expr!r}: use 5 fields (minute hour day "
            "month weekday) or 6 with seconds as the last field"
        )
    try:
        _croniter(normalized, 0.0).get_next(float)
    except (ValueError, KeyError, TypeError) as exc:  # croniter's errors are ValueErrors
        raise ValueError(f"invalid cron expression {expr!r}: {exc}") from None
    return normalized


def check_cron_id(cron_id: Any) -> str:
    """Ids follow the queue-name rules: they end up in key and job names."""
    try:
        return check_queue_name(cron_id)
    except ValueError:
        raise ValueError(
            f"invalid cron id {cron_id!r}: use a non-empty name without spaces, commas or braces"
        ) from None


def next_tick(expr: str, after: float) -> int:
    """The first tick strictly after `after` (Unix seconds)."""
    return int(_croniter(expr, after).get_next(float))


def latest_tick(expr: str, now: float) -> int:
    """The latest tick at or before `now` (ticks are whole seconds)."""
    return int(_croniter(expr, float(int(now) + 1)).get_prev(float))


@dataclass
class CronEntry:
    """One registered cron: what `q.crons()` and `rqconc cron list` show."""

    id: str
    expr: str
    func: str
    queue: str
    version: str
    registered_at: float
    template: Dict[str, Any]
    last_tick: Optional[int] = None  # the latest tick whose job was enqueued

    @property
    def next_run(self) -> int:
        """The next tick from now, as a Unix timestamp."""
        return next_tick(self.expr, time.time())

    @property
    def priority(self) -> int:
        return int(self.template.get("priority", 1))

    def to_json(self) -> str:
        return json.dumps(
            {
                "id": self.id,
                "expr": self.expr,
                "func": self.func,
                "queue": self.queue,
                "version": self.version,
                "registered_at": self.registered_at,
                "template": self.template,
            }
        )

    @classmethod
    def from_json(cls, data: Any, last_tick: Any = None) -> CronEntry:
        raw = json.loads(text(data))
        last = int(text(last_tick)) if last_tick is not None else None
        return cls(
            raw["id"],
            raw["expr"],
            raw["func"],
            raw["queue"],
            raw["version"],
            float(raw["registered_at"]),
            dict(raw["template"]),
            last,
        )

    def as_dict(self) -> Dict[str, Any]:
        """The listing's view (JSON-friendly)."""
        return {
            "id": self.id,
            "expr": self.expr,
            "func": self.func,
            "queue": self.queue,
            "next_run": self.next_run,
            "last_tick": self.last_tick,
            "description": description_of(self.template),
        }


def register(
    queue: Queue,
    expr: str,
    func: Func,
    args: Sequence[Any],
    kwargs: Dict[str, Any],
    cron_id: Optional[str] = None,
) -> CronEntry:
    """Validate and store (or replace) a cron entry; its first tick is the first one after
    now. Keyword options of `Queue.enqueue` (priority, timeout, retry, result_ttl, meta...)
    are taken out of kwargs and apply to every tick's job."""
    from rqconc.queue.queue import OPTION_NAMES

    expr = check_expression(expr)
    cron_id = check_cron_id(function_name(func) if cron_id is None else cron_id)
    options = {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}
    refused = [name for name in REFUSED_OPTIONS if name in options]
    if refused:
        raise ValueError(
            f"a cron's jobs cannot take {', '.join(refused)}: each tick's job "
            f"gets the id cron.<id>.<tick>"
        )
    ((_, _, fields),) = queue.prepare([(func, tuple(args), dict(kwargs))], options)
    template = {name: value for name, value in fields.items() if name not in PER_JOB_FIELDS}
    entry = CronEntry(
        cron_id, expr, fields["func"], queue.name, uuid.uuid4().hex, time.time(), template
    )
    _put(queue.connection, queue.keys, cron_id, entry)
    # Plan the first ticks now rather than at the leader's next tick (up to a second away),
    # so that even the first one starts on time; tick jobs are idempotent, so this cannot
    # double what the leader enqueues.
    from rqconc.worker.scheduler import Scheduler

    with translated_errors(queue.connection):
        Scheduler(queue.connection, queue.keys, "client").plan(entry, time.time())
    return entry


def entries(client: redis.Redis, keys: KeySpace) -> List[CronEntry]:
    """Every cron entry of the namespace, by id."""
    with translated_errors(client):
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(keys.crons)
        pipe.hgetall(keys.cron_last)
        raw, last = pipe.execute()
    last_ticks = {text(k): v for k, v in last.items()}
    found = []
    for cron_id, value in raw.items():
        try:
            found.append(CronEntry.from_json(value, last_ticks.get(text(cron_id))))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning(
                "cron %s: unreadable entry left out (%r); remove it with `rqconc cron remove %s`",
                text(cron_id),
                exc,
                text(cron_id),
            )
    return sorted(found, key=lambda e: e.id)


def remove(client: redis.Redis, keys: KeySpace, cron_id: str, queue: Optional[str] = None) -> bool:
    """Remove an entry (only if it belongs to `queue`, when given) and the jobs it enqueued
    ahead that have not started; False if there is no such entry."""
    with translated_errors(client):
        current = client.hget(keys.crons, cron_id)
    if current is None or (queue is not None and _queue_of(current) not in (queue, None)):
        return False
    return _put(client, keys, cron_id, None)


def _queue_of(raw: Any) -> Optional[str]:
    """An entry's queue, or None when the entry is unreadable."""
    try:
        return str(json.loads(text(raw))["queue"])
    except (ValueError, KeyError, TypeError):
        return None


def _put(client: redis.Redis, keys: KeySpace, cron_id: str, entry: Optional[CronEntry]) -> bool:
    """Write (or, with None, delete) an entry through cron_put.lua, retried while a leader
    changes its planned jobs between our read and our write. False: nothing to remove."""
    for _ in range(PUT_ATTEMPTS):
        with translated_errors(client):
            current, planned = _read_current(client, keys, cron_id)
            version, queue = "", "-"
            if current is not None:
                try:
                    old = CronEntry.from_json(current)
                    version, queue = old.version, old.queue
                except (ValueError, KeyError, TypeError):  # unreadable: replaced or removed
                    pass
            keys_ = [
                keys.crons,
                keys.cron_last,
                keys.cron_planned(cron_id),
                keys.scheduled(queue),
                keys.queue(queue),
                *map(keys.job, planned),
            ]
            args = [
                cron_id,
                version,
                entry.to_json() if entry is not None else "",
                len(planned),
                *planned,
            ]
            code, _ = script("cron_put")(client, keys_, args)
        if code != -1:
            return code == 1
    raise RuntimeError(f"cron {cron_id!r} kept changing while it was being written; try again")


def _read_current(
    client: redis.Redis, keys: KeySpace, cron_id: str
) -> Tuple[Optional[bytes], List[str]]:
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.crons, cron_id)
    pipe.zrange(keys.cron_planned(cron_id), 0, -1)
    current, planned = pipe.execute()
    return current, [text(job_id) for job_id in planned]
