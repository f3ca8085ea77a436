"""A child process that runs several jobs at once (`--slots K`, forking and
multiprocessing): one thread per slot, each running the ordinary child loop (child.py) in a
cell of its own in the slot table, so the supervisor sees each slot's state and job as it
sees a child's, and leases, warm and cold shutdown and a dead child's jobs are per slot.

The child's main thread is the *host*: it starts the slot threads, starts a fresh thread in
a slot the supervisor took back and prepared again, shows the process title, and ends the
process once no slot's thread runs any more.

Timeouts and cancel: a thread cannot be killed, and killing the process would end its other
K-1 jobs too. So the supervisor takes the cell from its thread (a new generation: nothing the
thread writes counts any more, and the source's fencing rejects whatever it records), fails
or cancels the job at once, and prepares the cell again; the host starts a new thread in it,
and the slot is back in service. The old thread is *abandoned*: it runs on until the job's
function returns, then leaves. Limits: meanwhile the abandoned job still uses CPU and memory
and may act after its job was failed. A child holding as many abandoned threads as it has
slots is recycled: it takes no more jobs, its other slots finish theirs, and the process ends
(with every abandoned thread) and is replaced. Jobs that must be stopped hard belong on a
worker without `--slots`, whose supervisor kills the child.

Takes: idle slots share one take step (slots/takes.py); a busy slot takes its next job in
the step that records the current one, as any child does.

With a source that has a native side (`WorkSource.native_work`, the Redis source), the
slots are not threads but tasks of the child's one event loop (native_slots.py, SPEC 15):
an `async def` job is awaited by its slot's task, the takes and completions of one turn of
the loop go as one step each, plain functions run in a pool of threads. A slot taken back
has its task cancelled (its job stops at its next `await`) and a new task takes the cell.

Otherwise, `async def` jobs: the slots share the child's one event loop
(event_loops.LoopThread, made on the first coroutine), each coroutine a task of it, so a
client an async job keeps in a module global serves every slot. A slot taken back has its
coroutine's task cancelled: an async job that timed out or was canceled stops at its next
`await`, and its thread ends then instead of being abandoned for the job's whole length. A
coroutine that never awaits holds the loop and so every slot's coroutine (as under the
asyncio backend); plain functions do not use the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import queue
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from rqconc.engine import event_loops, titles
from rqconc.engine.child import BOOT_FAILURE_EXIT, ChildContext, boot_child, run_child, run_slot
from rqconc.engine.native_slots import NativeCore, serve_native_slot
from rqconc.engine.slots.memory import BUSY, STARTING
from rqconc.engine.slots.takes import CombinedTakes

# How often the host looks at its slots: a slot taken back is in service again this soon.
HOST_INTERVAL = 0.05
TITLE_INTERVAL = 0.25


def run_process_child(ctx: ChildContext) -> int:
    """The life of a process child, with one slot or several; returns its exit code."""
    if ctx.slots_per_child <= 1:
        ctx.source.child_alone()
        return run_child(ctx)
    if not boot_child(ctx):
        return BOOT_FAILURE_EXIT
    return SlotHost(ctx).run()


class SlotHost:
    """The main thread of a child with several slots."""

    def __init__(self, ctx: ChildContext) -> None:
        self.ctx = ctx
        self.pid = os.getpid()
        self.cells = range(ctx.first_cell, ctx.first_cell + ctx.slots_per_child)
        self.source = CombinedTakes(ctx.source, ctx.slots_per_child)
        # Per cell: the generation its thread was started with, and the thread (None once
        # the supervisor took the cell back from it).
        self.threads: Dict[int, Tuple[int, Any]] = {}  # a thread, or a native task's future
        self.abandoned: List[threading.Thread] = []
        # Slot threads say here when they end, so that no look asks every thread whether it
        # is alive (50 slots x 20 looks a second showed in profiles).
        self.ended: queue.SimpleQueue = queue.SimpleQueue()
        self.live: Set[Any] = set()
        self.recycling = False
        self._next_title = 0.0
        self._loop_thread: Optional[event_loops.LoopThread] = None
        self._loop_lock = threading.Lock()
        # Per cell: what stops its current slot when taken back (the loop its thread runs
        # coroutines in, or its native task's future: either has `cancel()`).
        self.loops: Dict[int, Any] = {}
        self.native: Optional[NativeCore] = None
        work = ctx.source.native_work()
        if work is not None:  # the slots are tasks of the child's loop (native_slots.py)
            loop = self._the_loop()
            self.native = NativeCore(ctx.source, work, loop)

    def run(self) -> int:
        for cell, generation in zip(self.cells, self.ctx.generations):
            self._start(cell, generation)
        while self._look():
            try:
                self.live.discard(self.ended.get(timeout=HOST_INTERVAL))
            except queue.Empty:
                pass
        # Abandoned threads end with the process: the backend exits it without joining them.
        return 0

    def _run_slot(self, slot_ctx: ChildContext, loop: event_loops.SharedLoop) -> None:
        event_loops.install(loop)
        try:
            run_slot(slot_ctx, self.pid)
        finally:
            self.ended.put(threading.current_thread())

    def _the_loop(self) -> asyncio.AbstractEventLoop:
        """The child's event loop, started by the first slot that runs a coroutine: a child
        that only runs plain functions keeps no loop thread."""
        with self._loop_lock:
            if self._loop_thread is None:
                self._loop_thread = event_loops.LoopThread("rqconc-slots-loop")
            return self._loop_thread.loop

    def _start(self, cell: int, generation: int) -> None:
        slot_ctx = dataclasses.replace(
            self.ctx,
            index=cell,
            generation=generation,
            source=self.source,
            is_os_process=False,  # the host watches for orphaning and shows the title
            slots_per_child=1,
            generations=(),
        )
        if self.native is not None:
            self._start_task(cell, generation, slot_ctx, self.native)
            return
        loop = self.loops[cell] = event_loops.SharedLoop(self._the_loop)
        thread = threading.Thread(
            target=self._run_slot, args=(slot_ctx, loop), name=f"rqconc-slot-{cell}", daemon=True
        )
        self.threads[cell] = (generation, thread)
        self.live.add(thread)
        thread.start()

    def _start_task(
        self, cell: int, generation: int, slot_ctx: ChildContext, core: NativeCore
    ) -> None:
        slot = serve_native_slot(slot_ctx, core)
        future = asyncio.run_coroutine_threadsafe(slot, self._the_loop())
        self.loops[cell] = future
        self.threads[cell] = (generation, future)
        self.live.add(future)
        future.add_done_callback(self.ended.put)  # in the loop's thread, or here on cancel

    def _look(self) -> bool:
        """One look at the slots; False once the child is done (or orphaned)."""
        if os.getppid() != self.ctx.supervisor_pid:
            return False  # the supervisor is gone: take nothing more
        while True:  # every thread that ended meanwhile
            try:
                self.live.discard(self.ended.get_nowait())
            except queue.Empty:
                break
        table, live, running, busy = self.ctx.table, self.live, 0, 0
        for cell in self.cells:
            state, current = table.look(cell)
            generation, thread = self.threads[cell]
            if current != generation:  # the supervisor took the slot back
                if thread is not None and thread in live:
                    self.loops[cell].cancel()  # an async job stops at its next await
                    if self.native is None:  # a native slot's task is cancelled, not left
                        self.abandoned.append(thread)
                self.threads[cell] = (generation, None)
                if state == STARTING and not self.recycling:
                    self._start(cell, current)
                    running += 1
            elif thread in live:
                running += 1
                busy += state == BUSY
            elif not self.recycling:
                # A slot ended by itself (warm shutdown, SIGHUP, --max-jobs-per-child): the
                # process is replaced as a whole, once its other slots are done.
                self._recycle()
        if self.abandoned:
            self.abandoned = [t for t in self.abandoned if t in live]
            if len(self.abandoned) >= len(self.cells) and not self.recycling:
                self._recycle()
        self._show(busy)
        return running > 0

    def _recycle(self) -> None:
        self.recycling = True
        for cell in self.cells:
            self.ctx.table.retire(cell)

    def _show(self, busy: int) -> None:
        now = time.monotonic()
        if now >= self._next_title:
            self._next_title = now + TITLE_INTERVAL
            titles.show_slots(self.ctx.index, busy, len(self.cells))
