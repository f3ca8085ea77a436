"""A combined take whose reply is lost (the asyncio backend; `--slots` children): the idle
slots of one process share a take step (engine/slots/takes.py), and each slot takes again
under the same claim after a lost reply (slots/child_side.begin_take, issue 14). Whichever
thread sends that next take must first put back what the lost one leased under those
claims; before the fix only the thread that had led the lost take knew of them, another
thread's take leased new jobs under them, and the first thread's late put-back returned a
running job to the queue: it ran twice. Real workers on a real Redis, the reply cut by a TCP
proxy."""

import pytest

from rqconc import JobStatus, Queue
from tests.support.lua_calls import preloaded
from tests.support.tcp_proxy import TcpProxy
from tests.support.worker_process import wait_for

# (backend, processes, extra options): every way one process shares its slots' takes
COMBINED = [
    ("forking", 1, ("--slots", "8")),
    ("multiprocessing", 1, ("--slots", "8")),
    ("asyncio", 8, ()),
]
RUN_SECONDS = 1.5  # each job holds its slot this long: a put-back lands while it runs


@pytest.mark.parametrize("backend,size,extra", COMBINED, ids=[c[0] for c in COMBINED])
def test_a_combined_take_whose_reply_is_lost_runs_no_job_twice_and_loses_none(
    backend, size, extra, redis_server, start_worker
):
    """The first slot takes alone, the seven others in one take_many whose reply is cut:
    seven jobs leased, none received. Of the jobs left, each goes to a slot that takes again
    under its old claim; the slots left idle take on meanwhile. Every job runs exactly once,
    and the seven lost ones are back well before their 15 s leases could run out."""
    proxy = TcpProxy(redis_server.port).start()
    try:
        q = Queue(connection=redis_server.url)
        tokens = [f"j{n}" for n in range(10)]
        jobs = q.enqueue_many(
            [("tests.worker.jobs:record", (redis_server.url, t, RUN_SECONDS)) for t in tokens]
        )
        # Loaded first: the cut step then runs (a NOSCRIPT reply lost would lease nothing).
        proxy.cut_reply_to(preloaded(redis_server.client(), "take_many"), times=1)
        start_worker(backend, size, proxy.url(), *extra)
        wait_for(
            lambda: all(j.status == JobStatus.FINISHED for j in jobs),
            timeout=12,  # under the lease: no job waits for its lease to run out
            message="all ran",
        )
        assert proxy.cut == 1  # the combined take lost its reply
        ran = [v.decode() for v in redis_server.client().lrange("executions", 0, -1)]
        assert sorted(ran) == sorted(tokens)  # each job once: none twice, none lost
    finally:
        proxy.close()
