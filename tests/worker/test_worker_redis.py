"""SPEC sections 2-3 end to end: a real worker (`python main.py ...`) on a real Redis."""

import os
import random
import signal
import time

import pytest

from rqconc import Job, JobFailed, JobStatus, Queue
from rqconc.worker.registry import list_workers
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, pid_alive, wait_for


def executions(server):
    return [v.decode() for v in server.client().lrange("executions", 0, -1)]


def wait_workers(server, count, timeout=15):
    return wait_for(
        lambda: len(list_workers(server.client())) == count and list_workers(server.client()),
        timeout,
        message=f"{count} workers",
    )


def wait_started(jobs, timeout=15):
    wait_for(
        lambda: all(j.status == JobStatus.STARTED for j in jobs), timeout, message="jobs started"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_cold_shutdown_puts_running_jobs_back_at_the_front_without_an_attempt(
    backend, redis_server, start_worker
):
    worker = start_worker(backend, 2, redis_server.url)
    q = Queue(connection=redis_server.url)
    running = [q.enqueue("tests.worker.jobs:nap", 30) for _ in range(2)]
    wait_started(running)
    waiting = q.enqueue("tests.worker.jobs:nap", 0)
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 1
    assert [j.status for j in running] == [JobStatus.QUEUED] * 2
    assert [j.attempts for j in running] == [0, 0]
    assert q.job_ids[-1] == waiting.id and set(q.job_ids[:2]) == {j.id for j in running}


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_a_child_killed_mid_job_is_a_failed_attempt_and_the_job_runs_again(
    backend, redis_server, start_worker
):
    start_worker(backend, 2, redis_server.url)
    q = Queue(connection=redis_server.url)
    # Its first run naps long enough to be killed mid-job however slow the machine; the
    # run after it ends at once.
    job = q.enqueue("tests.worker.jobs:record_slow_first", redis_server.url, "victim", 60)
    pid = int(
        wait_for(lambda: redis_server.client().lindex("pids:victim", 0), message="job running")
    )
    os.kill(pid, signal.SIGKILL)
    # WorkerLost is retried by the default policy (after a 1-2 s backoff).
    wait_for(lambda: job.status == JobStatus.FINISHED, timeout=20, message="job finished")
    assert job.attempts == 2
    assert executions(redis_server) == ["victim", "victim"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_of_the_supervisor_then_a_new_worker_finishes_every_job(
    backend, redis_server, start_worker
):
    first = start_worker(backend, 2, redis_server.url, "--lease-seconds", "2")
    q = Queue(connection=redis_server.url)
    # The first two (one per child) run until the kill, whatever the machine's speed, and
    # end at once when they run again; the six behind them take 0.2 s each.
    jobs = [
        q.enqueue("tests.worker.jobs:record_slow_first", redis_server.url, f"j{n}", 60)
        for n in range(2)
    ]
    jobs += [
        q.enqueue("tests.worker.jobs:record", redis_server.url, f"j{n}", 0.2) for n in range(2, 8)
    ]
    wait_for(lambda: len(executions(redis_server)) >= 2, message="first jobs running")
    first.signal(signal.SIGKILL)
    first.wait_exit(5)
    start_worker(backend, 2, redis_server.url, "--lease-seconds", "2")
    wait_for(
        lambda: all(j.status == JobStatus.FINISHED for j in jobs),
        timeout=40,
        message="every job finished",
    )
    ran = executions(redis_server)
    assert set(ran) == {f"j{n}" for n in range(8)}
    # Only jobs whose worker vanished mid-run may have run twice.
    assert len(ran) - 8 <= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_longer_than_its_lease_never_runs_twice_while_its_worker_lives(
    backend, redis_server, start_worker
):
    start_worker(backend, 1, redis_server.url, "--lease-seconds", "1")
    start_worker(backend, 1, redis_server.url, "--lease-seconds", "1")
    q = Queue(connection=redis_server.url)
    # Two and a half leases, renewed while both workers' recover passes (1 s apart) go by.
    job = q.enqueue("tests.worker.jobs:record", redis_server.url, "long", 2.5)
    assert job.get(timeout=20) == "long"
    assert executions(redis_server) == ["long"]
    assert job.attempts == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_blocked_in_sleep_past_its_timeout_fails_with_jobtimeout_and_the_next_runs(
    backend, redis_server, start_worker
):
    """Also: a job's result comes back, and its error (one worker for both promises: a
    worker costs ~1 s of CPU to start, make test's minutes)."""
    start_worker(backend, 1, redis_server.url)
    q = Queue(connection=redis_server.url)
    stuck = q.enqueue("tests.worker.jobs:nap", 30, timeout=1)
    after = q.enqueue("tests.worker.jobs:add", 1, 1)
    wait_started([stuck])
    began = time.monotonic()
    with pytest.raises(JobFailed) as info:
        stuck.get(timeout=10)
    assert time.monotonic() - began < 2.5  # timeout + 1 s, measured from start
    assert info.value.exc_type.endswith("JobTimeout")
    assert after.get(timeout=10) == 2
    # The slot the timeout freed runs jobs as before: their result, or their error.
    assert q.enqueue("tests.worker.jobs:add", 2, 3).get(timeout=15) == 5
    with pytest.raises(JobFailed) as info:
        q.enqueue("tests.worker.jobs:add", 2, "x").get(timeout=15)
    assert info.value.exc_type == "TypeError"


@pytest.mark.parametrize("backend", BACKENDS)
def test_priority_then_fifo_order_through_a_single_child(backend, redis_server, start_worker):
    q = Queue(connection=redis_server.url)
    rng = random.Random(3)
    expected = []
    # 60 jobs over 4 priorities: each priority holds a run of jobs whose FIFO order shows.
    for n in range(60):
        priority = rng.choice([0, 1, 2, 50])
        q.enqueue("tests.worker.jobs:record", redis_server.url, f"{n}", priority=priority)
        expected.append((-priority, n))
    worker = start_worker(backend, 1, redis_server.url, "--burst")
    assert worker.wait_exit(60) == 0
    assert executions(redis_server) == [str(n) for _, n in sorted(expected)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_worker_registers_heartbeats_and_a_warm_shutdown_loses_nothing_and_leaves_it(
    backend, redis_server, start_worker
):
    worker = start_worker(backend, 3, redis_server.url, "--name", f"w-{backend}", "-q", "high,low")
    entry = wait_workers(redis_server, 1)[0]
    assert entry["name"] == f"w-{backend}" and entry["backend"] == backend
    assert entry["size"] == 3 and entry["queues"] == ["high", "low"]
    assert entry["pid"] == worker.pid
    wait_for(lambda: list_workers(redis_server.client())[0]["idle"] == 3, message="3 idle")
    q = Queue("low", connection=redis_server.url)
    # Both run until the test releases them, after it asked for the warm shutdown.
    jobs = [
        q.enqueue("tests.worker.jobs:hold_recorded", redis_server.url, f"j{n}", "release")
        for n in range(2)
    ]
    busy = wait_for(
        lambda: [w for w in list_workers(redis_server.client()) if w["busy"] == 2],
        message="busy in the registry",
    )[0]
    assert busy["state"] == "busy" and sorted(busy["current_jobs"]) == sorted(j.id for j in jobs)
    # A warm shutdown while both run: they finish, nothing is lost, the worker leaves.
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
    assert worker.process.poll() is None and [j.status for j in jobs] == [JobStatus.STARTED] * 2
    redis_server.client().rpush("release", "j0", "j1")
    assert worker.wait_exit(10) == 0
    assert [j.status for j in jobs] == [JobStatus.FINISHED] * 2
    assert sorted(executions(redis_server)) == ["j0", "j1"]
    assert list_workers(redis_server.client()) == []


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_the_worker_survives_redis_restarting_and_loses_nothing(
    backend, redis_binary, start_worker
):
    from tests.support.redis_server import RedisServer

    server = RedisServer(redis_binary, appendonly=True).start()  # data survives the restart
    try:
        worker = start_worker(backend, 2, server.url)
        q = Queue(connection=server.url)
        job = q.enqueue("tests.worker.jobs:record", server.url, "across", 3)
        # Wait for the job's own write, not just its start: a job whose RPUSH meets the
        # outage fails with ConnectionError and is retried (a second attempt, rightly).
        wait_for(lambda: executions(server) == ["across"], message="the job ran")
        server.stop()
        wait_for(lambda: "cannot reach Redis" in worker.output(), message="the outage is logged")
        server.start()
        # The job that ran during the outage is recorded once Redis is back, exactly once.
        assert job.get(timeout=40) == "across"
        assert job.attempts == 1
        assert executions(server) == ["across"]
        assert Queue(connection=server.url).enqueue("tests.worker.jobs:add", 20, 22).get(20) == 42
        assert worker.process.poll() is None
    finally:
        server.close()


def test_a_password_protected_redis_works_through_the_url_and_never_shows_the_password(
    redis_binary, tmp_path, start_worker
):
    from tests.support.redis_server import RedisServer

    server = RedisServer(redis_binary, password="s3cret-pw").start()
    try:
        worker = start_worker("threading", 2, server.url)
        assert Queue(connection=server.url).enqueue("tests.worker.jobs:add", 1, 2).get(15) == 3
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit(10) == 0
        assert "s3cret-pw" not in worker.output()
    finally:
        server.close()


def test_a_worker_started_while_redis_is_down_retries_until_it_is_up(redis_binary, start_worker):
    from tests.support.redis_server import RedisServer

    server = RedisServer(redis_binary)  # not started yet: its port is free
    worker = start_worker("forking", 1, server.url)
    try:
        wait_for(lambda: "cannot reach Redis" in worker.output(), message="retry logged")
        assert worker.process.poll() is None
        server.start()
        assert Queue(connection=server.url).enqueue("tests.worker.jobs:add", 2, 2).get(20) == 4
    finally:
        server.close()


def test_jobs_of_a_vanished_worker_come_back_within_30s_with_default_leases(
    redis_server, start_worker
):
    worker = start_worker("threading", 1, redis_server.url)
    q = Queue(connection=redis_server.url)
    job = q.enqueue("tests.worker.jobs:nap", 60)
    wait_started([job])
    worker.signal(signal.SIGKILL)
    began = time.monotonic()
    start_worker("threading", 1, redis_server.url)
    wait_for(
        lambda: Job.fetch(job.id, connection=redis_server.url).field("lost") == "1",
        timeout=35,
        message="job recovered",
    )
    assert time.monotonic() - began < 30
    assert not pid_alive(worker.pid)
