"""A `--hooks` module for tests/worker/test_hooks_every_end.py: each job-end hook appends
what it saw, and the pid of the process it ran in, to the Redis list `ends`."""

from __future__ import annotations

import os


def _record(job, *seen):
    job.connection.rpush("ends", ":".join(str(part) for part in (*seen, job.id, os.getpid())))


def on_failure(job, exc_info):
    exc_type, exc, trace = exc_info
    _record(job, "on_failure", exc_type.__name__, isinstance(exc, exc_type), trace)


def on_retry(job, exc_info, delay):
    _record(job, "on_retry", exc_info[0].__name__, delay)


def on_cancel(job):
    _record(job, "on_cancel", job.status.value)
