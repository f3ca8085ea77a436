"""The idle/busy administration: one slot per child, readable by the supervisor.

Process backends keep the table in shared memory; threads and greenlets in ordinary memory.
Every change a child makes names the *generation* it was spawned with, so a child the
supervisor has given up on (an abandoned thread) can never overwrite the slot of its
replacement.

Each slot has a lock of its own: the races that matter are all between one child and the
supervisor about that child's slot, never between children, so children never wait for one
another (one lock for the whole table cost threading-20 a third of its samples). The one
race that matters most — "supervisor ends an idle child" against "child just received an
item" — is settled under the slot's lock: the supervisor moves IDLE to ENDING only if the
child has not moved IDLE to BUSY first, and a child that finds itself ENDING hands its item
back.

The supervisor reads slots for counting, titles and deadline checks without any lock
(`peek`, `count`, `overdue`): a torn read of plain fields only misinforms a display or
triggers a check that is done again under the slot's lock (`take_over_*`) before it acts.
"""

from __future__ import annotations

import ctypes
import logging
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from rqconc.engine.states import ChildState

log = logging.getLogger("rqconc.engine")

CLAIM_BYTES = 64
ITEM_ID_BYTES = 128
ERROR_BYTES = 512
# No child holds its slot lock for more than microseconds; one that does for this long
# died inside it (SIGKILL, OOM), and the supervisor goes on without the lock.
STUCK_LOCK_SECONDS = 1.0

# Plain ints: comparing a ctypes field with an IntEnum member costs more on the hot path.
_EMPTY, _STARTING = int(ChildState.EMPTY), int(ChildState.STARTING)
_IDLE, _BUSY = int(ChildState.IDLE), int(ChildState.BUSY)
_ENDING, _EXITED = int(ChildState.ENDING), int(ChildState.EXITED)


