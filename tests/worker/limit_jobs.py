"""Jobs for tests/worker/test_flow_control.py (run by workers under --allow tests): each
records its run in a Redis list (one JSON entry: its start and end, by this host's clock,
and what it was called with), so a test checks every overlap and every start."""

import json
import os
import time
from typing import Any, Dict

import redis

_CLIENTS: Dict[str, redis.Redis] = {}


def _client(url: str) -> redis.Redis:
    if url not in _CLIENTS:
        _CLIENTS[url] = redis.Redis.from_url(url)
    return _CLIENTS[url]


def span(url: str, key: str, seconds: float = 0.0, tag: Any = None, fail: bool = False) -> str:
    """Sleeps `seconds` between its recorded start and end; raises after that if `fail`
    (a failure ends a run without chaining the next take: another worker may get it)."""
    start = time.time()
    if seconds:
        time.sleep(seconds)
    end = time.time()
    entry = {"start": start, "end": end, "tag": tag, "pid": os.getpid()}
    _client(url).rpush(key, json.dumps(entry))
    if fail:
        raise ValueError("failing on purpose")
    return "ok"
