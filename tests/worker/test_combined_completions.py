"""Issue 21: where one process runs several jobs at once (`--slots` on the process backends;
the threading, gevent and asyncio backends), the completions of its slots that finish
while another is on its way go to Redis together (worker/completions.py,
lua/complete_many.lua). Real workers on a real Redis, a backlog of short jobs: each job
finishes exactly once with its own result, in fewer steps than jobs."""

import pytest

from rqconc import JobStatus, Queue
from rqconc.queue.events import EventStream
from tests.support.lua_calls import preloaded, step_calls
from tests.support.tcp_proxy import TcpProxy
from tests.support.worker_process import wait_for

JOBS = 600
# Enough for many combined completions, of which only the first three lose their reply: the
# rest of a 600-job backlog proved nothing more and cost most of the file's CPU.
JOBS_LOST_REPLIES = 200

# (backend, processes or slots, extra options): every way one process holds several slots
SLOTTED = [
    ("forking", 2, ("--slots", "4")),
    ("multiprocessing", 2, ("--slots", "4")),
    ("threading", 8, ()),
    ("gevent", 8, ()),
    ("asyncio", 8, ()),
]


def evalsha_calls(client):
    return step_calls(client)


@pytest.mark.parametrize(
    "backend,size,extra", SLOTTED, ids=[f"{b}-{s}{'x4' if e else ''}" for b, s, e in SLOTTED]
)
def test_completions_of_slots_finishing_together_share_steps_and_each_job_ends_once(
    backend, size, extra, redis_server, start_worker
):
    client = redis_server.client()
    q = Queue(connection=redis_server.url)
    jobs = q.enqueue_many([("tests.worker.jobs:add", (n, 1)) for n in range(JOBS)])
    client.config_resetstat()
    start_worker(backend, size, redis_server.url, *extra)
    wait_for(
        lambda: q.count == 0 and all(j.status == JobStatus.FINISHED for j in jobs[-10:]),
        timeout=120,
        message="the backlog ran",
    )
    wait_for(
        lambda: all(j.status == JobStatus.FINISHED for j in jobs), timeout=60, message="all done"
    )
    # One complete step per job without combining (each also takes the next job); besides
    # them only a few heartbeats, renewals and idle takes per second.
    calls = evalsha_calls(client)
    assert calls < 0.9 * JOBS, f"{calls} steps for {JOBS} jobs: completions were not combined"
    assert [j.get(timeout=5) for j in jobs] == [n + 1 for n in range(JOBS)]
    events = EventStream(redis_server.url).latest(count=10 * JOBS)
    finished = [e for e in events if e["event"] == "finished"]  # once per job
    assert sorted(e["job_id"] for e in finished) == sorted(j.id for j in jobs)


@pytest.mark.parametrize("backend,size,extra", SLOTTED, ids=[s[0] for s in SLOTTED])
def test_a_combined_completion_whose_reply_is_lost_runs_no_job_twice_and_loses_none(
    backend, size, extra, redis_server, start_worker
):
    """The step ran, its reply never came: every slot in it sees the loss as its own. Each
    retries its completion (refused as stale: it landed) and puts back, before its next take,
    the job its next claim may have leased (it did, and never ran it). So every job runs
    exactly once, and none waits for its lease to end: the lease is longer than the test may
    take. (On forking and multiprocessing --slots and asyncio, the native core's takes did not
    put back what a plain function's completion had filed: those jobs came back by lease
    recovery.)"""
    proxy = TcpProxy(redis_server.port).start()
    try:
        q = Queue(connection=redis_server.url)
        tokens = [f"j{n}" for n in range(JOBS_LOST_REPLIES)]
        jobs = q.enqueue_many([("tests.worker.jobs:record", (redis_server.url, t)) for t in tokens])
        proxy.cut_reply_to(preloaded(redis_server.client(), "complete_many"), times=3)
        worker = start_worker(backend, size, proxy.url(), "--lease-seconds", "90", *extra)
        wait_for(
            lambda: all(j.status == JobStatus.FINISHED for j in jobs),
            timeout=60,
            message="all ran, none left to its lease",
        )
        assert proxy.cut == 3  # three combined steps lost their replies
        assert "recovered jobs whose worker vanished" not in worker.output()
        ran = [v.decode() for v in redis_server.client().lrange("executions", 0, -1)]
        assert sorted(ran) == sorted(tokens)  # each job once: none twice, none lost
    finally:
        proxy.close()
