"""Calling a job's function, the one place that knows a function may be `async def`: a
coroutine function's result is awaited in the child's event loop (rqconc/engine/event_loops.py),
never stored as a coroutine. The worker's runner and eager mode both call through here."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Sequence

from rqconc.engine import event_loops


def call_job_function(func: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
    """The function's return value; for an `async def` function (or any callable returning
    an awaitable coroutine), the value the coroutine returns."""
    result = func(*args, **kwargs)
    if inspect.iscoroutine(result):
        return event_loops.run(result)
    return result
