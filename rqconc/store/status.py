"""The statuses a job goes through (SPEC 3), shared by the client API and the worker."""

from __future__ import annotations

from enum import Enum


class JobStatus(str, Enum):
    QUEUED = "queued"
    SCHEDULED = "scheduled"
    DEFERRED = "deferred"
    STARTED = "started"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELED = "canceled"

    def __str__(self) -> str:
        return self.value


ENDED = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED)
