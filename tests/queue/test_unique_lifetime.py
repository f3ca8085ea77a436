"""unique:<key> (lua/enqueue_unique.lua) lives no longer than its promise (SPEC 11): once its
holder ended, finished, failed for good, canceled, expired or deleted, the key expires
`unique_for` after the end, or goes at once without one; a key that a later job holds is
left alone. Then a new enqueue with the key makes a new job."""

import pytest

from rqconc import Queue
from rqconc.store.keys import unique_key
from rqconc.store.steps.core import FailReply, Steps
from tests.support.waiting import wait_for

JOB = "tests.worker.limit_jobs:span"


def redis_ms(q):
    seconds, micros = q.connection.time()
    return seconds * 1000 + micros // 1000


def held(q, key):
    return q.connection.get(unique_key(q.keys, key))


def gone_then_new(q, key, ended, **options):
    """The key disappears (polled with a deadline), and the next enqueue is a new job."""
    wait_for(lambda: held(q, key) is None, timeout=5, message=f"unique:{key} gone")
    again = q.enqueue(JOB, "redis://unused", "runs", unique_key=key, **options)
    assert again.id != ended.id and held(q, key) == again.id.encode()


@pytest.mark.parametrize("unique_for", [None, 1])
def test_a_finished_holders_key_goes_after_its_unique_for(redis_url, start_worker, unique_for):
    q = Queue("uniq-finished", connection=redis_url)
    options = {} if unique_for is None else {"unique_for": unique_for}
    job = q.enqueue(JOB, redis_url, "runs", unique_key="fin", **options)
    start_worker("threading", 1, redis_url, "-q", "uniq-finished")
    wait_for(lambda: job.status == "finished", timeout=15, message="the job finished")
    if unique_for:  # held for its unique_for after the end, then gone
        assert 0 < q.connection.pttl(unique_key(q.keys, "fin")) <= 1000
    gone_then_new(q, "fin", job, **options)


@pytest.mark.parametrize("unique_for", [None, 1])
def test_a_failed_holders_key_goes_after_its_unique_for(redis_url, start_worker, unique_for):
    q = Queue("uniq-failed", connection=redis_url)
    options = {} if unique_for is None else {"unique_for": unique_for}
    job = q.enqueue(JOB, redis_url, "runs", 0, None, True, unique_key="f", retry=None, **options)
    start_worker("threading", 1, redis_url, "-q", "uniq-failed")
    wait_for(lambda: job.status == "failed", timeout=15, message="the job failed for good")
    if unique_for:
        assert 0 < q.connection.pttl(unique_key(q.keys, "f")) <= 1000
    gone_then_new(q, "f", job, **options)


def test_a_key_ends_with_a_job_canceled_expired_or_deleted_while_waiting(redis_url):
    q = Queue("uniq-waiting", connection=redis_url)
    canceled = q.enqueue(JOB, redis_url, "runs", unique_key="c", unique_for=1)
    deleted = q.enqueue(JOB, redis_url, "runs", unique_key="d")
    expired = q.enqueue(JOB, redis_url, "runs", unique_key="e", ttl=0.05)
    assert canceled.cancel() and deleted.delete()
    assert 0 < q.connection.pttl(unique_key(q.keys, "c")) <= 1000
    assert held(q, "d") is None  # no unique_for: gone with the job at once
    # A take past its ttl (by Redis' clock) cancels it with an `expired` event, unrun.
    expires_ms = int(q.connection.hget(q.keys.job(expired.id), "expires_at"))
    wait_for(lambda: redis_ms(q) > expires_ms, message="the job's ttl over")
    assert Steps(q.connection, q.keys).take("claim", ["uniq-waiting"], 30_000, "w") == -1
    assert expired.status == "canceled"
    for key, job in (("c", canceled), ("d", deleted), ("e", expired)):
        gone_then_new(q, key, job)


