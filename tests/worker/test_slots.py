"""SPEC 10, processes x slots: `--slots K` on the process backends runs K jobs at once in each
child, and every engine promise holds per job (real workers on a real Redis)."""

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

from rqconc import JobFailed, JobStatus, Queue, Supervisor
from rqconc.errors import JobTimeout
from rqconc.worker.registry import list_workers
from tests.support.lua_calls import step_calls
from tests.support.worker_process import PROCESS_BACKENDS, ROOT, main_py_argv, wait_for

SIZE, SLOTS = 2, 3


def executions(server):
    return [v.decode() for v in server.client().lrange("executions", 0, -1)]


def hold_jobs(q, url, count, prefix="hold"):
    """Jobs that run until the test pushes to their key (tests/worker/jobs.py:hold)."""
    return [q.enqueue("tests.worker.jobs:hold", url, f"{prefix}{n}") for n in range(count)]


def release(server, jobs, prefix="hold"):
    client = server.client()
    for n in range(len(jobs)):
        client.rpush(f"{prefix}{n}", "done")


def wait_started(jobs, timeout=20):
    wait_for(
        lambda: all(j.status == JobStatus.STARTED for j in jobs), timeout, message="jobs started"
    )


def title(pid):
    """A process's title (its command line), "" once it is gone."""
    try:
        return " ".join(psutil.Process(pid).cmdline()).strip()
    except psutil.Error:
        return ""


def slot_worker(start_worker, backend, url, *extra, size=SIZE, slots=SLOTS):
    worker = start_worker(backend, size, url, "--slots", str(slots), *extra)
    wait_for(
        lambda: (
            len(worker.child_pids()) == size
            and all("slots" in title(p) for p in worker.child_pids())
        ),
        timeout=30,
        message=f"{size} children with slots up",
    )
    return worker


