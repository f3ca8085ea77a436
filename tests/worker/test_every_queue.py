"""`-q all` (or `-q '*'`): a worker listens on every queue of the namespace, including the
queues that appear while it runs (SPEC section 14)."""

import pytest

from rqconc import JobStatus, Queue
from rqconc.worker.registry import list_workers
from tests.support.worker_process import wait_for


def listed(server):
    return wait_for(lambda: list_workers(server.client()), 20, message="the worker listed")


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_a_queue_created_after_the_worker_started_gets_its_jobs_run(
    backend, redis_server, start_worker
):
    start_worker(backend, 2, redis_server.url, "-q", "all", "--strategy", "round-robin")
    # Started on a namespace without any queue: the registry shows it listens on all.
    assert listed(redis_server)[0]["queues"] == ["*"]
    url = redis_server.url
    assert Queue("sms", connection=url).enqueue("tests.worker.jobs:add", 1, 2).get(20) == 3
    late = Queue("emails", connection=url).enqueue("tests.worker.jobs:add", 3, 4)
    assert late.get(timeout=20) == 7


def test_star_with_burst_drains_every_queue_then_exits_0(redis_server, start_worker):
    jobs = [
        Queue(name, connection=redis_server.url).enqueue("tests.worker.jobs:add", n, n)
        for n, name in enumerate(["a", "b", "c"])
    ]
    worker = start_worker("threading", 2, redis_server.url, "-q", "*", "--burst")
    assert worker.wait_exit(30) == 0, worker.output()
    assert [j.status for j in jobs] == [JobStatus.FINISHED] * 3


def test_all_with_other_names_is_misuse(redis_server, start_worker):
    worker = start_worker("threading", 1, redis_server.url, "-q", "all,emails")
    assert worker.wait_exit(20) == 2
    assert "every queue" in worker.output() and "Traceback" not in worker.output()
