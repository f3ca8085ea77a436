"""SPEC 15's debug-mode check, run as its own process: `python -m tests.aio.loop_probe URL`
prints one JSON line saying what each slow callback of the event loop was.

Why a process of its own: inside pytest's process, the loop shares the interpreter with
xdist's I/O thread and with a heap of thousands of tests. A callback that waits for the GIL
another thread holds makes a voluntary context switch, exactly as a blocking socket call
does (RUSAGE_THREAD cannot tell them apart), and a full garbage collection walks that whole
heap. Here the loop's thread is the only one (the probe checks it), so a callback that
waited in the kernel made a blocking call itself.

What runs: asyncio debug mode on, callbacks over 10 ms logged, 1,000 enqueues and 1,000
result waits from 100 coroutines, on a worker the test started."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from typing import Dict, List

from rqconc.aio import AsyncQueue
from tests.aio import tasks
from tests.support.loop_watch import slow_callbacks

SLOW = 0.01  # SPEC 15: loop.slow_callback_duration


class _Logged(logging.Handler):
    """What asyncio's debug mode logged about slow callbacks."""

    def __init__(self) -> None:
        super().__init__()
        self.records: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Executing" in message or "slow" in message.lower():
            self.records.append(message[:200])


async def _no_io_at_all() -> None:
    """The machine's own share of slow callbacks: 100 coroutines taking 50 turns of the
    loop each with a few microseconds of CPU, and no I/O."""

    async def turns() -> None:
        for _ in range(50):
            sum(range(200))
            await asyncio.sleep(0)

    asyncio.get_running_loop().slow_callback_duration = SLOW
    await asyncio.gather(*(turns() for _ in range(100)))


async def _enqueue_and_wait(url: str, watch) -> List[List[int]]:
    asyncio.get_running_loop().slow_callback_duration = SLOW
    q = AsyncQueue("aio", url)
    await (await q.enqueue(tasks.add, 0, 0)).get(timeout=30)  # connected, scripts loaded

    async def producer(n: int) -> List[int]:
        jobs = [await q.enqueue(tasks.add, n, i) for i in range(10)]
        return [await job.get(timeout=60) for job in jobs]

    watch.watching = True
    producers = []
    for n in range(100):
        producers.append(asyncio.ensure_future(producer(n)))
        if n % 10 == 9:
            # Debug mode records where each task was made (a stack walk): 100 made in one
            # callback are 10-20 ms of the probe's own, whatever they run.
            await asyncio.sleep(0)
    results = await asyncio.gather(*producers)
    watch.threads = [thread.name for thread in threading.enumerate()]
    watch.watching = False  # aclose: redis-py's disconnects of its 100 connections
    await q.aclose()
    return results


def probe(url: str) -> Dict:
    handler = _Logged()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    asyncio.run(_no_io_at_all(), debug=True)
    logged_alone = list(handler.records)
    handler.records.clear()
    with slow_callbacks(SLOW) as watch:
        watch.watching = False  # the warm-up: its first connection and Lua
        results = asyncio.run(_enqueue_and_wait(url, watch), debug=True)
    return {
        "right": results == [[n + i for i in range(10)] for n in range(100)],
        "threads": watch.threads,  # while the loop ran: this one alone
        "logged_alone": len(logged_alone),
        "logged": handler.records,
        "found": watch.found,
    }


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
