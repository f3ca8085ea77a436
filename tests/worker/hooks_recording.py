"""A `--hooks` module for tests/worker/test_hooks.py: each hook appends what it saw to the
Redis list `hooks` (job hooks through the job's own client, in the job's child)."""

from __future__ import annotations

import os

from rqconc import get_current_job


def on_worker_start(worker):
    worker.source.client.rpush("hooks", f"on_worker_start:{worker.name}:{os.getpid()}")


def on_worker_stop(worker):
    worker.source.client.rpush("hooks", f"on_worker_stop:{worker.name}:{os.getpid()}")


def before_job(job):
    current = get_current_job()
    job.connection.rpush("hooks", f"before_job:{job.id}:{current is not None and current.id}")


def after_job(job, result):
    job.connection.rpush("hooks", f"after_job:{job.id}:{result!r}")


def on_failure(job, exc_info):
    exc_type, exc, trace = exc_info
    job.connection.rpush("hooks", f"on_failure:{job.id}:{exc_type.__name__}:{exc}:{bool(trace)}")


def on_retry(job, exc_info, delay):
    job.connection.rpush("hooks", f"on_retry:{job.id}:{exc_info[0].__name__}:{delay}")
