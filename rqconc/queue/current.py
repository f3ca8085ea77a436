"""`rqconc.get_current_job()`: the job the calling code runs in.

A context variable, so it is right per thread, per greenlet (gevent patches contextvars to be
greenlet-local) and per asyncio task (a task runs in a copy of the context it was created
in): the asyncio backend creates each job's task in the context of the slot that took it
(rqconc/engine/event_loops.py).
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Iterator, Optional

from rqconc.queue.job import Job

_current: contextvars.ContextVar[Optional[Job]] = contextvars.ContextVar(
    "rqconc_current_job", default=None
)


def get_current_job() -> Optional[Job]:
    """The `Job` being run by the calling code; None outside a job."""
    return _current.get()


@contextmanager
def running(job: Optional[Job]) -> Iterator[None]:
    """Make `job` the current job for the code run inside."""
    token = _current.set(job)
    try:
        yield
    finally:
        _current.reset(token)
