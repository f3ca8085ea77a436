"""SPEC 18 at its size: a shipper (a consumer group) down while 50,000 jobs run on a real
worker, with the default retention (24 h, 1,000,000 entries), reads all of their events when
it comes back, and the dropped counter stays 0 (SOAK_SHIPPED_JOBS to change the count).
tests/worker/test_event_retention.py runs the same with 6,000 jobs and a small cap in `make
test`.

Not part of `make test`: `make soak` runs it (RQCONC_SOAK=1).
"""

import os
import time

import pytest
import redis

from rqconc import EventStream, Queue
from rqconc.store.keys import KeySpace
from tests.support.redis_server import RedisServer
from tests.support.worker_process import redis_worker, wait_for

pytestmark = [
    pytest.mark.soak,
    pytest.mark.skipif(
        not os.environ.get("RQCONC_SOAK"), reason="the soak runs with `make soak` (RQCONC_SOAK=1)"
    ),
]

JOBS = int(os.environ.get("SOAK_SHIPPED_JOBS", "50000"))
BATCH = 1000


@pytest.mark.timeout(1800)
def test_a_shipper_down_while_50000_jobs_run_reads_all_of_their_events(tmp_path, redis_binary):
    server = RedisServer(redis_binary).start()
    client = redis.Redis.from_url(server.url)
    stream, queue = EventStream(client), Queue("shipped", connection=server.url)
    worker = redis_worker(
        "forking", 2, server.url, tmp_path, "-q", "shipped", "--log-level", "WARNING"
    )
    try:
        stream.ship(print, group="shippers", stop=lambda: True)  # the group, then it is down
        for start in range(0, JOBS, BATCH):
            queue.enqueue_many([("tests.soak.jobs:noop", ())] * min(BATCH, JOBS - start))
        finished = queue.keys.finished("shipped")
        wait_for(lambda: client.zcard(finished) >= JOBS, timeout=1500, message="every job")
        by_job, finished_events = {}, []
        deadline = time.monotonic() + 300

        def handle(event):
            by_job.setdefault(event["job_id"], []).append(event["event"])
            if event["event"] == "finished":
                finished_events.append(event["job_id"])

        def done():
            return len(finished_events) >= JOBS or time.monotonic() > deadline

        stream.ship(handle, group="shippers", stop=done)
        assert len(by_job) == JOBS
        assert all(events == ["queued", "started", "finished"] for events in by_job.values())
        assert int(client.hget(KeySpace("rqconc").metrics, "events_dropped") or 0) == 0
    finally:
        worker.close()
        server.close()
