"""Event retention from the worker's side (SPEC 18): the maintenance pass (leases.py, behind
the maintenance gate: one supervisor per interval) trims the event stream by age and by a
cap, so no job's step pays for it, and says so when entries went before a consumer group
(a shipper) had them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Tuple

from rqconc.store.defaults import EVENTS_MAX, EVENTS_RETENTION_SECONDS
from rqconc.store.steps.maintenance import MaintenanceSteps

log = logging.getLogger("rqconc.worker")


@dataclass
class EventRetention:
    """Keep every event newer than `seconds`, at most `max_entries` of them."""

    seconds: float = EVENTS_RETENTION_SECONDS
    max_entries: int = EVENTS_MAX

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"events_retention must be above 0 seconds, not {self.seconds}")
        if self.max_entries < 1:
            raise ValueError(f"events_max must be at least 1, not {self.max_entries}")

    def trim(self, steps: MaintenanceSteps) -> Tuple[int, int]:
        """Trim now; returns (removed, dropped before a consumer group had them)."""
        removed, dropped = steps.trim_events(self.seconds, self.max_entries)
        if dropped:
            log.warning(
                "the event stream dropped %d entries a consumer group had not acknowledged "
                "(kept: %d entries, %g s): raise --events-max or keep the shipper up",
                dropped,
                self.max_entries,
                self.seconds,
            )
        return removed, dropped
