"""Dramatiq with its Redis broker: `dramatiq` with -p processes x -t threads. `async def`
actors (the SPEC 15 rows) run on the event loop thread of Dramatiq's AsyncIO middleware, each
worker thread waiting for its coroutine: -t is the number of jobs in flight per process. The
middleware's loop thread sits idle while plain actors run."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import List

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO

from bench.common import mark_done

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
broker = RedisBroker(url=URL)
broker.add_middleware(AsyncIO())
dramatiq.set_broker(broker)
BATCH_API = "group([...]).run() (one enqueue per message)"
BATCH = 1000

_client = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
    return _client


@dramatiq.actor(queue_name="bench", max_retries=0)
def noop() -> None:
    _redis().incr("bench:done")


@dramatiq.actor(queue_name="bench", max_retries=0)
def sleep10() -> None:
    time.sleep(0.01)
    _redis().incr("bench:done")


_async_clients: dict = {}


@dramatiq.actor(queue_name="bench", max_retries=0)
async def asleep10() -> None:
    await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        import redis.asyncio

        client = _async_clients[loop] = redis.asyncio.Redis.from_url(URL, max_connections=10_000)
    await client.incr("bench:done")


@dramatiq.actor(queue_name="bench", max_retries=0)
def stamp() -> None:
    _redis().rpush("bench:starts", repr(time.time()))


@dramatiq.actor(queue_name="bench", max_retries=0)
def quiet() -> None:
    mark_done()  # no Redis command of its own (bench/redis_cost.py)


TASKS = {"noop": noop, "sleep10": sleep10, "asleep10": asleep10, "stamp": stamp, "quiet": quiet}


def enqueue(kind: str) -> None:
    TASKS[kind].send()


def enqueue_batch(kind: str, n: int) -> None:
    for start in range(0, n, BATCH):
        dramatiq.group([TASKS[kind].message() for _ in range(min(BATCH, n - start))]).run()


def fill(kind: str, n: int) -> None:
    for _ in range(n):
        TASKS[kind].send()


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: PROCESSES:THREADS, or gevent:PROCESSES:GREENLETS (its `dramatiq-gevent`
    launcher: each process' threads are greenlets)."""
    *green, processes, threads = mode.split(":")
    return [
        [
            str(Path(python).parent / ("dramatiq-gevent" if green == ["gevent"] else "dramatiq")),
            "bench.peers.dramatiq",
            "-p",
            processes,
            "-t",
            threads,
            "-Q",
            "bench",
        ]
    ]
