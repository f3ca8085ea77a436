"""Job functions the end-to-end tests enqueue; each execution leaves a trace in Redis."""
import os
import time

import redis


def record(url: str, token: str, seconds: float = 0.0) -> str:
    """Append '<token>' to the list 'executions', then sleep."""
    client = redis.Redis.from_url(url)
    client.rpush("executions", token)
    client.rpush(f"pids:{token}", os.getpid())
    if seconds:
        time.sleep(seconds)
    return token


def add(a: int, b: int) -> int:
    return a + b


def nap(seconds: float) -> None:
    time.sleep(seconds)

