"""SPEC 15: the native core of the asyncio backend and of `--slots K` children. Their slots
are tasks of the process's event loop:
the leases of a coroutine that holds the loop are renewed from outside it (the supervisor's
thread) and its timeout is enforced meanwhile; the jobs that finish in one turn of the loop
complete in one step. (Timeouts, cancel and cold shutdown of async jobs on this core:
test_async_jobs.py, parametrized over the backends.)"""

import time

import pytest

from rqconc import JobFailed, JobStatus, Queue
from rqconc.worker.registry import list_workers
from tests.support.lua_calls import step_calls
from tests.support.waiting import promised
from tests.support.worker_process import wait_for

JOBS = "tests.worker.async_jobs"


# (backend, size, options, slots in all): one process whose slots are tasks of its loop.
NATIVE = [
    pytest.param("asyncio", 50, (), 50, id="asyncio-50"),
    pytest.param("forking", 1, ("--slots", "50"), 50, id="forking-1-slots-50"),
]


@pytest.mark.parametrize("backend, size, options, slots", NATIVE)
def test_a_coroutine_holding_the_loop_keeps_its_lease_and_its_timeout(
    backend, size, options, slots, redis_server, start_worker
):
    # A lease of 1 s, unrenewed, would be recovered (and the job run again) while the loop
    # is held for 3 s.
    start_worker(backend, size, redis_server.url, "--lease-seconds", "1", *options)
    q = Queue(connection=redis_server.url)
    held = q.enqueue(f"{JOBS}:hold_the_loop", 3.0, timeout=30)
    assert held.get(timeout=30) == "held"
    assert (held.status, held.attempts) == (JobStatus.FINISHED, 1)

    # Failed by the supervisor while the loop is still held, within timeout + 1 s: the hold
    # outlasts that bound (as stretched on a busy machine) by 1.5 s.
    with_deadline = promised(2.0)
    overrun = q.enqueue(f"{JOBS}:hold_the_loop", with_deadline + 1.5, timeout=1)
    wait_for(lambda: overrun.status == JobStatus.STARTED, 15, message="started")
    started = time.monotonic()
    wait_for(lambda: overrun.status == JobStatus.FAILED, with_deadline, message="timed out")
    assert time.monotonic() - started <= with_deadline
    try:
        overrun.get(timeout=1)
    except JobFailed as failed:
        assert failed.exc_type.endswith("JobTimeout")
    # Once the loop runs again, the slot is back in service, and the late return of the
    # overrun job changes nothing (its claim no longer holds it).
    assert q.enqueue(f"{JOBS}:add_later", 1, 1).get(timeout=30) == 2
    assert (overrun.status, overrun.attempts) == (JobStatus.FAILED, 1)
    assert len(q.failed) == 1


@pytest.mark.parametrize("backend, size, options, slots", NATIVE)
def test_async_jobs_finishing_together_complete_in_far_fewer_steps_than_jobs(
    backend, size, options, slots, redis_server, start_worker
):
    count = 200
    start_worker(backend, size, redis_server.url, *options)
    client = redis_server.client()
    wait_for(
        lambda: (w := list_workers(client)) and w[0]["idle"] == slots, 20, message="slots idle"
    )
    q = Queue(connection=redis_server.url)
    client.config_resetstat()
    jobs = q.enqueue_many([(f"{JOBS}:add_later", (n, 0, 0.05)) for n in range(count)])
    wait_for(lambda: all(j.status == JobStatus.FINISHED for j in jobs), 30, message="finished")
    assert [j.return_value for j in jobs] == list(range(count))
    # Every Lua step of the run: the enqueue, the takes, the completions (each taking its
    # slot's next job), heartbeats and renewals. A step per job would be 200 or more: 33
    # were measured on either backend on a quiet machine, 52 once under a load of 20 on 2
    # cores (fewer jobs finish in one turn of a loop that runs late), hence the bound of
    # half a step per job, a quarter of what one step per job would make.
    steps = step_calls(client)
    assert steps < count / 2, steps


# One process, two slots: jobs queued before it starts are chains (each completion takes the
# next job), and a mixed backlog makes every chain change kind, both ways.
TWO_SLOTS = [
    pytest.param("asyncio", 2, (), id="asyncio-2"),
    pytest.param("forking", 1, ("--slots", "2"), id="forking-1-slots-2"),
    pytest.param("multiprocessing", 1, ("--slots", "2"), id="multiprocessing-1-slots-2"),
]


@pytest.mark.parametrize("backend, size, options", TWO_SLOTS)
def test_a_chain_of_plain_and_async_jobs_runs_each_kind_where_it_belongs(
    backend, size, options, redis_server, start_worker
):
    q = Queue(connection=redis_server.url)
    kinds = ["plain", "plain", "async", "plain", "async", "async", "plain", "plain"] * 3
    jobs = [
        q.enqueue(f"{JOBS}:plain_thread_name" if kind == "plain" else f"{JOBS}:loop_identity")
        for kind in kinds
    ]
    start_worker(backend, size, redis_server.url, *options)
    answers = [job.get(timeout=30) for job in jobs]
    plain = [a for kind, a in zip(kinds, answers) if kind == "plain"]
    in_loop = {a for kind, a in zip(kinds, answers) if kind == "async"}
    # Plain functions ran in the core's pool threads; every async def job in the process'
    # one loop, on the loop's own thread (no hand-off).
    assert all(name.startswith("rqconc-child-plain-") for name in plain), plain
    assert len(in_loop) == 1, in_loop
    assert [j.attempts for j in jobs] == [1] * len(jobs)
