"""Multi-stage flows: a job's function returns `Next(...)` to hand on to a next stage.

The stage's own result (`Next(..., result=...)`) is stored, and the next stage is enqueued
in the same Lua step that completes it (lua/complete.lua), linked both ways (`next_id`,
`prev_id`) and to the flow's first stage (`flow_id`): a crash can neither drop nor
duplicate a stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Union

import redis

if TYPE_CHECKING:
    from rqconc.queue.job import Job
    from rqconc.queue.queue import Queue

# A flow that loops on itself must not make Job.flow() walk forever.
MAX_STAGES = 10_000


class Next:
    """Returned by a job's function: enqueue `func(*args, **kwargs)` on `queue` next.
    `result` is what this stage stores as its own return value. Enqueue options
    (priority, timeout, retry, ...) may be passed among the kwargs, as with `enqueue`."""

    def __init__(
        self, queue: Union[str, Queue], func: Any, *args: Any, result: Any = None, **kwargs: Any
    ) -> None:
        self.queue = queue
        self.func = func
        self.args = args
        self.kwargs = kwargs
        self.result = result

    def __repr__(self) -> str:
        return f"Next({self.queue!r}, {self.func!r}, ...)"

    def prepare(self, client: redis.Redis, namespace: str) -> Tuple[str, Dict[str, Any]]:
        """The next stage as (id, hash fields), validated and serialized, nothing written."""
        from rqconc.queue.queue import OPTION_NAMES, Queue

        queue = self.queue
        if not isinstance(queue, Queue):
            queue = Queue(queue, connection=client, namespace=namespace)
        kwargs = dict(self.kwargs)
        options = {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}
        if options.get("depends_on") is not None:
            raise ValueError(
                "a flow's next stage cannot take depends_on: it starts when this stage completes"
            )
        job_id, _, fields = queue.prepare([(self.func, self.args, kwargs)], options)[0]
        return job_id, fields


def stages(job: Job) -> List[Job]:
    """The jobs of `job`'s flow in order, first to latest (stages already expired are
    skipped where the chain allows)."""
    from rqconc.queue.job import Job as JobClass

    first = job.flow_id or job.id
    found: List[Job] = []
    current = first
    while current and len(found) < MAX_STAGES:
        stage = JobClass(current, job.connection, job.namespace, allow_pickle=job.allow_pickle)
        stage.refresh()
        found.append(stage)
        current = stage.next_id
    return found
