"""The engine: a supervisor of concurrent children with swappable backends. No Redis here."""

from rqconc.engine.backends import backend_names
from rqconc.engine.source import SupervisorInfo, WorkItem, WorkSource
from rqconc.engine.states import ChildState, SupervisorState
from rqconc.engine.supervisor import BaseSupervisor, ChildSnapshot

__all__ = [
    "BaseSupervisor",
    "ChildSnapshot",
    "WorkSource",
    "WorkItem",
    "SupervisorInfo",
    "SupervisorState",
    "ChildState",
    "backend_names",
]
