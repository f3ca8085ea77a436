"""Children as greenlets in one gevent-patched process.

gevent must patch the standard library before anything else imports it, so this backend
refuses to run in a process that was not patched: `python main.py gevent N` and
`rqconc worker -b gevent` patch first thing. A greenlet can be killed at its next yield
(I/O, sleep); one that holds the CPU blocks its siblings and the supervisor's loop until it
yields, so leases are renewed from an OS thread (renewer.py), and a job that overran its
timeout without yielding is failed when it returns (docs/choosing-a-backend.md).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

# Importing gevent patches nothing: this module is imported only for the gevent backend,
# whose entry points have patched the standard library by then (check_usable verifies it).
import gevent
from gevent import monkey
from gevent.lock import BoundedSemaphore

from rqconc.engine.child import ChildContext, run_child
from rqconc.engine.pool import Pool
from rqconc.engine.slots import SlotTable

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


def _greenlet_main(ctx: ChildContext) -> int:
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

    @classmethod
    def check_usable(cls) -> None:
        if not (monkey.is_module_patched("socket") and monkey.is_module_patched("threading")):
            raise RuntimeError(NOT_PATCHED)

    def _make_semaphore(self, capacity: int) -> Any:
        return BoundedSemaphore(capacity)

    def make_slots(self) -> SlotTable:
        return SlotTable(self.capacity, _CooperativeLock)

    def _start(self, ctx: ChildContext) -> Any:
        return gevent.spawn(_greenlet_main, ctx)

    def _exitcode(self, handle: Any) -> Optional[int]:
        if not handle.dead:
            return None
        return handle.value if isinstance(handle.value, int) else 1

    def end(self, index: int) -> None:
        greenlet = self._children.get(index)
        if greenlet is not None:
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
