"""rqconc: a Redis job queue whose worker is a supervisor of concurrent children.

Names are imported on first use, so that `import rqconc` stays cheap and the gevent
entry points can patch the standard library before redis or threading are imported.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Supervisor": "rqconc.worker.supervisor",
    "Queue": "rqconc.queue.queue",
    "Job": "rqconc.queue.job",
    "JobStatus": "rqconc.queue.status",
    "Priority": "rqconc.queue.queue",
    "Retry": "rqconc.queue.retry",
    "WorkSource": "rqconc.engine.source",
    "WorkItem": "rqconc.engine.source",
    "ConnectionError": "rqconc.errors",
    "NoSuchJob": "rqconc.errors",
    "JobFailed": "rqconc.errors",
    "JobTimeout": "rqconc.errors",
    "WorkerLost": "rqconc.errors",
    "NotAllowed": "rqconc.errors",
    "JobCanceled": "rqconc.errors",
    "Dependency": "rqconc.queue.dependency",
    "Next": "rqconc.queue.flows",
    "EventStream": "rqconc.queue.events",
    "group": "rqconc.queue.groups",
    "Group": "rqconc.queue.groups",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rqconc' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
