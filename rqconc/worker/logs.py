"""How a worker logs: `--log-format text|json`, and never a password.

- text: `2026-01-01 12:00:00,000 INFO rqconc.worker: job 42 finished in 0.012 s` followed by
  every `extra` field of the record as ` key=value` (event=finished job_id=42 queue=default
  duration=0.012 worker=...), so the line can be grepped and still read by eye.
- json: one object per line: ts (ISO 8601, UTC), level, logger, message, pid, every `extra`
  field, and `exc` (the traceback text) when the record carries an exception, or a job's
  failure line its traceback (the `exc` extra; in text it follows the line).

A record logged while a job runs (by the job's own code too) carries that job's `job_id`
(see `JOB_ID`), so a user's log lines can be tied to the job that wrote them.

Both pass through `RedactPasswords`, which masks the password of any URL in the message, in
string extras and in the final line (tracebacks included): `redis://user:***@host`.

Children of the multiprocessing backend are fresh interpreters that inherit no logging set-up:
the worker command makes each call `configure_from_env()` (see `CHILD_SETUP`), reading the
level and format the supervisor exported.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Dict, Iterator, Optional, TextIO

from rqconc.connection.clients import redact

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FORMATS = ("text", "json")
LEVEL_ENV, FORMAT_ENV = "RQCONC_LOG_LEVEL", "RQCONC_LOG_FORMAT"
# A `--preload` entry: the function each spawned child calls before its first job.
CHILD_SETUP = "rqconc.worker.logs:configure_from_env"

# What every LogRecord has by itself; anything else on a record came from `extra=`.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>,;]+")


def redact_text(text: str) -> str:
    """`text` with the password of every URL in it masked."""
    if "://" not in text:
        return text
    return _URL.sub(lambda match: redact(match.group(0)), text)


def extras(record: logging.LogRecord) -> Dict[str, Any]:
    """The fields a record was given with `extra=`, in the order they were set."""
    return {
        k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")
    }


# The job the calling thread or greenlet runs (a ContextVar: each thread has its own context,
# and gevent gives each greenlet its own); the worker sets and resets it around each run
# (taking.py), and records logged meanwhile carry it.
JOB_ID: ContextVar[Optional[str]] = ContextVar("rqconc_job_id", default=None)


class JobIds(logging.Filter):
    """Adds the running job's `job_id` to a record that has none (a job's own log lines)."""

    def filter(self, record: logging.LogRecord) -> bool:
        job_id = JOB_ID.get()
        if job_id is not None and not hasattr(record, "job_id"):
            record.job_id = job_id
        return True


class RedactPasswords(logging.Filter):
    """Masks `://user:secret@` (and `?password=`) in the message and string extras."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        for key, value in extras(record).items():
            if isinstance(value, str):
                setattr(record, key, redact_text(value))
        return True


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if not text or any(c.isspace() or c in '="' for c in text):
        return json.dumps(text)  # quoted, so `key=value` pairs still split on spaces
    return text


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = extras(record)
        trace = fields.pop("exc", None)  # a job's traceback: below the line, as logging's
        if fields:
            suffix = " ".join(f"{k}={_text_value(v)}" for k, v in fields.items())
            head, newline, rest = line.partition("\n")  # after the message, before a traceback
            line = f"{head} {suffix}{newline}{rest}"
        if isinstance(trace, str) and trace:
            line = f"{line}\n{trace.rstrip()}"
        return redact_text(line)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: Dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        for key, value in extras(record).items():
            entry.setdefault(key, value)  # an extra never overwrites the fixed fields
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        return redact_text(json.dumps(entry, default=str, ensure_ascii=False))


def make_handler(fmt: str = "text", stream: Optional[TextIO] = None) -> logging.Handler:
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(JobIds())
    handler.addFilter(RedactPasswords())
    return handler


def configure(
    level: str = "INFO", fmt: str = "text", stream: Optional[TextIO] = None, export: bool = True
) -> None:
    """Log to stderr at `level` in `fmt`, replacing any handler the root logger had.
    With `export`, child processes can repeat it with `configure_from_env()`."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(make_handler(fmt, stream))
    root.setLevel(level.upper())
    if export:
        os.environ[LEVEL_ENV], os.environ[FORMAT_ENV] = level.upper(), fmt


def configure_from_env() -> None:
    """In a spawned child: the set-up its supervisor exported (nothing if none was)."""
    fmt = os.environ.get(FORMAT_ENV)
    if fmt in FORMATS:
        configure(os.environ.get(LEVEL_ENV, "INFO"), fmt, export=False)


# The namespace whose work the calling thread or greenlet does now, for the log lines of a
# worker serving several (a ContextVar: per thread, and per greenlet under gevent).
_SERVING: ContextVar[Optional[str]] = ContextVar("rqconc_namespace", default=None)


@contextmanager
def serving(namespace: str) -> Iterator[None]:
    token = _SERVING.set(namespace)
    try:
        yield
    finally:
        _SERVING.reset(token)


class NamespaceField(logging.Filter):
    """Adds `namespace` to the worker's log records written while serving one namespace of
    several (`job ... started ... namespace=b`): queue names and job ids repeat across them."""

    def filter(self, record: logging.LogRecord) -> bool:
        namespace = _SERVING.get()
        if namespace is not None and not hasattr(record, "namespace"):
            record.namespace = namespace
        return True


def name_namespaces_in_logs() -> None:
    """Install `NamespaceField` on the worker's logger (once per process)."""
    logger = logging.getLogger("rqconc.worker")
    if not any(isinstance(f, NamespaceField) for f in logger.filters):
        logger.addFilter(NamespaceField())
