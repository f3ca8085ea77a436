"""A supervisor survives Redis' error replies in its periodic duties (issue 14, item 12).

An ACL user missing a command the heartbeat needs (NOPERM), then a server at `maxmemory`
(OOM): the worker, on every backend, keeps running with the same children, logs each
refusal once rather than at every tick, and works again once Redis is fixed. Real Redis,
real workers.
"""

import psutil
import pytest
import redis

from rqconc import Queue
from tests.support.redis_server import RedisServer
from tests.support.waiting import wait_for
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS

ADMIN_PASSWORD = "adm1n-refusals"
USER_PASSWORD = "w0rker-refusals"


@pytest.fixture
def admin_redis(redis_binary):
    server = RedisServer(redis_binary, password=ADMIN_PASSWORD).start()
    yield server
    server.close()


def _hsetnx_rejections(admin):
    """HSETNX calls Redis refused (ACL or OOM): only the worker's heartbeat sends it."""
    stats = admin.info("commandstats").get("cmdstat_hsetnx", {})
    return int(stats.get("rejected_calls", 0))


def _grant_hsetnx(admin, granted):
    admin.execute_command(
        "ACL",
        "SETUSER",
        "rq",
        "on",
        f">{USER_PASSWORD}",
        "~{rqconc}:*",
        "+@all",
        "+hsetnx" if granted else "-hsetnx",
    )


def _children(worker):
    return sorted(child.pid for child in psutil.Process(worker.pid).children(recursive=True))


def _wait_for_refused_heartbeats(admin, worker, what, before, also=0):
    """Three heartbeats refused since `before` (a count of refusals), besides `also` other
    refused calls (the registration's)."""
    wait_for(
        lambda: _hsetnx_rejections(admin) >= before + also + 3,
        timeout=20,
        message=f"three heartbeats refused ({what})",
    )
    assert worker.process.poll() is None, f"the worker died of {what}:\n{worker.output()[-3000:]}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_worker_outlives_refusals_and_resumes(backend, admin_redis, start_worker):
    admin = admin_redis.client()
    _grant_hsetnx(admin, False)
    url = f"redis://rq:{USER_PASSWORD}@127.0.0.1:{admin_redis.port}/0"
    queue = Queue("refusals", connection=url)
    # Counted from before the start: the supervisor registers (refused too) and heartbeats
    # while its children start and run the first job.
    before = _hsetnx_rejections(admin)
    worker = start_worker(backend, 2, url, "-q", "refusals")
    assert queue.enqueue("tests.worker.jobs:add", 1, 1).get(timeout=30) == 2
    children = _children(worker)

    _wait_for_refused_heartbeats(admin, worker, "NOPERM", before, also=1)
    _grant_hsetnx(admin, True)
    workers = wait_for(
        lambda: [k for k in admin.keys("{rqconc}:worker:*") if admin.hget(k, "birth")],
        timeout=20,
        message="a full heartbeat once HSETNX is granted",
    )
    assert len(workers) == 1

    before = _hsetnx_rejections(admin)
    admin.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.exceptions.ResponseError, match="maxmemory"):
            queue.enqueue("tests.worker.jobs:add", 0, 0)
        _wait_for_refused_heartbeats(admin, worker, "OOM", before)
    finally:
        admin.config_set("maxmemory", 0)

    assert queue.enqueue("tests.worker.jobs:add", 2, 3).get(timeout=30) == 5
    if backend in PROCESS_BACKENDS:
        # No new process: nothing was replaced (a loaded CI run's first snapshot held one
        # more, short-lived process, so the two lists are not compared for equality).
        after = _children(worker)
        assert set(after) <= set(children), f"children were replaced: {children} -> {after}"
    log = worker.output()
    assert "Traceback" not in log, log[-3000:]
    refusals = [line for line in log.splitlines() if "refused heartbeating" in line]
    assert len(refusals) == 2, "\n".join(refusals)  # once for NOPERM, once for OOM
    assert "NoPermissionError" in refusals[0] and "OutOfMemoryError" in refusals[1]
