"""Leases, from the supervisor's side: renewing those of the jobs its children run, and
recovering the expired leases of workers that vanished (behind the maintenance gate: at
most once per interval across all supervisors of a namespace), with the pass's other
trims: expired finished and dead-letter entries, and the event stream's retention."""

from __future__ import annotations

import logging
import time
from typing import Optional, Sequence, Tuple

from rqconc.store.steps.maintenance import MaintenanceSteps
from rqconc.worker.connections import Connections
from rqconc.worker.end_hooks import EndHooks
from rqconc.worker.event_retention import EventRetention
from rqconc.worker.guard import RENEWING, Guard

log = logging.getLogger("rqconc.worker")


class Leases:
    """Renewal and recovery for one worker (one namespace)."""

    def __init__(
        self,
        connections: Connections,
        guard: Guard,
        worker: str,
        lease_seconds: float,
        max_lost: int,
        maintenance_interval: float,
        end_hooks: EndHooks,
        retention: Optional[EventRetention] = None,
    ) -> None:
        self.connections = connections
        self.end_hooks = end_hooks  # the job hooks of the leases this worker recovers
        self.guard = guard
        self.worker = worker
        self.lease_seconds = lease_seconds
        self.max_lost = max_lost
        self.maintenance_interval = maintenance_interval
        self.retention = retention or EventRetention()

    def renew(self, claims: Sequence[str]) -> None:
        lease_ms = int(self.lease_seconds * 1000)
        steps = self.connections.steps
        self.guard.run(RENEWING, lambda: steps.renew(list(claims), lease_ms))

    def recover_when_due(self) -> None:
        """Recover, unless Redis was away (or refused a renewal) within the last lease:
        live workers then renew first, before their leases count as lost."""
        if time.monotonic() >= self.guard.troubled_at + self.lease_seconds:
            self.guard.run("recovering expired leases", self.maintain)

    def maintain(self) -> Tuple[int, int]:
        """Recover expired leases, trim expired finished and dead-letter entries and the
        event stream, at most once per interval across all supervisors; returns (requeued,
        dead-lettered)."""
        gate = self.connections.client.set(
            self.connections.keys.maintenance,
            self.worker,
            nx=True,
            px=max(1, int(self.maintenance_interval * 1000)),
        )
        if not gate:
            return 0, 0
        connections = self.connections
        steps = MaintenanceSteps(connections.client, connections.keys, connections.wait)
        requeued, dead = self.end_hooks.recovering(lambda: steps.recover(self.max_lost))
        if requeued or dead:
            log.warning(
                "recovered jobs whose worker vanished: %d requeued, %d dead-lettered "
                "after %d lost leases",
                requeued,
                dead,
                self.max_lost,
            )
        # Here, not in complete: a queue that gets no more completions would keep its
        # expired entries forever, and the per-job step stays as cheap as it is.
        steps.trim_ended()
        self.retention.trim(steps)
        return requeued, dead
