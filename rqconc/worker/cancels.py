"""Cancel and suspend, as the supervisor follows them: which running jobs an operator
canceled (`job.cancel()`, `rqconc cancel`) and recording them canceled once their child is
ended (then `on_cancel` runs, in the supervisor), and whether the namespace is suspended
(`rqconc suspend`)."""

from __future__ import annotations

from typing import List, Sequence

from rqconc.store.scripts import CancelReply
from rqconc.store.steps.core import text
from rqconc.worker.connections import Connections
from rqconc.worker.end_hooks import EndHooks
from rqconc.worker.guard import Guard
from rqconc.worker.recording import log_transition


class Cancels:
    """Operators' cancel and suspend requests, read for one worker (one namespace)."""

    def __init__(
        self, connections: Connections, guard: Guard, worker: str, end_hooks: EndHooks
    ) -> None:
        self.connections = connections
        self.end_hooks = end_hooks  # on_cancel, once the cancel is recorded
        self.guard = guard
        self.worker = worker
        self._suspended = False

    def is_suspended(self) -> bool:
        # While Redis is away, keep the last answer rather than guess.
        client, keys = self.connections.client, self.connections.keys
        found = self.guard.run("reading the suspend flag", lambda: client.exists(keys.suspended))
        if found is not None:
            self._suspended = bool(found)
        return self._suspended

    def stop_requested(self, claims: Sequence[str]) -> Sequence[str]:
        """The running claims whose jobs were canceled."""
        if not claims:
            return ()
        client, keys = self.connections.client, self.connections.keys

        def read() -> List[str]:
            pipe = client.pipeline(transaction=False)
            pipe.smembers(keys.canceling)
            pipe.hmget(keys.claims, list(claims))
            canceling, job_ids = pipe.execute()
            wanted = {text(i) for i in canceling}
            return [c for c, i in zip(claims, job_ids) if i is not None and text(i) in wanted]

        return self.guard.run("reading cancel requests", read) or ()

    def canceled(self, claim: str) -> None:
        """The supervisor ended the child running this claim: the job is canceled."""
        client, keys, steps = self.connections.client, self.connections.keys, self.connections.steps

        def cancel() -> None:
            job_id = client.hget(keys.claims, claim)
            if job_id is None:
                return
            func, queue = (
                text(v or b"") for v in client.hmget(keys.job(text(job_id)), "func", "queue")
            )
            if steps.cancel(text(job_id), claim, self.worker) == CancelReply.CANCELED:
                log_transition(self.worker, "canceled", text(job_id), queue, func=func)
                self.end_hooks.canceled(text(job_id))

        self.guard.run("canceling a stopped job", cancel)
