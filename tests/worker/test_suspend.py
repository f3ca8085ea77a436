"""SPEC section 3, control: suspend makes every worker stop taking jobs; resume undoes it."""

import time

import pytest

from rqconc import JobStatus, Queue
from rqconc.queue.control import is_suspended, resume, suspend
from rqconc.worker.registry import list_workers
from tests.support.worker_process import BACKENDS, wait_for


def registry_state(server):
    workers = list_workers(server.client())
    return workers[0]["state"] if workers else None


@pytest.mark.parametrize("backend", BACKENDS)
def test_suspend_lets_busy_children_finish_takes_nothing_new_and_resume_undoes_it(
    backend, redis_server, start_worker
):
    start_worker(backend, 2, redis_server.url)
    q = Queue(connection=redis_server.url)
    running = q.enqueue("tests.worker.jobs:nap", 1.5)
    wait_for(lambda: running.status == JobStatus.STARTED, message="job started")
    suspend(redis_server.url)
    assert is_suspended(redis_server.url)
    wait_for(lambda: registry_state(redis_server) == "suspended", message="suspended state")
    waiting = q.enqueue("tests.worker.jobs:add", 1, 1)
    wait_for(lambda: running.status == JobStatus.FINISHED, message="busy child finished")
    # A full tick after the busy job ended, the new job is still waiting.
    checked_until = time.monotonic() + 1.2
    while time.monotonic() < checked_until:
        assert waiting.status == JobStatus.QUEUED
        time.sleep(0.05)
    resume(redis_server.url)
    assert waiting.get(timeout=10) == 2
    wait_for(lambda: registry_state(redis_server) in ("idle", "busy"), message="resumed")


def test_a_timed_suspension_ends_by_itself(redis_server, start_worker):
    start_worker("threading", 1, redis_server.url)
    wait_for(lambda: registry_state(redis_server) == "idle", message="worker up")
    suspended_at = time.time()
    suspend(redis_server.url, duration=2.0)
    wait_for(lambda: registry_state(redis_server) == "suspended", message="suspended state")
    job = Queue(connection=redis_server.url).enqueue("tests.worker.jobs:add", 2, 2)
    assert job.get(timeout=10) == 4
    job.refresh()
    # The flag expires 2 s after it was set; the job cannot have started before that.
    assert job.started_at.timestamp() >= suspended_at + 1.9
    assert not is_suspended(redis_server.url)


def test_a_non_positive_duration_is_refused(redis_server):
    with pytest.raises(ValueError):
        suspend(redis_server.url, duration=0)
