"""What a job tells about itself while it runs: `meta` saved with `save_meta()`,
`set_progress(fraction, message)` read back by any client as `progress`, and the lines of
`log(message)` read back as `logs()`. `Job` holds a `JobReport` and answers those names
through it (eager mode's jobs hold their own, queue/eager/job.py)."""

from __future__ import annotations

import json
import math
import time
from typing import Any, Dict, List, Optional, Tuple

import redis

from rqconc.connection.clients import translated_errors
from rqconc.queue.job_outcome import missing_job
from rqconc.store import reads
from rqconc.store.defaults import LOG_BYTES, LOG_LINES
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import ProgressReply, text
from rqconc.store.steps.reporting import ReportSteps


def check_progress(fraction: Any, message: Any) -> None:
    """ValueError unless `fraction` is a number from 0.0 to 1.0 and `message` None or a str."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise ValueError(f"progress must be a number from 0.0 to 1.0, not {fraction!r}")
    if not (math.isfinite(fraction) and 0.0 <= fraction <= 1.0):
        raise ValueError(f"progress must be from 0.0 to 1.0, not {fraction!r}")
    if message is not None and not isinstance(message, str):
        raise ValueError(f"a progress message must be a str, not {message!r}")


def log_line(message: Any) -> str:
    """A log line as kept: the moment (UTC, ms) and the message, cut to LOG_BYTES bytes (a
    longer line would push every other line out of the log, and then itself)."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}"
    line = f"{stamp} {message}"
    data = line.encode("utf-8", "replace")
    if len(data) <= LOG_BYTES:
        return line
    return data[: LOG_BYTES - 3].decode("utf-8", "ignore") + "\u2026"


def bounded(lines: List[str]) -> List[str]:
    """The newest of `lines` that the log keeps (lua/job_log.lua's bounds, for eager mode)."""
    kept: List[str] = []
    total = 0
    for line in reversed(lines[-LOG_LINES:]):
        total += len(line.encode("utf-8", "replace"))
        if total > LOG_BYTES:
            break
        kept.append(line)
    return kept[::-1]


class JobReport:
    """The meta and progress of one stored job, over the fields its `Job` last read (the
    same dict: a save is seen in them). A reload makes a new one."""

    def __init__(
        self, job_id: str, client: redis.Redis, keys: KeySpace, fields: Dict[str, str]
    ) -> None:
        self.job_id, self.client, self.keys, self.fields = job_id, client, keys, fields
        self._meta: Optional[Dict[str, Any]] = None
        self._meta_unread = False
        # Whether this run logged: the worker then has the log expire with the job once the
        # outcome is recorded (worker/job_scope.py); a run that did not log pays nothing.
        self.logged = False

    @property
    def meta(self) -> Dict[str, Any]:
        if self._meta is None:
            stored = self.fields.get("meta")
            if stored is None and self._meta_unread:
                self._meta_unread = False
                with translated_errors(self.client):
                    raw = self.client.hget(self.keys.job(self.job_id), "meta")
                stored = None if raw is None else text(raw)
            self._meta = json.loads(stored or "{}")
        return self._meta

    def mark_meta_unread(self) -> None:
        self._meta_unread = True

    def save_meta(self) -> None:
        data = json.dumps(self.meta)
        with translated_errors(self.client):
            stored = ReportSteps(self.client, self.keys).save_meta(self.job_id, data)
        if not stored:
            raise missing_job(self.job_id)
        self.fields["meta"] = data

    def set_progress(self, fraction: float, message: Optional[str]) -> bool:
        check_progress(fraction, message)
        with translated_errors(self.client):
            code = ReportSteps(self.client, self.keys).progress(self.job_id, fraction, message)
        if code is ProgressReply.MISSING:
            raise missing_job(self.job_id)
        return code is ProgressReply.STORED

    @property
    def progress(self) -> Tuple[float, Optional[str]]:
        with translated_errors(self.client):
            status, fraction, message = self.client.hmget(
                self.keys.job(self.job_id), ["status", "progress", "progress_message"]
            )
        if status is None:
            raise missing_job(self.job_id)
        if fraction is None:
            return 0.0, None
        return float(text(fraction)), None if message is None else text(message)

    def log(self, message: Any) -> None:
        with translated_errors(self.client):
            ReportSteps(self.client, self.keys).log(self.job_id, [log_line(message)])
        self.logged = True

    def logs(self) -> List[str]:
        with translated_errors(self.client):
            lines: List[str] = reads.read(reads.job_log(self.keys, self.job_id), self.client)
        return lines
