"""Jobs that starve their worker's loop: a CPU loop that never yields (gevent) and a C call
that holds the GIL (a catastrophic regex). Each run leaves its token in 'executions'."""

import re
import time

import redis


def compute(url: str, token: str, seconds: float) -> str:
    redis.Redis.from_url(url).rpush("executions", token)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:  # pure Python, never yields to gevent's hub
        pass
    return token


def backtrack(url: str, token: str, length: int) -> str:
    redis.Redis.from_url(url).rpush("executions", token)
    # Exponential backtracking inside one C call: the GIL is held throughout.
    re.match(r"(a+)+$", "a" * length + "b")
    return token
