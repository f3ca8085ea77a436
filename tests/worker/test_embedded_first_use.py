"""The README's embedding example as a new user runs it (issue 15, items 2 and 4): children
listed once `wait_ready()` returns, a user's job runs with `allow="firstuseapp"` (one prefix,
not its letters) on a redis.Redis client, the not-allowed hint names the Supervisor's
argument, and `async def` functions are accepted at enqueue (SPEC 10)."""

import pytest
import redis

from rqconc import JobStatus, Queue, Supervisor
from rqconc.engine import SupervisorState

TASKS = """
def hello(name):
    return f"hello {name}"
"""


async def coroutine_job():
    return "awaited"


@pytest.fixture
def app_dir(tmp_path, monkeypatch):
    """A user's package, importable by this process and, through sys.path, its children."""
    root = tmp_path / "project"
    (root / "firstuseapp").mkdir(parents=True)
    (root / "firstuseapp" / "__init__.py").write_text("")
    (root / "firstuseapp" / "tasks.py").write_text(TASKS)
    monkeypatch.syspath_prepend(str(root))
    return root


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["forking", "multiprocessing", "threading"])
def test_an_embedded_supervisor_lists_its_children_and_runs_a_users_job(
    backend, app_dir, redis_server
):
    client = redis.Redis.from_url(redis_server.url)
    sup = Supervisor(backend, 2, ["embedded"], connection=client, allow="firstuseapp")
    sup.start().wait_ready(timeout=60)
    try:
        assert [child.state for child in sup.children] == ["idle", "idle"]
        job = Queue("embedded", connection=client).enqueue("firstuseapp.tasks:hello", "you")
        assert job.get(timeout=60) == "hello you"
    finally:
        sup.stop()
        assert sup.join(60) == 0
    assert sup.state is SupervisorState.STOPPED


@pytest.mark.timeout(120)
def test_the_embedded_hint_for_a_module_not_allowed_names_the_supervisor_argument(
    app_dir, redis_server, caplog
):
    sup = Supervisor("threading", 1, ["embedded"], connection=redis_server.url)
    sup.start().wait_ready(timeout=60)
    q = Queue("embedded", connection=redis_server.url)
    jobs = [q.enqueue("firstuseapp.tasks:hello") for _ in range(10)]
    try:
        # Issue 32: the jobs wait for a worker that allows them; this one stops, exit code 2.
        assert sup.join(60) == 2
    finally:
        sup.stop()
        sup.join(60)
    assert all(job.status == JobStatus.QUEUED and job.attempts == 0 for job in jobs)
    stop = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(stop) == 1 and "refused 10 jobs in a row" in stop[0], stop
    assert "Supervisor(allow=['firstuseapp'])" in stop[0] and "--allow" not in stop[0]


def test_an_async_def_function_is_accepted_at_enqueue(redis_server):
    q = Queue("embedded", connection=redis_server.url)
    job = q.enqueue(coroutine_job)
    assert job.func_name.endswith(":coroutine_job")
    q.enqueue("rqconc.demo.tasks:send_sms", on_success=coroutine_job)
    assert q.count == 2
