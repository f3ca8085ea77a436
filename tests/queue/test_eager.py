"""Eager mode (SPEC 12): `Queue(..., eager=True)` or RQCONC_EAGER=1 runs each job inline at
enqueue, with the checks, statuses, retries, callbacks, dependencies, flows and groups of
a real queue, and no Redis at all.

Every queue here points at a port nothing listens on: a test that reached Redis would fail
with rqconc.ConnectionError."""

import os
import subprocess
import sys
import time

import pytest

import rqconc
from rqconc import Dependency, JobFailed, JobStatus, Retry
from rqconc.queue.eager import forget_jobs
from rqconc.queue.queue import Queue
from rqconc.queue.workflow.signature import Signature
from tests.queue import eager_tasks
from tests.queue.eager_tasks import Flaky
from tests.support.redis_server import free_port
from tests.support.worker_process import ROOT

TASKS = "tests.queue.eager_tasks"


@pytest.fixture
def nowhere():
    """A Redis URL where nothing listens."""
    return f"redis://127.0.0.1:{free_port()}/0"


@pytest.fixture
def q(nowhere):
    eager_tasks.SEEN.clear()
    yield Queue("eager", connection=nowhere, eager=True)
    forget_jobs()


# ---- no Redis ----
def test_an_eager_queue_runs_the_job_at_enqueue_without_reaching_redis(q):
    job = q.enqueue(eager_tasks.add, 2, 3)
    assert job.status is JobStatus.FINISHED
    assert job.get() == 5 and job.return_value == 5 and job.attempts == 1
    assert job.exc_info is None and job.queue_name == "eager"
    assert job.started_at is not None and job.ended_at is not None
    assert q.eager
    with pytest.raises(RuntimeError, match="eager"):
        q.connection  # noqa: B018


