"""Job functions of the metrics tests (tests/metrics/)."""

import asyncio
import os
import time


def nap(seconds):
    time.sleep(seconds)
    return seconds


def boom(message):
    raise ValueError(message)


async def anap(seconds):
    await asyncio.sleep(seconds)
    return seconds


async def aboom(message):
    raise ValueError(message)


def fail_first(path):
    """Raise on the first run (leaving `path` behind), finish on the next: one retry."""
    if os.path.exists(path):
        return "second run"
    open(path, "w").close()
    raise ConnectionError(f"first run of {os.path.basename(path)}")


def count(results):
    """A chord's callback: how many results its group gave."""
    return len(results)
