"""One execution as the job's own code and the user's hooks see it: the `Job` that
`rqconc.get_current_job()` returns while it runs, and the job hooks (hooks.py) around it,
in the job's own child.

Every job passes through here, so a plain one (no hooks, never asking for its `Job`) pays
for one context variable set and reset, nothing more: the `Job` object is made on first
use (bench/RESULTS.md, the 5% budget of SPEC 13). A run that logged (`job.log()`, the
`rqconc.job` logger) made it, and has its log expire with the job once its outcome is
recorded: one more step, only for such a run."""

from __future__ import annotations

from typing import Any, Dict, Optional

from rqconc import errors
from rqconc.queue.job import Job
from rqconc.worker.connections import Connections
from rqconc.worker.hooks import Hooks
from rqconc.worker.recording import Notify, seal_job_log
from rqconc.worker.runner import Outcome


class JobScope:
    """The job of one execution, made from the fields its take returned (a
    rqconc.queue.current.JobHolder)."""

    def __init__(
        self, hooks: Hooks, connections: Connections, job_id: str, fields: Dict[str, str]
    ) -> None:
        self.hooks = hooks if hooks.active else None
        self._connections, self._job_id, self._fields = connections, job_id, fields
        # Made on the run's first ask (only then can it have logged): None for most runs.
        self.made_job: Optional[Job] = None

    @property
    def job(self) -> Job:
        if self.made_job is None:
            connections = self._connections
            job = Job.stored(self._job_id, connections.client, connections.keys, self._fields)
            # A take returns the fields a run needs, not `meta`: it is read on first use.
            job.mark_meta_unread()
            self.made_job = job
        return self.made_job

    def before(self) -> None:
        if self.hooks:
            self.hooks.call("before_job", self.job)

    def notify(self, outcome: Outcome) -> Notify:
        """What the recorder calls once a failure is recorded: on_retry or on_failure."""
        if not self.hooks or outcome.exc is None:
            return None
        hooks, error = self.hooks, outcome.error
        if error is None:  # refused before it ran (not allowed, corrupt): no exception of its own
            exc_type, message, trace = outcome.exc
            error = errors.JobFailed(self.job.id, exc_type, message, trace)
        exc_info: Any = (type(error), error, error.__traceback__)
        return hooks.failure_notify(lambda: self.job, exc_info)

    def after(self, outcome: Outcome) -> None:
        """After the outcome was recorded: the log of a run that logged expires with the
        job; the after_job hook of a success."""
        job = self.made_job
        if job is not None and job.wrote_logs:
            seal_job_log(self._connections, self._job_id)
        if self.hooks and outcome.exc is None:
            self.hooks.call("after_job", self.job, outcome.value)
