"""The child's side of the slot table: each call names the child's generation, so a child
the supervisor has taken its slot from (ended, abandoned) can never overwrite the slot of its
replacement.

A child's round: IDLE → TAKING (`begin_take`, before the take is sent) → BUSY (`mark_busy`,
with what the take returned) → IDLE (`mark_idle`). TAKING is set before the take, under the
slot's lock, because from the moment the take is sent the child may hold an item the
supervisor cannot see yet: a TAKING child is never ended as idle (see slots/table.py).

The hot path is begin_chain + chain_busy, once each per item while items keep coming. Locks
are taken with acquire()/release() rather than `with`: multiprocessing's Lock implements
`with` in Python on top of C methods, which costs several times as much.
"""

from __future__ import annotations

import time
from typing import Any, Optional, Sequence, Tuple

from rqconc.engine.slots.memory import (
    BUSY,
    ERROR_BYTES,
    EXITED,
    IDLE,
    ITEM_ID_BYTES,
    STARTING,
    TAKING,
    CellMemory,
    clip,
    text_of,
)
from rqconc.engine.source import FAILED, FINISHED
from rqconc.engine.states import ChildState


class ChildSide(CellMemory):
    """What a child writes into its own slot."""

    def look(self, index: int) -> Tuple[int, int]:
        """(state, generation) of a slot, read without its lock, for the host of a child
        with several slots (slots/host.py): the state first, because the supervisor writes
        the generation before the state when it prepares a slot, so STARTING is never seen
        with the generation before it (a torn read the other way only delays a look)."""
        slot = self._cells[index]
        state = slot.state
        return state, slot.generation

    def child_ready(self, index: int, generation: int, pid: int) -> bool:
        slot, lock = self._cells[index], self._locks[index]
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation or slot.state != STARTING:
                return False
            slot.state = IDLE
            slot.pid = pid
            slot.loop_tick = now
            return True
        finally:
            lock.release()

    def begin_take(self, index: int, generation: int, uid: str) -> Optional[str]:
        """IDLE (or TAKING, after a take that found nothing) → TAKING with a fresh claim for
        the next take; None if the child must end; "" while paused or held (the child is
        then IDLE)."""
        slot, lock = self._cells[index], self._locks[index]
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation or slot.retire:
                return None
            if slot.state != IDLE and slot.state != TAKING:
                return None
            slot.loop_tick = now
            head = self._head
            if head.paused or head.hold:
                slot.state = IDLE
                slot.claim = b""
                return ""
            if slot.state == TAKING and slot.claim:
                # The take before found nothing, or its reply was lost: then the source keeps
                # the claim as an orphan and puts its item back before it takes again. Under
                # the same claim, the supervisor still sees what that take may have leased,
                # and a cold shutdown hands it back (a fresh claim would hide it until its
                # lease ran out, an attempt counted: issue 14).
                return text_of(slot.claim)
            slot.seq = seq = slot.seq + 1
            claim = f"{uid}.{index}.{generation}.{seq}"
            slot.claim = claim.encode()
            slot.state = TAKING
            return claim
        finally:
            lock.release()

    def mark_busy(
        self, index: int, generation: int, item_id: str, deadline: Optional[float]
    ) -> bool:
        """TAKING → BUSY with the item the take returned; False if the supervisor took the
        slot meanwhile (cold shutdown): the item is then to be given back. A child retired
        meanwhile (warm shutdown, SIGHUP) still runs what it took, then ends."""
        slot, lock = self._cells[index], self._locks[index]
        data = clip(item_id, ITEM_ID_BYTES)
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation or slot.state != TAKING:
                return False
            slot.state = BUSY
            slot.item_id = data
            slot.busy_since = now
            slot.deadline = deadline or 0.0
            return True
        finally:
            lock.release()

    def begin_chain(self, index: int, generation: int, uid: str) -> Optional[str]:
        """While BUSY: a claim under which the source may take the next item in the step
        that records the current one; None when this child must not take another (it is
        retiring, or the worker is paused or held)."""
        slot, lock = self._cells[index], self._locks[index]
        lock.acquire()
        try:
            if (
                slot.generation != generation
                or slot.state != BUSY
                or slot.retire
                or self._head.paused
                or self._head.hold
            ):
                return None
            slot.seq = seq = slot.seq + 1
            claim = f"{uid}.{index}.{generation}.{seq}"
            slot.next_claim = claim.encode()
            return claim
        finally:
            lock.release()

    def chain_busy(
        self,
        index: int,
        generation: int,
        item_id: str,
        deadline: Optional[float],
        outcome: str = "",
    ) -> bool:
        """BUSY with the item taken under the next claim, which becomes the claim, the
        current one counted with its `outcome`; False if the child may not run it (it must
        end, or the worker was paused meanwhile): the item is then to be given back (and
        mark_idle counts the current one)."""
        slot, lock = self._cells[index], self._locks[index]
        data = item_id.encode()
        if len(data) >= ITEM_ID_BYTES:
            data = clip(item_id, ITEM_ID_BYTES)
        now = time.time()
        lock.acquire()
        try:
            if (
                slot.generation != generation
                or slot.state != BUSY
                or slot.retire
                or self._head.paused
            ):
                return False
            slot.jobs_done += 1
            _count(slot, outcome, now)
            slot.claim = slot.next_claim
            slot.next_claim = b""
            slot.item_id = data
            slot.busy_since = slot.loop_tick = now
            slot.deadline = deadline or 0.0
            return True
        finally:
            lock.release()

    def mark_idle(self, index: int, generation: int, outcome: str = "") -> bool:
        """BUSY → IDLE after an item, counted with its `outcome`; False if the child must end
        now."""
        slot, lock = self._cells[index], self._locks[index]
        now = time.time()
        lock.acquire()
        try:
            if slot.generation != generation:
                return False
            slot.jobs_done += 1
            _count(slot, outcome, now)
            slot.item_id = b""
            slot.claim = slot.next_claim = b""
            slot.deadline = 0.0
            slot.loop_tick = now
            if slot.retire or slot.state != BUSY:
                slot.state = EXITED
                return False
            slot.state = IDLE
            return True
        finally:
            lock.release()

    def child_exiting(self, index: int, generation: int, held: Sequence[str] = ()) -> None:
        """EXITED; with the claims under which the child may still hold an item it could not
        hand back (at most two: the slot's claim and next claim; the supervisor hands them
        back when it accounts for the ended child)."""
        slot, lock = self._cells[index], self._locks[index]
        lock.acquire()
        try:
            if slot.generation == generation and slot.state != BUSY:
                slot.state = EXITED
                slot.claim = held[0].encode() if held else b""
                slot.next_claim = held[1].encode() if len(held) > 1 else b""
        finally:
            lock.release()

    def boot_failed(self, index: int, generation: int, message: str) -> None:
        slot, lock = self._cells[index], self._locks[index]
        lock.acquire()
        try:
            if slot.generation == generation:
                slot.state = int(ChildState.BOOT_FAILED)
                slot.error = clip(message, ERROR_BYTES)
        finally:
            lock.release()


def _count(slot: Any, outcome: str, now: float) -> None:
    """An item that ended in its cell, into the cell's totals (under the cell's lock)."""
    if outcome == FINISHED:
        slot.finished += 1
    elif outcome == FAILED:
        slot.failed += 1
    slot.busy_seconds += max(0.0, now - slot.busy_since)
