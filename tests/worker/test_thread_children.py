"""Children that share their supervisor's process (threading, gevent): a Redis blip ends
none of them, and a child that does die leaves its traceback in the log."""

import pytest

from rqconc import Queue
from tests.support.tcp_proxy import TcpProxy
from tests.support.worker_process import Spool, wait_for

IN_PROCESS = ["threading", "gevent", "asyncio"]


def executions(server):
    return server.client().llen("executions")


@pytest.mark.parametrize("backend", IN_PROCESS)
def test_in_process_children_survive_redis_blips_and_finish_every_job(
    backend, redis_server, start_worker
):
    proxy = TcpProxy(redis_server.port).start()
    try:
        worker = start_worker(backend, 8, proxy.url())
        q = Queue(connection=redis_server.url)
        jobs = [
            q.enqueue("tests.worker.jobs:record", redis_server.url, f"j{n}", 0.05)
            for n in range(300)
        ]
        for blip in range(6):
            done = executions(redis_server)
            wait_for(
                lambda done=done: executions(redis_server) >= done + 8,
                timeout=30,
                message=f"jobs flowing before blip {blip}",
            )
            # Every child's connection breaks at once: takes fail with their replies lost,
            # and the children put those claims back as Redis returns, all at the same time.
            proxy.drop(0.3)
        wait_for(
            lambda: all(j.status.value == "finished" for j in jobs),
            timeout=90,
            message="every job finished",
        )
        output = worker.output()
        assert "died" not in output and "IndexError" not in output, output[-3000:]
    finally:
        proxy.close()


@pytest.mark.parametrize("backend", IN_PROCESS)
def test_an_in_process_child_that_dies_logs_its_traceback(backend, tmp_path, start_worker):
    spool = Spool(tmp_path)
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    spool.add(crash=True)
    wait_for(lambda: "died" in worker.output(), message="a child death logged")
    output = worker.output()
    assert "Traceback (most recent call last)" in output, output[-3000:]
    assert "ChildCrash" in output
