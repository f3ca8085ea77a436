"""Jobs and chord callbacks for tests/worker/test_groups.py (run by workers under --allow
tests). A callback records each run in Redis (a list per chord), so a test counts runs."""

import json
import time
from typing import Any, List

import redis


def square(x: int, seconds: float = 0.0) -> int:
    if seconds:
        time.sleep(seconds)
    return x * x


def fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise ValueError(f"{x} is bad")
    return x


def flaky(x: int, url: str, key: str) -> int:
    """Fails on its first attempt, succeeds on the next (the count lives in Redis)."""
    if redis.Redis.from_url(url).incr(f"{key}:{x}") == 1:
        raise ConnectionError("first attempt fails")
    return x


def record(results: List[Any], url: str, key: str) -> int:
    """A chord callback: pushes its results to `key`, one entry per run."""
    redis.Redis.from_url(url).rpush(key, json.dumps(results))
    return len(results)


def blob(size: int) -> str:
    """A big result: `size` characters."""
    return "x" * size


def record_sizes(results: List[Any], url: str, key: str) -> int:
    """A chord callback of big results: records their sizes, not the results."""
    redis.Redis.from_url(url).rpush(key, json.dumps([len(r) for r in results]))
    return len(results)
