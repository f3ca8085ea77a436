"""An item that returns past its deadline is never recorded done (issue 14, item 7): a
greenlet that computes without yielding cannot be ended in time, so it is failed as timed
out when it returns; the other backends end (or abandon) it at the deadline."""

import pytest

from tests.support.worker_process import BACKENDS, wait_for


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_item_that_overran_its_deadline_is_timed_out_not_done(backend, spool, start_worker):
    worker = start_worker(backend, 1, spool)
    spool.wait_idle(1)
    item = spool.add(cpu=1.5, timeout=1)
    wait_for(lambda: spool.events("timed_out"), timeout=15, message="timed out")
    follower = spool.add(sleep=0)
    wait_for(lambda: follower in spool.items("done"), timeout=15, message="next item runs")
    assert item not in spool.items("done")
    assert len(spool.events("timed_out")) == 1
    worker.close()
