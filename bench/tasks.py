"""rqconc's benchmark tasks. The no-op does one INCR, as every peer's no-op does (SPEC
section 5); the sleep task sleeps 10 ms first; stamp records when it started."""

import os
import time

import redis

from bench.common import mark_done

_client = None


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
