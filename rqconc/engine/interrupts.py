"""Raising an exception inside the work a child runs, after a delay: how a job's soft timeout
reaches the job's own code (rqconc/queue/calling.py), on every kind of child. The engine
knows no job: the caller names the exception type (raised without arguments). Nothing is
armed for work that has no such limit.

- A greenlet (the gevent backend): a gevent timer throws it into the greenlet, which sees it
  at its next yield (I/O, a sleep); one that holds the CPU sees it once it yields.
- The main thread of a process (forking and multiprocessing children, eager mode): SIGALRM,
  whose handler raises it, so a blocking call (a sleep, a socket read) is interrupted. An
  alarm pending already and due later (an eager run's hard timeout) is borrowed and set
  again; one due sooner is left alone, and the thread is then treated as any other.
- Any other thread (the threading and asyncio backends' plain functions, `--slots`): a timer
  thread makes it the thread's asynchronous exception (PyThreadState_SetAsyncExc), seen at
  the thread's next Python bytecode: a thread blocked in a C call (time.sleep, a socket
  read) sees it when the call returns.
- A coroutine (`async def` jobs, whatever the backend): `soft_bounded` cancels its task at
  the awaited point and throws the exception into the coroutine there instead of the
  CancelledError, so the coroutine's own `except` sees it at its `await`.

Every `arm` returns its disarm, called once the work returned: nothing is raised after it.
The exception arrives between the call of `arm` and the return of its disarm, never later
in unrelated code: one that came due just as the work returned is raised by the disarm
itself (the work ran past its limit).
"""

from __future__ import annotations

import asyncio
import ctypes
import signal
import sys
import threading
import time
from typing import Any, Callable, Coroutine, Generator, Optional, Type

Disarm = Callable[[], None]


def arm(seconds: float, exc_type: Type[BaseException]) -> Disarm:
    """Raise `exc_type()` in the calling thread (or greenlet) after `seconds`."""
    if _in_gevent():
        return _greenlet_timer(seconds, exc_type)
    if _alarm_usable(seconds):
        return _Alarm(seconds, exc_type).disarm
    return _ThreadTimer(seconds, exc_type).disarm


def _in_gevent() -> bool:
    # Only a gevent-patched process runs greenlet children; gevent is imported by then.
    monkey: Any = sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("threading")


def _greenlet_timer(seconds: float, exc_type: Type[BaseException]) -> Disarm:
    # gevent is imported by then (_in_gevent); the engine imports it only for its backend.
    timeout = sys.modules["gevent"].Timeout(seconds, exc_type)
    timeout.start()
    return timeout.close


def _alarm_usable(seconds: float) -> bool:
    if not hasattr(signal, "setitimer"):
        return False
    pending = signal.getitimer(signal.ITIMER_REAL)[0]
    return threading.current_thread() is threading.main_thread() and (
        pending == 0 or pending > seconds
    )


class _Alarm:
    """SIGALRM after `seconds` raises the exception. An alarm pending already, due later
    (an eager run's hard timeout), is borrowed: its handler and what is left of it are set
    again once ours fired or was disarmed."""

    def __init__(self, seconds: float, exc_type: Type[BaseException]) -> None:
        self.exc_type = exc_type
        self.pending = signal.getitimer(signal.ITIMER_REAL)[0]
        self.started = time.monotonic()
        self.armed = True
        self.previous = signal.signal(signal.SIGALRM, self._interrupt)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def _interrupt(self, signum: int, frame: Any) -> None:
        if self.armed:
            self._restore()
            raise self.exc_type()

    def _restore(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self.pending:
            signal.signal(signal.SIGALRM, self.previous)
            left = self.pending - (time.monotonic() - self.started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
        elif callable(self.previous):
            signal.signal(signal.SIGALRM, self.previous)
        # Else ours stays installed, doing nothing: a SIGALRM delivered but not handled yet
        # finds it, where the default disposition would end the process.

    def disarm(self) -> None:
        if self.armed:
            self._restore()


def _set_async_exc(thread_id: int, exc: Any) -> None:
    """The thread's pending asynchronous exception; `exc` None clears it. The arguments
    are typed here, not through the shared function's argtypes, which other code may set."""
    pending = ctypes.c_void_p(0) if exc is None else ctypes.py_object(exc)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), pending)


class _ThreadTimer:
    """The exception set as this thread's asynchronous one after `seconds`, by a timer
    thread; fire and disarm share a lock, so it is never set once the work returned."""

    def __init__(self, seconds: float, exc_type: Type[BaseException]) -> None:
        self._target = threading.get_ident()
        self._exc_type = exc_type
        self._lock = threading.Lock()
        self._armed, self._fired = True, False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        # Held while the timer starts: one due at once would otherwise interrupt this thread
        # inside Thread.start() (seen in CI: its bookkeeping then fails with a KeyError
        # instead of the exception); _fire waits for it, so it is raised after `arm` returns.
        with self._lock:
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._armed:
                self._fired = True
                _set_async_exc(self._target, self._exc_type)

    def disarm(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._armed = False
            if self._fired:  # set, maybe not seen yet: clear it
                _set_async_exc(self._target, None)


async def soft_bounded(
    coro: Coroutine[Any, Any, Any], seconds: float, exc_type: Type[BaseException]
) -> Any:
    """`coro`'s result; after `seconds`, `exc_type()` is thrown into it at its awaited point
    (once; a cancel of the task from elsewhere, as ending a child does, passes through)."""
    return await _Soft(coro, seconds, exc_type)


class _Soft:
    """Drives `coro` as `await` would, step by step, so that the one cancel the timer asked
    for can be thrown into the coroutine as the soft exception."""

    def __init__(
        self, coro: Coroutine[Any, Any, Any], seconds: float, exc_type: Type[BaseException]
    ) -> None:
        self.coro, self.seconds, self.exc_type = coro, seconds, exc_type
        self.fired: Optional[bool] = None  # None: not yet; True: cancel asked, not yet seen

    def _fire(self, task: asyncio.Task) -> None:
        self.fired = True
        task.cancel()

    def __await__(self) -> Generator[Any, Any, Any]:
        task = asyncio.current_task()
        assert task is not None
        handle = asyncio.get_running_loop().call_later(self.seconds, self._fire, task)
        sent: Any = None
        thrown: Optional[BaseException] = None
        try:
            while True:
                try:
                    waited = self.coro.send(sent) if thrown is None else self.coro.throw(thrown)
                except StopIteration as stop:
                    return stop.value
                sent, thrown = None, None
                try:
                    sent = yield waited
                except asyncio.CancelledError as cancel:
                    thrown = self._converted(task, cancel)
                except BaseException as exc:  # noqa: B036 - forwarded as `await` would
                    thrown = exc
        finally:
            handle.cancel()

    def _converted(self, task: asyncio.Task, cancel: BaseException) -> BaseException:
        if not self.fired:
            return cancel
        self.fired = False  # once: a later cancel (the hard timeout's) passes through
        uncancel = getattr(task, "uncancel", None)  # 3.11+: the cancel is consumed here
        if uncancel is not None:
            uncancel()
        return self.exc_type()


__all__ = ["Disarm", "arm", "soft_bounded"]
