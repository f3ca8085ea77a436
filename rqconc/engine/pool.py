"""The pool interface: how a backend starts, watches and ends children.

One implementation per backend (`rqconc/engine/backends/`). The supervisor drives the
pool; the pool never decides anything itself.
"""

from __future__ import annotations

import _thread
import signal
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Optional, Set

from rqconc.engine.child import ChildContext
from rqconc.engine.slots.table import CellTable


@dataclass(frozen=True)
class Ended:
    """A child that is gone by itself (not through `end`)."""

    index: int
    generation: int
    exitcode: Optional[int]
    description: str


class Pool(ABC):
    """Children of one backend. `spawn` blocks while all `capacity` places are taken."""

    name: ClassVar[str]
    # Backend capabilities: code asks these, never the backend's name.
    # Children are OS processes of their own: they have pids and an RSS to watch, and
    # each must notice when it is orphaned.
    children_are_processes: ClassVar[bool] = False
    # Children are fresh interpreters that inherit nothing from the supervisor's process
    # (no imports, no logging set-up): only what is pickled for them.
    children_start_fresh: ClassVar[bool] = False
    # A busy child can be ended now (a process; a greenlet at its next yield); a thread
    # can only be abandoned, its job running on until it returns.
    can_kill: ClassVar[bool] = True
    # Children are greenlets on the supervisor's own hub: a job that does not yield
    # freezes the supervisor's loop, so leases are renewed from an OS thread (renewer.py).
    is_green: ClassVar[bool] = False

    def __init__(self, capacity: int, slots_per_child: int = 1) -> None:
        self.capacity = capacity
        # Jobs one child runs at once (`--slots`, process backends): its slots are the
        # table's cells child * slots_per_child ... + slots_per_child - 1 (slots/host.py).
        self.slots_per_child = slots_per_child
        self._room = self._make_semaphore(capacity)
        self._children: Dict[int, Any] = {}
        self._generations: Dict[int, int] = {}

    @classmethod
    def check_usable(cls) -> None:
        """Raise a clear error if this backend cannot run in this process."""

    def _make_semaphore(self, capacity: int) -> Any:
        return threading.BoundedSemaphore(capacity)

    @abstractmethod
    def make_table(self) -> CellTable:
        """The idle/busy table, in memory the children can write."""

    def spawn(self, ctx: ChildContext) -> None:
        """Start a child for `ctx.index`; blocks while the pool is full."""
        self._room.acquire()
        try:
            self._children[ctx.index] = self._start(ctx)
        except BaseException:
            self._room.release()
            raise
        self._generations[ctx.index] = ctx.generation

    @abstractmethod
    def _start(self, ctx: ChildContext) -> Any:
        """Start one child and return its handle."""

    @abstractmethod
    def _exitcode(self, handle: Any) -> Optional[int]:
        """None while the child lives; its exit code (0 for threads) once gone."""

    def _forget(self, index: int) -> None:
        if self._children.pop(index, None) is not None:
            self._room.release()

    def reap(self) -> List[Ended]:
        """Children that ended since the last call."""
        ended = []
        for index, handle in list(self._children.items()):
            code = self._exitcode(handle)
            if code is not None:
                ended.append(Ended(index, self._generations[index], code, self._describe(code)))
                self._forget(index)
        return ended

    def _describe(self, code: int) -> str:
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    @abstractmethod
    def end(self, index: int) -> None:
        """End the child in `index` now, whatever it does; it is forgotten, not reaped."""

    def end_all(self) -> None:
        for index in list(self._children):
            self.end(index)

    def live(self) -> Set[int]:
        return set(self._children)

    def pid(self, index: int) -> Optional[int]:
        return None

    def install_signal(self, signum: int, handler: Callable[[int], None]) -> Any:
        return signal.signal(signum, lambda sig, frame: handler(sig))

    def restore_signal(self, signum: int, previous: Any) -> None:
        signal.signal(signum, previous)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def rss_bytes(self, index: int) -> Optional[int]:
        """The resident memory of a child that is a process; None otherwise."""
        return None

    def start_os_thread(self, target: Callable[[], None]) -> None:
        """Run `target` in a new OS thread (not a greenlet, even under gevent)."""
        _thread.start_new_thread(target, ())

    def make_os_lock(self) -> Any:
        """A lock that blocks an OS thread (not a greenlet, even under gevent)."""
        return _thread.allocate_lock()

    def close(self) -> None:
        """Release what the pool holds once every child is gone."""
