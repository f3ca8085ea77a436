"""RQ: `rq worker` processes. RQ has no threads or greenlets: one process runs one job."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List

import redis
from rq import Queue

from bench.common import mark_done

URL = os.environ.get("BENCH_REDIS_URL", "")
QUEUE = "bench"
BATCH_API = "Queue.enqueue_many (one pipeline per batch)"
BATCH = 1000
WORKER_CLASSES = {
    "simple": "rq.worker.SimpleWorker",  # runs jobs in the worker process
    "fork": "rq.worker.Worker",
}  # classic: forks one process per job

_client = None
_queue = None


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
    mark_done()  # no Redis command of its own (bench/redis_cost.py)


TASKS = {"noop": noop, "sleep10": sleep10, "stamp": stamp, "quiet": quiet}


def queue() -> Queue:
    global _queue
    if _queue is None:
        _queue = Queue(QUEUE, connection=redis.Redis.from_url(os.environ["BENCH_REDIS_URL"]))
    return _queue


def enqueue(kind: str) -> None:
    queue().enqueue(TASKS[kind], result_ttl=0)


def enqueue_batch(kind: str, n: int) -> None:
    for start in range(0, n, BATCH):
        queue().enqueue_many(
            [Queue.prepare_data(TASKS[kind], result_ttl=0) for _ in range(min(BATCH, n - start))]
        )


fill = enqueue_batch


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: simple:N or fork:N — N separate `rq worker` processes of that class."""
    kind, count = mode.split(":")
    rq = str(Path(python).parent / "rq")
    return [
        [
            rq,
            "worker",
            "--url",
            os.environ["BENCH_REDIS_URL"],
            "-w",
            WORKER_CLASSES[kind],
            "--quiet",
            "--disable-job-desc-logging",
            "-n",
            f"bench-{i}",
            QUEUE,
        ]
        for i in range(int(count))
    ]
