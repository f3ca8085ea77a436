"""Children as greenlets in one gevent-patched process.

gevent must patch the standard library before anything else imports it, so this backend
refuses to run in a process that was not patched: `python main.py gevent N` and
`rqconc worker -b gevent` patch first thing. A greenlet can be killed at its next yield
(I/O, sleep); one that holds the CPU blocks its siblings and the supervisor's loop until it
yields, so leases are renewed from an OS thread (renewer.py), and a job that overran its
timeout without yielding is failed when it returns (docs/choosing-a-backend.md).

`async def` jobs are tasks of one event loop the greenlet children share, run in a greenlet
of its own (event_loops.py: under gevent a loop per greenlet cannot run beside another's).
Ending a child cancels its task, which ends at its next `await`.

A job's soft timeout is thrown into its greenlet by a gevent timer (interrupts.py), at its
next yield: a greenlet that holds the CPU sees it once it yields, if ever before it returns.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Optional

# Importing gevent patches nothing: this module is imported only for the gevent backend,
# whose entry points have patched the standard library by then (check_usable verifies it).
import gevent
from gevent import monkey
from gevent.lock import BoundedSemaphore

from rqconc.engine import event_loops
from rqconc.engine.child import ChildContext, run_child
from rqconc.engine.pool import Pool
from rqconc.engine.slots.table import CellTable

log = logging.getLogger("rqconc.engine")

NOT_PATCHED = (
    "the gevent backend needs gevent's monkey-patching before anything else is "
    "imported: run 'python main.py gevent N' or 'rqconc worker -b gevent', or call "
    "gevent.monkey.patch_all() first thing in your program"
)


class _CooperativeLock:
    """Greenlets switch only at I/O, and no slot operation does I/O: nothing to lock."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        return None


def _greenlet_main(ctx: ChildContext, loop: event_loops.SharedLoop) -> int:
    event_loops.install(loop)
    try:
        return run_child(ctx)
    except gevent.GreenletExit:
        raise
    except BaseException as exc:
        log.error("child %d died: %s: %s", ctx.index, exc.__class__.__name__, exc, exc_info=exc)
        return 1


class GreenletPool(Pool):
    name = "gevent"
    is_green = True

    def __init__(self, capacity: int, slots_per_child: int = 1) -> None:
        super().__init__(capacity, slots_per_child)
        self._loop_thread: Optional[event_loops.LoopThread] = None
        # Starting the loop's greenlet switches: a second child must not start another.
        self._loop_lock = BoundedSemaphore(1)

    @classmethod
    def check_usable(cls) -> None:
        if not (monkey.is_module_patched("socket") and monkey.is_module_patched("threading")):
            raise RuntimeError(NOT_PATCHED)

    def _make_semaphore(self, capacity: int) -> Any:
        return BoundedSemaphore(capacity)

    def make_table(self) -> CellTable:
        return CellTable(self.capacity, _CooperativeLock)

    def _the_loop(self) -> asyncio.AbstractEventLoop:
        """The children's event loop, started by the first coroutine: a worker that runs
        only plain functions keeps none."""
        with self._loop_lock:
            if self._loop_thread is None:
                self._loop_thread = event_loops.LoopThread("rqconc-gevent-loop")
            return self._loop_thread.loop

    def _start(self, ctx: ChildContext) -> Any:
        loop = event_loops.SharedLoop(self._the_loop)
        return gevent.spawn(_greenlet_main, ctx, loop), loop

    def _exitcode(self, handle: Any) -> Optional[int]:
        greenlet, _ = handle
        if not greenlet.dead:
            return None
        return greenlet.value if isinstance(greenlet.value, int) else 1

    def end(self, index: int) -> None:
        handle = self._children.get(index)
        if handle is not None:
            greenlet, loop = handle
            loop.cancel()  # its coroutine's task, which the greenlet's death leaves running
            greenlet.kill(block=True, timeout=1)
        self._forget(index)

    def install_signal(self, signum: int, handler: Callable[[int], None]) -> Any:
        # gevent runs this in its own greenlet as soon as the hub sees the signal; a plain
        # signal.signal handler could wait for the hub's next wake-up.
        return gevent.signal_handler(signum, handler, signum)

    def restore_signal(self, signum: int, previous: Any) -> None:
        previous.cancel()

    def start_os_thread(self, target: Callable[[], None]) -> None:
        # The patched `_thread` would start a greenlet, frozen with the hub by a job that
        # does not yield: the original starts a real thread.
        monkey.get_original("_thread", "start_new_thread")(target, ())

    def make_os_lock(self) -> Any:
        return monkey.get_original("_thread", "allocate_lock")()

    def close(self) -> None:
        if self._loop_thread is not None:
            self._loop_thread.close()
