"""Cron ticks in a time zone (SPEC 18): the expression is read on the zone's wall clock.

croniter runs on a DST-free timeline: the zone's wall-clock time written as if it were UTC
("wall seconds"), so its field matching never sees an offset change. Each wall-clock tick
is then mapped to the one real instant it fires at:
- a wall time that occurs once: that instant;
- a wall time repeated by fall-back: its first occurrence only (fold=0), so the repeated
  hour's ticks run once, in the first pass, and none in the second;
- a wall time skipped by spring-forward: the first valid time after it, the transition
  itself (02:30 on Berlin's spring-forward day runs at 03:00 CEST). Several skipped ticks
  and the tick of the transition time itself land on that one instant, and a tick is its
  instant (the job id `cron.<id>.<tick>`): they run once, together.
Ticks are whole seconds (cron has no finer field), as they are in UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

UTC = "UTC"
EPOCH = dt.datetime(1970, 1, 1)
# Steps through a repeated hour before a tick past `after` is found: a six-field expression
# of every second repeats 3600 wall ticks in one fall-back hour (a few zones repeat more).
MAX_STEPS = 4 * 3600 + 10


def check_zone(tz: Any) -> str:
    """A zoneinfo name, "UTC" for None; ValueError naming the zone unless zoneinfo has it."""
    if tz is None:
        return UTC
    if not isinstance(tz, str) or not tz.strip():
        raise ValueError(f"a time zone is a zoneinfo name such as 'Europe/Berlin', not {tz!r}")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {tz!r}: use a zoneinfo (IANA) name such as 'Europe/Berlin'"
        ) from None
    return tz


def zone_of(tz: Optional[str]) -> Optional[ZoneInfo]:
    """The zone of an entry, None for UTC (the plain, unchanged tick math)."""
    return None if tz in (None, UTC) else ZoneInfo(tz)


def wall(instant: float, zone: ZoneInfo) -> float:
    """The zone's wall-clock time at `instant`, in wall seconds."""
    offset = dt.datetime.fromtimestamp(instant, zone).utcoffset()
    return instant + (offset.total_seconds() if offset is not None else 0.0)


def instant_of(wall_seconds: float, zone: ZoneInfo) -> int:
    """The instant a wall-clock tick fires at: its first occurrence, or for a skipped wall
    time the first valid time after it (the transition)."""
    naive = EPOCH + dt.timedelta(seconds=int(wall_seconds))
    # fold=0: a repeated time's first occurrence; in a gap, the offset before it (later).
    late = int(naive.replace(tzinfo=zone, fold=0).timestamp())
    if wall(late, zone) == int(wall_seconds):
        return late
    # Skipped: fold=1 maps it with the offset after the gap, an instant before the gap.
    early = int(naive.replace(tzinfo=zone, fold=1).timestamp())
    while late - early > 1:  # the first instant whose wall time is past the skipped one
        middle = (early + late) // 2
        if wall(middle, zone) > wall_seconds:
            late = middle
        else:
            early = middle
    return late


def next_tick(expr: str, after: float, zone: ZoneInfo) -> int:
    """The first tick strictly after `after` (Unix seconds) of `expr` read in `zone`."""
    cursor = wall(after, zone)
    for _ in range(MAX_STEPS):
        wall_tick = croniter(expr, cursor).get_next(float)
        tick = instant_of(wall_tick, zone)
        if tick > after:  # else: a repeated wall time whose first occurrence is past
            return tick
        cursor = wall_tick
    raise ValueError(f"cron expression {expr!r} has no tick after {after} in {zone.key}")


def latest_tick(expr: str, now: float, zone: ZoneInfo) -> int:
    """The latest tick at or before `now`."""
    wall_tick = croniter(expr, float(int(wall(now, zone)) + 1)).get_prev(float)
    tick = instant_of(wall_tick, zone)
    # In the second pass of a repeated hour the wall clock went back: ticks of the first
    # pass after `tick` happened already. Walk forward to the last one.
    for _ in range(MAX_STEPS):
        following = next_tick(expr, tick, zone)
        if following > now:
            break
        tick = following
    return tick


__all__ = ["UTC", "check_zone", "instant_of", "latest_tick", "next_tick", "wall", "zone_of"]
