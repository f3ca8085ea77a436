"""Children as threads of the supervisor's process.

A thread cannot be killed. A child that overruns its item's deadline is *abandoned*: its
slot gets a new generation (so nothing it writes counts), its item is reported to the source
(whose fencing rejects whatever the thread tries to record later), and a new thread takes
its place. The abandoned thread ends by itself when its work returns. An `async def` item
runs in the thread's own event loop, and ending its child cancels its task (event_loops.py).

A job's soft timeout is the thread's asynchronous exception (PyThreadState_SetAsyncExc,
interrupts.py), seen at its next Python bytecode: a thread blocked in a C call (time.sleep,
a socket read, a lock) sees it only when that call returns, and a job that swallows it runs
on until its hard timeout abandons the thread.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Optional

from rqconc.engine import event_loops
from rqconc.engine.child import ChildContext, run_child
from rqconc.engine.pool import Pool
from rqconc.engine.slots.table import CellTable

log = logging.getLogger("rqconc.engine")


def _thread_main(ctx: ChildContext, outcome: dict, loop: Any) -> None:
    event_loops.install(loop)
    try:
        outcome["code"] = run_child(ctx)
    except BaseException as exc:  # a child that dies must not take the process with it
        outcome["code"] = 1
        log.error("child %d died: %s: %s", ctx.index, exc.__class__.__name__, exc, exc_info=exc)


class ThreadPool(Pool):
    name = "threading"
    can_kill = False

    def make_table(self) -> CellTable:
        # A lock per slot: children never wait for one another, only (briefly) for the
        # supervisor deciding about their own slot.
        return CellTable(self.capacity, threading.Lock)

    def _child_loop(self) -> Any:
        """Where the child's `async def` items run: its own loop."""
        return event_loops.ChildLoop()

    def _start(self, ctx: ChildContext) -> Any:
        outcome: dict = {}
        loop = self._child_loop()
        thread = threading.Thread(
            target=_thread_main,
            args=(ctx, outcome, loop),
            name=f"rqconc-child-{ctx.index}",
            daemon=True,
        )
        thread.start()
        return thread, outcome, loop

    def _exitcode(self, handle: Any) -> Optional[int]:
        thread, outcome, _ = handle
        if thread.is_alive():
            return None
        return outcome.get("code", 1)

    def end(self, index: int) -> None:
        # Abandon: the thread runs on, but the slot and the pool place are free again. A
        # coroutine it runs is cancelled, so that thread returns at the item's next await.
        handle = self._children.get(index)
        if handle is not None:
            handle[2].cancel()
        self._forget(index)
