"""Exception types users see. The CLI turns each into one line and an exit code."""

from __future__ import annotations

import builtins


class RQConcError(Exception):
    """Base of every rqconc error."""


class ConnectionError(RQConcError, builtins.ConnectionError):  # noqa: A001 - public name by SPEC
    """Redis cannot be reached. The message names the URL without its password."""


class ConfigurationError(ConnectionError):
    """Redis answered but refuses this client's settings (credentials, a DB index it lacks):
    no retry can help, so a worker ends (exit 1) instead of waiting for Redis."""


class NoSuchJob(RQConcError, KeyError):
    """No job with that id exists (any more)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "no such job"


class JobFailed(RQConcError):
    """The job ended in failure; carries the remote exception's type, message and traceback."""

    def __init__(self, job_id: str, exc_type: str, exc_message: str, traceback: str) -> None:
        super().__init__(f"job {job_id} failed: {exc_type}: {exc_message}")
        self.job_id = job_id
        self.exc_type = exc_type
        self.exc_message = exc_message
        self.traceback = traceback


class JobTimeout(RQConcError):
    """The job ran past its timeout and was stopped."""

    @staticmethod
    def describe(timeout: float, stopped: bool = True) -> str:
        """The stored message: the job's own timeout, not what was left of its deadline
        when the supervisor looked (0.999963 s for a 1 s timeout)."""
        ending = " and was stopped" if stopped else ""
        return f"the job ran past its timeout of {timeout:g} s{ending}"


class JobSoftTimeout(RQConcError):
    """Raised inside a job that runs past its `soft_timeout`, so that it can clean up: a job
    that catches it and returns before its hard `timeout` finishes normally; one that lets
    it propagate fails with it (and is retried as its Retry policy says)."""

    def __init__(self, message: str = "the job ran past its soft timeout") -> None:
        super().__init__(message)


class WorkerLost(RQConcError):
    """The child running the job died mid-job."""


class JobCanceled(RQConcError):
    """The job was canceled."""


class NotAllowed(RQConcError):
    """The worker's allow-list does not include the job's module."""
