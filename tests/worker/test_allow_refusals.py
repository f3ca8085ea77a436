"""Issue 32, item 3: a worker whose `--allow` does not cover a job's module (none given, or
a typo) must neither empty the queue into the dead letters nor do it silently. On a real
worker at `--log-level WARNING`, on every backend: one warning per function naming the
option to add, every refused job back in its queue untouched (no dead letter, attempts 0),
the worker stops with exit code 2 and one line, and a correctly configured worker then runs
every job."""

import time

import pytest

from rqconc import JobStatus, Queue
from rqconc.worker.refusals import REFUSALS_BEFORE_STOP
from tests.support.worker_process import BACKENDS, WorkerProcess, main_py_argv, wait_for

JOBS = "tests.worker.jobs"


def misconfigured_worker(backend, url, tmp_path, *allow):
    """A worker on queues a and b, taking from each in turn, with the given --allow (a typo
    of `tests`, or none) and the log level an operator running it quietly would pick."""
    argv = main_py_argv(
        backend, 1, "--url", url, "--queues", "a,b", "--strategy", "round-robin",
        "--log-level", "WARNING", *allow,
    )  # fmt: skip
    return WorkerProcess(argv, tmp_path / f"refusing-{time.monotonic_ns()}.log", 1)


def warnings_for(output, func):
    return [line for line in output.splitlines() if f"WARNING rqconc.worker: job {func} refused"
            in line]  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("allow", [(), ("--allow", "test")], ids=["no-allow", "typo"])
@pytest.mark.timeout(180)
def test_a_worker_that_may_not_run_the_jobs_leaves_them_queued_says_why_and_stops(
    backend, allow, redis_server, start_worker, tmp_path
):
    url = redis_server.url
    a, b = Queue("a", connection=url), Queue("b", connection=url)
    jobs = [a.enqueue(f"{JOBS}:add", i, 1) for i in range(20)]
    jobs += [b.enqueue(f"{JOBS}:nap", 0) for _ in range(20)]
    worker = misconfigured_worker(backend, url, tmp_path, *allow)
    try:
        assert worker.wait_exit(60) == 2, worker.output()[-3000:]
        output = worker.output()
    finally:
        worker.close()
    for func in (f"{JOBS}:add", f"{JOBS}:nap"):
        lines = warnings_for(output, func)
        assert len(lines) == 1, output[-3000:]
        assert "start the worker with --allow tests to run it" in lines[0], lines[0]
    stop = [line for line in output.splitlines() if "refused" in line and "ERROR" in line]
    assert len(stop) == 1, output[-3000:]
    assert f"refused {REFUSALS_BEFORE_STOP} jobs in a row" in stop[0], stop[0]
    assert "start the worker with --allow tests" in stop[0] and "exit code 2" in stop[0]
    # Nothing failed, nothing counted: every job waits in its queue as it was enqueued.
    assert a.failed.job_ids == [] and b.failed.job_ids == []
    assert a.count == 20 and b.count == 20
    for job in jobs:
        job.refresh()
        assert job.status == JobStatus.QUEUED and job.attempts == 0, (job.id, job.status)
    if not allow:
        # Shown untouched above in both cases; that a worker then runs them is shown once per
        # backend, after the typo (a worker start costs ~1 s of CPU).
        return
    # A worker that allows them runs every one.
    fixed = start_worker("threading", 2, url, "--queues", "a,b", "--burst")
    assert fixed.wait_exit(60) == 0, fixed.output()[-3000:]
    assert [job.get(timeout=5) for job in jobs[:20]] == [i + 1 for i in range(20)]
    wait_for(lambda: all(job.refresh() or job.status == JobStatus.FINISHED for job in jobs))