def running_pids(server, tokens):
    return {int(server.client().lindex(f"pids:{t}", 0)) for t in tokens}


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_each_child_runs_k_jobs_at_once_and_info_counts_every_slot(
    backend, redis_server, start_worker
):
    worker = slot_worker(start_worker, backend, redis_server.url)
    q = Queue(connection=redis_server.url)
    jobs = hold_jobs(q, redis_server.url, SIZE * SLOTS)
    extra = q.enqueue("tests.worker.jobs:add", 1, 2)
    wait_started(jobs)  # all 6 run at once: 2 processes x 3 slots
    assert extra.status == JobStatus.QUEUED  # no slot is free for a 7th
    [info] = wait_for(
        lambda: (w := list_workers(redis_server.client())) and w[0]["busy"] == SIZE * SLOTS and w,
        timeout=30,
        message="the registry counts 6 busy slots",
    )
    assert (info["size"], info["slots"], info["idle"]) == (SIZE, SLOTS, 0)
    assert sorted(info["current_jobs"]) == sorted(j.id for j in jobs)
    shown = subprocess.run(
        [sys.executable, "-m", "rqconc", "info", "-W", "--json", "--url", redis_server.url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    [listed] = json.loads(shown.stdout)["workers"]
    assert (listed["size"], listed["busy"], listed["idle"]) == (SIZE, SIZE * SLOTS, 0)
    assert sorted(listed["current_jobs"]) == sorted(j.id for j in jobs)
    titles = sorted(title(p) for p in worker.child_pids())
    assert all(t.endswith(f"slots busy={SLOTS} idle=0") for t in titles), titles
    supervisor_title = title(worker.pid)
    assert f"{backend} {SIZE}x{SLOTS}" in supervisor_title and "busy=6 idle=0" in supervisor_title
    release(redis_server, jobs)
    assert extra.get(timeout=20) == 3
    assert [j.get(timeout=20) for j in jobs] == ["done"] * len(jobs)
    [info] = wait_for(
        lambda: (w := list_workers(redis_server.client())) and w[0]["idle"] == 6 and w,
        timeout=30,
        message="every slot idle again",
    )
    assert info["busy"] == 0 and info["current_jobs"] == []


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_idle_slots_share_their_takes_so_a_burst_costs_fewer_steps_than_jobs(
    backend, redis_server, start_worker
):
    slots = 20
    slot_worker(start_worker, backend, redis_server.url, size=1, slots=slots)
    client = redis_server.client()
    q = Queue(connection=redis_server.url)
    client.config_resetstat()
    jobs = q.enqueue_many(
        [("tests.worker.jobs:hold", (redis_server.url, f"hold{n}")) for n in range(slots)]
    )
    wait_started(jobs)
    # One script call per take, plus the odd idle take before the burst: one take per slot
    # would be 20 or more.
    takes = step_calls(client)
    assert takes < slots, takes
    release(redis_server, jobs)
    assert [j.get(timeout=20) for j in jobs] == ["done"] * slots


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_warm_shutdown_waits_for_every_busy_slot(backend, redis_server, start_worker):
    worker = slot_worker(start_worker, backend, redis_server.url)
    q = Queue(connection=redis_server.url)
    jobs = [q.enqueue("tests.worker.jobs:record", redis_server.url, f"j{n}", 1.5) for n in range(5)]
    wait_started(jobs)
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(20) == 0
    assert [j.status for j in jobs] == [JobStatus.FINISHED] * 5
    assert sorted(executions(redis_server)) == [f"j{n}" for n in range(5)]


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_cold_shutdown_puts_every_job_of_every_slot_back_without_an_attempt(
    backend, redis_server, start_worker
):
    worker = slot_worker(start_worker, backend, redis_server.url)
    q = Queue(connection=redis_server.url)
    running = [q.enqueue("tests.worker.jobs:nap", 30) for _ in range(SIZE * SLOTS)]
    wait_started(running)
    waiting = q.enqueue("tests.worker.jobs:nap", 0)
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 1
    assert [j.status for j in running] == [JobStatus.QUEUED] * len(running)
    assert [j.attempts for j in running] == [0] * len(running)
    assert q.job_ids[-1] == waiting.id
    assert set(q.job_ids[:-1]) == {j.id for j in running}


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_a_child_killed_with_k_jobs_fails_each_as_an_attempt_and_its_neighbour_runs_on(
    backend, redis_server, start_worker
):
    worker = slot_worker(start_worker, backend, redis_server.url)
    q = Queue(connection=redis_server.url)
    jobs = hold_jobs(q, redis_server.url, SIZE * SLOTS)
    wait_started(jobs)
    victim_pid = worker.child_pids()[0]
    # A job is `started` in Redis from its take step on, a moment before its slot marks
    # itself busy; killed in that moment, the child's job goes back unattempted (SPEC 3's
    # other branch). Its title says when all of its slots hold their job.
    wait_for(
        lambda: title(victim_pid).endswith(f"slots busy={SLOTS} idle=0"),
        timeout=20,
        message="every slot of the child busy",
    )
    os.kill(victim_pid, signal.SIGKILL)
    # Each job the child held is a failed attempt (WorkerLost), which the default policy
    # retries after 1-2 s; the other child's jobs run on untouched.
    try:
        lost = wait_for(
            lambda: (hit := [j for j in jobs if j.attempts]) and len(hit) == SLOTS and hit,
            timeout=20,
            message="the killed child's 3 jobs counted as failed attempts",
        )
    except AssertionError:
        statuses = [(j.status, j.attempts) for j in jobs]
        raise AssertionError((statuses, worker.output()[-4000:])) from None
    survivors = [j for j in jobs if j not in lost]
    assert all(j.status == JobStatus.STARTED for j in survivors)
    assert victim_pid not in worker.child_pids()
    wait_for(lambda: len(worker.child_pids()) == SIZE, message="the child replaced")
    release(redis_server, jobs)
    for job in jobs:
        assert job.get(timeout=30) == "done"
    assert [j.attempts for j in survivors] == [1] * SLOTS
    assert [j.attempts for j in lost] == [2] * SLOTS


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_a_timed_out_or_canceled_job_ends_while_its_neighbours_run_on_and_its_slot_serves_again(
    backend, redis_server, start_worker
):
    """A timeout, then a cancel, each of one job among busy neighbours, on one worker (a
    multiprocessing worker costs ~2 s of CPU to start)."""
    slot_worker(start_worker, backend, redis_server.url, size=1)
    q = Queue(connection=redis_server.url)
    neighbours = hold_jobs(q, redis_server.url, SLOTS - 1)
    late = q.enqueue("tests.worker.jobs:nap", 60, timeout=1)
    wait_started([*neighbours, late])
    with pytest.raises(JobFailed) as info:
        late.get(timeout=10)
    assert info.value.exc_type == f"{JobTimeout.__module__}.{JobTimeout.__qualname__}"
    assert [j.status for j in neighbours] == [JobStatus.STARTED] * len(neighbours)
    # The slot is in service again at once, while the neighbours still run.
    assert q.enqueue("tests.worker.jobs:add", 2, 2).get(timeout=10) == 4
    assert [j.status for j in neighbours] == [JobStatus.STARTED] * len(neighbours)

    doomed = q.enqueue("tests.worker.jobs:nap", 60)
    wait_started([doomed])
    doomed.cancel()
    wait_for(lambda: doomed.status == JobStatus.CANCELED, timeout=5, message="canceled")
    assert q.enqueue("tests.worker.jobs:add", 3, 4).get(timeout=10) == 7
    assert [j.status for j in neighbours] == [JobStatus.STARTED] * len(neighbours)
    release(redis_server, neighbours)
    assert [j.get(timeout=10) for j in neighbours] == ["done"] * len(neighbours)
    assert late.status == JobStatus.FAILED


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_async_jobs_of_a_child_share_its_one_loop_and_a_timeout_or_cancel_cancels_their_task(
    backend, redis_server, start_worker
):
    """SPEC 10: a child's slots run `async def` jobs in the child's event loop, and ending a
    job (timeout, cancel) cancels its task: the coroutine sees CancelledError at its next
    await instead of running on for its whole length in an abandoned thread."""
    slot_worker(start_worker, backend, redis_server.url, size=1)
    q = Queue(connection=redis_server.url)
    together = [q.enqueue("tests.worker.async_jobs:loop_after", 1.0) for _ in range(SLOTS)]
    ran = [job.get(timeout=20) for job in together]
    assert max(start for *_, start, _ in ran) < min(end for *_, end in ran)  # all at once
    assert len({(pid, loop) for pid, loop, *_ in ran}) == 1  # as tasks of one loop

    client, url = redis_server.client(), redis_server.url
    timed = q.enqueue("tests.worker.async_jobs:sleep_then_mark", url, "timed", 60, timeout=1)
    with pytest.raises(JobFailed) as info:
        timed.get(timeout=15)
    assert info.value.exc_type.endswith("JobTimeout")
    wait_for(lambda: client.lrange("timed", 0, -1) == [b"cancelled"], 10, message="timeout")

    canceled = q.enqueue("tests.worker.async_jobs:sleep_then_mark", url, "canceled", 60)
    wait_for(lambda: canceled.status == JobStatus.STARTED, 15, message="started")
    canceled.cancel()
    wait_for(lambda: client.lrange("canceled", 0, -1) == [b"cancelled"], 10, message="cancel")
    # Every slot serves again, the loop with them.
    again = [q.enqueue("tests.worker.async_jobs:add_later", n, 1, 0.5) for n in range(SLOTS)]
    assert [job.get(timeout=20) for job in again] == [n + 1 for n in range(SLOTS)]


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_every_slot_keeps_its_lease_so_no_long_job_runs_twice(backend, redis_server, start_worker):
    # Two workers with 1 s leases: a slot whose lease were not renewed would see its job
    # recovered and run again by the other worker.
    for _ in range(2):
        slot_worker(start_worker, backend, redis_server.url, "--lease-seconds", "1", size=1)
    q = Queue(connection=redis_server.url)
    jobs = [q.enqueue("tests.worker.jobs:record", redis_server.url, f"j{n}", 2.5) for n in range(6)]
    assert [j.get(timeout=30) for j in jobs] == [f"j{n}" for n in range(6)]
    assert sorted(executions(redis_server)) == [f"j{n}" for n in range(6)]
    assert [j.attempts for j in jobs] == [1] * 6


@pytest.mark.parametrize(
    ("backend", "slots", "message"),
    [
        ("threading", "4", "slots apply to the process backends"),
        ("forking", "0", "slots must be an integer >= 1"),
    ],
)
def test_slots_misuse_is_a_one_line_usage_error(backend, slots, message, redis_server):
    done = subprocess.run(
        main_py_argv(backend, 2, "--slots", slots, "--url", redis_server.url),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_an_embedded_supervisor_lists_every_slot_as_a_child(redis_server):
    sup = Supervisor("forking", 1, ["default"], connection=redis_server.url, allow="tests", slots=3)
    try:
        sup.start().wait_ready()
        children = sup.children
        assert [c.index for c in children] == [0, 1, 2]
        assert len({c.pid for c in children}) == 1 and children[0].pid
        q = Queue(connection=redis_server.url)
        jobs = hold_jobs(q, redis_server.url, 3)
        wait_started(jobs)
        wait_for(
            lambda: sorted(c.job_id or "" for c in sup.children) == sorted(j.id for j in jobs),
            message="each slot shows its job",
        )
        release(redis_server, jobs)
        assert [j.get(timeout=10) for j in jobs] == ["done"] * 3
    finally:
        sup.stop()
        sup.join(10)


def test_supervisor_refuses_slots_on_a_backend_without_processes():
    with pytest.raises(ValueError, match="slots apply to the process backends"):
        Supervisor("threading", 2, slots=4, connection="redis://127.0.0.1:1/0")
    with pytest.raises(ValueError, match="slots must be an integer >= 1"):
        Supervisor("forking", 2, slots=0, connection="redis://127.0.0.1:1/0")
