"""The admin API (SPEC section 12): q.delete(), job.delete(), job.position, q.promote(),
q.fetch_jobs(), against a real Redis and, where a worker matters, a real worker."""

import threading

import pytest

from rqconc import Dependency, JobFailed, JobStatus, NoSuchJob, Queue
from rqconc.store.scripts import script
from tests.support.waiting import wait_for

ADD = "tests.queue.tasks:add"
SLEEP = "tests.queue.tasks:sleep_then_return"


def test_admin_scripts_have_headers_listing_keys_argv_and_returns():
    for name in ("promote", "delete_jobs"):
        header = script(name).source.split("]]")[0]
        assert "KEYS[1]" in header and "ARGV[1]" in header and "Returns" in header, name


def test_position_is_the_place_in_run_order_and_none_when_not_waiting(queue):
    low = queue.enqueue(ADD, 1, 1, priority=0)
    first = queue.enqueue(ADD, 1, 2)
    high = queue.enqueue(ADD, 1, 3, priority=5)
    later = queue.enqueue_in(3600, ADD, 1, 4)
    assert [high.position, first.position, low.position] == [0, 1, 2]
    assert later.position is None
    assert queue.fetch_job(low.id).position == 2
    low.cancel()
    assert low.position is None


def test_fetch_jobs_loads_in_order_with_none_for_missing(queue):
    a, b = queue.enqueue(ADD, 1, 2), queue.enqueue(ADD, 3, 4)
    found = queue.fetch_jobs([b.id, "nope", a.id])
    assert [j.id if j else None for j in found] == [b.id, None, a.id]
    assert found[0].args == [3, 4] and found[0].field("status") == "queued"


def test_promote_runs_a_scheduled_job_now_at_the_back_of_the_queue(queue, client, keys):
    waiting = queue.enqueue(ADD, 1, 1)
    later = queue.enqueue_in(3600, ADD, 2, 2)
    assert queue.promote(later.id) is True
    assert later.status is JobStatus.QUEUED and later.position == 1
    assert client.zscore(keys.scheduled("default"), later.id) is None
    assert queue.job_ids == [waiting.id, later.id]
    assert queue.promote(later) is False  # queued already: nothing to do


def test_promote_releases_a_deferred_job_from_its_parents(queue, client, keys):
    parent = queue.enqueue_in(3600, ADD, 1, 1)
    child = queue.enqueue(ADD, 2, 2, depends_on=parent)
    assert child.status is JobStatus.DEFERRED
    assert queue.promote(child.id) is True
    assert child.status is JobStatus.QUEUED and queue.job_ids == [child.id]
    assert client.zscore(keys.deferred("default"), child.id) is None
    # When the parent ends later, the child is not enqueued a second time.
    queue.promote(parent.id)
    assert queue.job_ids == [child.id, parent.id]


def test_promote_refuses_missing_jobs_and_jobs_of_other_queues(redis_url, queue):
    with pytest.raises(NoSuchJob):
        queue.promote("nope")
    other = Queue("other", redis_url).enqueue_in(3600, ADD, 1, 1)
    with pytest.raises(ValueError, match="not a job of queue 'default'"):
        queue.promote(other.id)
    assert other.status is JobStatus.SCHEDULED


def test_job_delete_removes_a_waiting_job_and_cancels_its_dependents(queue, client, keys):
    parent = queue.enqueue(ADD, 1, 1)
    child = queue.enqueue(ADD, 2, 2, depends_on=parent)
    tolerant = queue.enqueue(ADD, 3, 3, depends_on=Dependency(parent, allow_failure=True))
    assert parent.delete() is True
    assert client.exists(keys.job(parent.id)) == 0
    with pytest.raises(NoSuchJob):
        parent.refresh()
    assert child.status is JobStatus.CANCELED
    assert tolerant.status is JobStatus.QUEUED and queue.job_ids == [tolerant.id]
    assert parent.delete() is False  # nothing left to delete


