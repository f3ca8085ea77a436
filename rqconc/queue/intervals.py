"""Intervals: `q.every(seconds, func, ...)` (SPEC 11) is a cron entry whose expression is
"@every <N>s". Its ticks are the multiples of N seconds since the epoch, the same for every
scheduler, so the cron machinery's exactly-once promise (one leader, tick ids made of the
entry and the tick) holds as it does for cron expressions; N needs not divide a minute."""

from __future__ import annotations

import math
import re
from typing import Any, Optional

_EVERY = re.compile(r"^@every (\d+)s$")
MAX_INTERVAL = 366 * 86400


def expression(seconds: Any) -> str:
    """The cron expression of an interval; ValueError unless a whole number of seconds > 0
    (ticks, like cron's, are whole seconds)."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or seconds != int(seconds)
        or not 1 <= seconds <= MAX_INTERVAL
    ):
        raise ValueError(
            f"every() takes a whole number of seconds from 1 to {MAX_INTERVAL}, not {seconds!r}"
        )
    return f"@every {int(seconds)}s"


def period(expr: str) -> Optional[int]:
    """The interval (s) of an "@every <N>s" expression, None for a cron expression."""
    match = _EVERY.match(expr)
    return int(match.group(1)) if match else None


def next_tick(every: int, after: float) -> int:
    """The first tick strictly after `after`."""
    return (math.floor(after) // every + 1) * every


def latest_tick(every: int, now: float) -> int:
    """The latest tick at or before `now`."""
    return math.floor(now) // every * every
