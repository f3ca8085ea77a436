"""Issue 14, item 3's leftover: `Next(..., job_id=X)` where X is created between the
worker's check and the completion step. The step refuses it, writing nothing; the stage
must then fail at once (a ValueError, as at the check), not wait out its lease, run again
and count a lost lease."""

import pytest

from rqconc import JobFailed, Queue
from tests.support.worker_process import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_next_stage_id_taken_before_completion_fails_the_stage_at_once(
    backend, redis_server, start_worker
):
    q = Queue(connection=redis_server.url)
    stage = q.enqueue("tests.worker.flow_jobs:hand_on_racing", "raced-id")
    worker = start_worker(backend, 1, redis_server.url)
    with pytest.raises(JobFailed) as info:
        stage.get(timeout=10)  # inside the 15 s lease: no recovery involved
    assert info.value.exc_type == "ValueError"
    assert "'raced-id'" in str(info.value) and "already exists" in str(info.value)
    stage.refresh()
    assert stage.attempts == 1 and stage.lost == 0 and stage.next_id is None
    raced = q.fetch_job("raced-id")
    assert raced.get(timeout=10) == 42 and raced.flow_id is None  # the other producer's job
    assert "lease was lost" not in worker.output()
    assert worker.process.poll() is None, worker.output()[-3000:]
