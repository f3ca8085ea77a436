"""Where the idle/busy table lives: one fixed-size record (a cell) per child, plus a header,
in memory the backend chooses (shared memory for process backends, ordinary memory
otherwise), and one lock per cell. What the two sides do with a cell is in child_side.py (the
child) and table.py (the supervisor, and the races between them)."""

from __future__ import annotations

import ctypes
import logging
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Tuple

from rqconc.engine.source import WorkTotals
from rqconc.engine.states import ChildState

log = logging.getLogger("rqconc.engine")

CLAIM_BYTES = 64
ITEM_ID_BYTES = 128
ERROR_BYTES = 512
# No child holds its slot lock for more than microseconds; one that does for this long
# died inside it (SIGKILL, OOM), and the supervisor goes on without the lock.
STUCK_LOCK_SECONDS = 1.0

# Plain ints: comparing a ctypes field with an IntEnum member costs more on the hot path.
EMPTY, STARTING = int(ChildState.EMPTY), int(ChildState.STARTING)
IDLE, TAKING, BUSY = int(ChildState.IDLE), int(ChildState.TAKING), int(ChildState.BUSY)
ENDING, EXITED = int(ChildState.ENDING), int(ChildState.EXITED)


class _Slot(ctypes.Structure):
    _fields_ = [
        ("state", ctypes.c_int),
        ("retire", ctypes.c_int),
        ("generation", ctypes.c_int),
        ("pid", ctypes.c_int),
        ("seq", ctypes.c_long),
        ("jobs_done", ctypes.c_long),
        # The child's totals (source.WorkTotals); the supervisor keeps them when the cell
        # is prepared again (CellMemory.prepare).
        ("finished", ctypes.c_long),
        ("failed", ctypes.c_long),
        ("busy_seconds", ctypes.c_double),
        ("busy_since", ctypes.c_double),
        ("deadline", ctypes.c_double),
        ("loop_tick", ctypes.c_double),
        ("claim", ctypes.c_char * CLAIM_BYTES),
        # The claim of the take chained onto the current item's completion (see
        # begin_chain): a child that dies mid-step may hold an item under it too.
        ("next_claim", ctypes.c_char * CLAIM_BYTES),
        ("item_id", ctypes.c_char * ITEM_ID_BYTES),
        ("error", ctypes.c_char * ERROR_BYTES),
    ]


class _Header(ctypes.Structure):
    # paused: suspended, take nothing and give back what a take returns. hold: start no
    # take but run what one under way returns (a burst's last look, see ../burst.py).
    # stop_code, stop_reason: a child asked the worker to stop (source.StopWorker); the
    # first request wins, the supervisor reads it every loop step.
    _fields_ = [
        ("paused", ctypes.c_int),
        ("hold", ctypes.c_int),
        ("stop_code", ctypes.c_int),
        ("stop_reason", ctypes.c_char * ERROR_BYTES),
    ]


class CellView(NamedTuple):
    """A copy of one slot (consistent when made under the slot's lock)."""

    index: int  # type: ignore[assignment]  # the field shadows tuple.index, on purpose
    state: ChildState
    retire: bool
    generation: int
    pid: int
    jobs_done: int
    busy_since: float
    deadline: float
    loop_tick: float
    claim: str
    next_claim: str
    item_id: str
    error: str

    @property
    def claims(self) -> List[str]:
        """Every claim under which this child may hold an item."""
        return [c for c in (self.claim, self.next_claim) if c]


