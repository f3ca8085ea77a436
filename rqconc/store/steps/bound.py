"""What every family of steps is bound to: one client (made to wait for replicas after each
step when `wait_replicas` asks it) and one namespace's keys."""

from __future__ import annotations

from typing import Any, Optional

import redis

from rqconc.connection.replicas import ReplicaWait, replicated
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import Step


class BoundSteps:
    """A family of steps bound to one client and namespace."""

    def __init__(
        self, client: redis.Redis, keys: KeySpace, wait: Optional[ReplicaWait] = None
    ) -> None:
        self.client = replicated(client, wait)  # wait_replicas: WAIT after each step
        self.keys = keys

    def run(self, step: Step) -> Any:
        """Run a step built by one of steps/' `*_step` functions on this client."""
        return step.run(self.client)
