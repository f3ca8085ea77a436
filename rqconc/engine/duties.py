"""The supervisor's periodic duties: deadlines, lease renewal, cancel requests, memory
recycling, suspend, and the end of a burst.

Every duty reads the slots without locks first and re-checks under the slot's lock
(`take_over_*`) before it ends a child: the child may have moved on to another item since
the read, and must not be ended for the one it finished.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable, List, Optional

from rqconc.engine.pool import Pool
from rqconc.engine.slots import SlotTable, SlotView
from rqconc.engine.source import SupervisorInfo, WorkSource
from rqconc.engine.states import ChildState, SupervisorState

log = logging.getLogger("rqconc.engine")


class Duties:
    """Periodic duties, for `BaseSupervisor`."""

    # Set up by BaseSupervisor.
    state: SupervisorState
    source: WorkSource
    burst: bool
    suspended: bool
    max_memory_per_child: Optional[float]
    on_tick: Optional[Callable]
    _pool: Pool
    _slots: SlotTable
    _burst_probe: bool
    slots_per_child: int
    handle_term: Callable[[], None]
    info: Callable[[], SupervisorInfo]
    _live_cells: Callable[[], Iterable[int]]
    _cells_of: Callable[[int], range]

    def _enforce_deadlines(self) -> None:
        now = time.time()
        # Every 50 ms: a scan without locks; only a slot that looks overdue is checked again
        # under its lock, and taken from its child in the same step (the child may have
        # moved on to another item meanwhile, which must not be ended for this one).
        for index in self._slots.overdue(self._live_cells(), now):
            view = self._slots.take_over_if_overdue(index, now)
            if view is None:
                continue
            if self.slots_per_child > 1:
                log.warning(
                    "job %s overran its timeout: abandoning its thread in slot %d",
                    view.item_id,
                    index,
                )
            else:
                how = "ending" if self._pool.can_kill else "abandoning"
                log.warning("job %s overran its timeout: %s child %d", view.item_id, how, index)
            self._end_slot(index)
            self.source.timed_out(view.claim, view.deadline - view.busy_since)
            self._release_next(view)

    def _end_slot(self, index: int) -> None:
        """End what runs in a slot already taken from its child: the child itself, or, in a
        child with several slots, nothing: the slot's thread is abandoned and the slot
        prepared again (slot_host.py says why and what that costs)."""
        if self.slots_per_child == 1:
            self._pool.end(index)

    def _release_next(self, view: SlotView) -> None:
        """A busy child ended by force may already hold its next item (taken in the step
        that recorded the current one): that item goes back untouched."""
        if view.next_claim:
            self.source.interrupted([view.next_claim])

    def _busy_views(self) -> List[SlotView]:
        # Read without locks: a claim torn by a concurrent write costs one lease renewal
        # (there are several per lease), and a cancel is re-checked under the slot's lock.
        views = (self._slots.peek(i) for i in self._live_cells())
        return [v for v in views if v.state is ChildState.BUSY]

    def _renew(self) -> None:
        claims = [claim for v in self._busy_views() for claim in v.claims]
        if claims:
            self.source.renew(claims)

    def _tick(self) -> None:
        self.suspended = bool(self.source.is_suspended())
        self._slots.set_paused(self.suspended)
        busy = self._busy_views()
        for claim in self.source.stop_requested([v.claim for v in busy]):
            self._stop_canceled(claim, busy)
        if self.max_memory_per_child and self._pool.children_are_processes:
            self._recycle_fat_children()
        self.source.tick(self.info())
        if self.burst and self.state is SupervisorState.RUNNING and not self._burst_probe:
            if not self._slots.count(self._live_cells()).busy and self.source.is_drained():
                # Queues look empty, but a child in a take may have just leased the last
                # item: start no new take, and decide once none is under way (_check_burst).
                # A take under way that returns an item runs it (held, not paused).
                self._burst_probe = True
                self._slots.set_hold(True)
        if self.on_tick is not None:
            self.on_tick(self)

    def _check_burst(self) -> None:
        """While a burst probe runs (every loop step): stop once no child takes or runs an
        item and the queues are still empty; go on if a child is busy again or work came."""
        counts = self._slots.count(self._live_cells())
        if counts.taking and not counts.busy:
            return  # a take is under way: wait for it (at most a take's timeout)
        self._burst_probe = False
        if not counts.busy and self.source.is_drained():
            log.info("burst: every queue is empty and every child idle; stopping")
            self.handle_term()
        else:
            self._slots.set_hold(False)

    def _stop_canceled(self, claim: str, busy: List[SlotView]) -> None:
        for seen in busy:
            if seen.claim != claim:
                continue
            # The child may have finished this item since `busy` was read: end it only if
            # it still runs it, and take its slot in the same step.
            view = self._slots.take_over_if_running(seen.index, claim)
            if view is None:
                continue
            # The source's own line names the job; this one says what the engine does.
            log.info(
                "ending slot %d: its job was canceled", view.index, extra={"job_id": view.item_id}
            )
            self._end_slot(view.index)
            self.source.canceled(claim)
            self._release_next(view)

    def _recycle_fat_children(self) -> None:
        limit = (self.max_memory_per_child or 0) * 1024 * 1024
        for index in self._pool.live():
            rss = self._pool.rss_bytes(index)
            if rss is not None and rss > limit:
                log.info("child %d uses %.0f MB: recycling it after its job", index, rss / 2**20)
                for cell in self._cells_of(index):
                    self._slots.retire(cell)
