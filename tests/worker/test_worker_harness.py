"""The `start_worker` fixture's promise that other tests rely on: once a test is over, no
process of its workers is left, so nothing of it reaches the next test on a shared server."""

import pytest

from rqconc.queue.queue import Queue
from tests.support.worker_process import BACKENDS, pid_alive, wait_for


def blocked_clients(server):
    return server.client().info("clients")["blocked_clients"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_close_returns_once_every_process_of_the_worker_is_gone(
    redis_server, start_worker, backend
):
    worker = start_worker(backend, 2, redis_server.url, "-q", "harness")
    # The children wait on the queue's marker, in Redis, with a take pipelined behind (the
    # asyncio backend's children share one such wait).
    wait_for(lambda: blocked_clients(redis_server) >= 1, timeout=30, message="a marker wait")
    pids = [worker.pid, *worker.child_pids()]
    worker.close()
    assert [pid for pid in pids if pid_alive(pid)] == []


def test_a_job_enqueued_right_after_a_killed_worker_is_not_leased_to_it(redis_url, start_worker):
    """As the forking and threading runs of one test follow each other on one server: the
    second run's first job must not go to the first run's dying children (it came back 15 s
    later as a lost lease)."""
    first = start_worker("forking", 2, redis_url, "-q", "shared")
    q = Queue("shared", connection=redis_url)
    warm = q.enqueue("tests.queue.tasks:add", 1, 1)
    assert warm.get(timeout=30) == 2
    first.close()  # as at the end of a test
    job = q.enqueue("tests.queue.tasks:add", 2, 2)
    start_worker("threading", 2, redis_url, "-q", "shared")
    assert job.get(timeout=30) == 4
    assert (job.attempts, job.lost) == (1, 0)
