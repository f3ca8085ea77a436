"""rqconc: tasks in bench/tasks.py (allowed with --allow bench); workers are `main.py`."""

from __future__ import annotations

import os
from typing import List

from rqconc import Queue

QUEUE = "bench"
TASKS = {
    "noop": "bench.tasks:noop",
    "sleep10": "bench.tasks:sleep10",
    "asleep10": "bench.tasks:asleep10",
    "stamp": "bench.tasks:stamp",
    "quiet": "bench.tasks:quiet",
}
BATCH_API = "Queue.enqueue_many (one Lua step per batch)"
BATCH = 1000

_queue = None


def queue() -> Queue:
    global _queue
    if _queue is None:
        _queue = Queue(QUEUE, connection=os.environ["BENCH_REDIS_URL"])
    return _queue


def enqueue(kind: str) -> None:
    queue().enqueue(TASKS[kind], result_ttl=0)


def enqueue_batch(kind: str, n: int) -> None:
    for start in range(0, n, BATCH):
        queue().enqueue_many([(TASKS[kind], ())] * min(BATCH, n - start), result_ttl=0)


fill = enqueue_batch


def workers(mode: str, python: str) -> List[List[str]]:
    """mode: BACKEND:SIZE[:SLOTS], e.g. forking:2, threading:20, forking:2:50 (--slots 50)."""
    backend, size, *slots = mode.split(":")
    return [
        [
            python,
            "main.py",
            backend,
            size,
            "-q",
            QUEUE,
            "--url",
            os.environ["BENCH_REDIS_URL"],
            "--allow",
            "bench",
            "--log-level",
            "WARNING",
            *(["--slots", slots[0]] if slots else []),
        ]
    ]
