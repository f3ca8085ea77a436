"""Huey with RedisHuey (blocking BRPOP dequeue, the default); results not stored."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List

import redis
from huey import RedisHuey

from bench.common import mark_done

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
huey = RedisHuey("bench", url=URL, results=False)
BATCH_API = "task.map(...) (one enqueue per task)"
BATCH = 1000

_client = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
    return _client


@huey.task()
def noop() -> None:
    _redis().incr("bench:done")


@huey.task()
def sleep10() -> None:
    time.sleep(0.01)
    _redis().incr("bench:done")


@huey.task()
def stamp() -> None:
    _redis().rpush("bench:starts", repr(time.time()))


@huey.task()
def quiet() -> None:
    mark_done()  # no Redis command of its own (bench/redis_cost.py)


TASKS = {"noop": noop, "sleep10": sleep10, "stamp": stamp, "quiet": quiet}


def enqueue(kind: str) -> None:
    TASKS[kind]()


def enqueue_batch(kind: str, n: int) -> None:
    for start in range(0, n, BATCH):
        TASKS[kind].map([()] * min(BATCH, n - start))


def fill(kind: str, n: int) -> None:
    for _ in range(n):
        TASKS[kind]()


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: WORKER_TYPE:N (process, thread, greenlet)."""
    kind, count = mode.split(":")
    return [
        [
            str(Path(python).parent / "huey_consumer"),
            "bench.peers.huey.huey",
            "-k",
            kind,
            "-w",
            count,
            "-q",
            "-C",
        ]
    ]
