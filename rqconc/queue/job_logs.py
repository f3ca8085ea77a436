"""The logger `rqconc.job` (SPEC 17): a record logged while a job runs is kept with that
job, as `job.log()` keeps a line, and is read back by `job.logs()`.

The handler finds the job through `get_current_job()`, a context variable: the job of the
thread, greenlet or asyncio task that logs, so the jobs a threading, gevent or asyncio
worker runs at once never get one another's lines, and a record logged outside any job is
not kept. A worker's children install it (`keep_job_records()`), and so does eager mode.
"""

from __future__ import annotations

import logging
import threading

from rqconc.queue.current import get_current_job

JOB_LOGGER = "rqconc.job"
_installing = threading.Lock()


class JobRecords(logging.Handler):
    """Keeps each record with the job that logged it (`LEVEL message`, then its traceback)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))

    def createLock(self) -> None:  # noqa: N802 (logging's name)
        # Each record goes to its own job's log: nothing is shared to serialize, and a lock
        # would queue every thread's (or greenlet's) job behind one another's round trips.
        self.lock = None

    def emit(self, record: logging.LogRecord) -> None:
        job = get_current_job()
        if job is None:
            return
        try:
            job.log(self.format(record))
        except Exception:  # a log line never fails the job that wrote it
            self.handleError(record)


def keep_job_records() -> None:
    """Install `JobRecords` on the `rqconc.job` logger, once per process; the logger keeps
    INFO and above unless it was given a level."""
    logger = logging.getLogger(JOB_LOGGER)
    with _installing:
        if not any(isinstance(handler, JobRecords) for handler in logger.handlers):
            logger.addHandler(JobRecords())
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)


__all__ = ["JOB_LOGGER", "JobRecords", "keep_job_records"]
