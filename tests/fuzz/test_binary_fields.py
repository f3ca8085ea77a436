"""A job hash holding bytes that are not UTF-8 (written straight into Redis), in each field a
job hash can hold: a field the worker reads to run the job (function, arguments, timeout,
retry policy, ...) fails the job with a reason naming the field; a field only kept for people
or for later steps (description, meta, timestamps, ...) lets it finish; and in every case the
worker stays up and a good job enqueued after the bad one finishes. Such a job once took down
every worker that touched it: one forking worker on one Redis serves every case of the module
(started once, ~1 s a case less), so each case also shows it outlived the cases before, and
reads only the log lines written since it began.

The fields are those rqconc writes: queue.py and callbacks.py at enqueue, the Lua steps
(lua/*.lua) as the job moves, job.py's readers; `scripts.TAKE_FIELDS` are the ones a worker
receives with the job.
"""

import pytest

from rqconc import Queue
from rqconc.store.scripts import TAKE_FIELDS
from tests.fuzz.test_corrupt_jobs import GOOD_FUNC, _ended, _inject
from tests.support.redis_server import RedisServer
from tests.support.waiting import wait_for
from tests.support.worker_process import WorkerProcesses

pytestmark = pytest.mark.fuzz

BINARY = b"\xc1\xff binary"
# A job that fails however its fields read: what makes a field read on failure matter.
FAILING_FUNC = "tests.fuzz.jobs:missing"

# Fields the worker receives with the job: the job fails, naming the field.
# (expires_at is read by the take step alone, in Lua: a corrupt one is no expiry, and the
# step deletes it once the job starts.)
TAKE_STEP_ONLY = ("expires_at",)
READ_TO_RUN = [(name, GOOD_FUNC, b"failed") for name in TAKE_FIELDS if name not in TAKE_STEP_ONLY]
# Fields nobody needs to run or finish the job: it finishes (its outcome replaces some).
INFORMATIONAL = [
    (name, GOOD_FUNC, b"finished")
    for name in (
        *TAKE_STEP_ONLY,
        "id",
        "status",
        "description",
        "meta",
        "created_at",
        "enqueued_at",
        "due_at",
        "started_at",
        "ended_at",
        "worker",
        "token",
        "lost",
        "exc_type",
        "exc_message",
        "traceback",
        "result",
        "depends_on",
        "pending_deps",
        "allow_failure",
        "flow_id",
        "next_id",
        "prev_id",
        "waiters",
        "cancel_requested",
        "priority",
        "result_ttl",
        "failure_ttl",
        "on_failure_jobs",
    )
]
# Fields the step that records a failure reads: the job still fails, for its own reason.
READ_ON_FAILURE = [
    (name, FAILING_FUNC, b"failed")
    for name in ("failure_ttl", "on_success_jobs", "priority", "result_ttl", "on_failure_jobs")
]
# Fields the step that records a success reads.
READ_ON_SUCCESS = [("on_success_jobs", GOOD_FUNC, b"finished")]
# Follow-up specs are decoded inside the step that ends the job: a corrupt one must leave
# that step whole and say on the job why no follow-up was created.
FOLLOWUP_FIELDS = {("on_success_jobs", b"finished"), ("on_failure_jobs", b"failed")}

CASES = READ_TO_RUN + INFORMATIONAL + READ_ON_FAILURE + READ_ON_SUCCESS


def _case_id(case):
    field, func, _ = case
    return f"{field}-{func.rpartition(':')[2]}"


@pytest.fixture(scope="module")
def binary_redis(redis_binary):
    server = RedisServer(redis_binary).start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def binary_worker(binary_redis, tmp_path_factory):
    """One forking worker with one child on queue `fuzz`, for every case of the module."""
    workers = WorkerProcesses(tmp_path_factory.mktemp("binary-fields"))
    worker = workers("forking", 1, binary_redis.url, "-q", "fuzz")
    yield worker
    workers.close()


class Since:
    """The worker's log from the moment a case began."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self.start = worker.log_path.stat().st_size

    def output(self) -> str:
        with open(self.worker.log_path, "rb") as log:
            log.seek(self.start)
            return log.read().decode(errors="replace")


@pytest.mark.parametrize("field,func,ends", CASES, ids=[_case_id(c) for c in CASES])
def test_non_utf8_field_fails_the_job_and_the_worker_stays_up(
    binary_redis, binary_worker, field, func, ends
):
    client = binary_redis.client()
    queue = Queue("fuzz", connection=binary_redis.url)
    worker, log = binary_worker, Since(binary_worker)
    bad = _inject(client, queue, {"func": func, field: BINARY}, [], f"bin-{field}")
    key = queue.keys.job(bad)
    status = wait_for(
        lambda: (
            _ended(client.hget(key, "status"))
            or (worker.process.poll() is not None and b"worker died")
        ),
        timeout=15,
        message=f"{bad} to end",
    )
    assert worker.process.poll() is None, worker.output()[-2000:]
    assert status == ends, client.hgetall(key)
    if ends == b"failed":
        exc_type, exc_message = client.hmget(key, ["exc_type", "exc_message"])
        assert exc_type and exc_message, client.hgetall(key)
        expected = field if func == GOOD_FUNC else "missing"
        assert expected.encode() in exc_message, exc_message
    if (field, ends) in FOLLOWUP_FIELDS:
        assert client.hget(key, "followup_error") == f"{field} is not valid JSON".encode()
    assert queue.enqueue(GOOD_FUNC, "next").get(timeout=15) == "next"
    # A child that died and was replaced looks up from outside: its supervisor logs it.
    assert "died" not in log.output(), log.output()[-2000:]
    assert client.zscore(queue.keys.active, bad) is None  # no lease left behind


@pytest.mark.parametrize(
    "field,func", [("failure_ttl", "tests.fuzz.jobs:missing"), ("result_ttl", GOOD_FUNC)]
)
def test_corrupt_ttl_does_not_kill_the_child(binary_redis, binary_worker, field, func):
    client = binary_redis.client()
    queue = Queue("fuzz", connection=binary_redis.url)
    worker, log = binary_worker, Since(binary_worker)
    bad = _inject(client, queue, {field: "1.5", "func": func}, [], f"ttl-{field}")
    status = wait_for(
        lambda: _ended(client.hget(queue.keys.job(bad), "status")),
        timeout=20,
        message=f"{bad} to end",
    )
    # A good job afterwards: by the time it finished, any death of the child is logged.
    assert queue.enqueue(GOOD_FUNC, "next").get(timeout=20) == "next"
    assert "died" not in log.output(), log.output()[-2000:]
    assert status == (b"failed" if field == "failure_ttl" else b"finished")
    assert client.zscore(queue.keys.active, bad) is None  # the step ran whole, not half
    assert worker.process.poll() is None
