"""Benchmark tasks. The no-op does one INCR, as every peer's no-op does (SPEC section 5)."""
import os

import redis

_client = None


def noop() -> None:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
    _client.incr("bench:done")
