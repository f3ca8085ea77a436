"""Calling a job's function, the one place that knows a function may be `async def`: a
coroutine function's result is awaited in the child's event loop (rqconc/engine/event_loops.py),
never stored as a coroutine. The worker's runner and eager mode both call through here."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Coroutine, Dict, Optional, Sequence

from rqconc import errors
from rqconc.engine import event_loops


def call_job_function(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Dict[str, Any],
    timeout: Optional[float] = None,
) -> Any:
    """The function's return value; for an `async def` function (or any callable returning
    an awaitable coroutine), the value the coroutine returns. With `timeout` (eager mode: a
    worker's supervisor ends its runs), a coroutine still running past it is canceled and
    the call raises JobTimeout."""
    result = func(*args, **kwargs)
    if inspect.iscoroutine(result):
        return event_loops.run(result if timeout is None else _bounded(result, timeout))
    return result


async def _bounded(coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
    try:
        return await asyncio.wait_for(coro, timeout)
    except asyncio.TimeoutError:
        raise errors.JobTimeout(errors.JobTimeout.describe(timeout)) from None
