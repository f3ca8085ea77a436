"""What becomes of the jobs of children the supervisor ended or lost: an interrupted job
(cold shutdown) goes back to the front of its queue without counting an attempt; a job whose
child died, or that overran its timeout, fails (one failure path: `Recorder.fail_claim`),
and the job hooks of that end run here, in the supervisor (end_hooks.py).

These steps must land: they wait in order until Redis answers, retried every tick, and for up
to one lease when the supervisor exits. A repeat is harmless: the claim fences each step.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import Any, Callable, List, Sequence, Tuple

from rqconc import errors
from rqconc.connection.backoff import REDIS_DOWN, Backoff
from rqconc.worker.connections import Connections
from rqconc.worker.end_hooks import EndHooks
from rqconc.worker.guard import Guard
from rqconc.worker.recording import Recorder, log_transition

log = logging.getLogger("rqconc.worker")
REQUEUEING = "requeueing interrupted jobs"
# Claims per requeue step: one Lua call holds Redis for its whole batch (200 jobs: 17-34 ms
# from the signal to the last one back, their log lines included).
REQUEUE_BATCH = 500


class EndedChildren:
    """The steps about ended children's jobs, for one worker (one namespace)."""

    def __init__(
        self,
        connections: Connections,
        guard: Guard,
        recorder: Recorder,
        lease_seconds: float,
        end_hooks: EndHooks,
    ) -> None:
        self.connections = connections
        # The job hooks of a timeout or a lost child, told once its failure is recorded.
        self.notify_for = end_hooks.failed if end_hooks.active else None
        self.guard = guard
        self.recorder = recorder
        self.worker = recorder.worker
        self.lease_seconds = lease_seconds  # the longest wait for Redis at exit
        # (doing, step, the interrupted jobs it requeues), in order
        self._pending: List[Tuple[str, Callable[[], Any], int]] = []
        self._leave = False  # another stop request came: end the wait at exit now

    def interrupted(self, claims: Sequence[str]) -> None:
        # Revoke first: a take that lands after this cannot lease anything under these
        # claims, and one that landed before is found and requeued next.
        claims, steps = list(claims), self.connections.steps
        self._pending.append(
            ("revoking the claims of ended children", lambda: steps.revoke(claims), 0)
        )
        for first in range(0, len(claims), REQUEUE_BATCH):
            batch = claims[first : first + REQUEUE_BATCH]
            self._pending.append((REQUEUEING, partial(self._requeue, batch), len(batch)))
        self.retry()

    def _requeue(self, claims: List[str]) -> None:
        """One step for a batch of claims: a cold shutdown is to be over within 1 s, and a
        worker of many slots holds hundreds of jobs (three round trips each before)."""
        steps = self.connections.steps
        for job_id, queue, func in steps.requeue_claims(claims, self.worker, "interrupted"):
            log_transition(self.worker, "interrupted", job_id, queue, func=func or "?")

    def lost(self, claim: str, reason: str) -> None:
        message = f"the worker child running this job died: {reason}"
        self._fail_claim("failing a lost job", claim, errors.WorkerLost, message)

    def timed_out(self, claim: str, seconds: float) -> None:
        message = f"the job ran past its timeout of {seconds:g} s and was stopped"
        self._fail_claim("failing a timed-out job", claim, errors.JobTimeout, message)

    def _fail_claim(self, doing: str, claim: str, cls: type, message: str) -> None:
        notify_for = self.notify_for
        fail = partial(self.recorder.fail_claim, claim, cls, message, notify_for)
        self._pending.append((doing, fail, 0))
        self.retry()

    def retry(self, quiet: bool = False) -> bool:
        """Run the waiting steps in order; False when Redis is still away."""
        while self._pending:
            doing, step, _ = self._pending[0]
            try:
                step()
            except REDIS_DOWN as exc:
                if not quiet:
                    self.guard.outage(exc, doing)
                return False
            except Exception:
                self._pending.pop(0)  # not a transient error: retrying cannot help
                raise
            self._pending.pop(0)  # only once it landed: a repeat is fenced by the claim
        return True

    def stop_waiting(self) -> None:
        self._leave = True  # from a signal handler: a flag only, read by the wait below

    def flush_before_exit(self) -> None:
        """Wait for Redis, up to one lease, for the steps that must land: a job interrupted
        by a cold shutdown must come back as an interruption, not as a lost lease (an
        attempt counted). Past a lease, recovery has its say anyway; another INT/TERM ends
        the wait at once (SPEC 2: gone within 1 s of a cold shutdown, when asked again)."""
        if self.retry(quiet=True):
            return
        log.warning(
            "Redis is unreachable: waiting up to %.0f s for it to record %d step(s) of ended "
            "children (interrupted jobs go back without counting an attempt); send "
            "SIGINT/SIGTERM again to leave now",
            self.lease_seconds,
            len(self._pending),
        )
        deadline = time.monotonic() + self.lease_seconds
        backoff = Backoff(first=0.1, cap=2.0)
        while time.monotonic() < deadline and not self._leave:
            self._pause(min(backoff.wait(), max(0.0, deadline - time.monotonic())))
            if not self._leave and self.retry(quiet=True):
                log.info("Redis is back: the steps of ended children are recorded")
                return
        if self._leave:
            interrupted = sum(jobs for _, _, jobs in self._pending)
            log.warning(
                "asked to stop again: leaving %d interrupted job(s) to lease recovery",
                interrupted,
            )
            return
        log.error(
            "Redis stayed unreachable: %d step(s) of ended children are dropped; their jobs "
            "come back through lease recovery",
            len(self._pending),
        )

    def _pause(self, seconds: float) -> None:
        """Sleep, in slices short enough to notice `stop_waiting` within 0.1 s."""
        until = time.monotonic() + seconds
        while not self._leave and time.monotonic() < until:
            time.sleep(min(0.1, max(0.0, until - time.monotonic())))
