"""A flow's next stage (`Next`, flows.py) made ready to store: validated, serialized, its
queue resolved, nothing written. The worker stores it in the step that completes the
stage before it (lua/complete.lua)."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import redis

from rqconc.queue.placement import namespaces_of, refuse_foreign
from rqconc.queue.queue import Queue
from rqconc.queue.workflow.flows import Next


def prepare_next_stage(
    stage: Next, client: redis.Redis, namespace: str
) -> Tuple[str, Dict[str, Any]]:
    """The next stage as (id, hash fields), validated and serialized, nothing written."""
    queue = stage.queue
    refuse_foreign(namespace, "Next(...): the next stage", namespaces_of([queue, stage.func]))
    if not isinstance(queue, Queue):
        queue = Queue(queue, connection=client, namespace=namespace)
    return stage.prepare(queue)
