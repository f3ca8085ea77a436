"""SPEC 2: an interrupted job goes back without counting an attempt, also when the cold
shutdown (a second TERM, or --shutdown-timeout) happens while Redis is unreachable: the
supervisor records the interruption once Redis answers again, instead of leaving the job to
lease recovery (a lost lease, an attempt counted)."""

import signal
import time

import pytest

from rqconc import JobStatus, Queue
from tests.support.lua_calls import preloaded
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import promised
from tests.support.worker_process import BACKENDS, wait_for

CASES = [(backend, "second-term") for backend in BACKENDS] + [("forking", "shutdown-timeout")]


@pytest.mark.parametrize("backend,how", CASES)
def test_a_cold_shutdown_while_redis_is_away_requeues_its_jobs_as_interrupted(
    backend, how, redis_server, start_worker
):
    proxy = TcpProxy(redis_server.port).start()
    try:
        # The supervisor waits up to one lease for Redis after the cold shutdown: 30 s is
        # fifteen times the outage, so a loaded machine cannot outrun the wait.
        extra = ["--lease-seconds", "30"]
        if how == "shutdown-timeout":  # cold 0.5 s into the 2 s outage
            extra += ["--shutdown-timeout", "0.5"]
        worker = start_worker(backend, 2, proxy.url(), *extra)
        q = Queue(connection=redis_server.url)
        running = [q.enqueue("tests.worker.jobs:nap", 30) for _ in range(2)]
        wait_for(
            lambda: all(j.status == JobStatus.STARTED for j in running), message="jobs started"
        )
        proxy.drop(2.0)  # Redis is unreachable for the worker from now on, for 2 s
        worker.signal(signal.SIGTERM)
        if how == "second-term":
            wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
            worker.signal(signal.SIGTERM)
        assert worker.wait_exit(60) == 1, worker.output()[-3000:]
        assert "Redis is back" in worker.output() or "unreachable" not in worker.output(), (
            worker.output()[-3000:]
        )
        assert [j.status for j in running] == [JobStatus.QUEUED] * 2, worker.output()[-3000:]
        assert [j.attempts for j in running] == [0, 0]
        assert set(q.job_ids) == {j.id for j in running}
        assert "cold shutdown" in worker.output()
    finally:
        proxy.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_term_ends_the_wait_for_redis_at_once_and_leaves_jobs_to_recovery(
    backend, redis_server, start_worker
):
    """The wait above lasts up to one lease; asked again, the process leaves within 1 s
    (SPEC 2), and the jobs it held come back when their leases expire."""
    proxy = TcpProxy(redis_server.port).start()
    try:
        worker = start_worker(backend, 2, proxy.url(), "--lease-seconds", "30")
        q = Queue(connection=redis_server.url)
        running = [q.enqueue("tests.worker.jobs:nap", 60) for _ in range(2)]
        wait_for(
            lambda: all(j.status == JobStatus.STARTED for j in running), message="jobs started"
        )
        proxy.drop(120.0)  # unreachable for longer than the test lasts
        worker.signal(signal.SIGTERM)
        wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
        worker.signal(signal.SIGTERM)
        wait_for(lambda: "waiting up to 30 s" in worker.output(), message="the wait's log")
        asked = time.monotonic()
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit(5) == 1
        assert time.monotonic() - asked < promised(1.0), worker.output()[-3000:]
        assert "leaving 2 interrupted job(s) to lease recovery" in worker.output()
        assert [j.status for j in running] == [JobStatus.STARTED] * 2  # until their leases end
    finally:
        proxy.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_whose_take_reply_was_lost_goes_back_when_its_child_ends_while_redis_is_away(
    backend, redis_server, start_worker
):
    """The take ran (the job is leased) but its reply never came back, and Redis stays out
    of reach: the child cannot put the job back itself. Ended by a warm shutdown meanwhile,
    it leaves the claim in its slot, and the supervisor puts the job back once Redis answers:
    no lease to wait out, no attempt counted."""
    request = preloaded(redis_server.client(), "take")  # the take's first call runs at once
    q = Queue(connection=redis_server.url)
    job = q.enqueue("tests.worker.jobs:nap", 30)
    proxy = TcpProxy(redis_server.port).start()
    try:
        proxy.cut_reply_to(request, then_refuse=5.0)
        worker = start_worker(backend, 1, proxy.url(), "--lease-seconds", "30")
        wait_for(lambda: job.status == JobStatus.STARTED and proxy.cut == 1, message="leased")
        worker.signal(signal.SIGTERM)  # while no connection is let through
        assert worker.wait_exit(60) == 0, worker.output()[-3000:]
        assert (job.status, job.attempts) == (JobStatus.QUEUED, 0), worker.output()[-3000:]
        assert q.job_ids == [job.id]
    finally:
        proxy.close()
