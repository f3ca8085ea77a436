"""The states of a supervisor and of its children."""

from __future__ import annotations

import enum


class SupervisorState(str, enum.Enum):
    READY = "ready"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return self.value


class ChildState(enum.IntEnum):
    EMPTY = 0
    STARTING = 1
    IDLE = 2
    BUSY = 3
    # Told to end while idle: the child leaves at its next look at the slot.
    ENDING = 4
    EXITED = 5
    BOOT_FAILED = 6
    # Between "about to take" and "took nothing" or BUSY: the take may have leased an item
    # the slot does not show yet, so the engine never ends such a child as idle.
    TAKING = 7

    @property
    def label(self) -> str:
        """The state as operators see it: a child waiting in a take is waiting for work,
        which SPEC calls idle (busy + idle = size in every published count)."""
        if self is ChildState.TAKING:
            return "idle"
        return self.name.lower()

    @property
    def waits_for_work(self) -> bool:
        """Idle as operators count it (IDLE or TAKING); never a reason to end a child."""
        return self is ChildState.IDLE or self is ChildState.TAKING
