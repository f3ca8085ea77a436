"""Cron entries: `q.cron(expr, func, *args, id=...)`, `q.crons()`, `q.remove_cron(id)`.

An entry lives in one Redis hash of the namespace (`crons`: id -> JSON). It holds the
expression and a *job template*: the hash fields `Queue.prepare` made at registration, so a
bad function, argument or option raises then, never at a tick. Registration only records
the entry: the scheduler's leader (rqconc/worker/scheduler.py) turns each tick into a job
made from that template (`plan_tick`, here, with the tick math it needs). Registration
plans nothing ahead itself: with no worker running, ticks planned then would all fire
late at once when one starts, where only the latest missed tick may fire (SPEC 7). For the
same reason a tick planned ahead by the leader carries `stale_at`, its entry's next tick
plus STALE_GRACE_MS: if every worker stopped and none promoted it before then, the take
step cancels it instead of running it (lua/include/take.lua).

Expressions: standard 5 fields (minute hour day month weekday), or 6 with seconds as the
last field (croniter's convention), or one of the @hourly/@daily/... aliases; evaluated in
UTC. Entry ids are unique in the namespace (registering an id again replaces the entry) and
name the tick jobs: `cron.<id>.<tick in Unix seconds>` (with up to 3 decimals for an
interval that is not whole seconds: intervals.py).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import redis
from croniter import croniter

from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.job_fields import description_of
from rqconc.queue.schedule import intervals, zones
from rqconc.queue.schedule.bounds import Bounds
from rqconc.queue.schedule.intervals import Tick
from rqconc.store.keys import KeySpace, check_queue_name
from rqconc.store.scripts import CronPutReply
from rqconc.store.steps.core import text
from rqconc.store.steps.cron import CronSteps

log = logging.getLogger("rqconc.queue.schedule.cron")

ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# Fields of a prepared job that belong to one job, not to the template.
PER_JOB_FIELDS = ("id", "created_at")
PUT_ATTEMPTS = 20
# The leader enqueues every tick of the next LOOKAHEAD seconds as a scheduled job, so a
# tick's job starts at its tick rather than at the next supervisor tick; LOOKAHEAD exceeds
# the leader lease (worker/scheduler.py LEASE_MS) plus a tick, so the jobs a SIGKILLed
# leader planned cover the ticks until the next leader takes over.
LOOKAHEAD = 5.0
MAX_TICKS_PER_RUN = 64  # per entry and call: bounds the work of one supervisor tick
PLANNED_RETENTION_MS = 3600 * 1000  # how long removal still finds a tick's unstarted job
# A tick's job planned ahead is canceled instead of run when the take step finds it due
# only this long after the entry's next tick (every worker was down in between): a later
# tick supersedes it (SPEC 7). The grace spares a tick whose job a busy worker promotes a
# little late.
STALE_GRACE_MS = 1000
SHOWN_RUNS = 3  # next fire times shown at registration: enough to see what an expression means


def check_expression(expr: Any) -> str:
    """The expression, whitespace normalized; ValueError unless croniter accepts it as 5
    fields, 6 with seconds last, or an alias, and it fires at least once."""
    if not isinstance(expr, str):
        raise ValueError(f"a cron expression is a str, not {expr!r}")
    normalized = " ".join(expr.split())
    fields = normalized.split(" ")
    if intervals.period_ms(normalized):  # q.every(...)
        return normalized
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
        croniter(normalized, 0.0).get_next(float)
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


def next_tick(expr: str, after: float, tz: Optional[str] = None) -> Tick:
    """The first tick strictly after `after` (Unix seconds); `expr` read in zone `tz`."""
    every = intervals.period_ms(expr)
    if every:
        return intervals.next_tick(every, after)
    zone = zones.zone_of(tz)
    if zone is not None:
        return zones.next_tick(expr, after, zone)
    return int(croniter(expr, after).get_next(float))


def next_ticks(
    expr: str, after: float, count: int = SHOWN_RUNS, tz: Optional[str] = None
) -> List[Tick]:
    """The next `count` ticks after `after`: six-field expressions read seconds last
    (croniter), so `*/2 * * * * *` is every second of even minutes, which these show."""
    ticks: List[Tick] = []
    for _ in range(count):
        tick = next_tick(expr, after, tz)
        ticks.append(tick)
        after = tick
    return ticks


def latest_tick(expr: str, now: float, tz: Optional[str] = None) -> Tick:
    """The latest tick at or before `now` (whole seconds, but for a fractional interval)."""
    every = intervals.period_ms(expr)
    if every:
        return intervals.latest_tick(every, now)
    zone = zones.zone_of(tz)
    if zone is not None:
        return zones.latest_tick(expr, now, zone)
    return int(croniter(expr, float(int(now) + 1)).get_prev(float))


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
    last_tick: Optional[Tick] = None  # the latest tick whose job was enqueued
    tz: str = zones.UTC  # the zone its expression is read in
    bounds: Bounds = Bounds()
    fired: int = 0  # ticks whose job was enqueued (counted for bounds.times)

    @property
    def next_run(self) -> Optional[Tick]:
        """The next tick from now inside its bounds, as a Unix timestamp (None: no more)."""
        runs = self.next_runs
        return runs[0] if runs else None

    @property
    def next_runs(self) -> List[Tick]:
        """The next SHOWN_RUNS ticks from now inside its bounds, as Unix timestamps."""
        return self.runs_after(time.time())

    def runs_after(self, now: float, count: int = SHOWN_RUNS) -> List[Tick]:
        """The next `count` ticks after `now` that will fire (within start, end, times)."""
        start = self.bounds.start
        after = max(now, start - 0.001) if start is not None else now
        left = count
        if self.bounds.times is not None:
            left = min(count, max(0, self.bounds.times - self.fired))
        runs = next_ticks(self.expr, after, left, self.tz) if left else []
        return [run for run in runs if self.bounds.allows(run)]

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
                # Set fields only: an entry with none of them is stored as before them.
                **({"tz": self.tz} if self.tz != zones.UTC else {}),
                **self.bounds.as_json(),
            }
        )

    @classmethod
    def from_json(cls, data: Any, last_tick: Any = None, fired: Any = None) -> CronEntry:
        raw = json.loads(text(data))
        last = intervals.parse_tick(text(last_tick)) if last_tick is not None else None
        return cls(
            raw["id"],
            raw["expr"],
            raw["func"],
            raw["queue"],
            raw["version"],
            float(raw["registered_at"]),
            dict(raw["template"]),
            last,
            str(raw.get("tz") or zones.UTC),
            Bounds.from_json(raw),
            int(text(fired)) if fired is not None else 0,
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
            "tz": self.tz,
            "times": self.bounds.times,
            "fired": self.fired,
            "start": self.bounds.start,
            "end": self.bounds.end,
            "skip_if_running": self.bounds.skip_if_running,
        }


def register(
    client: redis.Redis,
    keys: KeySpace,
    queue: str,
    expr: str,
    cron_id: str,
    fields: Dict[str, str],
    wait: Optional[ReplicaWait] = None,
    tz: str = zones.UTC,
    bounds: Bounds = Bounds(),
) -> CronEntry:
    """Store (or replace) the entry `cron_id` of `queue`: `expr` as checked by
    check_expression (read in zone `tz`, checked by zones.check_zone), `fields` a job
    prepared by `Queue.prepare` (its template), `bounds` as bounds.check_bounds made them.
    Its first tick is the first one after now; the scheduler's leader enqueues it. `wait`:
    the queue's wait_replicas."""
    template = {name: value for name, value in fields.items() if name not in PER_JOB_FIELDS}
    version, now = uuid.uuid4().hex, time.time()
    entry = CronEntry(
        cron_id, expr, fields["func"], queue, version, now, template, None, tz, bounds
    )
    _put(client, keys, cron_id, entry, wait)
    # Said at once, so a six-field expression read seconds last surprises no one.
    log.info(
        "cron %s registered on queue %s: %s runs %s, next at %s",
        cron_id,
        queue,
        expr,
        entry.func,
        ", ".join(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)) for t in entry.next_runs)
        + ("" if tz == zones.UTC else f" ({tz})"),
    )
    return entry


