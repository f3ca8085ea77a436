"""One execution of an eager job's function, as a worker's runner (rqconc/worker/runner.py)
performs it where a test can tell: the function resolved by its stored name, the arguments
decoded from their stored JSON, the result serialized (a value JSON cannot carry fails the
job with a TypeError naming it), and a failure described by type name, message and
traceback. The queue layer may not import the worker's runner, hence this small twin.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from rqconc import errors
from rqconc.queue.calling import call_job_function
from rqconc.queue.job import Job
from rqconc.queue.retry import failure_names
from rqconc.queue.serialization import get_serializer, resolve_function, type_name

Failure = Tuple[str, str, str]  # type name, message, traceback


@dataclass
class Attempt:
    """What one execution produced: a serialized result, or a failure."""

    result: Optional[str] = None
    exc: Optional[Failure] = None
    # The failure's class hierarchy, for the retry policy; empty: a final failure (refused,
    # or a result that cannot be stored), which no policy retries.
    exc_mro: Tuple[str, ...] = ()
    next_stage: Any = None  # the rqconc.Next the function returned


def call_of(
    fields: Dict[str, str],
) -> Tuple[Callable[..., Any], List[Any], Dict[str, Any], Optional[Failure]]:
    """(function, args, kwargs, None), or a final failure when the function cannot be
    imported. Every module is allowed: the test's process runs its own code."""
    name = fields.get("func", "")
    try:
        func = resolve_function(name, ["*"])
    except Exception as exc:
        return _nothing, [], {}, (type_name(type(exc)), f"cannot import {name}: {exc}", "")
    serializer = get_serializer(fields.get("serializer", "json"))
    args = serializer.loads(fields.get("args", "[]"))
    kwargs = serializer.loads(fields.get("kwargs", "{}"))
    return func, args, kwargs, None


def _nothing() -> None:
    """The function of a job refused before it could be imported (never called)."""


def attempt(
    func: Callable[..., Any],
    args: List[Any],
    kwargs: Dict[str, Any],
    serializer_name: str,
    next_type: Optional[type],
) -> Attempt:
    try:
        result = call_job_function(func, args, kwargs)
    except Exception as exc:  # the job's own failure; BaseException reaches the test
        return Attempt(
            exc=(type_name(type(exc)), str(exc), traceback.format_exc()),
            exc_mro=failure_names(exc),
        )
    next_stage: Any = None
    if next_type is not None and isinstance(result, next_type):
        next_stage = result
        result = next_stage.result
    try:
        data = get_serializer(serializer_name).dumps(result, "return value")
    except (TypeError, ValueError) as exc:  # deterministic: a retry would fail the same
        return Attempt(exc=(type(exc).__name__, str(exc), traceback.format_exc()))
    return Attempt(result=data, next_stage=next_stage)


def followup_arguments(parent: Job, kind: str) -> List[Any]:
    """A callback's first arguments: (job, result) or (job, error), `error` a `JobFailed`
    carrying the type, message and traceback, as a worker passes them."""
    if kind == "success":
        return [parent, parent.return_value]
    exc_type, message, trace = parent.exc_info or ("", "", "")
    return [parent, errors.JobFailed(parent.id, exc_type, message, trace)]


__all__ = ["Attempt", "attempt", "call_of", "followup_arguments"]
