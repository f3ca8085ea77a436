"""Lease renewal from an OS thread of its own, for backends whose jobs can freeze the
supervisor's loop.

Greenlets share one hub with the supervisor: a job that computes without yielding (a CPU
loop) stops the loop, and with it the renewal of every lease; the lease expires and the
job runs again elsewhere. This renewer runs in a real OS thread outside the hub, which the
interpreter keeps switching to (every `sys.getswitchinterval()`) however long a greenlet
computes. It renews with a copy of the source made the way a process backend hands one to
a child (pickled, so it holds no socket and no lock of the hub's), which opens its own
connections in the renewer's thread.

A C call that holds the GIL (threading: a catastrophic regex) starves this thread too;
there the job is failed after the fact instead (docs/choosing-a-backend.md).
"""

from __future__ import annotations

import logging
import pickle
from typing import Any, Callable, List

from rqconc.engine.slots.memory import BUSY
from rqconc.engine.slots.table import CellTable
from rqconc.engine.source import WorkSource

log = logging.getLogger("rqconc.engine")


class Renewer:
    """Every `interval` seconds, renew the claims of every busy slot."""

    def __init__(self, table: CellTable, source: WorkSource, interval: float) -> None:
        self.table = table
        # Not copy.copy: a shallow copy would share the source's parts, and with them the
        # supervisor's client, whose pool locks belong to the hub. A pickled copy holds no
        # connection (a WorkSource must pickle for process backends anyway); it opens its
        # own in the renewer's thread.
        self.source = pickle.loads(pickle.dumps(source))
        self.interval = interval
        self._stop: Any = None

    def start(self, start_thread: Callable[[Callable[[], None]], None], make_lock: Any) -> None:
        """`start_thread` runs a function in a new OS thread; `make_lock` makes a lock that
        blocks that OS thread (the pool's unpatched primitives)."""
        self._stop = make_lock()
        self._stop.acquire()
        start_thread(self._run)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.release()
            self._stop = None

    def busy_claims(self) -> List[str]:
        # Read without locks, as the loop does: a torn claim costs one renewal of several.
        table = self.table
        claims: List[str] = []
        for index in range(table.capacity):
            view = table.peek(index)
            if view.state == BUSY:
                claims.extend(view.claims)
        return claims

    def _run(self) -> None:
        stop = self._stop
        while not stop.acquire(True, self.interval):
            claims = self.busy_claims()
            if not claims:
                continue
            try:
                self.source.renew(claims)
            except Exception:  # the thread must outlive any one failure
                log.exception("renewing leases from the renewer thread failed")
        stop.release()
