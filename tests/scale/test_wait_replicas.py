"""`wait_replicas=N` / `wait_timeout` (SPEC section 8): each step returns only once N replicas
acknowledged it (Redis WAIT on the same connection), else rqconc.ConnectionError naming the
cause; with N = 0 no WAIT is ever sent."""

import asyncio
import time

import pytest

from rqconc import ConnectionError, Queue, Supervisor
from rqconc.aio import AsyncQueue
from rqconc.store.keys import KeySpace
from tests.cli.test_commands import assert_one_line_error, in_process, rqconc
from tests.support.redis_server import RedisServer
from tests.support.waiting import wait_for


@pytest.fixture
def replicated(redis_binary):
    """A master and one replica in sync (plain replication; Sentinel is not needed)."""
    master = RedisServer(redis_binary).start()
    replica = RedisServer(
        redis_binary, extra_args=("--replicaof", "127.0.0.1", str(master.port))
    ).start()

    def synced():
        info = master.client().info("replication")
        return info.get("slave0", {}).get("state") == "online"

    wait_for(synced, timeout=20, message="the replica in sync")
    yield master, replica
    replica.close()
    master.close()


def waits_sent(server):
    return server.client().info("commandstats").get("cmdstat_wait", {}).get("calls", 0)


def test_enqueue_with_wait_replicas_returns_once_the_replica_holds_the_job(replicated):
    master, replica = replicated
    job = Queue("default", master.url, wait_replicas=1).enqueue("tests.worker.jobs:add", 1, 2)
    # Acknowledged means on the replica already: read it there at once, no waiting.
    assert replica.client().exists(KeySpace().job(job.id))
    assert waits_sent(master) >= 1


def test_without_replicas_to_acknowledge_enqueue_raises_connection_error_naming_it(replicated):
    master, replica = replicated
    replica.kill()
    q = Queue("default", master.url, wait_replicas=1, wait_timeout=0.2)
    started = time.monotonic()
    with pytest.raises(ConnectionError, match="0 of 1 replicas acknowledged"):
        q.enqueue("tests.worker.jobs:add", 1, 2)
    assert time.monotonic() - started < 5
    done = rqconc("enqueue", "-q", "default", "--wait-replicas", "1", "--wait-timeout", "0.2",
                  "--url", master.url, "tests.worker.jobs:add", "1", "2")  # fmt: skip
    assert_one_line_error(done, 1)
    assert "replicas acknowledged" in done.stderr


def test_no_wait_is_sent_when_wait_replicas_is_0(replicated, start_worker):
    master, _ = replicated
    start_worker("threading", 2, master.url)
    q = Queue("default", master.url)
    assert [q.enqueue("tests.worker.jobs:add", n, 1).get(timeout=20) for n in range(5)] == [
        1, 2, 3, 4, 5,
    ]  # fmt: skip
    assert waits_sent(master) == 0


@pytest.mark.parametrize("backend", ["forking", "gevent"])
def test_a_worker_with_wait_replicas_waits_after_each_state_change(
    backend, replicated, start_worker
):
    master, _ = replicated
    start_worker(backend, 2, master.url, "--wait-replicas", "1")
    q = Queue("default", master.url, wait_replicas=1)
    before = waits_sent(master)
    jobs = [q.enqueue("tests.worker.jobs:add", n, 1) for n in range(5)]
    assert [job.get(timeout=20) for job in jobs] == [1, 2, 3, 4, 5]
    # Each enqueue, and each take and completion of the worker, sent its WAIT.
    wait_for(lambda: waits_sent(master) - before >= 15, message="a WAIT per step")


def test_bad_wait_settings_are_refused():
    with pytest.raises(ValueError, match="wait_replicas"):
        Queue("default", "redis://127.0.0.1:1", wait_replicas=-1)
    with pytest.raises(ValueError, match="wait_timeout"):
        Supervisor("threading", 1, connection="redis://127.0.0.1:1", wait_timeout=0)
    assert_one_line_error(rqconc("enqueue", "-q", "q", "--wait-replicas", "-1", "m:f"), 2)


def test_requeueing_a_dead_letter_waits_for_the_replicas_too(replicated, start_worker):
    # 1 s for the replica's acknowledgement: 0.3 s was too short for a loaded machine (a CI
    # run's enqueue timed out with the replica alive).
    master, replica = replicated
    start_worker("threading", 1, master.url)
    q = Queue("default", master.url, wait_replicas=1, wait_timeout=1.0)
    job = q.enqueue("tests.worker.jobs:add", 1, "x")  # a TypeError, not retried: a dead letter
    wait_for(lambda: job.id in q.failed.job_ids, timeout=20, message="a dead letter")
    before = waits_sent(master)
    assert q.failed.requeue(job.id)
    assert waits_sent(master) > before
    wait_for(lambda: job.id in q.failed.job_ids, timeout=20, message="a dead letter again")
    replica.kill()
    with pytest.raises(ConnectionError, match="replicas acknowledged"):
        q.failed.purge()


