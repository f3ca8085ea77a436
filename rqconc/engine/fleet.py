"""The children of one supervisor as the supervisor sees them: the pool that runs them, the
idle/busy table they write, and how many it wants.

Made with the supervisor, before its pool: a supervisor runs once, and `run()` or `start()`
makes the pool (`open`), so the supervisor's parts can hold the fleet from the start.
"""

from __future__ import annotations

from typing import Iterable, List, Type

from rqconc.engine.pool import Pool
from rqconc.engine.slots.table import CellTable, CellView, Counts
from rqconc.engine.states import ChildState


class Fleet:
    """`target` children of `pool_class`, each with `slots_per_child` cells of the table."""

    pool: Pool
    table: CellTable

    def __init__(self, pool_class: Type[Pool], size: int, slots_per_child: int) -> None:
        self.pool_class = pool_class
        self.slots_per_child = slots_per_child
        # How many children the supervisor keeps alive (SIGTTIN / SIGTTOU change it).
        self.target = size
        self.is_open = False

    def open(self) -> Pool:
        """Make the pool and its table."""
        # Room to grow with SIGTTIN without reallocating shared memory.
        capacity = max(self.target * 4, self.target + 16)
        if self.slots_per_child == 1:
            self.pool = self.pool_class(capacity)
        else:
            self.pool = self.pool_class(capacity, self.slots_per_child)
        self.table = self.pool.make_table()
        self.is_open = True
        return self.pool

    def cells_of(self, index: int) -> range:
        """The cells of the table of the child in `index` (one per slot)."""
        first = index * self.slots_per_child
        return range(first, first + self.slots_per_child)

    def live_cells(self) -> Iterable[int]:
        """The cells of every live child (with one slot per child: the children)."""
        if self.slots_per_child == 1:
            return self.pool.live()
        return [cell for index in self.pool.live() for cell in self.cells_of(index)]

    def peek_live(self) -> List[CellView]:
        """The cells of every live child, read without locks (see slots/table.py)."""
        if not self.is_open:
            return []
        table = self.table
        return [table.peek(cell) for cell in self.live_cells()]

    def busy(self) -> List[CellView]:
        # Read without locks: a claim torn by a concurrent write costs one lease renewal
        # (there are several per lease), and a cancel is re-checked under the cell's lock.
        return [view for view in self.peek_live() if view.state is ChildState.BUSY]

    def count(self) -> Counts:
        """Busy, taking and idle cells of the live children, read without locks."""
        return self.table.count(self.live_cells())

    def end_when_idle(self, indices: Iterable[int]) -> None:
        """End these cells' children now if idle, else once done (see CellTable)."""
        for cell in indices:
            self.table.end_when_idle(cell)

    def end_all_when_idle(self) -> None:
        """Every child ends now if idle, else once done. A process child still starting
        (every cell STARTING: a spawned interpreter imports for a while) is ended at once
        instead of being left to finish its start only to see it must end: it never took
        anything, and from ENDING it never can (CellTable.end_when_idle)."""
        kill_unstarted = self.pool.children_are_processes
        for index in list(self.pool.live()):
            unstarted = [self.table.end_when_idle(cell) for cell in self.cells_of(index)]
            if kill_unstarted and all(unstarted):
                self.pool.end(index)

    def end_cell(self, index: int) -> None:
        """End what runs in a cell already taken from its child: the child itself, or, in a
        child with several slots, nothing: the slot's thread is abandoned and the cell
        prepared again (slots/host.py says why and what that costs)."""
        if self.slots_per_child == 1:
            self.pool.end(index)
