"""The Lua step behind event retention (lua/trim_events.lua, SPEC 18): the maintenance pass
trims the event stream by age and by a cap and counts the entries dropped before a consumer
group acknowledged them. Beside core.py, which holds the job lifecycle's steps."""

from __future__ import annotations

from typing import Tuple

import redis

from rqconc.store.keys import KeySpace
from rqconc.store.scripts import script

# Entries one call drops while a consumer group exists (each is read and compared: about a
# millisecond of Redis per call), and calls per pass: a pass drops at most 200,000 entries,
# far more than any namespace appends in one maintenance interval.
TRIM_CHUNK = 1000
TRIM_CALLS = 200


def trim_events(
    client: redis.Redis,
    keys: KeySpace,
    retention_seconds: float,
    max_entries: int,
    chunk: int = TRIM_CHUNK,
) -> Tuple[int, int]:
    """Drop the entries older than `retention_seconds` (Redis' clock) and the oldest beyond
    `max_entries`; returns (removed, dropped: removed before a consumer group had them)."""
    args = [int(retention_seconds * 1000), max_entries, chunk]
    removed = dropped = 0
    for _ in range(TRIM_CALLS):
        gone, lost, more = script("trim_events")(client, [keys.events, keys.metrics], args)
        removed, dropped = removed + int(gone), dropped + int(lost)
        if not int(more):
            break
    return removed, dropped
