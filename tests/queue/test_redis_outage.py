"""SPEC section 4, Redis unreachable: a worker keeps retrying, logs without the password,
and resumes by itself without losing or duplicating a finished job."""

import logging
import pickle
import threading

import pytest

from rqconc.connection.backoff import Backoff
from rqconc.queue.job import JobStatus
from rqconc.queue.queue import Queue
from rqconc.worker.redis_source import RedisSource
from tests.queue import tasks
from tests.queue.helpers import wait_for
from tests.support.redis_server import RedisServer
from tests.support.tcp_proxy import TcpProxy

ALLOW = ["tests.queue.tasks"]


@pytest.fixture
def password_server(redis_binary):
    server = RedisServer(redis_binary, password="s3cret-pw").start()
    yield server
    server.close()


def take_until(source, claim, timeout=10.0):
    return wait_for(lambda: source.take(claim, 0.25), timeout=timeout, message="a job")


def test_take_survives_redis_going_away_and_logs_without_the_password(password_server, caplog):
    source = RedisSource(password_server.url, ["default"], allow=ALLOW)
    queue = Queue("default", connection=password_server.url)
    assert source.take("claim-1", 0) is None  # connected once
    password_server.stop()
    with caplog.at_level(logging.WARNING, logger="rqconc.worker"):
        assert source.take("claim-2", 0.25) is None
        assert source.take("claim-3", 0.25) is None
    records = [r for r in caplog.records if r.name == "rqconc.worker"]
    assert records and "cannot reach Redis" in records[0].getMessage()
    assert all("\n" not in r.getMessage() and "s3cret-pw" not in r.getMessage() for r in records)
    password_server.start()
    job = queue.enqueue(tasks.add, 1, 2)
    item = take_until(source, "claim-4")
    assert item.item_id == job.id


def test_a_running_job_completes_its_bookkeeping_after_a_redis_restart(redis_server, caplog):
    source = RedisSource(redis_server.url, ["default"], allow=ALLOW)
    queue = Queue("default", connection=redis_server.url)
    job = queue.enqueue(tasks.sleep_then_return, 0.5, "survived")
    item = source.take("claim-1", 1)
    worker = threading.Thread(target=source.perform, args=(item,), daemon=True)
    worker.start()
    client = redis_server.client()
    client.save()  # the restart reloads this snapshot, with the job leased to claim-1
    client.close()
    # DEBUG: the take announced the outage; the failed record is one of its retries.
    with caplog.at_level(logging.DEBUG, logger="rqconc.worker"):
        redis_server.stop()
        assert source.take("claim-2", 0.25) is None  # a take while Redis is away: no raise
        wait_for(lambda: "recording a job's outcome" in caplog.text, message="a failed record")
    assert worker.is_alive()  # the job ended; its outcome waits for Redis
    redis_server.start()
    worker.join(10)
    assert not worker.is_alive()
    assert job.get(timeout=1) == "survived"
    assert job.status is JobStatus.FINISHED and job.attempts == 1
    # the worker takes jobs again, and the finished job is not run a second time
    again = queue.enqueue(tasks.add, 1, 2)
    assert take_until(source, "claim-3").item_id == again.id
    assert len(queue) == 0


def test_backoff_doubles_up_to_its_cap_and_simultaneous_failures_count_once():
    backoff = Backoff(first=0.001, cap=0.004)
    assert backoff.failed() == 0.001
    assert backoff.failed() is None  # another child failing within the same wait
    delays = []
    for _ in range(4):
        wait_for(lambda: backoff.remaining() == 0, timeout=1, interval=0.001)
        delays.append(backoff.failed())
    assert delays == [0.002, 0.004, 0.004, 0.004]
    assert backoff.reset() and backoff.remaining() == 0


def test_a_source_built_from_a_client_pickles_to_the_same_server(password_server):
    client = password_server.client()
    source = RedisSource(client, ["default"], allow=ALLOW)
    assert source.client is client
    copy = pickle.loads(pickle.dumps(source))
    job = Queue("default", connection=client).enqueue(tasks.add, 2, 3)
    item = copy.take("claim-1", 1)
    copy.perform(item)
    assert job.get(timeout=1) == 5
    assert "s3cret-pw" in copy.url and copy.client is not client


def test_enqueue_rides_over_a_server_restart_on_a_pooled_connection(redis_server):
    queue = Queue("default", connection=redis_server.url)
    first = queue.enqueue(tasks.add, 1, 2)
    redis_server.restart()  # the pooled connection's socket is dead now
    second = queue.enqueue(tasks.add, 3, 4)
    assert queue.job_ids == [second.id] and first.id != second.id


def test_enqueue_during_a_dropped_connection_falls_back_to_the_clients_retries(redis_server):
    proxy = TcpProxy(redis_server.port).start()
    try:
        queue = Queue("default", connection=proxy.url())
        queue.enqueue(tasks.add, 1, 2)
        proxy.drop(0.2)  # the pooled connection dies and reconnecting fails for a moment
        job = queue.enqueue(tasks.add, 3, 4)  # redis-py's retry (with backoff) gets through
        assert job.id in queue.job_ids and len(queue) == 2
    finally:
        proxy.close()
