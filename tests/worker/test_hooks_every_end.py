"""SPEC 16, hooks see every end: a timeout, a child that died, a lost lease and a canceled
running job each call their job hook (`on_failure` / `on_retry` with `JobTimeout` or
`WorkerLost`, `on_cancel`), once, in a supervisor, on every backend; a hook that raises
there is logged once and the worker goes on."""

import os
import signal

import pytest

from rqconc import JobFailed, JobStatus, Queue, Retry
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, wait_for

HOOKS = ("--hooks", "tests.worker.hooks_every_end")
JOBS = "tests.worker.ending_jobs"


def ends(server):
    return [v.decode() for v in server.client().lrange("ends", 0, -1)]


def running_pid(server, token):
    def find():
        for entry in server.client().lrange("running", 0, -1):
            name, pid = entry.decode().rsplit(":", 1)
            if name == token:
                return int(pid)
        return None

    return wait_for(find, 20, message=f"job {token} running")


def one_end(server, job):
    """The one hook call recorded for `job`, once there is one (and no second)."""
    wait_for(lambda: any(job.id in e for e in ends(server)), 20, message="a job-end hook")
    mine = [e for e in ends(server) if job.id in e]
    assert len(mine) == 1, mine
    return mine[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_timeout_calls_on_failure_and_a_cancel_calls_on_cancel_in_the_supervisor(
    backend, redis_server, start_worker
):
    """A timeout calls on_failure with JobTimeout; a canceled running job, on_cancel. One
    worker for both ends (they leave it running; a worker costs ~1 s of CPU to start)."""
    worker = start_worker(backend, 1, redis_server.url, *HOOKS)
    q = Queue(connection=redis_server.url)
    job = q.enqueue(f"{JOBS}:block", redis_server.url, "slow", 30, timeout=1, retry=Retry(max=0))
    with pytest.raises(JobFailed, match="JobTimeout"):
        job.get(timeout=20)
    # No traceback (nothing of the job's raised); the hook ran in the supervisor's process.
    assert one_end(redis_server, job) == f"on_failure:JobTimeout:True:None:{job.id}:{worker.pid}"
    assert q.enqueue("tests.worker.jobs:add", 1, 2).get(timeout=20) == 3  # it goes on

    canceled = q.enqueue(f"{JOBS}:block", redis_server.url, "doomed", 60)
    running_pid(redis_server, "doomed")
    assert canceled.cancel() is True
    wait_for(lambda: canceled.status == JobStatus.CANCELED, 10, message="canceled")
    assert one_end(redis_server, canceled) == f"on_cancel:canceled:{canceled.id}:{worker.pid}"
    assert q.enqueue("tests.worker.jobs:add", 1, 2).get(timeout=20) == 3
    assert len(ends(redis_server)) == 2  # one hook call per end, no more


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_that_died_calls_on_retry_then_on_failure_with_workerlost(
    backend, redis_server, start_worker
):
    worker = start_worker(backend, 1, redis_server.url, *HOOKS)
    q = Queue(connection=redis_server.url)
    retry = Retry(max=1, backoff=0.2, jitter=False)
    if backend in PROCESS_BACKENDS:  # a SIGKILLed child process
        job = q.enqueue(f"{JOBS}:block", redis_server.url, "victim", 30, retry=retry)
        os.kill(running_pid(redis_server, "victim"), signal.SIGKILL)
        wait_for(lambda: len(ends(redis_server)) >= 1, 20, message="the first end's hook")
        os.kill(running_pid_again(redis_server, "victim"), signal.SIGKILL)
    else:  # an in-process child ended by what the job raised (not an Exception)
        job = q.enqueue(f"{JOBS}:die", redis_server.url, "victim", retry=retry)
    with pytest.raises(JobFailed, match="WorkerLost"):
        job.get(timeout=30)
    wait_for(lambda: len(ends(redis_server)) >= 2, 20, message="both ends' hooks")
    assert ends(redis_server) == [
        f"on_retry:WorkerLost:0.2:{job.id}:{worker.pid}",
        f"on_failure:WorkerLost:True:None:{job.id}:{worker.pid}",
    ]


def running_pid_again(server, token):
    """The pid of the second run of `token` (the first one's child was killed)."""
    wait_for(lambda: server.client().llen("running") >= 2, 20, message=f"{token} running again")
    return int(server.client().lindex("running", 1).decode().rsplit(":", 1)[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_lost_lease_calls_on_retry_in_the_worker_that_recovers_it(
    backend, redis_server, start_worker
):
    lease = ("--lease-seconds", "2")
    first = start_worker(backend, 1, redis_server.url, *HOOKS, *lease)
    q = Queue(connection=redis_server.url)
    job = q.enqueue(f"{JOBS}:block", redis_server.url, "orphan", 60)
    running_pid(redis_server, "orphan")
    first.signal_group(signal.SIGKILL)  # the whole worker vanishes: nothing records the end
    first.wait_exit(5)
    second = start_worker(backend, 1, redis_server.url, *HOOKS, *lease)
    assert one_end(redis_server, job) == f"on_retry:WorkerLost:0.0:{job.id}:{second.pid}"
    assert job.lost == 1
    wait_for(lambda: redis_server.client().llen("running") == 2, 20, message="run again")
    redis_server.client().rpush("orphan", "go")
    assert job.get(timeout=20) == "orphan"


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_a_supervisor_hook_that_raises_is_logged_once_and_the_others_still_run(
    backend, redis_server, start_worker
):
    worker = start_worker(
        backend, 1, redis_server.url, "--hooks", "tests.worker.hooks_raising", *HOOKS
    )
    q = Queue(connection=redis_server.url)
    job = q.enqueue(f"{JOBS}:block", redis_server.url, "slow", 30, timeout=1, retry=Retry(max=0))
    with pytest.raises(JobFailed, match="JobTimeout"):
        job.get(timeout=20)
    assert one_end(redis_server, job).startswith("on_failure:JobTimeout:")
    assert q.enqueue("tests.worker.jobs:add", 1, 2).get(timeout=20) == 3
    output = worker.output()
    assert output.count("hook on_failure (tests.worker.hooks_raising.on_failure) raised") == 1
    assert "RuntimeError: failure hook boom" in output
