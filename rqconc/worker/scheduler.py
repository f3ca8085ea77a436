"""The cron scheduler: every supervisor calls `run_scheduler` from its tick (about once a
second); the one holding the leader lease turns cron ticks into jobs.

Exactly once per tick, however many supervisors run, rests on two things:
- one leader at a time: a lease (`scheduler:leader`, SET NX PX) that only its holder can
  renew (lua/cron_lease.lua); a leader that stops releases it (`release_lease`), one that
  dies stops renewing and loses it after LEASE_MS;
- idempotent ticks: a tick's job id is `cron.<id>.<tick>` and the enqueue step refuses an
  id that exists, so even two leaders (one paused past its lease) cannot double a tick.
  The latest enqueued tick of each entry is stored (`cron:last`), so ticks are never
  enqueued twice once their job has expired either.

Timeliness: the leader enqueues every tick of the next LOOKAHEAD seconds as a scheduled job
(due at the tick; the tick math and the planning of a tick's job are in queue/cron.py);
workers wake up for the earliest due job, so a tick's job starts at its tick rather than at
the next supervisor tick. LOOKAHEAD exceeds the lease TTL plus a tick, so when a leader is
SIGKILLed its jobs already enqueued cover the ticks until the next leader takes over: no
tick is missed at a handover.

When no scheduler ran through several ticks (every worker down), only the latest missed
tick fires, at once (SPEC section 7). The ticks a dead leader planned ahead carry their
`stale_at` time (queue/schedule/planning.py plan_tick): the take step that finds one due
only after a later tick was due cancels it (a `canceled` event) instead of running it.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import List, Optional, Tuple

import redis

from rqconc.queue.schedule.cron import LOOKAHEAD, CronEntry  # noqa: F401 (tests)
from rqconc.queue.schedule.intervals import Tick
from rqconc.queue.schedule.planning import due_ticks, exhausted, plan_tick, retire
from rqconc.store.clock import redis_time
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import CronLeaseReply
from rqconc.store.steps.core import Steps, text
from rqconc.store.steps.cron import CronSteps

log = logging.getLogger("rqconc.worker.scheduler")

LEASE_MS = 3000  # < cron.LOOKAHEAD - the ~1 s between supervisor ticks, with a margin


def holder_name(worker_name: str) -> str:
    """Who holds the lease: "host:pid:worker name" (rqconc cron list shows it)."""
    return f"{socket.gethostname()}:{os.getpid()}:{worker_name}"


def leader(client: redis.Redis, keys: KeySpace) -> Optional[Tuple[str, int, str]]:
    """The current leader as (host, pid, worker name), or None."""
    value = client.get(keys.scheduler_lease)
    if value is None:
        return None
    try:
        host, pid, name = text(value).split(":", 2)
        return host, int(pid), name
    except ValueError:  # not written by holder_name: show it as it is
        return "?", 0, text(value)


class Scheduler:
    """One supervisor's view of the scheduler (stateless between calls: all state is in
    Redis, so a forked or restarted process needs nothing handed over)."""

    def __init__(self, client: redis.Redis, keys: KeySpace, worker_name: str) -> None:
        self.client = client
        self.keys = keys
        self.holder = holder_name(worker_name)

    def lead(self) -> bool:
        """Take or renew the lease; whether this supervisor leads."""
        code = CronSteps(self.client, self.keys).lease(self.holder, LEASE_MS)
        if code is CronLeaseReply.TAKEN:
            log.info("cron scheduler: %s now leads", self.holder)
        return code is not CronLeaseReply.OTHER_LEADS

    def tick(self, now: Optional[float] = None) -> int:
        """If this supervisor leads, enqueue the due and upcoming ticks of every entry;
        returns how many jobs it enqueued."""
        if not self.lead():
            return 0
        # Redis' clock: a leader whose clock is ahead would fire ticks early (store/clock.py).
        now = redis_time(self.client, self.keys) if now is None else now
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(self.keys.crons)
        pipe.hgetall(self.keys.cron_last)
        pipe.hgetall(self.keys.cron_fired)
        raw, last, fired = pipe.execute()
        last_ticks = {text(k): v for k, v in last.items()}
        fired_counts = {text(k): v for k, v in fired.items()}
        enqueued = 0
        for cron_id, value in raw.items():
            name = text(cron_id)
            try:
                entry = CronEntry.from_json(value, last_ticks.get(name), fired_counts.get(name))
                if exhausted(entry, now):  # bounded, nothing left to fire
                    retire(Steps(self.client, self.keys), entry)
                    continue
                ticks = due_ticks(entry, now)
            except (ValueError, KeyError, TypeError) as exc:  # a corrupt entry skips itself
                log.error("cron %s: cannot read its entry (%s); skipping it", text(cron_id), exc)
                continue
            enqueued += self.plan(entry, now, ticks)
        return enqueued

    def plan(self, entry: CronEntry, now: float, ticks: Optional[List[Tick]] = None) -> int:
        """Enqueue an entry's due and upcoming ticks; how many jobs this call created."""
        ticks = due_ticks(entry, now) if ticks is None else ticks
        return sum(self.fire(entry, tick, now) for tick in ticks)

    def fire(self, entry: CronEntry, tick: Tick, now: float) -> bool:
        """Enqueue the job of one tick; True if this call created it (queue/cron.py)."""
        return plan_tick(Steps(self.client, self.keys), entry, tick, now)


def release_lease(client: redis.Redis, keys: KeySpace, worker_name: str) -> bool:
    """The supervisor is stopping: give the lease up if it holds it (only then: the lease of
    another supervisor, taken after this one's ran out, stays), so no exited worker is shown
    as the leader and the next one leads at its next tick instead of after LEASE_MS."""
    code = CronSteps(client, keys).lease(holder_name(worker_name), 0)
    if code is CronLeaseReply.RELEASED:
        log.info("cron scheduler: %s no longer leads (stopping)", holder_name(worker_name))
    return code is CronLeaseReply.RELEASED


def run_scheduler(client: redis.Redis, keys: KeySpace, worker_name: str) -> int:
    """The supervisor tick's entry point (RedisSource.tick, which guards against Redis being
    away). A command Redis refuses (say, out of memory) is logged: cron never ends a worker."""
    try:
        return Scheduler(client, keys, worker_name).tick()
    except redis.exceptions.ResponseError as exc:
        log.error("cron scheduler: Redis refused a step (%s)", str(exc).splitlines()[0])
        return 0
