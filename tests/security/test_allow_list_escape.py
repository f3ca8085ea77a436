"""The allow-list is about where a function is defined (issue 14, item 14): with `--allow
tests`, a job naming `tests.security.escape_tasks:system` must not run `os.system` because
that module did `from os import system`; neither as a job, a class attribute, a callback nor
a flow's next stage. A real worker runs them against a real Redis."""

import pytest

from rqconc import Queue
from rqconc.errors import JobFailed
from tests.support.waiting import wait_for

pytestmark = pytest.mark.security

TASKS = "tests.security.escape_tasks"


def _refused(job):
    with pytest.raises(JobFailed) as failed:
        job.get(timeout=20)
    assert failed.value.exc_type == "rqconc.errors.NotAllowed", failed.value
    assert "defined in" in failed.value.exc_message
    return failed.value


def test_a_function_imported_into_an_allowed_module_does_not_run(
    redis_server, start_worker, tmp_path
):
    markers = [tmp_path / name for name in ("direct", "attribute", "popen", "callback", "next")]
    queue = Queue("sec", connection=redis_server.url)
    direct = queue.enqueue(f"{TASKS}:system", f"touch {markers[0]}")
    attribute = queue.enqueue(f"{TASKS}:Hidden.spawn", f"touch {markers[1]}")
    foreign_class = queue.enqueue(f"{TASKS}:Popen", ["touch", str(markers[2])])
    parent = queue.enqueue(f"{TASKS}:own", 1, on_success=f"{TASKS}:system")
    stage = queue.enqueue(f"{TASKS}:hand_on", f"touch {markers[4]}")
    allowed = queue.enqueue(f"{TASKS}:Hidden.double", 21)
    worker = start_worker("forking", 2, redis_server.url, "-q", "sec")

    for job in (direct, attribute, foreign_class):
        refused = _refused(job)
        assert TASKS in refused.exc_message
    assert parent.get(timeout=20) == 2
    _refused(queue.fetch_job(f"{parent.id}.on_success.1"))
    assert stage.get(timeout=20) == "handed on"
    next_id = wait_for(lambda: stage.next_id, timeout=20, message="the next stage")
    _refused(queue.fetch_job(next_id))
    assert allowed.get(timeout=20) == 42  # what the module defines itself still runs
    assert [m.name for m in markers if m.exists()] == [], "a foreign function ran"
    assert worker.process.poll() is None
