"""A Redis outage, as a worker's log tells it (issue 15, item 7): one warning when Redis is
lost, however many children and duties notice it, and one line when it is back naming the
outage's length; each further failure is logged at DEBUG only."""

import re
import time

import pytest

from rqconc.store.keys import KeySpace
from rqconc.worker.connections import Connections
from tests.support.redis_server import RedisServer
from tests.support.waiting import wait_for

BACKENDS = ["forking", "multiprocessing", "threading", "gevent"]
LOST = re.compile(r" WARNING rqconc\.worker: cannot reach Redis")
RETRIED = re.compile(r" DEBUG rqconc\.worker: cannot reach Redis")
BACK = re.compile(r" INFO rqconc\.worker: Redis at \S+ is reachable again after [0-9.]+ s")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_outage_is_one_line_when_lost_and_one_when_back(redis_binary, start_worker, backend):
    server = RedisServer(redis_binary).start()
    try:
        worker = start_worker(backend, 4, server.url)
        wait_for(lambda: " started: backend=" in worker.output(), message="the worker's start")
        server.stop()
        # Many failures, from every child and duty, before Redis returns.
        wait_for(
            lambda: len(RETRIED.findall(worker.output())) >= 20,
            timeout=30,
            message="the worker to retry many times",
        )
        server.start()
        wait_for(lambda: BACK.search(worker.output()), timeout=30, message="Redis back")
        output = worker.output()
        assert len(LOST.findall(output)) == 1, output
        assert len(BACK.findall(output)) == 1, output
    finally:
        server.close()


def test_a_call_sent_before_the_outage_began_does_not_end_it(caplog):
    """A loaded CI run logged the outage twice: while Redis stopped, one child's take lost
    its reply and another's, sent earlier, was still answered; that answer ended the outage
    and the next failure began a second one."""
    connections = Connections("redis://127.0.0.1:1/0", KeySpace())
    sent_before = time.monotonic()
    with caplog.at_level("DEBUG", logger="rqconc.worker"):
        connections.redis_down(ConnectionError("lost"), "taking a job")
        connections.redis_up(sent_before)  # answered, but sent before the loss
        connections.redis_down(ConnectionError("lost"), "taking a job")
        connections.redis_up(time.monotonic())  # sent after: Redis is back
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    backs = [r for r in caplog.records if "reachable again" in r.getMessage()]
    assert len(warnings) == 1 and len(backs) == 1
