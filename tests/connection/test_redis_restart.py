"""Jobs flowing through a worker while an append-only Redis is stopped (SIGTERM) and started
again, several times (issue 14 item 9): no worker vanished, so every job runs exactly once."""

import collections
import threading
import time

import pytest

from rqconc import Queue, errors
from rqconc.queue.keys import KeySpace
from tests.support.redis_server import RedisServer
from tests.support.waiting import wait_for

JOBS = 200
RESTARTS = 3


def _finished(server):
    try:
        return server.client().zcard(KeySpace("rqconc").finished("default"))
    except Exception:  # the server is down or loading: not yet
        return 0


def _runs(trace):
    return trace.read_text().count("\n") if trace.exists() else 0


def _produce(url, trace):
    """Enqueue j0..j199 under their own ids, 50 ms apart, retrying through outages: a retry
    told "already exists" means the first call stored it."""
    queue = Queue(connection=url)
    for n in range(JOBS):
        while True:
            try:
                queue.enqueue(
                    "tests.connection.jobs:mark", str(trace), f"j{n}", 0.01, job_id=f"j{n}"
                )
                break
            except errors.ConnectionError:
                time.sleep(0.2)
            except ValueError as exc:
                assert "already exists" in str(exc)
                break
        time.sleep(0.05)


@pytest.mark.parametrize("backend", ["threading", "gevent"])
def test_jobs_run_once_around_redis_restarts(backend, redis_binary, tmp_path, start_worker):
    server = RedisServer(redis_binary, appendonly=True).start()
    trace = tmp_path / "runs.txt"
    try:
        worker = start_worker(backend, 4, server.url, "--lease-seconds", "5")
        queue = Queue(connection=server.url)
        assert queue.enqueue("tests.worker.jobs:add", 1, 1).get(timeout=20) == 2
        # Jobs keep coming during the restarts too: an enqueue meets the outage as well.
        producer = threading.Thread(target=_produce, args=(server.url, trace), daemon=True)
        producer.start()
        for _ in range(RESTARTS):
            runs_before = _runs(trace)
            wait_for(
                lambda before=runs_before: _runs(trace) > before + 5,
                timeout=20,
                message="jobs flowing",
            )
            server.stop()  # SIGTERM
            time.sleep(3)  # the outage under test lasts 3 s: no condition to wait for
            server.start()
        producer.join(60)
        wait_for(lambda: _finished(server) >= JOBS + 1, timeout=60, message="every job ended")
        counts = collections.Counter(trace.read_text().split())
        twice = {token: n for token, n in counts.items() if n > 1}
        assert not twice, f"ran more than once: {twice}\n{worker.output()[-3000:]}"
        assert sorted(counts) == sorted(f"j{n}" for n in range(JOBS))
        assert worker.process.poll() is None
    finally:
        server.close()
