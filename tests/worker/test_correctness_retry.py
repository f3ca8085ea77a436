"""Issue 14, item 11: a corrupt stored retry policy fails that job only, on every backend."""

import pytest

from rqconc import JobFailed, Queue, Retry
from rqconc.store.keys import KeySpace
from tests.support.worker_process import BACKENDS

CORRUPT = [
    '{"max":3,"backoff":1.0,"factor":2.0,"max_delay":NaN,"jitter":false,"on":null}',
    '{"max":3,"backoff":Infinity,"factor":2.0,"max_delay":Infinity,"jitter":false,"on":null}',
    '{"max":3,"backoff":1e300,"factor":2.0,"max_delay":1e300,"jitter":false,"on":null}',
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stored_retry_field_with_nan_or_inf_fails_that_job_only(
    backend, redis_server, start_worker
):
    client = redis_server.client()
    q = Queue(connection=redis_server.url)
    bad = [q.enqueue("tests.worker.jobs:add", 2, "x", retry=Retry(max=3)) for _ in CORRUPT]
    for job, stored in zip(bad, CORRUPT):
        client.hset(KeySpace().job(job.id), "retry", stored)
    worker = start_worker(backend, 2, redis_server.url)
    for job in bad:
        with pytest.raises(JobFailed) as info:
            job.get(timeout=15)
        assert info.value.exc_type == "TypeError"
    assert q.enqueue("tests.worker.jobs:add", 2, 3).get(timeout=15) == 5
    assert worker.process.poll() is None, worker.output()[-3000:]
