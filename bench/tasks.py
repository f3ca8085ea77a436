"""rqconc's benchmark tasks. The no-op does one INCR, as every peer's no-op does (SPEC
section 5); the sleep task sleeps 10 ms first (asleep10: `await asyncio.sleep`, then the INCR
through redis.asyncio, as arq's task does: the asyncio backend's row of SPEC 13); stamp
records when it started."""

import asyncio
import os
import time

import redis

from bench.common import mark_done

_client = None
_async_clients: dict = {}  # per event loop: an asyncio client belongs to the loop it was made on


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
    return _client


def noop() -> None:
    _redis().incr("bench:done")


def sleep10() -> None:
    time.sleep(0.01)
    _redis().incr("bench:done")


def stamp() -> None:
    _redis().rpush("bench:starts", repr(time.time()))


def quiet() -> None:
    mark_done()


async def aquiet10() -> None:
    """SPEC 15's job (`await asyncio.sleep(0.01)`) sending Redis nothing, as `quiet`: what
    bench/redis_cost.py measures the native async core's own Redis work with."""
    await asyncio.sleep(0.01)
    mark_done()


async def asleep10() -> None:
    await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        import redis.asyncio

        # One connection per running task at most: the default pool's cap (100) is below
        # asyncio 200's concurrency, and a task over it fails with MaxConnectionsError.
        client = _async_clients[loop] = redis.asyncio.Redis.from_url(
            os.environ["BENCH_REDIS_URL"], max_connections=10_000
        )
    await client.incr("bench:done")