class _Slot(ctypes.Structure):
    _fields_ = [
        ("state", ctypes.c_int),
        ("retire", ctypes.c_int),
        ("generation", ctypes.c_int),
        ("pid", ctypes.c_int),
        ("seq", ctypes.c_long),
        ("jobs_done", ctypes.c_long),
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
    _fields_ = [("paused", ctypes.c_int)]


class SlotView(NamedTuple):
    """A copy of one slot (consistent when made under the slot's lock)."""

    index: int
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


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _clip(text: str, size: int) -> bytes:
    data = text.encode("utf-8")
    if len(data) < size:  # the usual case: no need to cut at a character boundary
        return data
    return data[: size - 1].decode("utf-8", "ignore").encode("utf-8")


def _copy(index: int, slot: Any) -> SlotView:
    return SlotView(
        index,
        ChildState(slot.state),
        bool(slot.retire),
        slot.generation,
        slot.pid,
        slot.jobs_done,
        slot.busy_since,
        slot.deadline,
        slot.loop_tick,
        _text(slot.claim),
        _text(slot.next_claim),
        _text(slot.item_id),
        _text(slot.error),
    )


class SlotTable:
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

    # ---- supervisor side ----
    @contextmanager
    def _holding(self, index: int) -> Iterator[Any]:
        """The slot's lock, for the supervisor: it must not wait forever on a child that
        died holding it (process backends), so it gives up after STUCK_LOCK_SECONDS."""
        lock = self._locks[index]
        if lock is None:  # a slot never prepared has no child to race with
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

    def view(self, index: int) -> SlotView:
        """A consistent copy of one slot."""
        with self._holding(index) as slot:
            return _copy(index, slot)

    def peek(self, index: int) -> SlotView:
        """A copy made without the lock: for display and for decisions re-checked under it."""
        return _copy(index, self._cells[index])

    def count(self, indices: Iterable[int]) -> Tuple[int, int]:
        """(busy, idle) among these slots, read without locks."""
        cells = self._cells
        states = [cells[i].state for i in indices]
        return states.count(_BUSY), states.count(_IDLE)

    def overdue(self, indices: Iterable[int], now: float) -> List[int]:
        """Busy slots whose item's deadline has passed, read without locks; confirm with
        `take_over_if_overdue` before acting."""
        cells = self._cells
        found = []
        for i in indices:
            slot = cells[i]
            if slot.state == _BUSY and 0.0 < slot.deadline < now:
                found.append(i)
        return found

    def prepare(self, index: int) -> int:
        """Reset a slot for a new child and return the child's generation. The slot's
        previous child, if any, is gone."""
        if self.children_are_processes and self._locks[index] is not None:
            self._free_lock(index)
        with self._holding(index) as slot:  # makes the slot's lock on first use
            generation = slot.generation + 1
            ctypes.memset(ctypes.addressof(slot), 0, ctypes.sizeof(slot))
            slot.generation = generation
            slot.state = _STARTING
            slot.loop_tick = time.time()
            return generation

    def _free_lock(self, index: int) -> None:
        # A child SIGKILLed inside its slot's lock leaves it held forever; its replacement
        # would wait on it. A process lock (a semaphore) may be released by anyone: release
        # it whether we took it just now or the dead child held it.
        lock = self._locks[index]
        lock.acquire(False)
        lock.release()

    def set_pid(self, index: int, generation: int, pid: int) -> None:
        with self._holding(index) as slot:
            if slot.generation == generation:
                slot.pid = pid

    def end_if_idle(self, index: int) -> bool:
        """IDLE or STARTING → ENDING, atomically; False if the child is busy (or gone)."""
        with self._holding(index) as slot:
            if slot.state in (_IDLE, _STARTING):
                slot.state = _ENDING
                return True
            return False

    def retire(self, index: int) -> None:
        """Let the child finish what it does, then end."""
        with self._holding(index) as slot:
            slot.retire = 1

    def mark_gone(self, index: int) -> SlotView:
        """Take the slot from its child, which may still run (it is ended next): nothing the
        child writes afterwards counts. Returns the slot as the child left it, so its claims
        are exactly those it may hold items under."""
        with self._holding(index):
            return self._take_over(index)

    def mark_dead(self, index: int) -> SlotView:
        """The slot's child is gone for sure (reaped): as `mark_gone`, without its lock,
        which a child killed inside it would hold forever."""
        return self._take_over(index)

    def take_over_if_overdue(self, index: int, now: float) -> Optional[SlotView]:
        """`mark_gone` if the slot is still busy with an item past its deadline."""
        with self._holding(index) as slot:
            if slot.state == _BUSY and 0.0 < slot.deadline < now:
                return self._take_over(index)
            return None

    def take_over_if_running(self, index: int, claim: str) -> Optional[SlotView]:
        """`mark_gone` if the slot is still busy with the item of this claim."""
        with self._holding(index) as slot:
            if slot.state == _BUSY and claim and _text(slot.claim) == claim:
                return self._take_over(index)
            return None

    def _take_over(self, index: int) -> SlotView:
        slot = self._cells[index]
        last = _copy(index, slot)
        slot.state = _EMPTY
        # A new generation makes every later write of the child a no-op.
        slot.generation += 1
        slot.pid = 0
        return last

    def set_paused(self, paused: bool) -> None:
        self._head.paused = int(paused)

    def paused(self) -> bool:
        return bool(self._head.paused)

    # ---- child side: each call names the child's generation. The hot path is begin_chain
    # + chain_busy, once each per item while items keep coming. Locks are taken with
    # acquire()/release() rather than `with`: multiprocessing's Lock implements `with` in
    # Python on top of C methods, which costs ~4x as much. ----
    def child_ready(self, index: int, generation: int, pid: int) -> bool:
        slot, lock = self._cells[index], self._locks[index]
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation or slot.state != _STARTING:
                return False
            slot.state = _IDLE
            slot.pid = pid
            slot.loop_tick = now
            return True
        finally:
            lock.release()

    def begin_take(self, index: int, generation: int, uid: str) -> Optional[str]:
        """A fresh claim for the next take; None if the child must end; "" while paused."""
        slot, lock = self._cells[index], self._locks[index]
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation or slot.state != _IDLE or slot.retire:
                return None
            slot.loop_tick = now
            if self._head.paused:
                slot.claim = b""
                return ""
            slot.seq = seq = slot.seq + 1
            claim = f"{uid}.{index}.{generation}.{seq}"
            slot.claim = claim.encode()
            return claim
        finally:
            lock.release()

    def begin_chain(self, index: int, generation: int, uid: str) -> Optional[str]:
        """While BUSY: a claim under which the source may take the next item in the step
        that records the current one; None when this child must not take another (it is
        retiring, or the worker is paused)."""
        slot, lock = self._cells[index], self._locks[index]
        lock.acquire()
        try:
            if (
                slot.generation != generation
                or slot.state != _BUSY
                or slot.retire
                or self._head.paused
            ):
                return None
            slot.seq = seq = slot.seq + 1
            claim = f"{uid}.{index}.{generation}.{seq}"
            slot.next_claim = claim.encode()
            return claim
        finally:
            lock.release()

    def chain_busy(
        self, index: int, generation: int, item_id: str, deadline: Optional[float]
    ) -> bool:
        """BUSY with the item taken under the next claim, which becomes the claim; False if
        the child may not run it (it must end, or the worker was paused meanwhile): the
        item is then to be given back."""
        slot, lock = self._cells[index], self._locks[index]
        data = item_id.encode()
        if len(data) >= ITEM_ID_BYTES:
            data = _clip(item_id, ITEM_ID_BYTES)
        now = time.time()
        lock.acquire()
        try:
            if (
                slot.generation != generation
                or slot.state != _BUSY
                or slot.retire
                or self._head.paused
            ):
                return False
            slot.jobs_done += 1
            slot.claim = slot.next_claim
            slot.next_claim = b""
            slot.item_id = data
            slot.busy_since = slot.loop_tick = now
            slot.deadline = deadline or 0.0
            return True
        finally:
            lock.release()

    def mark_busy(
        self, index: int, generation: int, item_id: str, deadline: Optional[float]
    ) -> bool:
        """IDLE → BUSY; False if the supervisor ended this child first."""
        slot, lock = self._cells[index], self._locks[index]
        data = _clip(item_id, ITEM_ID_BYTES)
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation or slot.state != _IDLE or slot.retire:
                return False
            slot.state = _BUSY
            slot.item_id = data
            slot.busy_since = now
            slot.deadline = deadline or 0.0
            return True
        finally:
            lock.release()

    def mark_idle(self, index: int, generation: int) -> bool:
        """BUSY → IDLE after an item; False if the child must end now."""
        slot, lock = self._cells[index], self._locks[index]
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation:
                return False
            slot.jobs_done += 1
            slot.item_id = b""
            slot.claim = slot.next_claim = b""
            slot.deadline = 0.0
            slot.loop_tick = now
            if slot.retire or slot.state != _BUSY:
                slot.state = _EXITED
                return False
            slot.state = _IDLE
            return True
        finally:
            lock.release()

    def child_exiting(self, index: int, generation: int) -> None:
        slot, lock = self._cells[index], self._locks[index]
        lock.acquire()
        try:
            if slot.generation == generation and slot.state != _BUSY:
                slot.state = _EXITED
                slot.claim = b""
        finally:
            lock.release()

    def boot_failed(self, index: int, generation: int, message: str) -> None:
        slot, lock = self._cells[index], self._locks[index]
        lock.acquire()
        try:
            if slot.generation == generation:
                slot.state = int(ChildState.BOOT_FAILED)
                slot.error = _clip(message, ERROR_BYTES)
        finally:
            lock.release()
