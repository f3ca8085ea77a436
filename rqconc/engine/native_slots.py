"""The native core (SPEC 15) of the asyncio backend and of `--slots K` children: each slot
is a task of the process's one event loop, so an `async def` job is awaited by its slot's
task, with no thread hand-off per job.

A slot task runs the child loop of child.py against the same slot table (the supervisor
sees each slot idle or busy with its job, as it sees a thread child): idle slots take
together, one step per turn of the loop (`TurnBatches` over `NativeWork.take_many`), and the
source combines the completions of the jobs that finished in one turn (worker/native.py).
Jobs the source does not run natively (plain functions) run through the source's ordinary
`perform` in `PlainThreads`, the backend's pool of threads, while the slot's task waits; a
run of them stays in that thread, each completion taking the next, until the chain ends or
takes an `async def` job (child.perform_chain): no hand-off to the loop and back per job (two
cross-thread wake-ups a job, a fifth of a 10 ms job's rate under `--slots 50`, PROFILE.md
section 13). Race: if the supervisor takes the cell back meanwhile (a timeout, a cancel), the
slot's task is cancelled and the thread abandoned: its job's completion is refused by
fencing, and its next `chain_busy` (a new generation) gives the following item back.

What stays outside the loop: the supervisor (deadlines, lease renewal, cancel) runs in the
process's main thread, so a job that blocks the loop with CPU keeps its lease, and its
timeout is enforced by the supervisor, which fails the job and cancels the slot's task: the
job ends at its next `await`, and a new slot task replaces it. A plain function's thread
cannot be ended: it is abandoned as in the threading backend, and the pool starts another
thread for the next job, so the slot keeps its capacity.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from typing import Any, Callable, Optional, Sequence, Tuple

from rqconc.engine.child import ChildContext, boot_child, end_chain, is_last, perform_chain
from rqconc.engine.event_loops import Interrupted
from rqconc.engine.slots.turns import TurnBatches
from rqconc.engine.source import NativeWork, StopWorker, WorkItem, WorkSource

log = logging.getLogger("rqconc.engine")

# An idle pool thread this long ends (the pool grows again when jobs come).
THREAD_IDLE_SECONDS = 60.0
# The most takes of idle slots one step carries.
TAKE_LIMIT = 256


class PlainThreads:
    """Threads that run plain functions for the slot tasks: an idle thread is reused, and
    a new one starts when none is idle (a thread abandoned by a timeout holds no slot)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0

    def run(self, func: Callable[..., Any], *args: Any) -> asyncio.Future:
        done = self._loop.create_future()
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                start = False
            else:
                self._started += 1
                start = True
        self._work.put((func, args, done))
        if start:
            name = f"rqconc-child-plain-{self._started}"
            threading.Thread(target=self._serve, name=name, daemon=True).start()
        return done

    def _serve(self) -> None:
        while True:
            try:
                func, args, done = self._work.get(timeout=THREAD_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:
                        self._idle -= 1
                        return
                continue  # work was promised to this thread meanwhile
            try:
                answer: Tuple[bool, Any] = (True, func(*args))
            except BaseException as exc:  # handed to the slot's task, which decides
                answer = (False, exc)
            self._settle(done, answer)
            with self._lock:
                self._idle += 1

    def _settle(self, done: asyncio.Future, answer: Tuple[bool, Any]) -> None:
        def settle() -> None:
            if done.done():  # the slot's task was cancelled: abandoned work
                return
            if answer[0]:
                done.set_result(answer[1])
            else:
                done.set_exception(answer[1])

        try:
            self._loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: the worker is gone
            pass


class NativeCore:
    """What the slot tasks of one process share: the source's native side, its combined
    takes and the plain functions' threads. Made in the loop's thread."""

    def __init__(self, source: WorkSource, work: NativeWork, loop: asyncio.AbstractEventLoop):
        self.source = source
        self.work = work
        self.threads = PlainThreads(loop)
        self.takes: TurnBatches[Tuple[str, float], Optional[WorkItem]] = TurnBatches(
            self._take_batch, TAKE_LIMIT, self._leased_for_nobody
        )

    async def _take_batch(self, asked: Sequence[Tuple[str, float]]) -> list:
        claims = [claim for claim, _ in asked]
        items = await self.work.take_many(claims, asked[0][1])
        by_claim = {item.claim: item for item in items}
        return [by_claim.get(claim) for claim in claims]

    def _leased_for_nobody(self, asked: Tuple[str, float], item: Optional[WorkItem]) -> None:
        # Its slot was ended while the take travelled: the job goes back untouched.
        if item is not None:
            self.threads.run(self.source.give_back, item)

    async def give_back(self, item: WorkItem) -> None:
        await self.threads.run(self.source.give_back, item)


async def run_native_slot(ctx: ChildContext, core: NativeCore) -> int:
    """One slot's whole life as a task of the asyncio backend; returns its exit code (as
    child.run_child)."""
    if not boot_child(ctx):
        return 3  # child.BOOT_FAILURE_EXIT
    return await serve_native_slot(ctx, core)


async def serve_native_slot(ctx: ChildContext, core: NativeCore) -> int:
    """A slot's life once its process is set up (a `--slots` child boots once for all its
    slots, slots/host.py)."""
    table = ctx.table
    if not table.child_ready(ctx.index, ctx.generation, os.getpid()):
        return 0
    try:
        last_claim = await _take_loop(ctx, core)
    except BaseException:
        table.child_exiting(ctx.index, ctx.generation)
        raise
    held = core.work.held([last_claim]) if last_claim else ()
    table.child_exiting(ctx.index, ctx.generation, held)
    return 0


async def _take_loop(ctx: ChildContext, core: NativeCore) -> Optional[str]:
    """The slot's loop; returns the claim of its last take that received nothing."""
    table, index, generation = ctx.table, ctx.index, ctx.generation
    done = 0
    last: Optional[str] = None
    while True:
        claim = table.begin_take(index, generation, ctx.uid)
        if claim is None:
            return last
        last = claim or None
        if claim == "":  # paused (suspended): look again shortly
            await asyncio.sleep(min(ctx.take_timeout, 0.1))
            continue
        item = await core.takes.call((claim, ctx.take_timeout))
        if item is None:
            continue
        last = None
        if table.paused():  # paused while this take was waiting: not ours to run
            await core.give_back(item)
            continue
        if not table.mark_busy(index, generation, item.item_id, item.deadline):
            await core.give_back(item)
            return None
        done, carry_on = await _run_chain(ctx, core, item, done)
        if not carry_on:
            return None


async def _run_chain(
    ctx: ChildContext, core: NativeCore, item: WorkItem, done: int
) -> Tuple[int, bool]:
    """As child._run_chain, awaited: (items done, whether the slot goes on taking)."""
    table, index, generation, uid = ctx.table, ctx.index, ctx.generation, ctx.uid
    max_jobs = ctx.max_jobs

    def next_claim() -> Optional[str]:
        return table.begin_chain(index, generation, uid)

    while True:
        if not core.work.runs_natively(item):
            # A run of plain items stays in one pool thread (see the module's doc).
            done, item, following, interrupted = await core.threads.run(
                perform_chain, ctx, core.source, item, done, core.work.runs_natively
            )
            if interrupted:
                return done, False
            if following is None:
                break
            item = following  # an async def item, marked busy in the thread: awaited here
            continue
        try:
            following = await core.work.perform(
                item, None if is_last(max_jobs, done) else next_claim
            )
        except Interrupted:  # the slot's task was cancelled: the slot was ended
            return done, False
        except StopWorker as stop:
            table.request_stop(stop.exit_code, str(stop))
            break
        done += 1
        if following is None:
            break
        if not table.chain_busy(
            index, generation, following.item_id, following.deadline, item.outcome
        ):
            await core.give_back(following)
            break
        item = following
    return end_chain(ctx, item, done)
