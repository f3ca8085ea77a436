"""The idle/busy table, the supervisor's side: one cell per child (per slot thread of a child
with `--slots K`), readable by the supervisor.

Process backends keep the table in shared memory; threads and greenlets in ordinary memory
(memory.py). Every change a child makes names the *generation* it was spawned with, so a
child the supervisor has given up on (an abandoned thread) can never overwrite the cell of
its replacement (child_side.py).

Each cell has a lock of its own: the races that matter are all between one child and the
supervisor about that child's cell, never between children, so children never wait for one
another (one lock for the whole table was a hot spot of threading profiles; see
bench/RESULTS.md). The one race that matters most — "supervisor ends an idle child" against
"child just received an item" — is settled under the cell's lock: a child moves IDLE to
TAKING before it sends a take, and the supervisor moves only IDLE (never TAKING) to ENDING.
A TAKING child may hold an item the supervisor cannot see yet, so it is retired instead: it
runs what its take returns, then ends. Nothing that decides (burst, shutdown) counts a
TAKING child as idle.

The supervisor reads cells for counting, titles and deadline checks without any lock
(`peek`, `count`, `overdue`): a torn read of plain fields only misinforms a display or
triggers a check that is done again under the cell's lock (`take_over_*`) before it acts.
"""

from __future__ import annotations

from typing import Iterable, List, NamedTuple, Optional

from rqconc.engine.slots.child_side import ChildSide
from rqconc.engine.slots.memory import (
    BUSY,
    EMPTY,
    ENDING,
    IDLE,
    STARTING,
    TAKING,
    CellView,
    copy_slot,
    text_of,
)
from rqconc.engine.source import WorkTotals

__all__ = ["CellTable", "CellView", "Counts"]


class Counts(NamedTuple):
    """Children per state, read without locks."""

    busy: int
    taking: int
    idle: int


class CellTable(ChildSide):
    """The table; the supervisor's side is here, the child's in `ChildSide`."""

    def count(self, indices: Iterable[int]) -> Counts:
        """How many of these slots are busy, taking and idle, read without locks."""
        cells = self._cells
        states = [cells[i].state for i in indices]
        return Counts(states.count(BUSY), states.count(TAKING), states.count(IDLE))

    def work_totals(self) -> WorkTotals:
        """What every child did since the supervisor started: the totals kept of cells
        prepared again, and those of every cell now, read without locks (a display)."""
        finished, failed, busy = self.ended_totals
        for cell in self._cells:
            finished, failed = finished + cell.finished, failed + cell.failed
            busy += cell.busy_seconds
        return WorkTotals(finished, failed, busy)

    def empty(self, indices: Iterable[int]) -> List[int]:
        """Slots taken from their child and not prepared again, read without locks (a slot
        of a child with several is prepared again by the supervisor alone)."""
        cells = self._cells
        return [i for i in indices if cells[i].state == EMPTY]

    def overdue(self, indices: Iterable[int], now: float) -> List[int]:
        """Busy slots whose item's deadline has passed, read without locks; confirm with
        `take_over_if_overdue` before acting."""
        cells = self._cells
        found = []
        for i in indices:
            slot = cells[i]
            if slot.state == BUSY and 0.0 < slot.deadline < now:
                found.append(i)
        return found

    def set_pid(self, index: int, generation: int, pid: int) -> None:
        with self._holding(index) as slot:
            if slot.generation == generation:
                slot.pid = pid

    def end_if_idle(self, index: int) -> bool:
        """IDLE or STARTING → ENDING, atomically; False if the child is taking or busy (or
        gone). A TAKING child may hold an item already: it is not idle."""
        with self._holding(index) as slot:
            if slot.state == IDLE or slot.state == STARTING:
                slot.state = ENDING
                return True
            return False

    def end_when_idle(self, index: int) -> bool:
        """End the child now if idle, else let it finish what it took or runs, then end.
        True if it had not even started (STARTING): it never took anything, and as ENDING
        it never will."""
        with self._holding(index) as slot:
            if slot.state == IDLE or slot.state == STARTING:
                unstarted = slot.state == STARTING
                slot.state = ENDING
                return unstarted
            slot.retire = 1
            return False

    def retire(self, index: int) -> None:
        """Let the child finish what it does, then end."""
        with self._holding(index) as slot:
            slot.retire = 1

    def mark_gone(self, index: int) -> CellView:
        """Take the slot from its child, which may still run (it is ended next): nothing the
        child writes afterwards counts. Returns the slot as the child left it, so its claims
        are exactly those it may hold items under."""
        with self._holding(index):
            return self._take_over(index)

    def mark_dead(self, index: int) -> CellView:
        """The slot's child is gone for sure (reaped): as `mark_gone`, without its lock,
        which a child killed inside it would hold forever."""
        return self._take_over(index)

    def take_over_if_overdue(self, index: int, now: float) -> Optional[CellView]:
        """`mark_gone` if the slot is still busy with an item past its deadline."""
        with self._holding(index) as slot:
            if slot.state == BUSY and 0.0 < slot.deadline < now:
                return self._take_over(index)
            return None

    def take_over_if_running(self, index: int, claim: str) -> Optional[CellView]:
        """`mark_gone` if the slot is still busy with the item of this claim."""
        with self._holding(index) as slot:
            if slot.state == BUSY and claim and text_of(slot.claim) == claim:
                return self._take_over(index)
            return None

    def _take_over(self, index: int) -> CellView:
        slot = self._cells[index]
        last = copy_slot(index, slot)
        slot.state = EMPTY
        # Its claims are the caller's to settle now; a later look (a child with several
        # slots that dies after one was taken back) must not settle them again.
        slot.claim = slot.next_claim = b""
        # A new generation makes every later write of the child a no-op.
        slot.generation += 1
        slot.pid = 0
        return last
