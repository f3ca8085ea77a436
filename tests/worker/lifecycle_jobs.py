"""Job functions of the lifecycle tests; each leaves a trace in the test's Redis."""

import time

import redis

from rqconc import Next
from rqconc.connection.clients import connect


def _client(url: str) -> redis.Redis:
    return connect(url)


def mark(url: str, name: str, seconds: float = 0.0) -> str:
    """Sleep, then append `name` to the list 'order'."""
    if seconds:
        time.sleep(seconds)
    _client(url).rpush("order", name)
    return name


def fail_first_times(url: str, times: int) -> str:
    """Raise ValueError on the first `times` executions, then succeed."""
    runs = _client(url).incr("fail_first_times")
    if runs <= times:
        raise ValueError(f"failure {runs}")
    return f"ok after {runs}"


def broken(url: str) -> None:
    _client(url).rpush("order", "broken")
    raise ValueError("broken on purpose")


def nap(url: str, seconds: float) -> None:
    _client(url).rpush("started", "nap")
    time.sleep(seconds)
    # Never reached by a canceled nap, except in a thread, which cannot be killed.
    _client(url).rpush("order", "nap ended")


def stage(url: str, n: int, seconds: float = 0.0, slow: int = 0) -> object:
    """A three-stage flow: stage n records itself, then hands on to stage n + 1 on queue
    `stage<n+1>`. The first run of stage `slow` sleeps `seconds` first (the run a test
    kills); every other run goes straight on."""
    client = _client(url)
    client.rpush("stages", n)
    if n == slow and client.lrange("stages", 0, -1).count(str(n).encode()) == 1:
        time.sleep(seconds)
    if n < 3:
        return Next(
            f"stage{n + 1}",
            "tests.worker.lifecycle_jobs:stage",
            url,
            n + 1,
            seconds,
            slow,
            result=f"stage {n} done",
        )
    return "flow done"


def on_success(job, result) -> None:
    url = job.args[0]
    _client(url).rpush("callbacks", f"success {job.id} {result}")


def on_failure(job, error) -> None:
    url = job.args[0]
    _client(url).rpush("callbacks", f"failure {job.id} {error.exc_type}")
