"""A job hash holding bytes that are not UTF-8 (written straight into Redis): a job whose
function or arguments are such bytes must fail with a clear reason, one whose description or
meta are runs (the worker never reads them), and the worker must stay up. Each case gets its
own Redis and worker, since such a job once took down every worker that touched it."""
import pytest

from rqconc import Queue
from tests.fuzz.test_corrupt_jobs import GOOD_FUNC, _ended, _inject
from tests.support.waiting import wait_for

pytestmark = pytest.mark.fuzz


@pytest.mark.parametrize("field,ends", [("args", b"failed"), ("kwargs", b"failed"),
                                        ("func", b"failed"),
                                        # Fields a worker never reads cannot harm the run.
                                        ("description", b"finished"), ("meta", b"finished")])
def test_non_utf8_field_fails_the_job_and_the_worker_stays_up(redis_server, start_redis_worker,
                                                              field, ends):
    client = redis_server.client()
    queue = Queue("fuzz", connection=redis_server.url)
    worker = start_redis_worker("forking", 1, redis_server.url, "-q", "fuzz")
    bad = _inject(client, queue, {field: b"\xc1\xff binary"}, [], f"bin-{field}")
    status = wait_for(lambda: _ended(client.hget(queue.keys.job(bad), "status")) or (
        worker.process.poll() is not None and b"worker died"), timeout=15,
        message=f"{bad} to end")
    assert worker.process.poll() is None, worker.output()[-2000:]
    assert status == ends
    assert queue.enqueue(GOOD_FUNC, "next").get(timeout=15) == "next"


@pytest.mark.parametrize("field,func", [("failure_ttl", "tests.fuzz.jobs:missing"),
                                        ("result_ttl", GOOD_FUNC)])
def test_corrupt_ttl_does_not_kill_the_child(redis_server, start_redis_worker, field, func):
    client = redis_server.client()
    queue = Queue("fuzz", connection=redis_server.url)
    worker = start_redis_worker("forking", 1, redis_server.url, "-q", "fuzz")
    bad = _inject(client, queue, {field: "1.5", "func": func}, [], f"ttl-{field}")
    status = wait_for(lambda: _ended(client.hget(queue.keys.job(bad), "status")), timeout=20,
                      message=f"{bad} to end")
    # A good job afterwards: by the time it finished, any death of the child is logged.
    assert queue.enqueue(GOOD_FUNC, "next").get(timeout=20) == "next"
    assert "died" not in worker.output(), worker.output()[-2000:]
    assert status == (b"failed" if field == "failure_ttl" else b"finished")
    assert client.zscore(queue.keys.active, bad) is None  # the step ran whole, not half
    assert worker.process.poll() is None
