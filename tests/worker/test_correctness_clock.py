"""Issue 14, item 2: leases live on Redis' clock, so a worker whose clock is off by far more
than the lease neither loses its own running jobs nor takes another worker's.

The skewed clock is a test fixture (tests/support/clock.py, which the chaos run uses too): a
`sitecustomize` module on the worker's PYTHONPATH shifts `time.time` by an offset in every
interpreter of that worker, as a host with a wrong clock would.
"""

import time

import pytest

from rqconc import JobStatus, Queue
from rqconc.queue.schedule.cron import LOOKAHEAD
from rqconc.store.keys import KeySpace
from rqconc.worker.registry import heartbeat_age, list_workers
from tests.support.clock import clock_env, install_clock
from tests.support.worker_process import BACKENDS, wait_for

HOUR = 3600.0
LEASE = "1"  # seconds; the job runs for several of them


@pytest.fixture
def start_worker_with_clock(tmp_path, monkeypatch, start_worker):
    """Start a worker whose wall clock is `skew` seconds off."""
    clock = install_clock(tmp_path / "clock")

    def start(skew, backend, url, *extra):
        variables = clock_env(clock, skew)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        try:
            return start_worker(backend, 2, url, "--lease-seconds", LEASE, *extra)
        finally:
            for name in variables:
                monkeypatch.delenv(name)

    return start


def run_once_across_skewed_workers(server, start, runner_skew, other_skew, backend):
    client = server.client()
    q = Queue("long", connection=server.url)
    job = q.enqueue("tests.worker.jobs:hold_recorded", server.url, "only", "release")
    start(runner_skew, backend, server.url, "--queues", "long")
    # Listens elsewhere, but recovers expired leases of the whole namespace.
    other = start(other_skew, "forking", server.url, "--queues", "elsewhere", "--name", "other")
    wait_for(lambda: client.lrange("executions", 0, -1), timeout=30, message="the job running")
    # The job runs on while the other worker ticks (heartbeat, then a recover pass) twice
    # after its first heartbeat seen here: past several leases, for both workers' passes.
    beats = set()

    def other_ticked_twice():
        beats.update(w["last_heartbeat"] for w in list_workers(client) if w["name"] == "other")
        return len(beats) >= 3

    wait_for(other_ticked_twice, timeout=30, message="the other worker's ticks")
    client.rpush("release", "done")
    assert job.get(timeout=30) == "only"
    assert client.lrange("executions", 0, -1) == [b"only"], other.output()[-3000:]
    assert job.status == JobStatus.FINISHED and job.attempts == 1
    assert client.hget(KeySpace().job(job.id), "lost") in (None, b"0")


def test_a_worker_whose_clock_runs_ahead_does_not_recover_live_jobs(
    redis_server, start_worker_with_clock
):
    run_once_across_skewed_workers(redis_server, start_worker_with_clock, 0, HOUR, "forking")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_whose_clock_lags_keeps_the_leases_of_its_jobs(
    backend, redis_server, start_worker_with_clock
):
    run_once_across_skewed_workers(redis_server, start_worker_with_clock, -HOUR, 0, backend)


# The registry and the cron leader compare times across hosts too: they read Redis' clock.


@pytest.mark.parametrize("skew", [-HOUR, HOUR])
def test_a_worker_with_a_skewed_clock_is_listed_with_a_fresh_heartbeat(
    skew, redis_server, start_worker_with_clock
):
    worker = start_worker_with_clock(skew, "forking", redis_server.url)
    client = redis_server.client()
    # Scored by its own clock, a lagging worker's entry expired before it was written.
    listed = wait_for(lambda: list_workers(client), message="the worker listed")
    assert [w["pid"] for w in listed] == [worker.process.pid]
    assert abs(listed[0]["last_heartbeat"] - time.time()) < 5
    assert heartbeat_age(client, listed[0]["name"]) < 5


def test_a_cron_leader_whose_clock_runs_ahead_plans_no_tick_early(
    redis_server, start_worker_with_clock
):
    q = Queue(connection=redis_server.url)
    q.cron("* * * * * *", "tests.worker.jobs:add", 1, 2, id="every-second")
    start_worker_with_clock(HOUR, "forking", redis_server.url)
    client, keys = redis_server.client(), KeySpace()
    last = wait_for(lambda: client.hget(keys.cron_last, "every-second"), message="a tick")
    # Ahead by an hour, the leader planned the ticks of an hour from now.
    assert int(last) <= time.time() + LOOKAHEAD + 2
