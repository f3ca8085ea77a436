"""The chaos run's jobs: each records its execution on a separate Redis, then naps; one in
two is an `async def` job, whose nap is an await (a task the worker can cancel).

The record goes to a recording Redis that the chaos driver never faults (not through the
proxy, not the server that gets restarted), so every execution that got as far as starting
the function is counted, whatever happens to the queue's own Redis afterwards. The start is
stamped with that Redis' clock (TIME), not the worker's: a worker may run with a skewed clock.
"""

import asyncio
import os
import random
import time

import redis

_clients = {}


def _client(url: str) -> redis.Redis:
    # One client per process and URL: a forked child must not share its parent's sockets.
    key = (os.getpid(), url)
    if key not in _clients:
        _clients[key] = redis.Redis.from_url(url, socket_timeout=10)
    return _clients[key]


def record(record_url: str, token: str, max_ms: int = 300) -> str:
    """RPUSH executions:<token> "<pid> <unix time>", then sleep up to `max_ms` ms (random)."""
    _record(record_url, token)
    time.sleep(random.uniform(0.002, max_ms / 1000))
    return token


async def record_async(record_url: str, token: str, max_ms: int = 300) -> str:
    """As `record`; the nap is an `await` (the record itself a short blocking call)."""
    _record(record_url, token)
    await asyncio.sleep(random.uniform(0.002, max_ms / 1000))
    return token


def _record(record_url: str, token: str) -> None:
    client = _client(record_url)
    seconds, micros = client.time()
    pipe = client.pipeline(transaction=False)
    pipe.rpush(f"executions:{token}", f"{os.getpid()} {seconds}.{micros:06d}")
    pipe.incr("executions")
    pipe.execute()
