"""Intervals: `q.every(seconds, func, ...)` (SPEC 11) is a cron entry whose expression is
"@every <N>s", N any positive number of seconds with at most 3 decimals ("@every 1.5s").
Its ticks are the multiples of N seconds since the epoch, the same for every scheduler, so
the cron machinery's exactly-once promise (one leader, tick ids made of the entry and the
tick) holds as it does for cron expressions; N needs not divide a minute.

The tick math is done on whole milliseconds, so a fractional tick has one exact value
(floats like 0.1 have none). A tick is an int when it falls on a whole second, which every
tick of a whole-second interval does, so those ticks, their job ids and the entries stored
by older versions are unchanged; a fractional tick is a float of milliseconds precision,
written with up to 3 decimals (`tick_text`) in its job id `cron.<id>.<tick>` and cron:last.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional, Union

Tick = Union[int, float]  # Unix seconds: an int on a whole second, else a float of ms precision

_EVERY = re.compile(r"^@every (\d+)(?:\.(\d{1,3}))?s$")
MAX_INTERVAL = 366 * 86400
# The leader plans ticks once a second (a Redis source's tick_interval, engine/source.py), up
# to cron.LOOKAHEAD (5 s) ahead and at most cron.MAX_TICKS_PER_RUN (64) per entry and pass:
# 0.1 s is 50 ticks of lookahead plus 10 per pass, within that bound with room to spare;
# each tick costs the leader two round trips, so shorter intervals are refused.
MIN_INTERVAL = 0.1


def expression(seconds: Any) -> str:
    """The cron expression of an interval; ValueError unless a number of seconds from
    MIN_INTERVAL to MAX_INTERVAL that is a whole number of milliseconds."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or not MIN_INTERVAL <= seconds <= MAX_INTERVAL
        or abs(seconds * 1000 - round(seconds * 1000)) > 1e-6
    ):
        raise ValueError(
            f"every() takes a number of seconds from {MIN_INTERVAL} (the scheduler plans "
            f"ticks once a second) to {MAX_INTERVAL}, in whole milliseconds, not {seconds!r}"
        )
    return f"@every {tick_text(round(seconds * 1000) / 1000)}s"


def period_ms(expr: str) -> Optional[int]:
    """The interval (ms) of an "@every <N>s" expression, None for a cron expression."""
    match = _EVERY.match(expr)
    if not match:
        return None
    whole, decimals = match.group(1), match.group(2) or ""
    return int(whole) * 1000 + int(decimals.ljust(3, "0") or 0) or None


def _ms(seconds: float) -> int:
    """Unix seconds as whole ms, rounded down. Through whole µs first: 1700000000.1 is stored
    as a float a hair below it, which must still count as its own millisecond."""
    return round(seconds * 1_000_000) // 1000


def _tick(ms: int) -> Tick:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def next_tick(every_ms: int, after: float) -> Tick:
    """The first tick strictly after `after`."""
    return _tick((_ms(after) // every_ms + 1) * every_ms)


def latest_tick(every_ms: int, now: float) -> Tick:
    """The latest tick at or before `now`."""
    return _tick(_ms(now) // every_ms * every_ms)


def tick_ms(tick: Tick) -> int:
    return round(tick * 1000)


def tick_text(tick: Tick) -> str:
    """A tick as job ids and cron:last write it: "1700000000", "1700000000.5"."""
    ms = tick_ms(tick)
    whole, frac = divmod(ms, 1000)
    return str(whole) if frac == 0 else f"{whole}.{frac:03d}".rstrip("0")


def parse_tick(raw: str) -> Tick:
    """A tick written by tick_text (or by a version whose ticks were whole seconds)."""
    return int(raw) if "." not in raw else _tick(round(float(raw) * 1000))
