"""What bounds a cron or interval entry (SPEC 18): `times` (fire at most N times), `start`
and `end` (fire only at ticks inside [start, end]), and `skip_if_running` (a tick whose
previous job still waits or runs is skipped, with a `skipped` event).

The entry JSON holds only the bounds that are set, so an entry without any is stored as
before them. The count of fired ticks is `{ns}:cron:fired` (cron_advance.lua refuses a
tick past `times`); an entry with nothing left to fire retires (cron_retire.lua).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any, Dict, Optional
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class Bounds:
    times: Optional[int] = None
    start: Optional[float] = None  # Unix seconds
    end: Optional[float] = None
    skip_if_running: bool = False

    def allows(self, tick: float) -> bool:
        """Whether a tick lies inside the window."""
        return (self.start is None or tick >= self.start) and (self.end is None or tick <= self.end)

    def as_json(self) -> Dict[str, Any]:
        """The fields the entry JSON gets: only those that are set."""
        shown: Dict[str, Any] = {}
        for name in ("times", "start", "end"):
            if getattr(self, name) is not None:
                shown[name] = getattr(self, name)
        if self.skip_if_running:
            shown["skip_if_running"] = True
        return shown

    @classmethod
    def from_json(cls, raw: Dict[str, Any]) -> Bounds:
        times, start, end = raw.get("times"), raw.get("start"), raw.get("end")
        return cls(
            int(times) if times is not None else None,
            float(start) if start is not None else None,
            float(end) if end is not None else None,
            bool(raw.get("skip_if_running", False)),
        )


def _moment(name: str, value: Any, tz: str) -> Optional[float]:
    """A datetime (naive: in the entry's zone) or Unix seconds, as Unix seconds."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=ZoneInfo(tz))
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ValueError(f"{name} is a datetime or Unix seconds, not {value!r}")


def check_bounds(
    times: Any, start: Any, end: Any, skip_if_running: Any, tz: str, now: float
) -> Bounds:
    """The bounds given to q.cron / q.every; ValueError for one that can never fire."""
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise ValueError(f"times is a number of ticks from 1, not {times!r}")
    start_at, end_at = _moment("start", start, tz), _moment("end", end, tz)
    if end_at is not None and end_at <= now:
        raise ValueError(f"end {end!r} has passed: the entry would never fire")
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ValueError(f"end {end!r} is before start {start!r}")
    if not isinstance(skip_if_running, bool):
        raise ValueError(f"skip_if_running is True or False, not {skip_if_running!r}")
    return Bounds(times, start_at, end_at, skip_if_running)


__all__ = ["Bounds", "check_bounds"]
