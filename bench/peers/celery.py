"""Celery with the Redis broker, results ignored, tuned for throughput (no gossip, mingle
or heartbeat; prefetch multiplier 4, the default)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List

import redis
from celery import Celery, group

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
app = Celery("bench", broker=URL)
app.conf.update(
    task_ignore_result=True,
    task_default_queue="bench",
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    worker_send_task_events=False,
)
BATCH_API = "group(...).apply_async() (publishes one message per task)"
BATCH = 1000

_client = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
    return _client


@app.task(name="bench.noop")
def noop() -> None:
    _redis().incr("bench:done")


@app.task(name="bench.sleep10")
def sleep10() -> None:
    time.sleep(0.01)
    _redis().incr("bench:done")


@app.task(name="bench.stamp")
def stamp() -> None:
    _redis().rpush("bench:starts", repr(time.time()))


TASKS = {"noop": noop, "sleep10": sleep10, "stamp": stamp}


def enqueue(kind: str) -> None:
    TASKS[kind].delay()


def enqueue_batch(kind: str, n: int) -> None:
    for start in range(0, n, BATCH):
        group(TASKS[kind].s() for _ in range(min(BATCH, n - start))).apply_async()


def fill(kind: str, n: int) -> None:
    task = TASKS[kind]
    with app.producer_or_acquire() as producer:  # one connection for the whole fill
        for _ in range(n):
            task.apply_async(producer=producer)


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: prefork:N, solo:N (N solo processes), threads:N, gevent:N."""
    pool, count = mode.split(":")
    celery = str(Path(python).parent / "celery")
    base = [
        celery,
        "-A",
        "bench.peers.celery",
        "worker",
        "-Q",
        "bench",
        "-l",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    if pool == "solo":
        return [base + ["-P", "solo", "-n", f"bench{i}@%h"] for i in range(int(count))]
    return [base + ["-P", pool, "-c", count]]
