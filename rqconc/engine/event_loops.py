"""Where a child runs coroutines: its own event loop, created once and reused.

A child is a process, a thread or a greenlet; each keeps one event loop for the `async def`
items it runs (`run`), so a connection pool an item keeps in a module global stays bound to a
loop that lives on. Under the asyncio backend the children share the backend's one loop
instead (`SharedLoop`): the child's thread hands the coroutine to it and waits. So do the
slots of a process child with `--slots K` (slots/host.py): the child's one loop, in a thread of
its own (`LoopThread`), where K coroutines at once are K tasks.

Ending a child that runs a coroutine cancels the coroutine's task (`cancel`): the item sees
`CancelledError` at its next `await`, as it would for `asyncio.wait_for`. A process is simply
killed; a thread or greenlet cannot be, but its coroutine can. The child then gets
`Interrupted`, which is no outcome of the item: the supervisor that ended the child settles
its item (puts it back after a cold shutdown, fails it after a timeout, cancels it).

Under gevent every greenlet shares its thread's "running loop": while one child's loop waits
for I/O, any other child sees that loop as running. The greenlet children therefore share
one loop, in a greenlet of its own (`LoopThread`, patched), as the asyncio backend's do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from typing import Any, Callable, Coroutine, List, Optional

# Per thread (per greenlet under gevent, whose patched `threading.local` is greenlet-local).
_local = threading.local()


class Interrupted(BaseException):
    """The coroutine's task was cancelled because its child was ended (a timeout, a cancel,
    a cold shutdown). Not an Exception: no failure of the item, which the supervisor that
    ended the child settles; the child records nothing and ends (child.py). Recorded as a
    failure, it raced the supervisor's give-back of a cold shutdown, and mostly won: the
    job failed for good instead of going back (issue 31)."""

    def __init__(self) -> None:
        super().__init__("the job's task was cancelled: its child was ended")


class ChildLoop:
    """The event loop of one child, run in the child's own thread while an item runs."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._pid = 0
        self._task: Optional[asyncio.Task] = None
        self._cancelled = False

    def _the_loop(self) -> asyncio.AbstractEventLoop:
        # A forked child inherits its parent's loop object, whose selector it shares: never
        # reuse a loop across a fork.
        if self._loop is None or self._pid != os.getpid() or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
            self._pid = os.getpid()
        return self._loop

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        loop = self._the_loop()
        self._cancelled = False
        task = loop.create_task(coro)
        self._task = task
        try:
            return loop.run_until_complete(task)
        except (Exception, asyncio.CancelledError):
            if self._cancelled:  # however the item reacted to its cancel
                raise Interrupted() from None
            raise
        finally:
            self._task = None

    def cancel(self) -> None:
        """Cancel the running item's task (from another thread); nothing if none runs."""
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not loop.is_closed():
            self._cancelled = True
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # closed meanwhile: the item is over
                pass


class SharedLoop:
    """A child whose items run as tasks of a loop shared with other children (the asyncio
    backend's, or a process child's with several slots), while the child's thread waits for
    the result. `shared` gives that loop, asked on the first coroutine (a child that runs
    only plain functions never starts one). The task runs in a copy of the thread's context
    (`contextvars`), as it would in the thread itself."""

    def __init__(self, shared: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self._shared = shared
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._task: Optional[asyncio.Task] = None
        self._cancelled = False

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        self._cancelled = False
        # The loop releases this lock when the task ends: a lighter signal than a Future's
        # condition, about 25 us less CPU per job on a quiet machine (bench/loop_handoff.py).
        ended: List[asyncio.Task] = []
        signal = threading.Lock()
        signal.acquire()
        context = contextvars.copy_context()
        loop = self._loop = self._loop or self._shared()

        def finished(task: asyncio.Task) -> None:  # in the loop's thread
            if self._task is task:
                self._task = None
            ended.append(task)
            signal.release()

        def start() -> None:  # in the loop's thread
            task = context.run(loop.create_task, coro)
            self._task = task
            task.add_done_callback(finished)

        loop.call_soon_threadsafe(start)
        # The task stays `_task` until it ends (`finished`), not until this wait does: a
        # greenlet killed while it waits has its task cancelled after it is gone.
        signal.acquire()
        task = ended[0]
        if self._cancelled and (task.cancelled() or task.exception() is not None):
            raise Interrupted()  # however the item reacted to its cancel
        if task.cancelled():
            raise concurrent.futures.CancelledError()  # the job cancelled itself
        return task.result()

    def cancel(self) -> None:
        self._cancelled = True
        if self._loop is None:  # no coroutine ran yet: nothing to cancel
            return
        try:  # after `start` if that is still queued: call_soon keeps the order
            self._loop.call_soon_threadsafe(self._cancel_task)
        except RuntimeError:  # the loop is closed: nothing runs any more
            pass

    def _cancel_task(self) -> None:
        if self._task is not None:
            self._task.cancel()


class LoopThread:
    """One event loop running in a daemon thread for as long as its owner lives (the asyncio
    backend's supervisor, a process child with several slots; a greenlet of the gevent
    backend's process, whose patched threads are greenlets)."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def close(self) -> None:
        # Tasks still running belong to abandoned children whose jobs were failed or requeued
        # already: cancel them, let them unwind, then stop the loop.
        loop = self.loop

        def stop() -> None:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if not tasks:  # the usual case: the children's tasks ended with them
                loop.stop()
                return
            # Stop once they have unwound, not a fixed while later; a task that catches its
            # cancellation and goes on awaiting holds the gather, so the loop stops after
            # 50 ms all the same (an embedding process needs the thread to end).
            unwound = asyncio.gather(*tasks, return_exceptions=True)
            unwound.add_done_callback(lambda _: loop.stop())
            loop.call_later(0.05, loop.stop)

        if loop.is_running():
            try:
                loop.call_soon_threadsafe(stop)
            except RuntimeError:  # closed meanwhile
                return
            # A task that never awaits holds the loop: a cold shutdown must not wait for it
            # (the process is gone within 1 s); the thread is a daemon.
            self._thread.join(timeout=0.2)


def install(loop: Any) -> None:
    """Make `loop` (a ChildLoop or SharedLoop) the one this thread's items run in."""
    _local.loop = loop


def current() -> Any:
    """This thread's (greenlet's) loop, made on first use."""
    loop = getattr(_local, "loop", None)
    if loop is None:
        loop = _local.loop = ChildLoop()
    return loop


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to its end in this child's loop and return its result.

    Called from inside a running loop (an eager job enqueued by async code), the coroutine
    runs in a helper thread's loop: one thread cannot run two loops at once."""
    if not _inside_a_running_loop():
        return current().run(coro)
    context = contextvars.copy_context()  # get_current_job() and the like, as here
    with concurrent.futures.ThreadPoolExecutor(1, "rqconc-eager-async") as helper:
        return helper.submit(context.run, asyncio.run, coro).result()


def _inside_a_running_loop() -> bool:
    """Whether the caller runs inside a loop's step. Under gevent, a greenlet also sees the
    loop another greenlet of its thread runs (asyncio keeps one running loop per thread):
    that loop is not the caller's, as the thread it started in (by patched ident: the
    greenlet) tells."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    owner = getattr(loop, "_thread_id", None)  # set by run_forever; private, but stable
    return owner is None or owner == threading.get_ident()
