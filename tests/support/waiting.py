"""Waiting on a condition with a deadline, never on a fixed sleep."""

import os
import time
from typing import Callable


def wait_for(
    condition: Callable[[], object],
    timeout: float = 10.0,
    interval: float = 0.05,
    message: str = "condition",
) -> object:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds.

    Every 50 ms: a test's condition is a Redis round trip or a file read, and a test process
    spends most of `make test` waiting here; polling every 20 ms cost ~2 % of a core per
    waiting test (tests/support/cpu_report.py), 50 ms is still well inside any bound a test
    asserts (the tightest are 1 s)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def promised(seconds: float) -> float:
    """A SPEC time bound ("gone within 1 s") as a test may assert it on this machine: the
    bound itself while the machine keeps up (1-minute load average at most its core count),
    stretched in proportion to the load beyond that, at most twice. The promise is about the
    code's own waits (its ticks and timeouts), which a starved machine runs late through no
    fault of the code; on a quiet machine the test asserts the exact number."""
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    return seconds * min(2.0, max(1.0, load / cores))
