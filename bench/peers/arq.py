"""arq: asyncio jobs; `max_jobs` concurrent jobs per worker process. The worker polls the
queue every `poll_delay` (0.5 s by default, which caps a worker near 200 jobs/s); here
poll_delay is 5 ms, its best setting for these workloads. Results are not kept.

Started as `python -m bench.peers.arq MAX_JOBS` so that its per-job INFO log lines
(the `arq` command's default) are off, as they are for every other system."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from typing import List

from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import run_worker

from bench.peers._async import concurrently

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
BATCH_API = "asyncio.gather of 50 enqueue_job calls at a time (concurrent sends)"
BATCH = 50  # more at once exhausts the connection pool (MaxConnectionsError)


async def noop(ctx) -> None:
    await ctx["redis"].incr("bench:done")


async def sleep10(ctx) -> None:
    await asyncio.sleep(0.01)
    await ctx["redis"].incr("bench:done")


asleep10 = sleep10  # arq's tasks are `async def` already


async def stamp(ctx) -> None:
    await ctx["redis"].rpush("bench:starts", repr(time.time()))


class WorkerSettings:
    functions = [noop, sleep10, stamp]  # asleep10 runs as sleep10
    redis_settings = RedisSettings.from_dsn(URL)
    keep_result = 0
    poll_delay = 0.005
    max_jobs = 10


_loop = None
_pool = None


def _run(coro):
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
    return _loop.run_until_complete(coro)


async def _get_pool():
    global _pool
    if _pool is None:
        _pool = await create_pool(RedisSettings.from_dsn(URL))
    return _pool


NAMES = {"asleep10": "sleep10"}  # the function arq knows the job by (its __name__)


async def aenqueue(kind: str) -> None:
    await (await _get_pool()).enqueue_job(NAMES.get(kind, kind))


def enqueue_concurrently(kind: str, n: int, coroutines: int) -> float:
    return _run(concurrently(aenqueue, kind, n, coroutines))


def enqueue(kind: str) -> None:
    async def send():
        await (await _get_pool()).enqueue_job(NAMES.get(kind, kind))

    _run(send())


def enqueue_batch(kind: str, n: int) -> None:
    async def send():
        pool = await _get_pool()
        for start in range(0, n, BATCH):
            await asyncio.gather(
                *(pool.enqueue_job(NAMES.get(kind, kind)) for _ in range(min(BATCH, n - start)))
            )

    _run(send())


fill = enqueue_batch


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: PROCESSES:MAX_JOBS."""
    processes, max_jobs = mode.split(":")
    return [[python, "-m", "bench.peers.arq", max_jobs] for _ in range(int(processes))]


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    WorkerSettings.max_jobs = int(sys.argv[1])
    run_worker(WorkerSettings)