def test_every_state_change_of_a_queue_or_its_jobs_waits_for_the_replicas(replicated):
    """Not only enqueue and the worker's steps: a unique enqueue, cancel, promote, delete,
    flow settings and q.delete() return once the replica holds them (SPEC 8)."""
    master, replica = replicated
    q = Queue("admin", master.url, wait_replicas=1, wait_timeout=1.0)
    add = "tests.worker.jobs:add"

    def changes(round):
        """What each change acts on is stored first (its own WAIT is not the one counted)."""
        waiting, later = q.enqueue(add, 1, 2), q.enqueue_in(60, add, 1, 2)
        fetched = q.fetch_job(q.enqueue(add, 1, 2).id)
        return {
            "unique enqueue": lambda: q.enqueue(add, 1, 2, unique_key=f"u{round}"),
            "cancel": waiting.cancel,
            "promote": lambda: q.promote(later.id),
            "delete a job": fetched.delete,
            "limits": lambda: q.set_limits(concurrency=3 + round),
            "pause": q.pause,
            "delete the queue": q.delete,
        }

    for name, change in changes(0).items():
        before = waits_sent(master)
        change()
        assert waits_sent(master) > before, name
    second = changes(1)
    replica.kill()
    for name, change in second.items():
        with pytest.raises(ConnectionError, match="replicas acknowledged"):
            change()
            pytest.fail(f"{name} returned without the replica")


def test_the_admin_commands_take_wait_replicas_too(replicated, start_worker):
    """`--wait-replicas N` on cancel, requeue, failed purge, limits, pause, resume and the
    cron commands: each sends WAIT; without the replica, one line and exit 1."""
    master, replica = replicated
    url = master.url
    q = Queue("default", url)
    waiting = q.enqueue("tests.worker.jobs:add", 1, 2)
    dead = Queue("dead", url).enqueue("tests.worker.jobs:add", 1, "x")  # a TypeError
    start_worker("threading", 1, url, "-q", "dead", "--burst").wait_exit(60)
    assert dead.id in Queue("dead", url).failed.job_ids
    wait = ("--wait-replicas", "1", "--wait-timeout", "1.0", "--url", url)
    commands = [
        ("cancel", waiting.id),
        ("requeue", dead.id),
        ("failed", "purge", "-q", "dead"),
        ("limits", "default", "--concurrency", "2"),
        ("pause", "default"),
        ("resume", "default"),
        ("cron", "every", "60", "tests.worker.jobs:add", "1", "2", "-q", "default", "--id", "c"),
        ("cron", "remove", "c"),
    ]
    for command in commands:  # in process: the WAIT each sends is the point here
        before = waits_sent(master)
        done = in_process(*command, *wait)
        assert done.returncode == 0, (command, done.stderr)
        assert waits_sent(master) > before, command
    replica.kill()
    # Nothing acknowledges now: each command gives up after its (short) wait timeout.
    short = ("--wait-replicas", "1", "--wait-timeout", "0.2", "--url", url)
    for command in commands[3:7]:  # those that change something whatever came before
        done = rqconc(*command, *short)
        assert_one_line_error(done, 1)
        assert "replicas acknowledged" in done.stderr, command


def test_a_batch_of_async_enqueues_waits_once_for_the_replica_to_hold_them_all(replicated):
    """rqconc/aio/batch.py: the enqueues of one turn of the loop are one pipeline, WAIT last;
    without the replica, each caller gets the one-line error."""
    master, replica = replicated

    async def enqueue_50(q):
        jobs = await asyncio.gather(
            *(q.enqueue("tests.worker.jobs:add", i, i) for i in range(50)),
            return_exceptions=True,
        )
        await q.aclose()
        return jobs

    Queue("default", master.url).enqueue("tests.worker.jobs:add", 0, 0)  # the script loaded
    before = waits_sent(master)
    jobs = asyncio.run(enqueue_50(AsyncQueue("default", master.url, wait_replicas=1)))
    assert waits_sent(master) == before + 1
    assert all(replica.client().exists(KeySpace().job(job.id)) for job in jobs)
    replica.kill()
    q = AsyncQueue("default", master.url, wait_replicas=1, wait_timeout=0.2)
    for error in asyncio.run(enqueue_50(q)):
        assert isinstance(error, ConnectionError), error
        assert "0 of 1 replicas acknowledged" in str(error) and "\n" not in str(error)
