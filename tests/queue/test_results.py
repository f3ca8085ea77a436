"""SPEC sections 3 and 7, Results: job.get, return_value, result_ttl."""

import threading
import time

import pytest

from rqconc.errors import JobFailed, NoSuchJob
from rqconc.queue.counts import queue_counts
from rqconc.queue.job import Job, JobStatus
from rqconc.queue.queue import Queue
from tests.queue import tasks
from tests.queue.helpers import CountingConnection, counting_client, take_and_run, wait_for
from tests.support.lua_calls import has_functions, preloaded


def run_later(source, delay):
    """Perform the next job from another thread after `delay` seconds."""

    def run():
        time.sleep(delay)
        take_and_run(source, "later")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_get_returns_the_return_value(queue, source):
    job = queue.enqueue(tasks.echo, 1, k="v")
    take_and_run(source)
    assert job.get(timeout=1) == {"args": [1], "kwargs": {"k": "v"}}
    assert job.return_value == {"args": [1], "kwargs": {"k": "v"}}
    assert job.status is JobStatus.FINISHED and job.attempts == 1


def test_get_blocks_until_the_job_ends_without_polling(redis_url, source):
    client = counting_client(redis_url)
    job = Queue("default", connection=client).enqueue(tasks.add, 1, 2)
    client.ping()  # the pool's connection handshake is not what is counted below
    preloaded(client, "await")  # nor the step's load, once per server
    thread = run_later(source, 0.8)
    before = CountingConnection.sent
    start = time.monotonic()
    assert job.get(timeout=5) == 3
    waited = time.monotonic() - start
    assert 0.7 < waited < 1.5
    # One status check, one blocking wait; on Redis 6.2 a client's first step also learns
    # that FCALL is refused (rqconc/store/functions.py), once.
    assert CountingConnection.sent - before <= (2 if has_functions(client) else 3)
    thread.join(5)


def test_every_waiter_sees_the_outcome(queue, source):
    job = queue.enqueue(tasks.add, 2, 3)
    results = []
    waiters = [
        threading.Thread(
            target=lambda: results.append(Job(job.id, queue.connection).get(timeout=5))
        )
        for _ in range(5)
    ]
    for waiter in waiters:
        waiter.start()
    take_and_run(source)
    for waiter in waiters:
        waiter.join(5)
    assert results == [5] * 5
    assert job.get(timeout=0) == 5  # and later callers too


def test_get_raises_job_failed_with_type_message_and_traceback(queue, source):
    job = queue.enqueue(tasks.boom, "it broke")
    take_and_run(source)
    with pytest.raises(JobFailed) as caught:
        job.get(timeout=1)
    failure = caught.value
    assert failure.job_id == job.id
    assert (failure.exc_type, failure.exc_message) == ("ValueError", "it broke")
    assert "Traceback" in failure.traceback and "tasks.py" in failure.traceback
    assert job.return_value is None and job.status is JobStatus.FAILED


def test_get_raises_timeout_error_when_the_wait_times_out(queue):
    job = queue.enqueue(tasks.add, 1, 2)
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        job.get(timeout=0.3)
    assert 0.25 < time.monotonic() - start < 1.0
    with pytest.raises(TimeoutError):
        job.get(timeout=0)


def test_return_value_does_not_block(queue):
    job = queue.enqueue(tasks.add, 1, 2)
    start = time.monotonic()
    assert job.return_value is None
    assert time.monotonic() - start < 0.5


def test_result_ttl_expiry_deletes_the_job_and_its_result(queue, source, client, keys):
    job = queue.enqueue(tasks.add, 1, 2, result_ttl=1)
    take_and_run(source)
    assert job.get(timeout=1) == 3
    wait_for(
        lambda: not client.exists(keys.job(job.id), keys.done(job.id)),
        timeout=5,
        message="the job and its result to expire",
    )
    with pytest.raises(NoSuchJob):
        Job.fetch(job.id, connection=client)
    assert job.return_value is None
    assert client.zscore(keys.finished("default"), job.id) is not None  # trimmed lazily
    queue.enqueue(tasks.add, 1, 1)
    take_and_run(source, "next")
    assert client.zscore(keys.finished("default"), job.id) is None


def test_a_maintenance_pass_trims_expired_finished_entries_of_a_quiet_queue(
    redis_url, make_source, client, keys
):
    quiet, busy = Queue("quiet", connection=redis_url), Queue("default", connection=redis_url)
    source = make_source(["quiet", "default"])
    brief = quiet.enqueue(tasks.add, 1, 2, result_ttl=1)
    kept = quiet.enqueue(tasks.add, 3, 4, result_ttl=-1)
    other = busy.enqueue(tasks.add, 5, 6, result_ttl=1)
    for n in range(3):
        take_and_run(source, f"c{n}")
    wait_for(
        lambda: not client.exists(keys.job(brief.id), keys.job(other.id)),
        timeout=5,
        message="the results to expire",
    )
    # Before any pass, `rqconc info` counts only the entries whose result is still kept.
    counts = {
        row["name"]: row["finished"]
        for row in queue_counts(client, ["quiet", "default"], keys.namespace)
    }
    assert counts == {"quiet": 1, "default": 0}
    assert client.zscore(keys.finished("quiet"), brief.id) is not None  # no completion since
    source.maintain()
    assert [m.decode() for m in client.zrange(keys.finished("quiet"), 0, -1)] == [kept.id]
    assert client.zcard(keys.finished("default")) == 0


def test_result_ttl_zero_keeps_nothing_but_current_waiters_get_the_value(
    queue, source, client, keys
):
    job = queue.enqueue(tasks.add, 1, 2, result_ttl=0)
    thread = run_later(source, 0.3)
    assert job.get(timeout=5) == 3
    thread.join(5)
    assert not client.exists(keys.job(job.id))
    assert client.zcard(keys.finished("default")) == 0


def test_result_ttl_minus_one_keeps_what_a_waiter_blocks_on_forever(queue, source, client, keys):
    job = queue.enqueue(tasks.add, 1, 2, result_ttl=-1)
    thread = run_later(source, 0.3)
    assert job.get(timeout=5) == 3
    thread.join(5)
    assert client.ttl(keys.job(job.id)) == -1 and client.ttl(keys.done(job.id)) == -1


def test_result_ttl_minus_one_keeps_the_result_forever(queue, source, client, keys):
    job = queue.enqueue(tasks.add, 1, 2, result_ttl=-1)
    take_and_run(source)
    assert client.ttl(keys.job(job.id)) == -1
    assert not client.exists(keys.done(job.id))  # nobody waited: no outcome list
    assert job.return_value == 3


def test_a_wait_that_ends_a_hair_before_its_deadline_never_blocks_forever(queue):
    # Redis truncates blocking timeouts to whole ms and reads 0 as "forever".
    job = queue.enqueue(tasks.add, 1, 2)
    for timeout in (0.0004, 0.0009, 0.001, 0.0015, 0.011):
        with pytest.raises(TimeoutError):
            job.get(timeout=timeout)
