"""Waiting on a condition with a deadline, never on a fixed sleep."""

import time
from typing import Callable


def wait_for(
    condition: Callable[[], object],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> object:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)
