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
    # A thread the supervisor gave up on (overrun): its slot is someone else's now.
    ABANDONED = 7

    @property
    def label(self) -> str:
        return self.name.lower()
