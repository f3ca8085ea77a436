"""Children whose `async def` items run as tasks of one event loop (the `asyncio` backend).

One OS thread runs the backend's event loop for the supervisor's whole life.

With a source that has a native side (`WorkSource.native_work`, the Redis source), each of
the `size` slots is a task of that loop (native_slots.py, SPEC 15): an `async def` job is
awaited by its slot's task, idle slots take in one step per turn of the loop, and the jobs
that finish in one turn complete in one step; plain functions run in a pool of threads.
Ending a slot (timeout, `job.cancel()`, cold shutdown) cancels its task, so its job ends at
its next `await`.

With any other source, each slot is a thread of its own (pre-spawned, idle/busy in the slot
table like every backend's children): it takes a job, and an `async def` job's coroutine is
handed to the shared loop as a task while the slot's thread waits for it; a plain function
runs in the slot's thread itself. Idle slots share their takes (slots/takes.py).

Limits (docs/backends.md): a task that never awaits (a CPU loop, a blocking call inside
`async def`) freezes every other task of the loop until it returns; the supervisor, in its
own thread, keeps renewing its lease and fails it at its deadline, and its task is cancelled
when the loop runs again. A plain function cannot be killed: its thread is abandoned as in
the threading backend. A soft timeout is thrown into an `async def` job's coroutine at its
`await` (a task that never awaits cannot see it: the loop is not running); a plain function
gets it as in the threading backend (interrupts.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
from typing import Any, Dict, Optional

from rqconc.engine import event_loops
from rqconc.engine.backends.threads import ThreadPool
from rqconc.engine.child import ChildContext
from rqconc.engine.native_slots import NativeCore, run_native_slot
from rqconc.engine.slots.takes import CombinedTakes
from rqconc.engine.source import WorkSource

log = logging.getLogger("rqconc.engine")


class AsyncioPool(ThreadPool):
    name = "asyncio"

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._loop_thread = event_loops.LoopThread("rqconc-asyncio-loop")
        self._takes: Optional[CombinedTakes] = None
        # Per source (by identity): its native core, or None when it has no native side.
        self._cores: Dict[int, Optional[NativeCore]] = {}

    def _start(self, ctx: ChildContext) -> Any:
        core = self._core(ctx.source)
        if core is not None:
            slot = run_native_slot(ctx, core)
            return asyncio.run_coroutine_threadsafe(slot, self._loop_thread.loop)
        # Idle slots share one take step, as the slots of a process child do (--slots,
        # slots/takes.py): a burst fills 200 idle slots in a few round trips, not 200.
        if self._takes is None or self._takes.source is not ctx.source:
            self._takes = CombinedTakes(ctx.source, self.capacity)
        return super()._start(dataclasses.replace(ctx, source=self._takes))

    def _core(self, source: WorkSource) -> Optional[NativeCore]:
        key = id(source)
        if key not in self._cores:
            work = source.native_work()
            loop = self._loop_thread.loop
            self._cores[key] = None if work is None else NativeCore(source, work, loop)
        return self._cores[key]

    def _exitcode(self, handle: Any) -> Optional[int]:
        if not isinstance(handle, concurrent.futures.Future):
            return super()._exitcode(handle)
        if not handle.done():
            return None
        if handle.cancelled():
            return 0
        exc = handle.exception()
        if exc is not None:  # one slot that dies must not take the others with it
            log.error("slot task died: %s: %s", exc.__class__.__name__, exc, exc_info=exc)
            return 1
        return handle.result()

    def end(self, index: int) -> None:
        handle = self._children.get(index)
        if isinstance(handle, concurrent.futures.Future):
            # Cancels the slot's task in the loop's thread: its job ends at its next await.
            handle.cancel()
            self._forget(index)
            return
        super().end(index)

    def _child_loop(self) -> Any:
        loop = self._loop_thread.loop
        return event_loops.SharedLoop(lambda: loop)

    def close(self) -> None:
        self._loop_thread.close()
