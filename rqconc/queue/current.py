"""`rqconc.get_current_job()`: the job the calling code runs in.

A context variable, so it is right per thread, per greenlet (gevent patches contextvars to be
greenlet-local) and per asyncio task (a task runs in a copy of the context it was created
in): the asyncio backend creates each job's task in the context of the slot that took it
(rqconc/engine/event_loops.py).
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Iterator, Optional, Protocol, Union

from rqconc.queue.job import Job
from rqconc.queue.running import RUNNING


class JobHolder(Protocol):
    """What a worker sets while a job runs: its `Job`, made only when somebody asks (a
    plain job never does, and the worker's hot path pays nothing for the object)."""

    @property
    def job(self) -> Job: ...


# Union[Job, JobHolder, None]; kept in running.py, which modules below Job may import.
_current = RUNNING


def get_current_job() -> Optional[Job]:
    """The `Job` being run by the calling code; None outside a job."""
    found = _current.get()
    if found is None or isinstance(found, Job):
        return found
    return found.job


def enter(job: Union[Job, JobHolder, None]) -> contextvars.Token[Union[Job, JobHolder, None]]:
    """`running` without a context manager, for the worker's per-job path (a with-block
    costs a generator and two calls more): pass the token to `leave`."""
    return _current.set(job)


def leave(token: contextvars.Token[Union[Job, JobHolder, None]]) -> None:
    _current.reset(token)


@contextmanager
def running(job: Union[Job, JobHolder, None]) -> Iterator[None]:
    """Make `job` (or the job of a holder) the current job for the code run inside."""
    token = _current.set(job)
    try:
        yield
    finally:
        _current.reset(token)
