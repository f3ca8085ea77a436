"""A reply lost after Redis ran the request (issue 14 item 1): the proxy forwards the enqueue,
Redis stores the job, and the connection is reset before the reply gets back. The job must
be stored, and run, exactly once; a caller's own id must not be refused as "exists"."""

import pytest
import redis

from rqconc import Queue
from rqconc.store.keys import KeySpace
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

ENQUEUE = b"EVALSHA"


@pytest.fixture
def proxy(redis_server):
    proxy = TcpProxy(redis_server.port).start()
    yield proxy
    proxy.close()


def _warm_queue(proxy):
    """A queue whose enqueue connection and script are in place, so the next EVALSHA on the
    wire is the enqueue under test."""
    queue = Queue(connection=proxy.url())
    queue.enqueue("tests.worker.jobs:add", 0, 0)
    queue.empty()
    return queue


KEYS = KeySpace("rqconc")


def _jobs(server):
    client = server.client()
    return sorted(k.decode() for k in client.keys(KEYS.job("*")))


@pytest.mark.parametrize("kind", ["fresh id", "batch", "scheduled"])
def test_an_enqueue_whose_reply_is_lost_stores_each_job_once(kind, proxy, redis_server):
    queue = _warm_queue(proxy)
    proxy.cut_reply_to(ENQUEUE)
    if kind == "fresh id":
        jobs = [queue.enqueue("tests.worker.jobs:add", 1, 2)]
    elif kind == "batch":
        jobs = queue.enqueue_many([("tests.worker.jobs:add", (n, 1)) for n in range(3)])
    else:
        jobs = [queue.enqueue_in(60, "tests.worker.jobs:add", 1, 2)]
    assert proxy.cut == 1
    assert _jobs(redis_server) == sorted(KEYS.job(job.id) for job in jobs)
    waiting = queue.job_ids + queue.scheduled_job_ids
    assert sorted(waiting) == sorted(job.id for job in jobs)  # each once
    ids = {job.id.encode() for job in jobs}
    events = redis_server.client().xrange(KEYS.events)
    assert len([e for e in events if e[1][b"job_id"] in ids]) == len(jobs)


def test_a_callers_id_whose_reply_is_lost_is_stored_and_not_refused(proxy, redis_server):
    queue = _warm_queue(proxy)
    proxy.cut_reply_to(ENQUEUE)
    job = queue.enqueue("tests.worker.jobs:add", 1, 2, job_id="mine")
    assert proxy.cut == 1 and job.id == "mine"
    assert queue.job_ids == ["mine"]
    # Another call with that id is still refused: the token tells the two calls apart.
    with pytest.raises(ValueError, match="already exists"):
        queue.enqueue("tests.worker.jobs:add", 1, 2, job_id="mine")


def test_a_job_whose_enqueue_reply_is_lost_runs_once(proxy, redis_server, start_worker):
    queue = _warm_queue(proxy)
    worker = start_worker("threading", 2, redis_server.url)
    url = redis_server.url
    assert queue.enqueue("tests.worker.jobs:add", 1, 1).get(timeout=20) == 2  # worker ready
    # The producer reconnects 0.12 s later (within its client's retries): by then the
    # worker has taken the job that the lost request stored.
    proxy.cut_reply_to(ENQUEUE, then_refuse=0.12)
    job = queue.enqueue("tests.worker.jobs:record", url, "once")
    assert proxy.cut == 1
    assert job.get(timeout=20) == "once"
    follow = queue.enqueue("tests.worker.jobs:add", 1, 2)  # the worker is past the first job
    assert follow.get(timeout=20) == 3
    client = redis_server.client()
    assert client.lrange("executions", 0, -1) == [b"once"]
    assert worker.process.poll() is None


def test_a_lost_reply_is_not_sent_again_by_the_pooled_connection(proxy, redis_server):
    """The connection layer itself never resends what may have run: it raises ReplyLost."""
    from rqconc.connection.direct import ReplyLost
    from rqconc.connection.pooled import PooledConnection

    pooled = PooledConnection(redis.Redis.from_url(proxy.url()))
    assert pooled.execute("INCR", "counter") == 1
    proxy.cut_reply_to(b"INCR")
    with pytest.raises(ReplyLost):
        pooled.execute("INCR", "counter")
    assert int(redis_server.client().get("counter")) == 2  # ran once, not twice
    assert pooled.execute("INCR", "counter") == 3  # and the next call reconnects


def test_the_proxy_cuts_only_the_reply_asked_for(proxy):
    client = redis.Redis.from_url(proxy.url(), retry_on_error=[])
    client.ping()
    proxy.cut_reply_to(b"SET", times=1)
    with pytest.raises(redis.exceptions.ConnectionError):
        client.set("k", "v")
    wait_for(lambda: client.get("k") == b"v", message="the SET ran although its reply was cut")


@pytest.mark.parametrize("job_id", [None, "mine"])
def test_a_job_kept_0s_that_ran_before_the_resend_is_not_stored_again(
    job_id, proxy, redis_server, start_worker
):
    """The hole the job's own hash cannot close: a job with result_ttl=0 is deleted as soon
    as it ran; if that happens before the resend arrives, only the step's short-lived
    `enqueued:<id>` mark tells the resend that this request stored it already."""
    queue = _warm_queue(proxy)
    worker = start_worker("threading", 2, redis_server.url)
    url = redis_server.url
    assert queue.enqueue("tests.worker.jobs:add", 1, 1).get(timeout=20) == 2  # worker ready
    client = redis_server.client()
    # The resend waits until the worker has run the job and deleted it (result_ttl=0).
    proxy.cut_reply_to(ENQUEUE, then_refuse=0.3)
    options = {"job_id": job_id} if job_id else {}
    job = queue.enqueue("tests.worker.jobs:record", url, "once", result_ttl=0, **options)
    assert proxy.cut == 1
    follow = queue.enqueue("tests.worker.jobs:add", 1, 2)  # the worker is past the first job
    assert follow.get(timeout=20) == 3
    wait_for(lambda: not client.exists(KEYS.job(job.id)), message="the job ran and was deleted")
    assert client.lrange("executions", 0, -1) == [b"once"]
    assert queue.job_ids == [] and queue.scheduled_job_ids == []
    assert worker.process.poll() is None
