"""`AsyncJob`: a job as async code sees it (SPEC 15), the same job as `Job`'s.

It reads the same hash fields through the same `JobRecord`, runs the same Lua steps (built
once in rqconc/store/steps/, run here with `Step.arun` on a redis.asyncio client) and raises
the same errors. `await job.get()` blocks on Redis as `Job.get` does: the await step, then
BLMOVE on the job's done:<id> list, never a polling loop, and never the event loop.

A property cannot await: `status`, `attempts`, `lost`, `return_value` and `exc_info` are as
of the last `fetch_job` or `await job.refresh()` (`Job` reads those on each access).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.admin import job_deleted
from rqconc.queue.job_outcome import (
    BlockLengths,
    block_length,
    canceled,
    missing_job,
    outcome_of,
    result_of,
)
from rqconc.queue.job_record import JobRecord
from rqconc.store import reads
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus
from rqconc.store.steps.core import text
from rqconc.store.steps.producer import await_step, cancel_step
from rqconc.store.steps.removal import delete_jobs_step


class AsyncJob(JobRecord):
    """One job stored in Redis; from `AsyncQueue.enqueue*` or `AsyncQueue.fetch_job(id)`."""

    # wait_replicas of the queue that handed the job out: cancel() and delete() wait too.
    wait: Optional[ReplicaWait] = None

    def __init__(
        self,
        job_id: str,
        client: Any,
        keys: KeySpace,
        fields: Dict[Any, Any],
        *,
        allow_pickle: bool = False,
    ) -> None:
        self.id, self.connection, self._keys = job_id, client, keys
        self.namespace = keys.namespace
        self._fields = {text(k): text(v) for k, v in fields.items()}
        self.allow_pickle = allow_pickle

    @classmethod
    def stored(cls, job_id: str, client: Any, keys: KeySpace, fields: Dict[str, str]) -> AsyncJob:
        """A job just enqueued, from the text fields it was stored with (str already)."""
        job = cls(job_id, client, keys, {}, allow_pickle=fields.get("serializer") == "pickle")
        job._fields = fields
        return job

    def __repr__(self) -> str:
        return f"AsyncJob({self.id!r}, func={self.func_name!r}, queue={self.queue_name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AsyncJob) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    async def refresh(self) -> None:
        """Reload every field from Redis; NoSuchJob if the job is gone."""
        with translated_errors(self.connection):
            raw = await self.connection.hgetall(self.key)
        if not raw:
            raise missing_job(self.id)
        self._fields = {text(k): text(v) for k, v in raw.items()}

    # ---- state as of the last read ----
    @property
    def status(self) -> JobStatus:
        return JobStatus(self._field("status") or JobStatus.QUEUED)

    @property
    def attempts(self) -> int:
        return int(self._field("attempts") or 0)

    @property
    def lost(self) -> int:
        return int(self._field("lost") or 0)

    @property
    def return_value(self) -> Any:
        result = self._field("result")
        if self._field("status") != JobStatus.FINISHED or result is None:
            return None
        return self._loads(self.serializer, result, "result")

    @property
    def exc_info(self) -> Optional[Tuple[str, str, str]]:
        exc_type = self._field("exc_type")
        if exc_type is None:
            return None
        return exc_type, self._field("exc_message") or "", self._field("traceback") or ""

    # ---- control ----
    async def cancel(self) -> bool:
        """As `Job.cancel`: a waiting job at once, a running one by its worker within 2 s;
        False when it had already ended."""
        with translated_errors(self.connection):
            code = await cancel_step(self._keys, self.id).arun(self.connection, self.wait)
        return canceled(self.id, code)

    async def delete(self) -> bool:
        """As `Job.delete`: False if it did not exist, ValueError for a running job."""
        with translated_errors(self.connection):
            step = delete_jobs_step(self._keys, [self.id])
            reply = await step.arun(self.connection, self.wait)
        return job_deleted(self.id, reply)

    # ---- waiting for the outcome ----
    async def logs(self) -> List[str]:
        """The lines the job logged, oldest first (`Job.logs()`); empty when none."""
        with translated_errors(self.connection):
            lines: List[str] = await reads.aread(
                reads.job_log(self._keys, self.id), self.connection
            )
        return lines

    async def get(self, timeout: Optional[float] = None) -> Any:
        """Wait (without blocking the loop) until the job ends; its return value, or
        `JobFailed`. `TimeoutError` when `timeout` seconds pass first (None: no limit)."""
        with translated_errors(self.connection):
            outcome = await self._outcome_now()
            if outcome is None:
                outcome = await self._wait_for_outcome(timeout)
        return result_of(self.id, outcome, self._loads)

    async def _outcome_now(self) -> Optional[str]:
        return outcome_of(self.id, await await_step(self._keys, self.id).arun(self.connection))

    async def _wait_for_outcome(self, timeout: Optional[float]) -> str:
        # As job_outcome.wait_for_outcome: BLMOVE done -> done leaves the outcome for every
        # other waiter; between blocks the job may have gone or ended otherwise.
        blocks = BlockLengths(self.id, timeout, block_length(self.connection))
        done = self._keys.done(self.id)
        while True:
            pushed = await self.connection.blmove(done, done, blocks.next(), "RIGHT", "LEFT")
            if pushed is not None:
                return text(pushed)
            outcome = await self._outcome_now()
            if outcome is not None:
                return outcome


class AsyncEagerJob:
    """An eager queue's job (rqconc/queue/eager/job.py, run at enqueue) behind AsyncJob's
    coroutines: its fields are the eager job's, and nothing here waits."""

    def __init__(self, job: Any) -> None:
        self.job = job

    def __getattr__(self, name: str) -> Any:
        return getattr(self.job, name)

    def __repr__(self) -> str:
        return f"AsyncEagerJob({self.job.id!r})"

    async def get(self, timeout: Optional[float] = None) -> Any:
        return self.job.get(timeout)

    async def refresh(self) -> None:
        self.job.refresh()

    async def cancel(self) -> bool:
        return bool(self.job.cancel())

    async def delete(self) -> bool:
        return bool(self.job.delete())

    async def logs(self) -> List[str]:
        return list(self.job.logs())
