"""Job functions the end-to-end tests enqueue; each execution leaves a trace in Redis."""

import os
import time

from rqconc.connection.clients import connect


def record(url: str, token: str, seconds: float = 0.0) -> str:
    """Append '<token>' to the list 'executions', then sleep."""
    client = connect(url)
    client.rpush("executions", token)
    client.rpush(f"pids:{token}", os.getpid())
    if seconds:
        time.sleep(seconds)
    return token


def record_slow_first(url: str, token: str, seconds: float) -> str:
    """`record`, sleeping `seconds` on the first execution of `token` only: a test kills
    that one mid-job, and the run after it ends at once."""
    client = connect(url)
    client.rpush("executions", token)
    first = client.lrange("executions", 0, -1).count(token.encode()) == 1
    client.rpush(f"pids:{token}", os.getpid())
    if first:
        time.sleep(seconds)
    return token


def hold_recorded(url: str, token: str, key: str, seconds: float = 60.0) -> str:
    """`record`, then `hold` until the test pushes to `key`: a job that runs as long as
    the test needs, no longer."""
    record(url, token)
    hold(url, key, seconds)
    return token


def add(a: int, b: int) -> int:
    return a + b


def nap(seconds: float) -> None:
    time.sleep(seconds)


def hold(url: str, key: str, seconds: float = 60.0) -> str:
    """Stay busy until the test pushes to the list `key` (BLPOP), so that it decides when
    the job ends; a test that never releases it fails the job after `seconds`."""
    popped = connect(url).blpop([key], timeout=seconds)
    if popped is None:
        raise TimeoutError(f"nobody pushed to {key} within {seconds} s")
    return popped[1].decode()


def fail(message: str) -> None:
    """A job of the user's that raises (its traceback must start here, in the worker's log)."""
    raise ValueError(message)
