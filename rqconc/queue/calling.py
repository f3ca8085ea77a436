"""Calling a job's function, the one place that knows a function may be `async def`: a
coroutine function's result is awaited in the child's event loop (rqconc/engine/event_loops.py),
never stored as a coroutine. The worker's runner and eager mode both call through here, and
here a job's soft timeout is armed (SPEC 18: rqconc/engine/interrupts.py raises
JobSoftTimeout inside the function, or at a coroutine's await)."""

from __future__ import annotations

import asyncio
import inspect
import time
from types import CoroutineType
from typing import Any, Callable, Coroutine, Dict, Optional, Sequence

from rqconc import errors
from rqconc.engine import event_loops, interrupts


def call_job_function(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Dict[str, Any],
    timeout: Optional[float] = None,
    soft_timeout: Optional[float] = None,
) -> Any:
    """The function's return value; for an `async def` function (or any callable returning
    an awaitable coroutine), the value the coroutine returns. With `timeout` (eager mode: a
    worker's supervisor ends its runs), a coroutine still running past it is canceled and
    the call raises JobTimeout. With `soft_timeout`, JobSoftTimeout is raised inside the
    function (the coroutine) once that many seconds passed."""
    if soft_timeout is not None:
        return _call_soft(func, args, kwargs, timeout, soft_timeout)
    result = func(*args, **kwargs)
    if isinstance(result, CoroutineType):  # inspect.iscoroutine, without its call a job
        return event_loops.run(result if timeout is None else _bounded(result, timeout))
    return result


def _call_soft(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Dict[str, Any],
    timeout: Optional[float],
    soft_timeout: float,
) -> Any:
    started = time.monotonic()
    if inspect.iscoroutinefunction(func):  # returns at once: only its coroutine is timed
        result = func(*args, **kwargs)
    else:
        disarm = interrupts.arm(soft_timeout, errors.JobSoftTimeout)
        try:
            result = func(*args, **kwargs)
        finally:
            disarm()
    if not inspect.iscoroutine(result):
        return result
    left = max(soft_timeout - (time.monotonic() - started), 0.0)
    coro = interrupts.soft_bounded(result, left, errors.JobSoftTimeout)
    return event_loops.run(coro if timeout is None else _bounded(coro, timeout))


async def acall_job_function(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Dict[str, Any],
    soft_timeout: Optional[float] = None,
) -> Any:
    """As `call_job_function`, awaited in the caller's own event loop (the native core of
    the asyncio backend and of `--slots`, rqconc/engine/native_slots.py), for a function
    known to be `async def`."""
    result = func(*args, **kwargs)
    if not inspect.iscoroutine(result):
        return result
    if soft_timeout is not None:
        result = interrupts.soft_bounded(result, soft_timeout, errors.JobSoftTimeout)
    return await result


async def _bounded(coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
    try:
        return await asyncio.wait_for(coro, timeout)
    except asyncio.TimeoutError:
        raise errors.JobTimeout(errors.JobTimeout.describe(timeout)) from None
