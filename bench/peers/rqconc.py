"""rqconc: tasks in bench/tasks.py (allowed with --allow bench); workers are `main.py`."""

from __future__ import annotations

import os
from typing import List

from rqconc import Queue

QUEUE = "bench"
TASKS = {
    "noop": "bench.tasks:noop",
    "sleep10": "bench.tasks:sleep10",
    "asleep10": "bench.tasks:asleep10",
    "stamp": "bench.tasks:stamp",
    "quiet": "bench.tasks:quiet",
    "aquiet10": "bench.tasks:aquiet10",
}
BATCH_API = "Queue.enqueue_many (one Lua step per batch)"
BATCH = 1000

_queue = None
_aqueue = None


def queue() -> Queue:
    global _queue
    if _queue is None:
        _queue = Queue(QUEUE, connection=os.environ["BENCH_REDIS_URL"])
    return _queue


def enqueue(kind: str) -> None:
    queue().enqueue(TASKS[kind], result_ttl=0)


def enqueue_batch(kind: str, n: int) -> None:
    for start in range(0, n, BATCH):
        queue().enqueue_many([(TASKS[kind], ())] * min(BATCH, n - start), result_ttl=0)


fill = enqueue_batch


async def aenqueue(kind: str) -> None:
    global _aqueue
    if _aqueue is None:
        from rqconc.aio import AsyncQueue

        _aqueue = AsyncQueue(QUEUE, connection=os.environ["BENCH_REDIS_URL"])
    await _aqueue.enqueue(TASKS[kind], result_ttl=0)


def enqueue_concurrently(kind: str, n: int, coroutines: int) -> float:
    """rqconc.aio's AsyncQueue.enqueue from `coroutines` coroutines of one process."""
    import asyncio

    from bench.peers._async import concurrently

    return asyncio.run(concurrently(aenqueue, kind, n, coroutines))


# The caps of the "limits" rows: set, checked by every take, never reached (SPEC 13: what
# flow control costs a queue that uses it).
HIGH_LIMITS = {"concurrency": 1000, "rate": "1000000/s"}


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: BACKEND:SIZE[:SLOTS], e.g. forking:2, threading:20, forking:2:50 (--slots 50);
    BACKEND:SIZE:pN runs N workers from one command (--processes N), e.g. gevent:16:p2;
    BACKEND:SIZE:limits sets HIGH_LIMITS on the queue first (the driver calls this after
    filling it)."""
    backend, size, *slots = mode.split(":")
    processes = [s[1:] for s in slots if s.startswith("p")]
    slots = [s for s in slots if not s.startswith("p")]
    if slots == ["limits"]:
        queue().set_limits(**HIGH_LIMITS)
        slots = []
    return [
        [
            python,
            "main.py",
            backend,
            size,
            "-q",
            QUEUE,
            "--url",
            os.environ["BENCH_REDIS_URL"],
            "--allow",
            "bench",
            "--log-level",
            "WARNING",
            *(["--slots", slots[0]] if slots else []),
            *(["--processes", processes[0]] if processes else []),
        ]
    ]
