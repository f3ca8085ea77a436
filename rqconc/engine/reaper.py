"""Children that ended by themselves (not ended by the supervisor), and what becomes of the
items their cells show: a busy child's item is a failed attempt, a take's goes back, a child
that failed to boot stops the worker.

A cell names the generation of its child: a reaped child whose cell already belongs to its
replacement (taken over by a deadline, a cancel or a cold shutdown) is not settled twice.
"""

from __future__ import annotations

import logging
import time

from rqconc.engine.controls import Controls
from rqconc.engine.fleet import Fleet
from rqconc.engine.pool import Ended
from rqconc.engine.slots.table import CellView
from rqconc.engine.source import WorkSource
from rqconc.engine.states import ChildState

log = logging.getLogger("rqconc.engine")


def hand_back_next(source: WorkSource, view: CellView) -> None:
    """A busy child ended by force may already hold its next item (taken in the step that
    recorded the current one): that item goes back untouched."""
    if view.next_claim:
        source.interrupted([view.next_claim])


def count_failed(fleet: Fleet, view: CellView) -> None:
    """An item the supervisor settles (its child died, overran or was canceled) counts as
    failed in the worker's totals, with the time it ran."""
    fleet.table.add_ended(0, 1, max(0.0, time.time() - view.busy_since))


class Reaper:
    """Settles the cells of the children the pool reaped."""

    def __init__(self, fleet: Fleet, source: WorkSource, controls: Controls) -> None:
        self.fleet = fleet
        self.source = source
        self.controls = controls

    def reap(self) -> None:
        table = self.fleet.table
        for ended in self.fleet.pool.reap():
            if self.fleet.slots_per_child > 1:
                self._settle_slots(ended)
                continue
            view = table.mark_dead(ended.index)
            if view.generation == ended.generation:
                self._settle(view, ended)

    def _settle_slots(self, ended: Ended) -> None:
        """A child with several slots is gone by itself: each slot's job is settled as a
        child's would be (a busy slot's a failed attempt, a take's goes back), with one line
        for the child rather than one per slot."""
        views = [self.fleet.table.mark_dead(cell) for cell in self.fleet.cells_of(ended.index)]
        if views[0].state is ChildState.BOOT_FAILED:
            self._settle(views[0], ended)
            return
        busy = [v for v in views if v.state is ChildState.BUSY]
        reason = f"child {ended.index} died mid-job ({ended.description})"
        if busy:
            log.warning("%s; its %d running jobs are failed attempts", reason, len(busy))
        for view in busy:
            count_failed(self.fleet, view)
            self.source.lost(view.claim, reason)
        pending = [c for v in views for c in (v.claims if v not in busy else [v.next_claim])]
        if any(pending):
            self.source.interrupted([c for c in pending if c])
        # A child that recycled itself (SIGHUP, max jobs, abandoned threads) exits 0, maybe
        # with a cell prepared again that it no longer started: nothing unexpected.
        quiet = (ChildState.EXITED, ChildState.ENDING, ChildState.EMPTY)
        if not busy and ended.exitcode and any(v.state not in quiet for v in views):
            log.warning("child %d ended unexpectedly (%s)", ended.index, ended.description)

    def _settle(self, view: CellView, ended: Ended) -> None:
        if view.state is ChildState.BOOT_FAILED:
            log.error(
                "child %d failed while starting: %s; stopping the worker", view.index, view.error
            )
            self.controls.boot_failed(view.error)
        elif view.state is ChildState.BUSY:
            reason = f"child {view.index} died mid-job ({ended.description})"
            log.warning("%s; job %s is a failed attempt", reason, view.item_id)
            count_failed(self.fleet, view)
            self.source.lost(view.claim, reason)
            hand_back_next(self.source, view)
        elif view.claims:
            # Died while taking: whatever the take leased under this claim goes back.
            self.source.interrupted(view.claims)
        elif view.state not in (ChildState.EXITED, ChildState.ENDING):
            log.warning("child %d ended unexpectedly (%s)", view.index, ended.description)
