"""The maintenance steps (lua/recover.lua, lua/trim_ended.lua, lua/trim_events.lua): what a
worker's supervisor runs behind the maintenance gate (worker/leases.py), about every job of
the namespace rather than one job's lifecycle (core.py)."""

from __future__ import annotations

from typing import Any, List, Tuple

from rqconc.store.clock import redis_time_ms
from rqconc.store.scripts import script, text
from rqconc.store.steps.bound import BoundSteps

# Bounds of one maintenance trim: entries dropped per set, queues per script call (each
# call holds Redis while it runs).
TRIM_BATCH = 1000
TRIM_QUEUES_PER_CALL = 50
# Event entries one call drops while a consumer group exists (each is read and compared:
# about a millisecond of Redis per call), and calls per pass: a pass drops at most 200,000
# entries, far more than a namespace appends in one maintenance interval.
EVENTS_TRIM_CHUNK = 1000
EVENTS_TRIM_CALLS = 200


class MaintenanceSteps(BoundSteps):
    """Lease recovery, the trim of expired entries and the event stream's retention, bound
    to one client and namespace."""

    def recover(self, max_lost: int, limit: int = 500) -> Tuple[int, int]:
        """Requeue (or dead-letter) jobs whose lease expired: (requeued, dead)."""
        k = self.keys
        # Redis' clock, as the step's own check: a recovering worker's clock may be off.
        now = redis_time_ms(self.client, k)
        expired = [
            text(i) for i in self.client.zrangebyscore(k.active, "-inf", now, start=0, num=limit)
        ]
        if not expired:
            return 0, 0
        pipe = self.client.pipeline(transaction=False)
        for job_id in expired:
            pipe.hmget(k.job(job_id), "queue", "token")
        keys = [k.seq, k.active, k.claims, k.events, k.canceling]
        args: List[Any] = [max_lost, k.prefix]
        for job_id, (queue, token) in zip(expired, pipe.execute()):
            name = text(queue) if queue is not None else "-"
            keys += [k.job(job_id), k.started(name), k.failed(name), k.failed_expiry(name)]
            keys.append(k.done(job_id))
            args += [job_id, text(token) if token is not None else ""]
        requeued, dead = script("recover")(self.client, keys, args)
        return int(requeued), int(dead)

    def trim_ended(self, limit: int = TRIM_BATCH) -> int:
        """Drop expired entries from every known queue's finished and dead-letter sets (up
        to `limit` per set); returns how many."""
        k = self.keys
        names = sorted(text(n) for n in self.client.smembers(k.queues))
        dropped = 0
        for start in range(0, len(names), TRIM_QUEUES_PER_CALL):
            keys: List[str] = []
            for name in names[start : start + TRIM_QUEUES_PER_CALL]:
                keys += [k.finished(name), k.failed(name), k.failed_expiry(name)]
            dropped += int(script("trim_ended")(self.client, keys, [limit]))
        return dropped

    def trim_events(
        self, retention_seconds: float, max_entries: int, chunk: int = EVENTS_TRIM_CHUNK
    ) -> Tuple[int, int]:
        """Drop the event entries older than `retention_seconds` (Redis' clock) and the
        oldest beyond `max_entries` (SPEC 18); returns (removed, dropped: removed before a
        consumer group acknowledged them, also added to the `events_dropped` metric)."""
        keys = [self.keys.events, self.keys.metrics]
        args = [int(retention_seconds * 1000), max_entries, chunk]
        removed = dropped = 0
        for _ in range(EVENTS_TRIM_CALLS):
            gone, lost, more = script("trim_events")(self.client, keys, args)
            removed, dropped = removed + int(gone), dropped + int(lost)
            if not int(more):
                break
        return removed, dropped
