"""Process titles of a real worker on real Redis: `ps` shows the supervisor's queue and
busy/idle counts, the child running a job with that job's id, and `suspended` after
`rqconc suspend` (tests/engine/test_titles.py covers the formats on the fake source)."""

import psutil

from rqconc import JobStatus, Queue
from tests.cli.test_commands import ok
from tests.engine.test_titles import ps_args
from tests.support.waiting import wait_for


def wait_title(pid, expected, message):
    wait_for(
        lambda: ps_args(pid) == expected,
        timeout=15,
        message=f"{message}: want {expected!r}, have {ps_args(pid)!r}",
    )


def test_ps_shows_a_forking_workers_queue_busy_child_job_and_suspension(redis_server, start_worker):
    url = redis_server.url
    worker = start_worker("forking", 2, url, "-q", "titled", "--name", "titles")
    supervisor = "rqconc: supervisor forking 2 [titled] busy={} idle={}{} name=titles"
    wait_title(worker.pid, supervisor.format(0, 2, ""), "idle supervisor")

    job = Queue("titled", url).enqueue("tests.worker.jobs:hold", url, "release")
    wait_for(lambda: job.status == JobStatus.STARTED, message="job started")
    wait_title(worker.pid, supervisor.format(1, 1, ""), "busy supervisor")
    children = [child.pid for child in psutil.Process(worker.pid).children()]
    assert len(children) == 2
    either_child_busy = [
        sorted([f"rqconc: child {i} busy {job.id}", f"rqconc: child {1 - i} idle"]) for i in (0, 1)
    ]
    wait_for(
        lambda: sorted(map(ps_args, children)) in either_child_busy,
        message=f"child titles, have {list(map(ps_args, children))}",
    )

    ok("suspend", "--url", url)
    wait_title(worker.pid, supervisor.format(1, 1, " suspended"), "suspended supervisor")
    ok("resume", "--url", url)
    wait_title(worker.pid, supervisor.format(1, 1, ""), "resumed supervisor")

    redis_server.client().rpush("release", "done")
    assert job.get(timeout=10) == "done"
    wait_title(worker.pid, supervisor.format(0, 2, ""), "idle again")