def test_rqconc_eager_makes_every_queue_eager_and_starts_no_server(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(RQCONC_EAGER="1", RQCONC_HOME=str(home), PYTHONPATH=str(ROOT))
    program = (
        "import rqconc\n"
        f"from {TASKS} import add\n"
        "q = rqconc.Queue()\n"
        "assert q.eager\n"
        "print(q.enqueue(add, 20, 22).get())\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"
    # The embedded default (SPEC 6) keeps its server's files under RQCONC_HOME: none started.
    assert not home.exists() or not any(home.iterdir())


@pytest.mark.parametrize("value", ["1", "true", "Yes", "on"])
def test_rqconc_eager_values_that_turn_it_on(monkeypatch, value, nowhere):
    monkeypatch.setenv("RQCONC_EAGER", value)
    assert Queue(connection=nowhere).eager
    assert not Queue(connection=nowhere, eager=False).eager


@pytest.mark.parametrize("value", ["0", "", "false", "off"])
def test_rqconc_eager_values_that_leave_it_off(monkeypatch, value, nowhere):
    monkeypatch.setenv("RQCONC_EAGER", value)
    assert not Queue(connection=nowhere).eager
    assert Queue(connection=nowhere, eager=True).eager


def test_a_bad_rqconc_eager_value_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("RQCONC_EAGER", "maybe")
    with pytest.raises(ValueError, match="RQCONC_EAGER.*'maybe'"):
        Queue()


# ---- the same checks as enqueue ----
def test_arguments_reach_the_function_as_a_worker_would_see_them(q):
    job = q.enqueue(eager_tasks.echo, (1, 2), {3: "three"}, flag=True)
    # JSON round trip: a tuple arrives as a list, an int key as a str.
    assert eager_tasks.SEEN == [("echo", ([1, 2], {"3": "three"}), {"flag": True})]
    assert job.args == [[1, 2], {"3": "three"}] and job.kwargs == {"flag": True}


def test_an_argument_json_cannot_carry_is_refused_and_nothing_runs(q):
    with pytest.raises(TypeError, match="object"):
        q.enqueue(eager_tasks.echo, object())
    assert eager_tasks.SEEN == []


def test_lambdas_and_bad_options_are_refused_at_enqueue(q):
    with pytest.raises(ValueError, match="lambda"):
        q.enqueue(lambda: 1)
    with pytest.raises(ValueError, match="priority"):
        q.enqueue(eager_tasks.echo, priority=101)
    with pytest.raises(ValueError, match="retry"):
        q.enqueue(eager_tasks.echo, retry=3)
    with pytest.raises(TypeError, match="unknown enqueue option"):
        q.enqueue_call(eager_tasks.echo, bogus=1)
    assert eager_tasks.SEEN == []


def test_a_result_json_cannot_carry_fails_the_job_with_a_type_error_naming_it(q):
    job = q.enqueue(eager_tasks.returns_object)
    assert job.status is JobStatus.FAILED and job.attempts == 1
    with pytest.raises(JobFailed) as failed:
        job.get()
    assert failed.value.exc_type == "TypeError"
    assert "return value <object object" in failed.value.exc_message


def test_a_failing_job_is_failed_with_its_exception(q):
    job = q.enqueue(eager_tasks.boom, "no luck", retry=Retry(max=0))
    assert job.status is JobStatus.FAILED and job.return_value is None
    exc_type, message, trace = job.exc_info
    assert (exc_type, message) == ("ValueError", "no luck") and "Traceback" in trace
    with pytest.raises(JobFailed, match="no luck"):
        job.get(timeout=0)


def test_a_function_that_cannot_be_imported_fails_the_job(q):
    # A module that imports here must define it: refused at enqueue (issue 32, item 6).
    with pytest.raises(ValueError, match="has no 'missing'"):
        q.enqueue(f"{TASKS}:missing")
    job = q.enqueue("tests.queue.no_such_module:missing")
    assert job.status is JobStatus.FAILED
    assert "cannot import" in job.exc_info[1]


def test_a_duplicate_job_id_is_refused_and_forget_jobs_frees_it(q):
    q.enqueue(eager_tasks.add, 1, 1, job_id="once")
    with pytest.raises(ValueError, match="already exists"):
        q.enqueue(eager_tasks.add, 1, 1, job_id="once")
    forget_jobs()
    assert q.enqueue(eager_tasks.add, 1, 1, job_id="once").get() == 2


# ---- retries, without their delays ----
def test_retries_run_inline_without_their_delay(q):
    started = time.monotonic()
    retry = Retry(max=3, backoff=3600, on=[Flaky])
    job = q.enqueue(eager_tasks.fails_then_returns, "retries", 2, "done", retry=retry)
    assert job.status is JobStatus.FINISHED and job.get() == "done"
    assert job.attempts == 3
    assert time.monotonic() - started < 60  # an hour's backoff was not waited for


def test_retries_end_when_the_policy_is_exhausted(q):
    retry = Retry(max=2, backoff=3600, on=[Flaky])
    job = q.enqueue(eager_tasks.fails_then_returns, "exhausted", 5, "never", retry=retry)
    assert job.status is JobStatus.FAILED and job.attempts == 3
    assert job.exc_info[0] == "tests.queue.eager_tasks.Flaky"


def test_an_exception_the_policy_does_not_list_fails_at_once(q):
    job = q.enqueue(eager_tasks.boom, retry=Retry(max=5, on=[Flaky]))
    assert job.status is JobStatus.FAILED and job.attempts == 1


def test_the_default_policy_retries_transient_errors(q):
    job = q.enqueue(eager_tasks.boom)  # ValueError: not transient
    assert job.attempts == 1
    job = q.enqueue(eager_tasks.connection_drops, "transient", 3)
    assert job.get() == "through" and job.attempts == 4


# ---- callbacks, dependencies, flows, scheduling ----
def test_callbacks_run_with_the_job_and_its_result_or_error(q):
    ok = q.enqueue(eager_tasks.add, 1, 2, on_success=eager_tasks.on_success)
    bad = q.enqueue(eager_tasks.boom, "bad", retry=Retry(max=0), on_failure=f"{TASKS}:on_failure")
    assert eager_tasks.SEEN == [
        ("success", ok.id, 3),
        ("failure", bad.id, "ValueError", "bad"),
    ]
    assert [f.status for f in ok.followups] == [JobStatus.FINISHED]
    assert ok.followups[0].callback_of == ok.id


def test_a_dependent_of_a_finished_job_runs(q):
    parent = q.enqueue(eager_tasks.add, 1, 2)
    child = q.enqueue(eager_tasks.add, 3, 4, depends_on=parent)
    by_id = q.enqueue(eager_tasks.add, 5, 6, depends_on=[parent.id])
    assert child.get() == 7 and by_id.get() == 11
    assert child.depends_on == [parent.id]


def test_a_dependent_of_a_failed_job_is_canceled_unless_it_allows_failure(q):
    parent = q.enqueue(eager_tasks.boom, retry=Retry(max=0))
    child = q.enqueue(eager_tasks.echo, "child", depends_on=parent)
    assert child.status is JobStatus.CANCELED
    with pytest.raises(JobFailed) as failed:
        child.get()
    assert failed.value.exc_type == "rqconc.errors.JobCanceled"
    tolerant = q.enqueue(eager_tasks.add, 1, 1, depends_on=Dependency(parent, allow_failure=True))
    assert tolerant.get() == 2
    assert [s[0] for s in eager_tasks.SEEN] == []  # the canceled child never ran


def test_depends_on_a_job_that_does_not_exist_is_refused(q):
    with pytest.raises(ValueError, match="does not exist"):
        q.enqueue(eager_tasks.add, 1, 1, depends_on="nope")


def test_a_flow_runs_its_next_stage_inline(q):
    first = q.enqueue(eager_tasks.first_stage, 1)
    assert first.get() == "one:1"
    second = first.next_stage
    assert first.next_id == second.id and second.queue_name == "eager-stage2"
    assert second.get() == 20 and second.flow_id == first.id
    assert [stage.id for stage in first.flow()] == [first.id, second.id]


def test_a_next_stage_that_cannot_be_enqueued_fails_its_stage(q):
    job = q.enqueue(eager_tasks.bad_next)
    assert job.status is JobStatus.FAILED and job.exc_info[0] == "TypeError"
    assert job.next_id is None


def test_enqueue_many_runs_every_job_in_order(q):
    jobs = q.enqueue_many([(eager_tasks.echo, [1]), (eager_tasks.echo, [2], {"k": 3})])
    assert [j.get() for j in jobs] == [
        {"args": [1], "kwargs": {}},
        {"args": [2], "kwargs": {"k": 3}},
    ]


# ---- groups and chords ----
def test_a_group_and_its_chord_run_inline_with_the_results_in_order(q):
    calls = [Signature(eager_tasks.add, (i, i)) for i in range(5)]
    group = q.enqueue_group(calls, Signature(eager_tasks.total, (), {"extra": 1}))
    assert group.get() == [0, 2, 4, 6, 8]
    assert group.status()["finished"] == 5 and group.status()["failed"] == 0
    assert len(group.jobs) == 5 and group.id
    assert group.chord.get() == 21
    assert eager_tasks.SEEN == [("total", [0, 2, 4, 6, 8], 1)]


def test_a_group_takes_tuples_and_without_a_chord_runs_none(q):
    group = q.enqueue_group([(eager_tasks.add, (1, 2)), (f"{TASKS}:add", [3], {"b": 4})], None)
    assert group.get() == [3, 7] and group.chord is None


def test_a_group_with_a_failed_job_raises_its_failure_and_fires_no_chord(q):
    calls = [
        Signature(eager_tasks.add, (1, 1)),
        Signature(eager_tasks.boom, ("second",), {}, {"retry": Retry(max=0)}),
    ]
    group = q.enqueue_group(calls, Signature(eager_tasks.total))
    assert group.status()["failed"] == 1 and group.status()["finished"] == 1
    with pytest.raises(JobFailed, match="second"):
        group.get()
    assert group.chord is None and eager_tasks.SEEN == []


def test_a_bad_group_member_is_refused_before_any_job_runs(q):
    with pytest.raises(TypeError):
        q.enqueue_group([(eager_tasks.echo, ["ok"]), (eager_tasks.echo, [object()])])
    with pytest.raises(ValueError):
        q.enqueue_group([(eager_tasks.echo, ["ok"])], Signature(lambda r: r))
    assert eager_tasks.SEEN == []


def test_rqconc_queue_is_the_eager_queue(nowhere):
    assert rqconc.Queue is Queue


def test_a_pickle_queue_runs_eagerly_with_its_own_serializer(nowhere):
    q = Queue("eager-pickle", connection=nowhere, serializer="pickle", eager=True)
    job = q.enqueue(eager_tasks.echo, {1, 2})
    assert job.get() == {"args": [{1, 2}], "kwargs": {}}
    forget_jobs()
