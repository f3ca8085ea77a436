"""The chaos run's job: it records each execution on a separate Redis, then naps.

The record goes to a recording Redis that the chaos driver never faults (not through the
proxy, not the server that gets restarted), so every execution that got as far as starting
the function is counted, whatever happens to the queue's own Redis afterwards. The start is
stamped with that Redis' clock (TIME), not the worker's: a worker may run with a skewed clock.
"""

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
    client = _client(record_url)
    seconds, micros = client.time()
    pipe = client.pipeline(transaction=False)
    pipe.rpush(f"executions:{token}", f"{os.getpid()} {seconds}.{micros:06d}")
    pipe.incr("executions")
    pipe.execute()
    time.sleep(random.uniform(0.002, max_ms / 1000))
    return token