def text_of(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def clip(text: str, size: int) -> bytes:
    data = text.encode("utf-8")
    if len(data) < size:  # the usual case: no need to cut at a character boundary
        return data
    return data[: size - 1].decode("utf-8", "ignore").encode("utf-8")


def copy_slot(index: int, slot: Any) -> CellView:
    return CellView(
        index,
        ChildState(slot.state),
        bool(slot.retire),
        slot.generation,
        slot.pid,
        slot.jobs_done,
        slot.busy_since,
        slot.deadline,
        slot.loop_tick,
        text_of(slot.claim),
        text_of(slot.next_claim),
        text_of(slot.item_id),
        text_of(slot.error),
    )


class CellMemory:
    """`capacity` slots plus a header, in memory given by the backend, one lock per slot.

    `lock_factory` makes one slot's lock (`acquire(blocking, timeout)`, `release()`), which
    must work across the backend's children. A slot's lock is made when the slot is first
    prepared, before its child forks or is pickled (a table has room to grow, and the
    multiprocessing backend's locks are named semaphores: only slots in use get one).
    `children_are_processes`: a child can then die inside its slot's lock (SIGKILL), and the
    supervisor frees the lock of a slot whose child is gone before its next child uses it.
    """

    def __init__(
        self,
        capacity: int,
        lock_factory: Callable[[], Any],
        shared_factory: Any = None,
        *,
        children_are_processes: bool = False,
    ) -> None:
        self.capacity = capacity
        self.children_are_processes = children_are_processes
        self._lock_factory: Optional[Callable[[], Any]] = lock_factory
        self._locks: List[Any] = [None] * capacity
        if shared_factory is not None:
            self._slots = shared_factory(_Slot, capacity)
            self._header = shared_factory(_Header, 1)
        else:
            self._slots = (_Slot * capacity)()
            self._header = (_Header * 1)()
        # The totals of the children whose cells were prepared again since: the
        # supervisor's alone (only it prepares cells and settles ended items).
        self.ended_totals = WorkTotals()
        self._bind()

    def _bind(self) -> None:
        # One Structure per slot, made once: indexing the array builds a new one each time.
        self._cells = [self._slots[i] for i in range(self.capacity)]
        self._head = self._header[0]

    def __getstate__(self) -> dict:
        # The cells point into the shared memory and are rebuilt from it after unpickling;
        # a child never makes locks.
        state = dict(self.__dict__)
        del state["_cells"], state["_head"]
        state["_lock_factory"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind()

    @contextmanager
    def _holding(self, index: int) -> Iterator[Any]:
        """The slot's lock, for the supervisor: it must not wait forever on a child that
        died holding it (process backends), so it gives up after STUCK_LOCK_SECONDS."""
        lock = self._locks[index]
        if lock is None:  # a slot never prepared has no child to race with
            assert self._lock_factory is not None, "only the supervisor's copy prepares slots"
            lock = self._locks[index] = self._lock_factory()
        held = lock.acquire(True, STUCK_LOCK_SECONDS)
        if not held:
            log.warning(
                "the lock of slot %d was held for %.0f s: its child died inside it; "
                "going on without it",
                index,
                STUCK_LOCK_SECONDS,
            )
        try:
            yield self._cells[index]
        finally:
            if held:
                lock.release()

    def view(self, index: int) -> CellView:
        """A consistent copy of one slot."""
        with self._holding(index) as slot:
            return copy_slot(index, slot)

    def peek(self, index: int) -> CellView:
        """A copy made without the lock: for display and for decisions re-checked under it."""
        return copy_slot(index, self._cells[index])

    def prepare(self, index: int) -> int:
        """Reset a slot for a new child and return the child's generation. The slot's
        previous child, if any, is gone."""
        if self.children_are_processes and self._locks[index] is not None:
            self._free_lock(index)
        with self._holding(index) as slot:  # makes the slot's lock on first use
            self.add_ended(slot.finished, slot.failed, slot.busy_seconds)
            generation = slot.generation + 1
            ctypes.memset(ctypes.addressof(slot), 0, ctypes.sizeof(slot))
            slot.generation = generation
            slot.state = STARTING
            slot.loop_tick = time.time()
            return generation

    def add_ended(self, finished: int, failed: int, busy_seconds: float) -> None:
        """Counts the supervisor keeps: a prepared cell's, or an item it settled itself."""
        ended = self.ended_totals
        self.ended_totals = WorkTotals(
            ended.finished + finished, ended.failed + failed, ended.busy_seconds + busy_seconds
        )

    def _free_lock(self, index: int) -> None:
        # A child SIGKILLed inside its slot's lock leaves it held forever; its replacement
        # would wait on it. A process lock (a semaphore) may be released by anyone: release
        # it whether we took it just now or the dead child held it.
        lock = self._locks[index]
        lock.acquire(False)
        lock.release()

    def set_paused(self, paused: bool) -> None:
        self._head.paused = int(paused)

    def paused(self) -> bool:
        return bool(self._head.paused)

    def set_hold(self, hold: bool) -> None:
        self._head.hold = int(hold)

    def request_stop(self, exit_code: int, reason: str) -> None:
        """A child asks the worker to stop with `exit_code` (not 0). Without a lock: the
        reason is written before the code that makes it visible, and two children asking
        at once both ask for the same thing."""
        head = self._head
        if not head.stop_code:
            head.stop_reason = clip(reason, ERROR_BYTES)
            head.stop_code = exit_code or 1

    def stop_request(self) -> Optional[Tuple[int, str]]:
        """(exit code, reason) a child asked the worker to stop with, or None."""
        code = self._head.stop_code
        return (code, text_of(self._head.stop_reason)) if code else None
