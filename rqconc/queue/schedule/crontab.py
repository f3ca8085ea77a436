"""A queue's cron and interval entries, the object behind `q.cron(...)`, `q.every(...)`,
`q.crons()` and `q.remove_cron(id)`. The entries live in rqconc/queue/schedule/cron.py; the worker's
scheduler (rqconc/worker/scheduler.py) fires them, exactly once per tick."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import redis

from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.options import Call, Func, refuse, take_options
from rqconc.queue.schedule import cron, intervals, zones
from rqconc.queue.schedule.bounds import check_bounds
from rqconc.queue.schedule.cron import CronEntry
from rqconc.queue.serialization import function_name
from rqconc.store.keys import KeySpace

Moment = Union[dt.datetime, float, None]  # a bound: a datetime or Unix seconds
Prepare = Callable[[Sequence[Call], Dict[str, Any]], List[Tuple[str, int, Dict[str, str]]]]


class CronTab:
    """The cron entries of one queue (`q.crontab`; `q.cron()`, `q.every()`, `q.crons()` and
    `q.remove_cron()` delegate here). `client` is called on each use (a Queue connects on
    first use); `prepare` is the queue's, so every tick's job is checked as enqueue checks."""

    def __init__(
        self,
        client: Callable[[], redis.Redis],
        keys: KeySpace,
        name: str,
        prepare: Prepare,
        wait: ReplicaWait,
    ) -> None:
        self.client = client
        self.keys = keys
        self.name = name
        self.prepare = prepare
        self.wait = wait  # wait_replicas: registering and removing wait for the replicas too

    def cron(
        self,
        expr: str,
        func: Func,
        *args: Any,
        id: Optional[str] = None,
        tz: Optional[str] = None,
        times: Optional[int] = None,
        start: Moment = None,
        end: Moment = None,
        skip_if_running: bool = False,
        **kwargs: Any,
    ) -> CronEntry:
        """Run func(*args, **kwargs) in this queue at every tick of `expr` (5 fields, or 6
        with seconds last) read in time zone `tz` (a zoneinfo name; default UTC), exactly
        once per tick however many workers run. `id` (default: the function's name) names
        the entry; registering it again replaces it. `times`, `start`, `end` (datetimes,
        naive ones in `tz`, or Unix seconds): fire at most that often, only inside that
        window, then the entry removes itself. `skip_if_running`: a tick whose previous job
        still waits or runs is skipped (a `skipped` event). The enqueue options (priority,
        timeout, retry, ...) apply to every tick's job."""
        expr = cron.check_expression(expr)
        cron_id = cron.check_cron_id(function_name(func) if id is None else id)
        zone = zones.check_zone(tz)
        bounds = check_bounds(times, start, end, skip_if_running, zone, time.time())
        options = take_options(kwargs)
        # Each tick's job gets its own id, and a tick cannot wait for a job enqueued once.
        refuse(options, ("job_id", "depends_on"), "a cron's jobs (ids cron.<id>.<tick>)")
        ((_, _, fields),) = self.prepare([(func, tuple(args), dict(kwargs))], options)
        return cron.register(
            self.client(), self.keys, self.name, expr, cron_id, fields, self.wait, zone, bounds
        )

    def crons(self) -> List[CronEntry]:
        """This queue's cron entries (id, expr, func, queue, next_run, last_tick), by id."""
        return [e for e in cron.entries(self.client(), self.keys) if e.queue == self.name]

    def remove_cron(self, id: str) -> bool:
        """Remove this queue's cron entry `id` and its jobs enqueued ahead that have not
        started; False if it has none of that id."""
        return cron.remove(self.client(), self.keys, id, queue=self.name, wait=self.wait)

    def every(
        self,
        seconds: float,
        func: Func,
        *args: Any,
        id: Optional[str] = None,
        times: Optional[int] = None,
        start: Moment = None,
        end: Moment = None,
        skip_if_running: bool = False,
        **kwargs: Any,
    ) -> CronEntry:
        """Run func(*args, **kwargs) in this queue every `seconds` (from 0.1, in whole ms:
        0.5, 1.5, 90...; ticks at its multiples since the epoch), exactly once per tick
        however many workers run: a cron entry (listed by `crons()` and `rqconc cron list`,
        removed by `remove_cron(id)`). `times`, `start`, `end` and `skip_if_running` as
        for `cron()`."""
        expr = intervals.expression(seconds)
        return self.cron(
            expr,
            func,
            *args,
            id=id,
            times=times,
            start=start,
            end=end,
            skip_if_running=skip_if_running,
            **kwargs,
        )


__all__ = ["CronTab"]
