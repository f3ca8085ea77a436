"""rqconc: a Redis job queue whose worker is a supervisor of concurrent children.

Names are imported on first use, so that `import rqconc` stays cheap and the gevent
entry points can patch the standard library before redis or threading are imported.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Supervisor": "rqconc.supervisor",
    "Queue": "rqconc.queue",
    "Job": "rqconc.job",
    "JobStatus": "rqconc.job",
    "Priority": "rqconc.queue",
    "Retry": "rqconc.retry",
    "WorkSource": "rqconc.engine.source",
    "WorkItem": "rqconc.engine.source",
    "ConnectionError": "rqconc.errors",
    "NoSuchJob": "rqconc.errors",
    "JobFailed": "rqconc.errors",
    "JobTimeout": "rqconc.errors",
    "WorkerLost": "rqconc.errors",
    "NotAllowed": "rqconc.errors",
    "JobCanceled": "rqconc.errors",
    "Dependency": "rqconc.dependency",
    "Next": "rqconc.flows",
    "EventStream": "rqconc.events",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rqconc' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