def test_a_waiter_on_a_deleted_job_wakes_with_job_canceled(queue):
    job = queue.enqueue_in(3600, ADD, 1, 1)
    job.delete()
    with pytest.raises(JobFailed) as failed:
        job.get(timeout=5)
    assert failed.value.exc_type == "rqconc.errors.JobCanceled"


def test_queue_delete_removes_every_job_that_is_not_running(redis_url, queue, client, keys):
    waiting = [queue.enqueue(ADD, i, i) for i in range(1200)]  # more than one batch
    scheduled = queue.enqueue_in(3600, ADD, 1, 1)
    deferred = queue.enqueue(ADD, 1, 1, depends_on=scheduled)
    queue.cron("0 0 1 1 *", ADD, 1, 2, id="yearly")
    other = Queue("other", redis_url).enqueue(ADD, 1, 1)
    assert queue.delete() == 1202
    assert queue.count == 0 and queue.scheduled_job_ids == [] and queue.crons() == []
    for job in (waiting[0], waiting[-1], scheduled, deferred):
        assert client.exists(keys.job(job.id)) == 0
    assert not client.sismember(keys.queues, "default")
    assert other.status is JobStatus.QUEUED


def test_queue_delete_also_removes_finished_and_failed_jobs(redis_url, start_worker):
    q = Queue("admin", redis_url)
    done, bad = q.enqueue(ADD, 1, 1), q.enqueue("tests.queue.tasks:boom")
    start_worker("threading", 2, redis_url, "-q", "admin")
    assert done.get(timeout=15) == 2
    with pytest.raises(JobFailed):
        bad.get(timeout=15)
    assert len(q.failed) == 1
    assert q.delete() == 2
    assert len(q.failed) == 0
    with pytest.raises(NoSuchJob):
        done.refresh()


def test_a_running_job_survives_queue_delete_and_its_result_is_recorded(redis_url, start_worker):
    q = Queue("admin", redis_url)
    running = q.enqueue(SLEEP, 1.5, "kept")
    waiting = q.enqueue(ADD, 1, 1, priority=0)
    start_worker("threading", 1, redis_url, "-q", "admin")
    wait_for(lambda: running.status is JobStatus.STARTED, 15, message="the job started")
    assert q.delete() == 1
    with pytest.raises(ValueError, match="is running"):
        running.delete()
    assert running.get(timeout=15) == "kept"
    with pytest.raises(NoSuchJob):
        waiting.refresh()
    assert running.delete() is True  # ended now: it can go


def test_a_promoted_job_is_run_by_a_worker(redis_url, start_worker):
    q = Queue("admin", redis_url)
    later = q.enqueue_in(3600, ADD, 20, 22)
    start_worker("threading", 1, redis_url, "-q", "admin")
    q.promote(later.id)
    assert later.get(timeout=15) == 42


def test_empty_ends_each_job_as_delete_does(queue, client, keys):
    """q.empty() popped and deleted in Python: dependents waited for ever and a caller
    blocked in get() waited out its timeout. Now each job ends as a deleted one."""
    parent = queue.enqueue(ADD, 1, 1)
    other = Queue("other", connection=queue.connection)
    child = other.enqueue(ADD, 2, 2, depends_on=parent)
    lenient = other.enqueue(ADD, 3, 3, depends_on=Dependency(parent, allow_failure=True))
    outcome = []

    def wait():
        try:
            outcome.append(parent.get(timeout=20))
        except JobFailed as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_for(lambda: client.hget(keys.job(parent.id), "waiters"), message="get() waiting")
    assert queue.empty() == 1
    waiter.join(5)
    assert not waiter.is_alive()
    assert isinstance(outcome[0], JobFailed)
    assert outcome[0].exc_type == "rqconc.errors.JobCanceled"
    assert child.status is JobStatus.CANCELED
    assert lenient.status is JobStatus.QUEUED
    assert not client.exists(keys.job(parent.id))
