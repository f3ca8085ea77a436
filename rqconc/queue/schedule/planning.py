"""How the scheduler's leader (rqconc/worker/scheduler.py) turns an entry's ticks into jobs:
which ticks are due now (`due_ticks`), the job of one tick (`plan_tick`), and when a bounded
entry has nothing left to fire (`exhausted`).

Bounds (SPEC 18, queue/schedule/bounds.py): ticks outside [start, end] are not planned, and
at most `times` are (cron_advance.lua counts them and refuses one more, so two leaders
cannot exceed it either). A skip_if_running entry plans no tick ahead: whether its previous
job still waits or runs is judged when the tick is due (cron_skip.lua), so its jobs start
at the leader's pass after their tick (about a second later at most) instead of at it.
"""

from __future__ import annotations

import json
import logging
from typing import List

from rqconc.queue.schedule import intervals
from rqconc.queue.schedule.cron import (
    LOOKAHEAD,
    MAX_TICKS_PER_RUN,
    PLANNED_RETENTION_MS,
    STALE_GRACE_MS,
    CronEntry,
    latest_tick,
    next_tick,
    tick_job_id,
)
from rqconc.queue.schedule.intervals import Tick
from rqconc.store.scripts import CronAdvanceReply, CronSkipReply
from rqconc.store.steps.core import Steps
from rqconc.store.steps.cron import CronSteps

log = logging.getLogger("rqconc.queue.schedule.planning")


def due_ticks(entry: CronEntry, now: float) -> List[Tick]:
    """The ticks to enqueue now: the latest missed one (if any), then every tick up to
    now + LOOKAHEAD not enqueued yet (none ahead for a skip_if_running entry); only those
    inside its bounds, and no more than its `times` leave."""
    bounds = entry.bounds
    base = max(entry.registered_at, entry.last_tick if entry.last_tick is not None else 0)
    ticks = []
    latest = latest_tick(entry.expr, _until(entry, now), entry.tz)
    if latest > base and bounds.allows(latest):  # missed (or due now): only the latest fires
        ticks.append(latest)
    after = max(base, now)
    horizon = now if bounds.skip_if_running else now + LOOKAHEAD
    while len(ticks) < MAX_TICKS_PER_RUN:
        tick = next_tick(entry.expr, after, entry.tz)
        if tick > horizon or (bounds.end is not None and tick > bounds.end):
            break
        if bounds.allows(tick):
            ticks.append(tick)
        after = tick
    if bounds.times is not None:
        ticks = ticks[: max(0, bounds.times - entry.fired)]
    return ticks


def exhausted(entry: CronEntry, now: float) -> bool:
    """Whether a bounded entry has no tick left to fire: its `times` fired, or its next
    tick after those enqueued is past its `end`."""
    bounds = entry.bounds
    if bounds.times is not None and entry.fired >= bounds.times:
        return True
    if bounds.end is None:
        return False
    base = max(entry.registered_at, entry.last_tick if entry.last_tick is not None else 0)
    if latest_tick(entry.expr, _until(entry, now), entry.tz) > base:  # one due, unfired
        return False
    return next_tick(entry.expr, max(base, now), entry.tz) > bounds.end


def _until(entry: CronEntry, now: float) -> float:
    """Where the latest missed tick is looked for: up to now, but never past `end` (the
    last tick inside the window still fires when the leader comes after it)."""
    return now if entry.bounds.end is None else min(now, entry.bounds.end)


def retire(steps: Steps, entry: CronEntry) -> bool:
    """Remove an exhausted entry, keeping the jobs it planned ahead."""
    retired = CronSteps(steps.client, steps.keys).retire(
        entry.id, entry.version, PLANNED_RETENTION_MS
    )
    if retired:
        log.info("cron %s: its bounds are reached; entry removed", entry.id)
    return retired


def skipped(steps: Steps, entry: CronEntry, tick: Tick) -> bool:
    """For a skip_if_running entry: whether the tick is skipped (its previous job still
    waits or runs: recorded, with a `skipped` event) or its entry is gone."""
    if not entry.bounds.skip_if_running:
        return False
    job_id = tick_job_id(entry.id, tick)
    reply = CronSteps(steps.client, steps.keys).skip(
        entry.id, entry.version, intervals.tick_text(tick), job_id, entry.queue, entry.func
    )
    if reply is CronSkipReply.SKIPPED:
        log.info("cron %s: tick %s skipped, its previous job still runs", entry.id, tick)
    return reply is not CronSkipReply.FIRE


def plan_tick(steps: Steps, entry: CronEntry, tick: Tick, now: float) -> bool:
    """Enqueue the job of one tick (scheduled at the tick if it is ahead, else waiting at
    once), then record it; True if this call created the job. Idempotent: the job id is
    made of the entry and the tick, and the enqueue step refuses an id that exists."""
    if skipped(steps, entry, tick):
        return False
    job_id = tick_job_id(entry.id, tick)
    fields = dict(entry.template)
    meta = json.loads(fields.get("meta") or "{}")
    meta.update(cron=entry.id, tick=tick)
    fields["meta"] = json.dumps(meta)
    due_ms = intervals.tick_ms(tick) if tick > now else None
    if due_ms is not None:  # read by the take step's promotion (lua/include/take.lua)
        stale_at = intervals.tick_ms(next_tick(entry.expr, tick, entry.tz)) + STALE_GRACE_MS
        fields["stale_at"] = str(stale_at)
    created = steps.enqueue(entry.queue, [(job_id, fields)], entry.priority, due_ms) is None
    recorded = CronSteps(steps.client, steps.keys).advance(
        entry.id,
        entry.version,
        entry.queue,
        intervals.tick_text(tick),
        created,
        job_id,
        PLANNED_RETENTION_MS,
    )
    if created and recorded is CronAdvanceReply.RECORDED:
        log.debug("cron %s: enqueued %s for tick %s", entry.id, job_id, tick)
        return True
    return False


__all__ = ["due_ticks", "exhausted", "plan_tick", "retire", "skipped"]
