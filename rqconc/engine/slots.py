"""The idle/busy administration: one slot per child, readable by the supervisor.

Process backends keep the table in shared memory (one lock for all slots); threads use an
ordinary lock and greenlets a cooperative one. Every change a child makes names the
*generation* it was spawned with, so a child the supervisor has given up on (an abandoned
thread) can never overwrite the slot of its replacement.

The one race that matters — "supervisor ends an idle child" against "child just received
an item" — is settled under the lock: the supervisor moves IDLE to ENDING only if the child
has not moved IDLE to BUSY first, and a child that finds itself ENDING hands its item back.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any, List, Optional

from rqconc.engine.states import ChildState

CLAIM_BYTES = 64
ITEM_ID_BYTES = 128
ERROR_BYTES = 512


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
        ("item_id", ctypes.c_char * ITEM_ID_BYTES),
        ("error", ctypes.c_char * ERROR_BYTES),
    ]


class _Header(ctypes.Structure):
    _fields_ = [("paused", ctypes.c_int)]


@dataclass(frozen=True)
class SlotView:
    """A consistent copy of one slot."""

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
    item_id: str
    error: str


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _clip(text: str, size: int) -> bytes:
    data = text.encode("utf-8")[: size - 1]
    return data.decode("utf-8", "ignore").encode("utf-8")


class SlotTable:
    """`capacity` slots plus a header, in memory given by the backend."""

    def __init__(self, capacity: int, lock: Any, shared_factory: Any = None) -> None:
        self.capacity = capacity
        self.lock = lock
        if shared_factory is not None:
            self._slots = shared_factory(_Slot, capacity)
            self._header = shared_factory(_Header, 1)
        else:
            self._slots = (_Slot * capacity)()
            self._header = (_Header * 1)()

    # ---- supervisor side ----
    def view(self, index: int) -> SlotView:
        with self.lock:
            slot = self._slots[index]
            return SlotView(index, ChildState(slot.state), bool(slot.retire), slot.generation,
                            slot.pid, slot.jobs_done, slot.busy_since, slot.deadline,
                            slot.loop_tick, _text(slot.claim), _text(slot.item_id),
                            _text(slot.error))

    def views(self) -> List[SlotView]:
        return [self.view(i) for i in range(self.capacity)]

    def prepare(self, index: int) -> int:
        """Reset a slot for a new child and return the child's generation."""
        with self.lock:
            slot = self._slots[index]
            generation = slot.generation + 1
            ctypes.memset(ctypes.addressof(slot), 0, ctypes.sizeof(slot))
            slot.generation = generation
            slot.state = ChildState.STARTING
            slot.loop_tick = time.time()
            return generation

    def set_pid(self, index: int, generation: int, pid: int) -> None:
        with self.lock:
            slot = self._slots[index]
            if slot.generation == generation:
                slot.pid = pid

    def end_if_idle(self, index: int) -> bool:
        """IDLE or STARTING → ENDING, atomically; False if the child is busy (or gone)."""
        with self.lock:
            slot = self._slots[index]
            if slot.state in (ChildState.IDLE, ChildState.STARTING):
                slot.state = ChildState.ENDING
                return True
            return False

    def retire(self, index: int) -> None:
        """Let the child finish what it does, then end."""
        with self.lock:
            self._slots[index].retire = 1

    def mark_gone(self, index: int, state: ChildState = ChildState.EMPTY) -> None:
        """The supervisor has reaped (or abandoned) the child of this slot."""
        with self.lock:
            slot = self._slots[index]
            slot.state = state
            # A new generation makes every later write of an abandoned child a no-op.
            slot.generation += 1
            slot.pid = 0

    def set_paused(self, paused: bool) -> None:
        self._header[0].paused = int(paused)

    def paused(self) -> bool:
        return bool(self._header[0].paused)

    # ---- child side: each call names the child's generation ----
    def child_ready(self, index: int, generation: int, pid: int) -> bool:
        with self.lock:
            slot = self._slots[index]
            if slot.generation != generation or slot.state != ChildState.STARTING:
                return False
            slot.state = ChildState.IDLE
            slot.pid = pid
            slot.loop_tick = time.time()
            return True

    def begin_take(self, index: int, generation: int, uid: str) -> Optional[str]:
        """A fresh claim for the next take; None if the child must end; "" while paused."""
        with self.lock:
            slot = self._slots[index]
            if slot.generation != generation or slot.state != ChildState.IDLE or slot.retire:
                return None
            slot.loop_tick = time.time()
            if self._header[0].paused:
                slot.claim = b""
                return ""
            slot.seq += 1
            claim = f"{uid}.{index}.{generation}.{slot.seq}"
            slot.claim = claim.encode()
            return claim

    def mark_busy(self, index: int, generation: int, item_id: str,
                  deadline: Optional[float]) -> bool:
        """IDLE → BUSY; False if the supervisor ended this child first."""
        with self.lock:
            slot = self._slots[index]
            if slot.generation != generation or slot.state != ChildState.IDLE or slot.retire:
                return False
            slot.state = ChildState.BUSY
            slot.item_id = _clip(item_id, ITEM_ID_BYTES)
            slot.busy_since = time.time()
            slot.deadline = deadline or 0.0
            return True

    def mark_idle(self, index: int, generation: int) -> bool:
        """BUSY → IDLE after an item; False if the child must end now."""
        with self.lock:
            slot = self._slots[index]
            if slot.generation != generation:
                return False
            slot.jobs_done += 1
            slot.item_id = b""
            slot.claim = b""
            slot.deadline = 0.0
            slot.loop_tick = time.time()
            if slot.retire or slot.state != ChildState.BUSY:
                slot.state = ChildState.EXITED
                return False
            slot.state = ChildState.IDLE
            return True

    def child_exiting(self, index: int, generation: int) -> None:
        with self.lock:
            slot = self._slots[index]
            if slot.generation == generation and slot.state != ChildState.BUSY:
                slot.state = ChildState.EXITED
                slot.claim = b""

    def boot_failed(self, index: int, generation: int, message: str) -> None:
        with self.lock:
            slot = self._slots[index]
            if slot.generation == generation:
                slot.state = ChildState.BOOT_FAILED
                slot.error = _clip(message, ERROR_BYTES)
