"""The cron and interval methods of `Queue`: `q.cron(...)`, `q.every(...)`, `q.crons()`,
`q.remove_cron(id)`. The entries live in rqconc/queue/cron.py; the worker's scheduler
(rqconc/worker/scheduler.py) fires them, exactly once per tick."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import redis

from rqconc.connection.replicas import ReplicaWait
from rqconc.queue import cron, intervals
from rqconc.queue.cron import CronEntry
from rqconc.queue.options import Call, Func, refuse, take_options
from rqconc.queue.serialization import function_name
from rqconc.store.keys import KeySpace


class Scheduling:
    """Mixed into `Queue` (its `connection`, `keys`, `name` and `prepare`)."""

    keys: KeySpace
    name: str
    wait: ReplicaWait  # wait_replicas: registering and removing wait for the replicas too

    @property
    def connection(self) -> redis.Redis:  # Queue's
        raise NotImplementedError

    def prepare(
        self, calls: Sequence[Call], options: Dict[str, Any]
    ) -> List[Tuple[str, int, Dict[str, str]]]:
        raise NotImplementedError  # Queue's

    def cron(
        self, expr: str, func: Func, *args: Any, id: Optional[str] = None, **kwargs: Any
    ) -> CronEntry:
        """Run func(*args, **kwargs) in this queue at every tick of `expr` (5 fields, or 6
        with seconds last; UTC), exactly once per tick however many workers run. `id`
        (default: the function's name) names the entry; registering it again replaces it.
        The enqueue options (priority, timeout, retry, ...) apply to every tick's job."""
        expr = cron.check_expression(expr)
        cron_id = cron.check_cron_id(function_name(func) if id is None else id)
        options = take_options(kwargs)
        # Each tick's job gets its own id, and a tick cannot wait for a job enqueued once.
        refuse(options, ("job_id", "depends_on"), "a cron's jobs (ids cron.<id>.<tick>)")
        ((_, _, fields),) = self.prepare([(func, tuple(args), dict(kwargs))], options)
        return cron.register(
            self.connection, self.keys, self.name, expr, cron_id, fields, self.wait
        )

    def crons(self) -> List[CronEntry]:
        """This queue's cron entries (id, expr, func, queue, next_run, last_tick), by id."""
        return [e for e in cron.entries(self.connection, self.keys) if e.queue == self.name]

    def remove_cron(self, id: str) -> bool:
        """Remove this queue's cron entry `id` and its jobs enqueued ahead that have not
        started; False if it has none of that id."""
        return cron.remove(self.connection, self.keys, id, queue=self.name, wait=self.wait)

    def every(
        self, seconds: float, func: Func, *args: Any, id: Optional[str] = None, **kwargs: Any
    ) -> CronEntry:
        """Run func(*args, **kwargs) in this queue every `seconds` (from 0.1, in whole ms:
        0.5, 1.5, 90...; ticks at its multiples since the epoch), exactly once per tick
        however many workers run: a cron entry (listed by `crons()` and `rqconc cron list`,
        removed by `remove_cron(id)`)."""
        return self.cron(intervals.expression(seconds), func, *args, id=id, **kwargs)
