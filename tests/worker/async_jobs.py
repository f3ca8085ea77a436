"""`async def` jobs for tests/worker/test_async_jobs.py (the worker runs them: --allow tests)."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import redis


async def add_later(a: int, b: int, seconds: float = 0.0) -> int:
    await asyncio.sleep(seconds)
    return a + b


async def loop_identity() -> str:
    """Which process, thread and event loop ran this: the same child's loop is reused."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0)
    return f"{os.getpid()}:{threading.get_ident()}:{id(loop)}"


async def loop_after(seconds: float) -> list:
    """[process, event loop, start, end] of this run: a sleep keeps it running beside others
    (a child with several slots runs them as tasks of its one loop)."""
    started = time.time()
    await asyncio.sleep(seconds)
    return [os.getpid(), id(asyncio.get_running_loop()), started, time.time()]


async def fails() -> None:
    await asyncio.sleep(0)
    raise KeyError("async boom")


async def sleep_then_mark(url: str, key: str, seconds: float) -> None:
    """Sleep; if its task is cancelled, record that in `key` (the task saw CancelledError)."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        redis.Redis.from_url(url).rpush(key, "cancelled")
        raise
    redis.Redis.from_url(url).rpush(key, "finished")


def plain_thread_name() -> str:
    return threading.current_thread().name


async def hold_the_loop(seconds: float) -> str:
    """Hold the event loop with CPU for `seconds`, never awaiting (every other task of the
    loop waits meanwhile)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "held"
