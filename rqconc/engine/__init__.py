"""The engine: a supervisor of concurrent children with swappable backends. No Redis here.

Names are imported on first use (as rqconc's own are): a module that needs one seam of the
engine (`engine.source` for the registry, `engine.titles`) does not import every backend and
the supervisor with it, so `rqconc info` starts without them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "BaseSupervisor": "rqconc.engine.supervisor",
    "ChildSnapshot": "rqconc.engine.supervisor",
    "WorkSource": "rqconc.engine.source",
    "WorkItem": "rqconc.engine.source",
    "SupervisorInfo": "rqconc.engine.source",
    "SupervisorState": "rqconc.engine.states",
    "ChildState": "rqconc.engine.states",
    "backend_names": "rqconc.engine.backends",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from rqconc.engine.backends import backend_names as backend_names
    from rqconc.engine.source import SupervisorInfo as SupervisorInfo
    from rqconc.engine.source import WorkItem as WorkItem
    from rqconc.engine.source import WorkSource as WorkSource
    from rqconc.engine.states import ChildState as ChildState
    from rqconc.engine.states import SupervisorState as SupervisorState
    from rqconc.engine.supervisor import BaseSupervisor as BaseSupervisor
    from rqconc.engine.supervisor import ChildSnapshot as ChildSnapshot


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rqconc.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
