"""A process that must not outlive its parent: a supervisor's child, a launcher's worker.

Imports nothing but the standard library's os, signal and ctypes (none of them threading or
socket), so that a launcher may use it before gevent patches anything."""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _libc_prctl(option: int, value: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: a child's orphan check still holds
        pass


def die_with_parent(parent_pid: int) -> None:
    """In a forked process: SIGKILLed when its parent dies (Linux), and gone at once if the
    parent died before that took effect."""
    _libc_prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)
