"""Children whose `async def` items run as tasks of one event loop (the `asyncio` backend).

One OS thread runs the backend's event loop for the supervisor's whole life. Each of the
`size` slots is a thread of its own (pre-spawned, idle/busy in the slot table like every
backend's children): it takes a job, and an `async def` job's coroutine is handed to the
shared loop as a task while the slot's thread waits for it; a plain function runs in the
slot's thread itself, so plain functions get a thread pool of the same size.

Limits (docs/backends.md): ending a child (timeout, `job.cancel()`, cold shutdown) cancels
its task, which ends at its next `await`; a task that never awaits (a CPU loop, a blocking
call inside `async def`) freezes every other task of the loop until it returns, and is then
recorded as timed out. A plain function cannot be killed: its thread is abandoned as in the
threading backend. Idle slots share their takes (one step leases a job for each slot that
asked, slots/takes.py); a busy slot's completion takes its next job in the same step.
A soft timeout is thrown into an `async def` job's coroutine at its `await` (a task that
never awaits cannot see it: the loop is not running); a plain function gets it as in the
threading backend (interrupts.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from rqconc.engine import event_loops
from rqconc.engine.backends.threads import ThreadPool
from rqconc.engine.child import ChildContext
from rqconc.engine.slots.takes import CombinedTakes


class AsyncioPool(ThreadPool):
    name = "asyncio"

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._loop_thread = event_loops.LoopThread("rqconc-asyncio-loop")
        self._takes: Optional[CombinedTakes] = None

    def _start(self, ctx: ChildContext) -> Any:
        # Idle slots share one take step, as the slots of a process child do (--slots,
        # slots/takes.py): a burst fills 200 idle slots in a few round trips, not 200.
        if self._takes is None or self._takes.source is not ctx.source:
            self._takes = CombinedTakes(ctx.source, self.capacity)
        return super()._start(dataclasses.replace(ctx, source=self._takes))

    def _child_loop(self) -> Any:
        loop = self._loop_thread.loop
        return event_loops.SharedLoop(lambda: loop)

    def close(self) -> None:
        self._loop_thread.close()
