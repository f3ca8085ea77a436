"""`?max_connections=N` in the URL (issue 14 item 13): the direct connections of the enqueue
and of every worker child are not the pool's, so they never use up its cap."""

import pytest

from rqconc import Queue


def test_enqueues_leave_the_pool_to_the_producers_own_calls(redis_server):
    url = redis_server.url + "?max_connections=1"
    queue = Queue(connection=url)
    for n in range(3):
        queue.enqueue("tests.worker.jobs:add", n, 1)
    assert queue.count == 3  # a plain call on the pool's one connection
    assert len(queue.job_ids) == 3


@pytest.mark.parametrize("backend", ["threading", "gevent"])
def test_a_worker_whose_children_are_replaced_keeps_taking_jobs(
    backend, redis_server, start_worker
):
    url = redis_server.url + "?max_connections=4"
    # Each child ends after one job and is replaced: 12 children in turn on 2 slots.
    start_worker(backend, 2, url, "--max-jobs-per-child", "1")
    queue = Queue(connection=redis_server.url)
    jobs = [queue.enqueue("tests.worker.jobs:add", n, 1) for n in range(12)]
    assert [job.get(timeout=30) for job in jobs] == [n + 1 for n in range(12)]
