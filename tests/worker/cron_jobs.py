"""Job functions of the cron and scheduling tests; each execution leaves a trace in Redis."""

import json
import os
import time

import redis

from rqconc.connection.clients import connect


def _client(url: str) -> redis.Redis:
    return connect(url)


def record_run(url: str, key: str) -> None:
    """Append {"at": start time, "pid": ...} to the list `key`."""
    _client(url).rpush(key, json.dumps({"at": time.time(), "pid": os.getpid()}))


def fail_until(url: str, key: str, failures: int) -> str:
    """Record the start time in the list `key`; raise ValueError on the first `failures`
    executions, then succeed."""
    client = _client(url)
    runs = client.rpush(key, json.dumps({"at": time.time(), "pid": os.getpid()}))
    if runs <= failures:
        raise ValueError(f"failure {runs} of {failures}")
    return f"succeeded on execution {runs}"
