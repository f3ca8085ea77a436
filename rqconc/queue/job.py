"""A job as users see it: its fields in Redis, its status, and a blocking `get()`.

`status`, `attempts`, `return_value` and `exc_info` read Redis on every access; the other
attributes are as of the last fetch or `refresh()` (they do not change after enqueue).

A job's hash stores only the fields that differ from their defaults (enqueue is cheaper and
a queued job smaller): every reader treats a missing field as its default, here, in
rqconc/worker/ and in the Lua steps (lua/include/, complete.lua).
"""

from __future__ import annotations

from typing import Any, Dict, Generic, List, Optional, Sequence, Tuple

import redis
from typing_extensions import TypeVar

from rqconc import errors
from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue import admin
from rqconc.queue.job_outcome import canceled, missing_job, outcome_now, result_of, wait_for_outcome
from rqconc.queue.job_record import JobRecord
from rqconc.queue.job_reporting import JobReport
from rqconc.queue.limits.parked import parked_position
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus
from rqconc.store.steps.core import Steps, text

# A flow that loops on itself must not make Job.flow() walk forever.
MAX_STAGES = 10_000


# What get() returns: a @task's `.delay()` knows it (Job[str] for a function returning str);
# the default Any keeps a bare `Job` (Queue.enqueue's) valid under mypy --strict.
Result = TypeVar("Result", default=Any)


