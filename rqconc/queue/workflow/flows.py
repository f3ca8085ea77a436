"""Multi-stage flows: a job's function returns `Next(...)` to hand on to a next stage.

The stage's own result (`Next(..., result=...)`) is stored, and the next stage is enqueued
in the same Lua step that completes it (lua/complete.lua), linked both ways (`next_id`,
`prev_id`) and to the flow's first stage (`flow_id`): a crash can neither drop nor
duplicate a stage. `Job.flow()` walks the links.

`Next` imports no `Queue` (eager mode, which `Queue` imports, recognises it too): it is
given the queue its stage goes to, which `next_stage.prepare_next_stage` resolves.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from rqconc.queue.options import refuse, take_options


class Next:
    """Returned by a job's function: enqueue `func(*args, **kwargs)` on `queue` next.
    `queue` is a queue name or a `Queue`.
    `result` is what this stage stores as its own return value. Enqueue options
    (priority, timeout, retry, ...) may be passed among the kwargs, as with `enqueue`."""

    def __init__(
        self, queue: Any, func: Any, *args: Any, result: Any = None, **kwargs: Any
    ) -> None:
        self.queue = queue
        self.func = func
        self.args = args
        self.kwargs = kwargs
        self.result = result

    def __repr__(self) -> str:
        return f"Next({self.queue!r}, {self.func!r}, ...)"

    def prepare(self, queue: Any) -> Tuple[str, Dict[str, Any]]:
        """The stage as (id, hash fields) for `queue` (the `Queue` it goes to), validated and
        serialized, nothing written."""
        kwargs = dict(self.kwargs)
        options = take_options(kwargs)
        refuse(options, ("depends_on",), "a flow's next stage (it starts when this one completes)")
        job_id, _, fields = queue.prepare([(self.func, self.args, kwargs)], options)[0]
        # As enqueue does, a caller's id must be free: the stage fails here, with nothing
        # written (lua/complete.lua refuses it too, should the id be taken meanwhile).
        if options.get("job_id") and queue.connection.exists(queue.keys.job(job_id)):
            raise ValueError(
                f"Next(..., job_id={job_id!r}): a job with that id already exists; "
                "the next stage was not enqueued"
            )
        return job_id, fields
