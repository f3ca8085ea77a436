"""A worker's presence in its namespace: its entry in the workers registry (registered at
start, heartbeat every tick, removed at exit), and the per-minute metrics mark that goes with
the heartbeat."""

from __future__ import annotations

from rqconc.engine.source import SupervisorInfo
from rqconc.store.steps.metrics import mark_metrics_minute
from rqconc.worker.connections import Connections
from rqconc.worker.guard import Guard
from rqconc.worker.listened import Listened
from rqconc.worker.registry import WorkerRegistry


class Presence:
    """The registry entry of one worker (one namespace)."""

    def __init__(
        self, connections: Connections, guard: Guard, queues: Listened, registry_ttl: float
    ) -> None:
        self.connections = connections
        self.guard = guard
        self.queues = queues
        self.registry_ttl = registry_ttl

    def _registry(self) -> WorkerRegistry:
        return WorkerRegistry(self.connections.client, self.connections.keys, self.registry_ttl)

    def started(self, info: SupervisorInfo) -> None:
        registry = self._registry()
        self.guard.run("registering the worker", lambda: registry.register(info, self.queues.given))
        self._mark_metrics_minute()  # before any child of this worker finishes a job

    def heartbeat(self, info: SupervisorInfo) -> None:
        registry = self._registry()
        self.guard.run("heartbeating", lambda: registry.heartbeat(info, self.queues.given))
        self._mark_metrics_minute()

    def stopped(self, info: SupervisorInfo) -> None:
        registry = self._registry()
        self.guard.run("unregistering the worker", lambda: registry.unregister(info.name))

    def _mark_metrics_minute(self) -> None:
        """The per-minute timeline's copy of the totals (lua/metrics_mark.lua): one cheap
        call per tick, a copy at the first of each minute."""
        client, keys = self.connections.client, self.connections.keys
        self.guard.run("marking the metrics minute", lambda: mark_metrics_minute(client, keys))