class Job(JobRecord, Generic[Result]):
    """One job stored in Redis. Get one from `Queue.enqueue*` or `Job.fetch(id)`.
    Inside a job, `rqconc.get_current_job()` returns it (meta and progress: JobReport)."""

    # wait_replicas of the queue that handed the job out (Queue sets it): cancel() and
    # delete() return once that many replicas hold the change, as its enqueue did.
    wait: Optional[ReplicaWait] = None

    def __init__(
        self,
        job_id: str,
        connection: ConnectionLike = None,
        namespace: str = "rqconc",
        fields: Optional[Dict[str, Any]] = None,
        *,
        allow_pickle: bool = False,
    ) -> None:
        self.id = str(job_id)
        self.connection: redis.Redis = connect(connection)
        self._keys = KeySpace(namespace)
        self.namespace = namespace
        self._fields: Dict[str, str] = {text(k): text(v) for k, v in (fields or {}).items()}
        self._made_report: Optional[JobReport] = None
        # Unpickling runs code chosen by whoever can write to Redis: only a job whose queue
        # opted in (Queue(..., serializer="pickle")) reads pickled values.
        self.allow_pickle = allow_pickle

    @classmethod
    def stored(
        cls, job_id: str, client: redis.Redis, keys: KeySpace, fields: Dict[str, str]
    ) -> Job:
        """A job just enqueued, from the text fields it was stored with: nothing to decode,
        and the queue's own client and key space."""
        job = cls.__new__(cls)
        job.id, job.connection, job._keys, job.namespace = job_id, client, keys, keys.namespace
        job._fields = fields
        job._made_report = None
        job.allow_pickle = fields.get("serializer") == "pickle"  # the queue's own choice
        return job

    @classmethod
    def fetch(
        cls,
        job_id: str,
        connection: ConnectionLike = None,
        namespace: str = "rqconc",
        *,
        allow_pickle: bool = False,
    ) -> Job:
        """Load a job; `rqconc.errors.NoSuchJob` if it does not exist (any more). Its pickled
        values are read only with `allow_pickle=True` (`Queue.fetch_job` of a pickle queue)."""
        job = cls(job_id, connection, namespace, allow_pickle=allow_pickle)
        job.refresh()
        return job

    @classmethod
    def fetch_many(
        cls, job_ids: Sequence[str], connection: ConnectionLike = None, namespace: str = "rqconc"
    ) -> List[Optional[Job]]:
        """Load jobs in one round trip, in order; None where a job does not exist (any more).
        Their fields are as of this read (`field("status")` does not read Redis again)."""
        client, keys = connect(connection), KeySpace(namespace)
        pipe = client.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hgetall(keys.job(job_id))
        with translated_errors(client):
            found = pipe.execute()
        return [cls(i, client, namespace, raw) if raw else None for i, raw in zip(job_ids, found)]

    def refresh(self) -> None:
        """Reload every field from Redis."""
        with translated_errors(self.connection):
            raw = self.connection.hgetall(self.key)
        if not raw:
            raise self._missing()
        self._fields = {text(k): text(v) for k, v in raw.items()}
        made = self._made_report
        if made is not None:  # over the fields just read; a worker seals a log that ran
            self._made_report = JobReport(self.id, self.connection, self._keys, self._fields)
            self._made_report.logged = made.logged

    @property
    def _report(self) -> JobReport:
        """The meta, progress and log of this job, over its fields: made on first use (most
        jobs an enqueue hands out never report; a batch makes thousands)."""
        report = self._made_report
        if report is None:
            report = JobReport(self.id, self.connection, self._keys, self._fields)
            self._made_report = report
        return report

    def __repr__(self) -> str:
        return f"Job({self.id!r}, func={self.func_name!r}, queue={self.queue_name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def _missing(self) -> errors.NoSuchJob:
        return missing_job(self.id)

    def _read(self, *names: str) -> List[Optional[str]]:
        with translated_errors(self.connection):
            values = self.connection.hmget(self.key, ["status", *names])
        if values[0] is None:
            raise self._missing()
        return [None if v is None else text(v) for v in values]

    # ---- live state ----
    @property
    def status(self) -> JobStatus:
        return JobStatus(self._read()[0])

    @property
    def attempts(self) -> int:
        """Executions that ended (finished, raised, timed out or lost their worker)."""
        return int(self._read("attempts")[1] or 0)

    @property
    def lost(self) -> int:
        """How many times the job's lease expired because its worker vanished."""
        return int(self._read("lost")[1] or 0)

    @property
    def return_value(self) -> Any:
        """The function's return value once finished, else None (never blocks)."""
        with translated_errors(self.connection):
            status, result, serializer = self.connection.hmget(
                self.key, ["status", "result", "serializer"]
            )
        if status is None or text(status) != JobStatus.FINISHED or result is None:
            return None
        return self._loads(text(serializer or "json"), text(result), "result")

    @property
    def exc_info(self) -> Optional[Tuple[str, str, str]]:
        """(exception type, message, traceback) of the latest failure, or None."""
        _, exc_type, message, trace = self._read("exc_type", "exc_message", "traceback")
        return None if exc_type is None else (exc_type, message or "", trace or "")

    # ---- flows (read live: a stage learns its next one when it completes) ----
    @property
    def next_id(self) -> Optional[str]:
        """The id of the flow's next stage, once this stage returned rqconc.Next."""
        return self._read("next_id")[1]

    @property
    def flow_id(self) -> Optional[str]:
        """The id of the flow's first stage (None for a job that is not part of a flow)."""
        return self._read("flow_id")[1]

    def flow(self) -> List[Job]:
        """The stages of this job's flow, first to latest (stages already expired are
        skipped where the chain allows)."""
        found: List[Job] = []
        current: Optional[str] = self.flow_id or self.id
        while current and len(found) < MAX_STAGES:
            stage = Job(current, self.connection, self.namespace, allow_pickle=self.allow_pickle)
            stage.refresh()
            found.append(stage)
            current = stage.next_id
        return found

    # ---- control ----
    def cancel(self) -> bool:
        """Cancel the job: a waiting one at once; a running one is stopped by its worker
        within 2 s (status `canceled`). False when it had already ended."""
        with translated_errors(self.connection):
            code = Steps(self.connection, self._keys, self.wait).cancel(self.id)
        return canceled(self.id, code)

    def delete(self) -> bool:
        """Delete the job (hash, result, its place in its queue's sets); False if it did
        not exist. A job deleted before it finished cancels its dependents (those that allow
        failure run) and wakes its waiters with JobCanceled. ValueError for a running job:
        `cancel()` it first, or delete it once it has ended."""
        return admin.delete_job(self.connection, self._keys, self.id, self.wait)

    @property
    def position(self) -> Optional[int]:
        """0-based place in its queue in run order (0 runs next); None if it is not waiting
        there (scheduled, deferred, running, ended or deleted). A job parked behind its
        group's cap is waiting: its place is the earliest it can run (counts.py)."""
        queue = self.queue_name or self._read("queue")[1] or "default"
        with translated_errors(self.connection):
            rank: Any = self.connection.zrank(self._keys.queue(queue), self.id)
            if rank is not None:
                return int(rank)
            group = self._field("flow_group")
            if group is None:
                return None
            return parked_position(self.connection, self._keys, queue, group, self.id)

    # ---- what it reports while it runs (job_reporting.py) ----
    @property
    def meta(self) -> Dict[str, Any]:
        """The job's meta, as of the last fetch; change it in place and `save_meta()`."""
        return self._report.meta

    def save_meta(self) -> None:
        """Store `meta` as it is now (JSON); NoSuchJob if the job is gone."""
        self._report.save_meta()

    def mark_meta_unread(self) -> None:
        """The fields were read without `meta` (a worker's take returns only what a run
        needs): `meta` is read from Redis on first use."""
        self._report.mark_meta_unread()

    def set_progress(self, fraction: float, message: Optional[str] = None) -> bool:
        """Store how far the job is (0.0 to 1.0, and a message) and append a `progress`
        event. ValueError for a fraction outside 0..1; False (nothing stored) when the job
        no longer runs (canceled, timed out or ended meanwhile)."""
        return self._report.set_progress(fraction, message)

    @property
    def progress(self) -> Tuple[float, Optional[str]]:
        """(fraction, message) as the job last reported it, read from Redis; (0.0, None)
        before it reported any."""
        return self._report.progress

    def log(self, message: Any) -> None:
        """Keep a line with the job (SPEC 17): the moment (UTC) and `message`. A job keeps
        its newest 100 lines, at most 64 KB, as long as its result; records of the logger
        `rqconc.job` logged while it runs are kept the same way."""
        self._report.log(message)

    @property
    def wrote_logs(self) -> bool:
        """Whether `log()` was called on this object (the worker seals such a run's log)."""
        return self._report.logged

    def logs(self) -> List[str]:
        """The lines the job logged, oldest first ("2026-01-01 12:00:00.000 message");
        empty when it logged none, or is gone."""
        return self._report.logs()

    # ---- waiting for the outcome ----
    def get(self, timeout: Optional[float] = None) -> Result:
        """Block until the job ends; its return value, or `JobFailed`. `TimeoutError` when
        `timeout` seconds pass first (None: wait as long as it takes)."""
        with translated_errors(self.connection):
            outcome = outcome_now(self.connection, self._keys, self.id)
            if outcome is None:
                outcome = wait_for_outcome(self.connection, self._keys, self.id, timeout)
        return result_of(self.id, outcome, self._loads)
