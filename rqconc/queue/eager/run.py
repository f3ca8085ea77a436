"""What eager mode gives the shared execution path (rqconc/queue/execution.py) in place of a
worker's: the timeout, enforced as a worker's supervisor would (an interrupted or overrun
call fails with `JobTimeout`; a soft timeout raises `JobSoftTimeout` in the job as a
worker does), the allow-list of RQCONC_EAGER_ALLOW, a callback's parent
outcome copied into its fields as the steps that spawn it do, and the refusals of what an
inline run cannot do (a delay).
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import threading
import time
from contextlib import contextmanager
from functools import partial
from typing import Any, Callable, Dict, Iterator, List, Optional

from rqconc import errors
from rqconc.queue.calling import call_job_function
from rqconc.queue.execution import Call
from rqconc.queue.job import Job
from rqconc.store.defaults import DEFAULT_TIMEOUT
from rqconc.store.status import JobStatus

ALLOW_VARIABLE = "RQCONC_EAGER_ALLOW"


def eager_allow() -> List[str]:
    """The allow-list of eager jobs: RQCONC_EAGER_ALLOW's comma-separated module prefixes, as
    a worker's --allow; unset or empty: every module (the test's process runs its own code)."""
    prefixes = [p.strip() for p in os.environ.get(ALLOW_VARIABLE, "").split(",") if p.strip()]
    return prefixes or ["*"]


def allow_hint(prefix: str) -> str:
    return f"add {prefix} to {ALLOW_VARIABLE}"


def refuse_delay(queue: Any, what: str) -> RuntimeError:
    """Why an eager queue cannot take a delayed job, and what to do instead."""
    return RuntimeError(
        f"{queue!r} is eager and runs each job inline at enqueue, so it cannot {what}: "
        "enqueue without the delay in this test, or test the delay against a real queue "
        "(Queue(..., eager=False)) and a worker"
    )


def timeout_of(fields: Dict[str, str]) -> float:
    return float(fields.get("timeout") or DEFAULT_TIMEOUT)


def timed_call(seconds: float) -> Call:
    """A call that ends as a worker's would past `seconds`: interrupted with JobTimeout where
    a signal can reach it (the main thread, no other alarm pending), and failed with it
    anyway when it returns late (its result is not kept, as the supervisor would have ended
    the run)."""

    def call(
        func: Callable[..., Any],
        args: List[Any],
        kwargs: Dict[str, Any],
        soft_timeout: Optional[float] = None,
    ) -> Any:
        started = time.monotonic()
        # An async def function's own timeout cancels it (calling.py); a signal there would
        # land in the event loop, not in the job. A soft timeout is raised in the job as a
        # worker raises it (calling.py; by a timer thread while this alarm is pending).
        with _alarm(0 if inspect.iscoroutinefunction(func) else seconds):
            result = call_job_function(
                func, args, kwargs, timeout=seconds, soft_timeout=soft_timeout
            )
        if time.monotonic() - started > seconds:
            raise errors.JobTimeout(errors.JobTimeout.describe(seconds, False))
        return result

    return call


def _interrupt(seconds: float, signum: int, frame: Any) -> None:
    raise errors.JobTimeout(errors.JobTimeout.describe(seconds))


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """SIGALRM after `seconds` raises JobTimeout in the job. An alarm already set (a test
    runner's own timeout, pytest-timeout's) is borrowed and set again for what was left of
    it; one due sooner than ours is left alone."""
    pending = signal.getitimer(signal.ITIMER_REAL)[0] if hasattr(signal, "setitimer") else 0
    usable = (
        seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and (pending == 0 or pending > seconds)
    )
    if not usable:
        yield
        return
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, partial(_interrupt, seconds))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending:
            left = pending - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


def followup_fields(parent: Job, kind: str, spec: Dict[str, Any]) -> Dict[str, str]:
    """A callback job's fields as the step that spawns it writes them: its spec's, the
    parent's id and the outcome its (job, result or error) arguments are decoded from."""
    fields = {**spec["fields"], "callback_of": parent.id, "callback_kind": kind}
    if kind == "success":
        fields["parent_result"] = parent._fields.get("result", "null")
    else:
        fields["parent_exc"] = json.dumps(list(parent.exc_info or ("", "", "")))
    fields["status"] = JobStatus.QUEUED.value
    return {name: str(value) for name, value in fields.items()}


__all__ = ["eager_allow", "followup_fields", "refuse_delay", "timed_call"]
