"""The job hooks of the ends a supervisor records (SPEC 16), run in the supervisor once the
child is gone: a timeout (`JobTimeout`) and a child that died (`WorkerLost`) call
`on_failure` or `on_retry`, as the job's retry policy decided; a running job canceled calls
`on_cancel`; a lost lease (its worker vanished), found by this worker's lease recovery,
calls `on_retry` (it runs again at once), `on_failure` (a poison pill) or `on_cancel` (it
was asked to stop). Their `exc_info` has no traceback: nothing of the job's code raised.

A worker without these hooks pays nothing here: `active` is worked out once, and while it
is False nothing is read for them.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from rqconc import errors
from rqconc.queue.job import Job
from rqconc.store.clock import redis_time_ms
from rqconc.store.scripts import text
from rqconc.worker.connections import Connections
from rqconc.worker.hooks import END_HOOKS, RETRYING, Hooks

# How far past "expired now" recovery's own read may reach: recovery reads the clock again
# a moment later, and a lease that expired in between must not be missed by the hooks.
RECOVERY_MARGIN_MS = 1000
RECOVERY_LIMIT = 500  # as many as one recovery step handles
LEASE_LOST = "the lease of this job expired: its worker vanished mid-run"

Notify = Optional[Callable[[int, Optional[float]], None]]


class EndHooks:
    """The supervisor-side job hooks of one worker (one namespace)."""

    def __init__(self, hooks: Hooks, connections: Connections) -> None:
        self.hooks = hooks
        self.connections = connections
        self.active = any(hooks.has(name) for name in END_HOOKS)

    def _job(self, job_id: str, fields: Dict[str, str]) -> Job:
        client, keys = self.connections.client, self.connections.keys
        pickled = fields.get("serializer") == "pickle"  # the queue's own choice
        return Job(job_id, client, keys.namespace, fields, allow_pickle=pickled)

    def _fields(self, job_id: str) -> Dict[str, str]:
        raw = self.connections.client.hgetall(self.connections.keys.job(job_id))
        return {text(name): text(value) for name, value in raw.items()}

    def failed(self, job_id: str, fields: Dict[str, str], error: BaseException) -> Notify:
        """What the recorder calls once the failure of a timed-out or lost job is recorded."""
        if not self.active:
            return None
        exc_info = (type(error), error, None)
        return self.hooks.failure_notify(lambda: self._job(job_id, fields), exc_info)

    def canceled(self, job_id: str) -> None:
        """A running job was canceled and its child ended (the cancel is recorded)."""
        if self.hooks.has("on_cancel"):
            self.hooks.call("on_cancel", self._job(job_id, self._fields(job_id)))

    def recovering(self, recover: Callable[[], Tuple[int, int]]) -> Tuple[int, int]:
        """Run lease recovery (`recover()`), then the hooks of each job it recovered. A job
        recovery brings back gets its `lost` count bumped, and only recovery bumps it: the
        counts before and after name the jobs of this step."""
        if not self.active:
            return recover()
        before = self._lost_counts(self._expiring())
        counts = recover()
        if any(counts) and before:
            after = self._lost_counts(list(before))
            self._recovered([i for i, lost in after.items() if lost > before[i]])
        return counts

    def _expiring(self) -> List[str]:
        client, keys = self.connections.client, self.connections.keys
        until = redis_time_ms(client, keys) + RECOVERY_MARGIN_MS
        found = client.zrangebyscore(keys.active, "-inf", until, start=0, num=RECOVERY_LIMIT)
        return [text(job_id) for job_id in found]

    def _lost_counts(self, job_ids: Sequence[str]) -> Dict[str, int]:
        if not job_ids:
            return {}
        pipe = self.connections.client.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hget(self.connections.keys.job(job_id), "lost")
        found = zip(job_ids, pipe.execute())
        return {job_id: int(lost or 0) for job_id, lost in found}

    def _recovered(self, job_ids: Sequence[str]) -> None:
        for job_id in job_ids:
            fields = self._fields(job_id)
            status = fields.get("status")
            if status == "canceled":
                if self.hooks.has("on_cancel"):
                    self.hooks.call("on_cancel", self._job(job_id, fields))
                continue
            final = status == "failed"  # a poison pill, in the dead letters
            error = errors.WorkerLost(fields.get("exc_message") if final else LEASE_LOST)
            job_of = partial(self._job, job_id, fields)
            notify = self.hooks.failure_notify(job_of, (errors.WorkerLost, error, None))
            notify(1 if final else RETRYING, None if final else 0.0)
