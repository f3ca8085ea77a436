"""The supervisor's periodic duties: deadlines, lease renewal, cancel requests, memory
recycling and suspend (the end of a burst is burst.py's).

Every duty reads the cells without locks first and re-checks under the cell's lock
(`take_over_*`) before it ends a child: the child may have moved on to another item since
the read, and must not be ended for the one it finished.
"""

from __future__ import annotations

import logging
import time
from typing import List, Optional

from rqconc.engine.fleet import Fleet
from rqconc.engine.reaper import count_failed, hand_back_next
from rqconc.engine.slots.table import CellView
from rqconc.engine.source import WorkSource

log = logging.getLogger("rqconc.engine")


class Duties:
    """What the supervisor's loop does for the items its children run."""

    def __init__(
        self, fleet: Fleet, source: WorkSource, max_memory_per_child: Optional[float]
    ) -> None:
        self.fleet = fleet
        self.source = source
        self.max_memory_per_child = max_memory_per_child
        # The source's suspend flag as last read (the children see it in the table's header).
        self.suspended = False

    def enforce_deadlines(self) -> None:
        fleet, now = self.fleet, time.time()
        # Every loop step: a scan without locks; only a cell that looks overdue is checked
        # again under its lock, and taken from its child in the same step (the child may
        # have moved on to another item meanwhile, which must not be ended for this one).
        for index in fleet.table.overdue(fleet.live_cells(), now):
            view = fleet.table.take_over_if_overdue(index, now)
            if view is None:
                continue
            if fleet.slots_per_child > 1:
                log.warning(
                    "job %s overran its timeout: abandoning its thread in slot %d",
                    view.item_id,
                    index,
                )
            else:
                how = "ending" if fleet.pool.can_kill else "abandoning"
                log.warning("job %s overran its timeout: %s child %d", view.item_id, how, index)
            fleet.end_cell(index)
            count_failed(fleet, view)
            self.source.timed_out(view.claim, view.deadline - view.busy_since)
            hand_back_next(self.source, view)

    def renew(self) -> None:
        claims = [claim for v in self.fleet.busy() for claim in v.claims]
        if claims:
            self.source.renew(claims)

    def follow_suspend(self) -> None:
        """Read the source's suspend flag; the children take nothing while it is set."""
        self.suspended = bool(self.source.is_suspended())
        self.fleet.table.set_paused(self.suspended)

    def stop_canceled(self) -> None:
        busy = self.fleet.busy()
        for claim in self.source.stop_requested([v.claim for v in busy]):
            self._stop_canceled(claim, busy)

    def _stop_canceled(self, claim: str, busy: List[CellView]) -> None:
        for seen in busy:
            if seen.claim != claim:
                continue
            # The child may have finished this item since `busy` was read: end it only if
            # it still runs it, and take its cell in the same step.
            view = self.fleet.table.take_over_if_running(seen.index, claim)
            if view is None:
                continue
            # The source's own line names the job; this one says what the engine does.
            log.info(
                "ending slot %d: its job was canceled", view.index, extra={"job_id": view.item_id}
            )
            self.fleet.end_cell(view.index)
            count_failed(self.fleet, view)
            self.source.canceled(claim)
            hand_back_next(self.source, view)

    def recycle_fat_children(self) -> None:
        """Retire every process child over `max_memory_per_child` MB: it ends after its job."""
        pool = self.fleet.pool
        if not self.max_memory_per_child or not pool.children_are_processes:
            return
        limit = self.max_memory_per_child * 1024 * 1024
        for index in pool.live():
            rss = pool.rss_bytes(index)
            if rss is not None and rss > limit:
                log.info("child %d uses %.0f MB: recycling it after its job", index, rss / 2**20)
                for cell in self.fleet.cells_of(index):
                    self.fleet.table.retire(cell)
