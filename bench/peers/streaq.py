"""streaQ: asyncio tasks over Redis streams (coredis); per worker process `concurrency` tasks
at a time and `prefetch` more read ahead (default: as many as `concurrency`, so one XREADGROUP
fetches up to twice the concurrency); `streaq run PATH --workers N` starts N processes.
Results are not kept (`ttl=0`).

Started as `python -m bench.peers.streaq CONCURRENCY` once per process (what
`streaq run --workers N` does: N processes, each `Worker.run_sync()`), with logging at
WARNING: streaQ's CLI logs each task at INFO, which no other system here does."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from typing import List

from streaq import Worker

from bench.peers._async import AsyncClient, concurrently, hold_open, run_coroutine

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
BATCH_API = "Worker.enqueue_many (one pipeline per 1,000)"
BATCH = 1000
_counter = AsyncClient()
worker = Worker(
    redis_url=URL,
    queue_name="bench",
    concurrency=int(os.environ.get("BENCH_STREAQ_CONCURRENCY", "16")),
)


@worker.task(ttl=0)
async def noop() -> None:
    await _counter.get().incr("bench:done")


@worker.task(ttl=0)
async def asleep10() -> None:
    await asyncio.sleep(0.01)
    await _counter.get().incr("bench:done")


@worker.task(ttl=0)
async def stamp() -> None:
    await _counter.get().rpush("bench:starts", repr(time.time()))


TASKS = {"noop": noop, "asleep10": asleep10, "stamp": stamp}
_open = False


def _connected() -> None:
    global _open
    if not _open:
        hold_open(worker)
        _open = True


async def aenqueue(kind: str) -> None:
    await TASKS[kind].enqueue()


def enqueue_concurrently(kind: str, n: int, coroutines: int) -> float:
    _connected()
    return run_coroutine(concurrently(aenqueue, kind, n, coroutines))


def enqueue(kind: str) -> None:
    _connected()
    run_coroutine(aenqueue(kind))


def enqueue_batch(kind: str, n: int) -> None:
    _connected()

    async def send() -> None:
        for start in range(0, n, BATCH):
            tasks = [TASKS[kind].enqueue() for _ in range(min(BATCH, n - start))]
            await worker.enqueue_many(tasks)

    run_coroutine(send())


fill = enqueue_batch


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: PROCESSES:CONCURRENCY."""
    processes, concurrency = mode.split(":")
    return [[python, "-m", "bench.peers.streaq", concurrency] for _ in range(int(processes))]


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    worker.concurrency = int(sys.argv[1])
    worker.prefetch = 2 * worker.concurrency  # Worker's own rule (prefetch + concurrency)
    worker.run_sync()
