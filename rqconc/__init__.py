"""rqconc: a Redis job queue whose worker is a supervisor of concurrent children.

Names are imported on first use, so that `import rqconc` stays cheap and the gevent
entry points can patch the standard library before redis or threading are imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Supervisor": "rqconc.worker.redis_supervisor",
    "Queue": "rqconc.queue.queue",
    "Job": "rqconc.queue.job",
    "JobStatus": "rqconc.store.status",
    "Priority": "rqconc.queue.queue",
    "Retry": "rqconc.queue.retry",
    "WorkSource": "rqconc.engine.source",
    "WorkItem": "rqconc.engine.source",
    "ConnectionError": "rqconc.errors",
    "NoSuchJob": "rqconc.errors",
    "JobFailed": "rqconc.errors",
    "JobTimeout": "rqconc.errors",
    "JobSoftTimeout": "rqconc.errors",
    "WorkerLost": "rqconc.errors",
    "NotAllowed": "rqconc.errors",
    "JobCanceled": "rqconc.errors",
    "Dependency": "rqconc.queue.workflow.dependency",
    "Next": "rqconc.queue.workflow.flows",
    "EventStream": "rqconc.queue.events",
    "task": "rqconc.queue.task",
    "Task": "rqconc.queue.task",
    "group": "rqconc.queue.workflow.groups",
    "Group": "rqconc.queue.workflow.groups",
    "get_current_job": "rqconc.queue.current",
    "set_enqueue_tracing": "rqconc.queue.enqueue_plan",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    # What __getattr__ returns, for type checkers (mypy cannot see through it): every name
    # of _EXPORTS, re-exported by `as` (tests/typing/test_mypy_strict.py holds them equal).
    from rqconc.engine.source import WorkItem as WorkItem
    from rqconc.engine.source import WorkSource as WorkSource
    from rqconc.errors import ConnectionError as ConnectionError
    from rqconc.errors import JobCanceled as JobCanceled
    from rqconc.errors import JobFailed as JobFailed
    from rqconc.errors import JobSoftTimeout as JobSoftTimeout
    from rqconc.errors import JobTimeout as JobTimeout
    from rqconc.errors import NoSuchJob as NoSuchJob
    from rqconc.errors import NotAllowed as NotAllowed
    from rqconc.errors import WorkerLost as WorkerLost
    from rqconc.queue.current import get_current_job as get_current_job
    from rqconc.queue.enqueue_plan import set_enqueue_tracing as set_enqueue_tracing
    from rqconc.queue.events import EventStream as EventStream
    from rqconc.queue.job import Job as Job
    from rqconc.queue.queue import Priority as Priority
    from rqconc.queue.queue import Queue as Queue
    from rqconc.queue.retry import Retry as Retry
    from rqconc.queue.task import Task as Task
    from rqconc.queue.task import task as task
    from rqconc.queue.workflow.dependency import Dependency as Dependency
    from rqconc.queue.workflow.flows import Next as Next
    from rqconc.queue.workflow.groups import Group as Group
    from rqconc.queue.workflow.groups import group as group
    from rqconc.store.status import JobStatus as JobStatus
    from rqconc.worker.redis_supervisor import Supervisor as Supervisor


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rqconc' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