def test_a_running_holder_canceled_or_failed_for_good_releases_its_key(redis_url):
    q = Queue("uniq-running", connection=redis_url)
    steps = Steps(q.connection, q.keys)
    first = q.enqueue(JOB, redis_url, "runs", unique_key="r1")
    second = q.enqueue(JOB, redis_url, "runs", unique_key="r2", unique_for=60)
    assert steps.take("c1", ["uniq-running"], 30_000, "w")[0] == first.id
    assert steps.take("c2", ["uniq-running"], 30_000, "w")[0] == second.id
    assert first.cancel()  # asked to stop; the supervisor's step with the claim ends it
    steps.cancel(first.id, claim="c1")
    reply = steps.fail("c2", second.id, "uniq-running", ("ValueError", "no", ""))
    assert reply is FailReply.FAILED
    assert held(q, "r1") is None
    assert 59_000 < q.connection.pttl(unique_key(q.keys, "r2")) <= 60_000
    gone_then_new(q, "r1", first)


def test_a_key_taken_over_by_a_later_job_is_left_alone(redis_url):
    q = Queue("uniq-later", connection=redis_url)
    old = q.enqueue(JOB, redis_url, "runs", unique_key="k")
    q.connection.set(unique_key(q.keys, "k"), "someone-else")  # as if another job held it
    assert old.cancel()
    assert held(q, "k") == b"someone-else" and q.connection.ttl(unique_key(q.keys, "k")) == -1


def test_requeueing_a_dead_letter_holds_its_key_again(redis_url):
    q = Queue("uniq-requeued", connection=redis_url)
    steps = Steps(q.connection, q.keys)
    job = q.enqueue(JOB, redis_url, "runs", unique_key="dl", unique_for=60)
    assert steps.take("c1", ["uniq-requeued"], 30_000, "w")[0] == job.id
    steps.fail("c1", job.id, "uniq-requeued", ("ValueError", "no", ""))
    assert q.connection.pttl(unique_key(q.keys, "dl")) > 0
    assert q.failed.requeue(job.id)
    assert q.connection.ttl(unique_key(q.keys, "dl")) == -1 and held(q, "dl") == job.id.encode()


def test_requeueing_a_dead_letter_whose_key_another_job_holds_is_refused(redis_url):
    """Two waiting jobs held one key: the requeue is refused, naming the holder, until
    the key is free again; then the requeued job takes it."""
    q = Queue("uniq-requeued", connection=redis_url)
    steps = Steps(q.connection, q.keys)
    failed = q.enqueue(JOB, redis_url, "runs", unique_key="dl")
    assert steps.take("c1", ["uniq-requeued"], 30_000, "w")[0] == failed.id
    steps.fail("c1", failed.id, "uniq-requeued", ("ValueError", "no", ""))
    holder = q.enqueue(JOB, redis_url, "runs", unique_key="dl")
    assert holder.id != failed.id
    with pytest.raises(ValueError, match=f"job {holder.id} holds its unique_key 'dl'"):
        q.failed.requeue(failed.id)
    assert q.failed.requeue_all() == 0  # it stays a dead letter
    assert q.failed.job_ids == [failed.id] and q.job_ids == [holder.id]
    assert held(q, "dl") == holder.id.encode()
    assert holder.cancel()  # the key is free again
    assert q.failed.requeue(failed.id)
    assert held(q, "dl") == failed.id.encode()
    assert q.connection.ttl(unique_key(q.keys, "dl")) == -1


@pytest.mark.parametrize("unique_for", [None, 60])
def test_emptying_a_queue_ends_the_unique_keys_of_its_jobs(redis_url, unique_for):
    """q.empty() left each removed job's key behind for ever (1,000 jobs, 1,000 keys)."""
    q = Queue("uniq-emptied", connection=redis_url)
    options = {} if unique_for is None else {"unique_for": unique_for}
    jobs = [q.enqueue(JOB, redis_url, "runs", unique_key=f"e{i}", **options) for i in range(600)]
    assert q.empty() == 600  # more than one batch of the step
    for i in (0, 599):
        if unique_for:  # kept unique_for after the end, as for a deleted job
            assert 0 < q.connection.ttl(unique_key(q.keys, f"e{i}")) <= unique_for
        else:
            assert held(q, f"e{i}") is None
    if not unique_for:
        assert not q.connection.keys(unique_key(q.keys, "*"))
        gone_then_new(q, "e7", jobs[7])
