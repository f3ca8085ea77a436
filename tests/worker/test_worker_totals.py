"""SPEC 17 "Who does what": each worker's totals since it started (jobs finished, failed,
busy seconds), counted by its supervisor and written with its heartbeat, on every backend."""

import pytest

from rqconc.connection.clients import connect
from rqconc.queue.queue import Queue
from rqconc.worker.registry import list_workers
from tests.support.waiting import wait_for
from tests.support.worker_process import BACKENDS

NAP = "tests.metrics.metrics_jobs:nap"
BOOM = "tests.metrics.metrics_jobs:boom"
ANAP = "tests.metrics.metrics_jobs:anap"  # async def jobs: the native core's own path
ABOOM = "tests.metrics.metrics_jobs:aboom"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_s_totals_count_its_finished_and_failed_jobs_and_busy_time(
    backend, redis_server, start_worker
):
    url = redis_server.url
    q = Queue("totals", connection=url)
    jobs = [q.enqueue(NAP, 0.1) for _ in range(2)] + [q.enqueue(ANAP, 0.1) for _ in range(2)]
    jobs += [q.enqueue(BOOM, "no", retry=None), q.enqueue(ABOOM, "no", retry=None)]
    start_worker(backend, 2, url, "-q", "totals", "--name", "counting")
    wait_for(
        lambda: [j.status for j in jobs] == ["finished"] * 4 + ["failed"] * 2,
        timeout=60,
        message="every job ended",
    )

    def totals():
        listed = list_workers(connect(url))
        shown = listed[0]["totals"] if listed else {}
        return shown if (shown.get("finished"), shown.get("failed")) == (4, 2) else None

    shown = wait_for(totals, timeout=15, interval=0.2, message="4 finished, 2 failed")
    # Four naps of 0.1 s at least; far less than the minute a slow machine would explain.
    assert 0.4 <= shown["busy_seconds"] < 60
