"""@rqconc.task (SPEC section 12): .delay with the task's options, .options, .s, inline
calls; run by real workers."""

import pytest

import rqconc
from rqconc import Job, JobStatus, Priority, Queue, Retry, task
from rqconc.queue.task import Task
from rqconc.queue.workflow.signature import Signature
from tests.queue import task_jobs
from tests.support.worker_process import BACKENDS


def test_a_task_runs_inline_when_called():
    assert task_jobs.add(2, 3) == 5
    assert task_jobs.shout("hi") == "HI!"
    assert task_jobs.add.__name__ == "add" and task_jobs.add.__module__ == "tests.queue.task_jobs"
    assert isinstance(task_jobs.add, Task) and rqconc.task is task


def test_delay_stores_the_task_defaults_with_the_job(redis_url):
    job = task_jobs.add.options(connection=redis_url).delay(1, 2)
    fetched = Job.fetch(job.id, redis_url)
    assert fetched.func_name == "tests.queue.task_jobs:add"
    assert fetched.queue_name == "tasks" and fetched.priority == Priority.HIGH
    assert fetched.timeout == 7 and fetched.retry == Retry(max=2, backoff=0.1, jitter=False)
    assert fetched.args == [1, 2] and fetched.status is JobStatus.QUEUED


def test_options_overrides_for_one_call_and_leaves_the_task_as_it_was(redis_url):
    base = task_jobs.add.options(connection=redis_url)
    job = base.options(priority=5, timeout=3, job_id="fixed-1", meta={"k": 1}).delay(1, 1)
    fetched = Job.fetch("fixed-1", redis_url)
    assert job.id == "fixed-1" and fetched.priority == 5 and fetched.timeout == 3
    assert fetched.meta == {"k": 1}
    again = Job.fetch(base.delay(2, 2).id, redis_url)
    assert again.priority == Priority.HIGH and again.timeout == 7 and again.meta == {}


def test_keyword_arguments_of_delay_go_to_the_function_even_with_option_names(redis_url):
    job = task_jobs.echo.options(connection=redis_url).delay(1, priority="p", timeout="t")
    fetched = Job.fetch(job.id, redis_url)
    assert fetched.kwargs == {"priority": "p", "timeout": "t"}
    assert fetched.meta == {"team": "sms"} and fetched.result_ttl == 60


def test_options_can_send_to_another_queue_and_namespace(redis_url):
    moved = task_jobs.add.options(queue="other", namespace="ns2", connection=redis_url)
    job = moved.delay(1, 2)
    assert moved.queue().name == "other" and Queue("other", redis_url, namespace="ns2").job_ids == [
        job.id
    ]
    assert task_jobs.add.queue_name == "tasks"


def test_s_is_a_signature_with_the_task_options():
    sig = task_jobs.add.options(priority=9).s(1, b=2)
    assert isinstance(sig, Signature)
    assert sig.func is task_jobs.add.func and sig.args == (1,) and sig.kwargs == {"b": 2}
    assert sig.options["priority"] == 9 and sig.options["timeout"] == 7


def test_a_task_object_can_be_enqueued_like_its_function(redis_url):
    job = Queue("default", redis_url).enqueue(task_jobs.shout, "x")
    assert Job.fetch(job.id, redis_url).func_name == "tests.queue.task_jobs:shout"


def test_lambdas_and_nested_functions_are_refused():
    with pytest.raises(ValueError, match="lambdas and nested"):
        task(lambda: 1)

    def nested() -> None:
        pass

    with pytest.raises(ValueError, match="lambdas and nested"):
        task("q")(nested)


def test_bad_options_are_refused_at_decoration():
    with pytest.raises(ValueError, match="priority"):
        task("q", priority=101)(task_jobs.add.func)
    with pytest.raises(TypeError, match="unknown task option"):
        task("q", colour="red")(task_jobs.add.func)
    with pytest.raises(ValueError, match="job_id"):
        task("q", job_id="x")
    with pytest.raises(ValueError, match="invalid queue name"):
        task("a b")(task_jobs.add.func)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_runs_delayed_tasks(redis_url, start_worker, backend):
    add = task_jobs.add.options(connection=redis_url)
    shout = task_jobs.shout.options(connection=redis_url)
    jobs = [add.delay(20, 22), shout.delay("ok", suffix="?")]
    start_worker(backend, 2, redis_url, "-q", "tasks,default")
    assert [j.get(timeout=20) for j in jobs] == [42, "OK?"]
