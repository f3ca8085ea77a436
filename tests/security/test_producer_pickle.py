"""Producers never unpickle unless their queue opted in (issue 14, item 16): a pickled
outcome found on a JSON queue's job (written by whoever can write to Redis) is refused by
`job.get()`, `job.return_value` and the arguments, before any unpickling. Real Redis; the
opted-in path runs a real worker."""

import base64
import os
import pickle

import pytest

from rqconc import Job, Queue
from rqconc.errors import NotAllowed

pytestmark = pytest.mark.security


class _Boom:
    """Unpickling this runs `touch PATH`: what a hostile payload does."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def _hostile(path):
    return base64.b64encode(pickle.dumps(_Boom(path))).decode()


def _refreshed(job):
    job.refresh()
    return job


def test_a_json_queues_job_refuses_a_pickled_outcome(redis_server, tmp_path):
    marker = tmp_path / "pwned"
    queue = Queue("sec", connection=redis_server.url)
    job = queue.enqueue("tests.worker.jobs:add", 1, 2)
    payload = _hostile(marker)
    redis_server.client().hset(
        job.key,
        mapping={
            "status": "finished",
            "serializer": "pickle",
            "result": payload,
            "args": payload,
            "kwargs": payload,
        },
    )
    fetched = Job.fetch(job.id, redis_server.url)
    readers = [
        lambda: job.return_value,
        lambda: job.get(timeout=5),
        lambda: queue.fetch_job(job.id).get(timeout=5),
        lambda: fetched.return_value,
        lambda: fetched.args,
        lambda: _refreshed(queue.jobs[0]).kwargs,
    ]
    for read in readers:
        with pytest.raises(NotAllowed, match="pickle"):
            read()
    assert not marker.exists(), "a producer unpickled a payload its queue never opted in to"
    assert Job.fetch(job.id, redis_server.url, allow_pickle=True).serializer == "pickle"


def test_a_pickle_queue_reads_its_pickled_results(redis_server, start_worker):
    queue = Queue("pickled", connection=redis_server.url, serializer="pickle")
    job = queue.enqueue("tests.worker.jobs:add", [1], [2])
    start_worker("threading", 1, redis_server.url, "-q", "pickled", "--allow-pickle")
    assert job.get(timeout=20) == [1, 2]
    assert job.return_value == [1, 2]
    assert queue.fetch_job(job.id).get(timeout=5) == [1, 2]
    assert queue.fetch_job(job.id).args == [[1], [2]]
