"""What the asyncio peers' harnesses share: a task's own redis.asyncio client (one per event
loop: an asyncio client belongs to the loop it was made on) and one event loop for the
driver's synchronous calls (enqueue, fill), running in a thread of its own so that a queue's
connections (and streaQ's task groups, which must be left in the task that entered them)
live between the calls."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, AsyncContextManager, Awaitable, Callable, Coroutine, Dict

_loop = None


def _driver_loop() -> asyncio.AbstractEventLoop:
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        threading.Thread(target=_loop.run_forever, daemon=True).start()
    return _loop


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run_coroutine_threadsafe(coro, _driver_loop()).result()


def hold_open(context: AsyncContextManager[Any]) -> None:
    """Enter `context` in a task of the driver's loop that stays in it until the process
    ends (a streaQ worker's connection: its exit must run in the task that entered it)."""
    entered = threading.Event()

    async def hold() -> None:
        async with context:
            entered.set()
            await asyncio.Event().wait()

    held = asyncio.run_coroutine_threadsafe(hold(), _driver_loop())
    deadline = time.monotonic() + 30
    while not entered.wait(0.01):
        if held.done():
            held.result()  # entering failed: its error, here
        if time.monotonic() > deadline:
            raise RuntimeError("the connection was not open within 30 s")


class AsyncClient:
    """The tasks' counter client, as bench/tasks.py's asleep10 has it (the INCR every system's
    task sends): no connection cap, as 100-200 tasks of one process send it at once."""

    def __init__(self) -> None:
        self._clients: Dict[Any, Any] = {}

    def get(self) -> Any:
        import redis.asyncio

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = redis.asyncio.Redis.from_url(
                os.environ["BENCH_REDIS_URL"], max_connections=10_000
            )
        return client


async def concurrently(
    send: Callable[[str], Awaitable[None]], kind: str, n: int, coroutines: int
) -> float:
    """Seconds for `coroutines` coroutines of this loop to enqueue `n` jobs between them, each
    awaiting one enqueue call at a time (SPEC 15's async producers). One call per coroutine
    first, outside the clock, so the client's connections are open when the clock starts."""
    await asyncio.gather(*(send(kind) for _ in range(coroutines)))

    async def producer(count: int) -> None:
        for _ in range(count):
            await send(kind)

    shares = [n // coroutines + (1 if i < n % coroutines else 0) for i in range(coroutines)]
    began = time.perf_counter()
    await asyncio.gather(*(producer(share) for share in shares))
    return time.perf_counter() - began
