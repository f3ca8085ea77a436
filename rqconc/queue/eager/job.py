"""The job an eager queue returns (docs/testing.md): `Job`'s read interface over fields held
in memory, in the very form a worker writes them to Redis (text values, "status",
"attempts", "result", "exc_type", ...), so every property of `Job` reads them unchanged.

It ended before `enqueue` returned: `get()` never blocks and `cancel()` has nothing to stop.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from rqconc import errors
from rqconc.queue.job import Job
from rqconc.queue.job_reporting import JobReport, bounded, check_progress, log_line
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus


class EagerJob(Job):
    """One job of an eager queue. Its `connection` is None: it never existed in Redis."""

    def __init__(self, job_id: str, keys: KeySpace, fields: Dict[str, str]) -> None:
        # Job.__init__ would connect; an eager job holds what a fetch would have read.
        self.id, self.connection, self._keys = job_id, None, keys  # type: ignore[assignment]
        self.namespace = keys.namespace
        self._fields = fields
        self.allow_pickle = fields.get("serializer") == "pickle"  # its queue's own choice
        self._fields.setdefault("status", JobStatus.QUEUED.value)
        self._made_report = EagerReport(job_id, keys, fields)
        self.next_stage: Optional[EagerJob] = None  # a flow's next stage, once it returned Next
        self.followups: List[EagerJob] = []  # its on_success / on_failure callbacks' jobs

    def __repr__(self) -> str:
        return f"EagerJob({self.id!r}, func={self.func_name!r}, status={self.status.value!r})"

    def refresh(self) -> None:
        """Nothing to reload: its fields are the only copy."""

    def _read(self, *names: str) -> List[Optional[str]]:
        # Job's live properties (status, attempts, exc_info, next_id, ...) read through here.
        return [self._fields.get(name) for name in ("status", *names)]

    @property
    def return_value(self) -> Any:
        result = self._fields.get("result")
        if self._fields.get("status") != JobStatus.FINISHED or result is None:
            return None
        return self._loads(self.serializer, result, "result")

    def get(self, timeout: Optional[float] = None) -> Any:
        """Its return value, or `JobFailed` (it has ended: `timeout` never matters)."""
        status = self._fields.get("status")
        if status == JobStatus.FINISHED:
            return self.return_value
        if status == JobStatus.CANCELED:
            raise errors.JobFailed(self.id, "rqconc.errors.JobCanceled", "the job was canceled", "")
        exc_type, message, trace = self.exc_info or ("", "", "")
        raise errors.JobFailed(self.id, exc_type, message, trace)

    def cancel(self) -> bool:
        """False: an eager job has always ended by the time anyone holds it."""
        return False

    def flow(self) -> List[Job]:
        """This stage and the ones after it (an eager job knows its next stage, not its
        earlier ones: call it on the first stage for the whole flow)."""
        found: List[Job] = []
        stage: Optional[EagerJob] = self
        while stage is not None:
            found.append(stage)
            stage = stage.next_stage
        return found


class EagerReport(JobReport):
    """An eager job's meta and progress, stored in its fields as a worker stores them in
    Redis (no progress event: there is no stream), and its log lines, within the same
    bounds."""

    def __init__(self, job_id: str, keys: KeySpace, fields: Dict[str, str]) -> None:
        super().__init__(job_id, None, keys, fields)  # type: ignore[arg-type]
        self._lines: List[str] = []

    def log(self, message: Any) -> None:
        self._lines = bounded([*self._lines, log_line(message)])
        self.logged = True

    def logs(self) -> List[str]:
        return list(self._lines)

    def save_meta(self) -> None:
        self.fields["meta"] = json.dumps(self.meta)

    def set_progress(self, fraction: float, message: Optional[str]) -> bool:
        check_progress(fraction, message)
        if self.fields.get("status") != JobStatus.STARTED:
            return False
        self.fields["progress"] = repr(float(fraction))
        if message is None:
            self.fields.pop("progress_message", None)
        else:
            self.fields["progress_message"] = message
        return True

    @property
    def progress(self) -> Tuple[float, Optional[str]]:
        fraction = self.fields.get("progress")
        if fraction is None:
            return 0.0, None
        return float(fraction), self.fields.get("progress_message")


__all__ = ["EagerJob", "EagerReport"]
