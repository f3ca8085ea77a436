"""Whether the calling code runs inside a job. The context variable that `current.py` keeps
the running job in lives here, apart from `Job`, so that a module `Job` itself imports may
ask (job_fields.py: a function name is checked without importing anything inside a job)."""

from __future__ import annotations

import contextvars
from typing import Any

# The running job (a `Job`, or a holder that makes one on demand; current.py), or None.
RUNNING: contextvars.ContextVar[Any] = contextvars.ContextVar("rqconc_current_job", default=None)


def in_a_job() -> bool:
    """Whether the calling code runs inside a job (a worker's, or eager mode's)."""
    return RUNNING.get() is not None


__all__ = ["RUNNING", "in_a_job"]