def entries(client: redis.Redis, keys: KeySpace) -> List[CronEntry]:
    """Every cron entry of the namespace, by id."""
    with translated_errors(client):
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(keys.crons)
        pipe.hgetall(keys.cron_last)
        pipe.hgetall(keys.cron_fired)
        raw, last, fired = pipe.execute()
    last_ticks = {text(k): v for k, v in last.items()}
    fired_counts = {text(k): v for k, v in fired.items()}
    found = []
    for cron_id, value in raw.items():
        try:
            name = text(cron_id)
            found.append(CronEntry.from_json(value, last_ticks.get(name), fired_counts.get(name)))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning(
                "cron %s: unreadable entry left out (%r); remove it with `rqconc cron remove %s`",
                text(cron_id),
                exc,
                text(cron_id),
            )
    return sorted(found, key=lambda e: e.id)


def remove(
    client: redis.Redis,
    keys: KeySpace,
    cron_id: str,
    queue: Optional[str] = None,
    wait: Optional[ReplicaWait] = None,
) -> bool:
    """Remove an entry (only if it belongs to `queue`, when given) and the jobs it enqueued
    ahead that have not started; False if there is no such entry."""
    with translated_errors(client):
        current = client.hget(keys.crons, cron_id)
    if current is None or (queue is not None and _queue_of(current) not in (queue, None)):
        return False
    return _put(client, keys, cron_id, None, wait)


def _queue_of(raw: Any) -> Optional[str]:
    """An entry's queue, or None when the entry is unreadable."""
    try:
        return str(json.loads(text(raw))["queue"])
    except (ValueError, KeyError, TypeError):
        return None


def _put(
    client: redis.Redis,
    keys: KeySpace,
    cron_id: str,
    entry: Optional[CronEntry],
    wait: Optional[ReplicaWait] = None,
) -> bool:
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
            code = CronSteps(client, keys, wait).put(
                cron_id, queue, version, entry.to_json() if entry is not None else "", planned
            )
        if code is not CronPutReply.CHANGED:
            return code is CronPutReply.DONE
    raise RuntimeError(f"cron {cron_id!r} kept changing while it was being written; try again")


def _read_current(
    client: redis.Redis, keys: KeySpace, cron_id: str
) -> Tuple[Optional[bytes], List[str]]:
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.crons, cron_id)
    pipe.zrange(keys.cron_planned(cron_id), 0, -1)
    current, planned = pipe.execute()
    return current, [text(job_id) for job_id in planned]


def tick_job_id(cron_id: str, tick: Tick) -> str:
    return f"cron.{cron_id}.{intervals.tick_text(tick)}"
