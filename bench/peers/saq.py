"""SAQ (Simple Async Queue): asyncio jobs; `concurrency` jobs at a time per worker process,
`saq SETTINGS --workers N` forks N processes. Its Redis queue has no prefetch or batch take:
each of the `concurrency` consumers of a process BLMOVEs one job at a time, so concurrency is
its only throughput setting. Results are not kept (`ttl=-1` deletes the job when it ends).

Started as `python -m bench.peers.saq PROCESSES CONCURRENCY`: saq's own runner
(`saq.runner.run`, what the `saq` command calls) with these settings, at -v 0 (WARNING: no
line per job)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, Dict, List

from saq import Queue

from bench.peers._async import AsyncClient, concurrently, run_coroutine

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE = "bench"
BATCH_API = "asyncio.gather of 50 Queue.enqueue calls at a time (SAQ has no batch enqueue)"
BATCH = 50
_counter = AsyncClient()


async def noop(ctx) -> None:
    await _counter.get().incr("bench:done")


async def asleep10(ctx) -> None:
    await asyncio.sleep(0.01)
    await _counter.get().incr("bench:done")


async def stamp(ctx) -> None:
    await _counter.get().rpush("bench:starts", repr(time.time()))


def settings() -> Dict[str, Any]:
    """Read by every worker process `saq.runner.run` starts."""
    return {
        "queue": Queue.from_url(URL, name=QUEUE),
        "functions": [noop, asleep10, stamp],
        "concurrency": int(os.environ.get("BENCH_SAQ_CONCURRENCY", "10")),
    }


_queue = None


async def _get_queue() -> Queue:
    global _queue
    if _queue is None:
        # max_concurrent_ops throttles SAQ's own enqueue calls (default 20): the 100
        # coroutines of the async enqueue row must not wait on it.
        _queue = Queue.from_url(URL, name=QUEUE, max_concurrent_ops=1000)
        await _queue.connect()
    return _queue


async def aenqueue(kind: str) -> None:
    await (await _get_queue()).enqueue(kind, ttl=-1, timeout=60)


def enqueue_concurrently(kind: str, n: int, coroutines: int) -> float:
    return run_coroutine(concurrently(aenqueue, kind, n, coroutines))


def enqueue(kind: str) -> None:
    run_coroutine(aenqueue(kind))


def enqueue_batch(kind: str, n: int) -> None:
    async def send() -> None:
        for start in range(0, n, BATCH):
            await asyncio.gather(*(aenqueue(kind) for _ in range(min(BATCH, n - start))))

    run_coroutine(send())


fill = enqueue_batch


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: PROCESSES:CONCURRENCY."""
    processes, concurrency = mode.split(":")
    return [[python, "-m", "bench.peers.saq", processes, concurrency]]


if __name__ == "__main__":
    from saq.runner import run

    os.environ["BENCH_SAQ_CONCURRENCY"] = sys.argv[2]
    run("bench.peers.saq.settings", workers=int(sys.argv[1]), verbose=0)
