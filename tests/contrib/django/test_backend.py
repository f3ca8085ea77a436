"""RqconcBackend on Django's task framework (SPEC 16), on the backport in the project's
virtualenv: a view enqueues, a real `--django` worker runs the tasks, results read back."""

import asyncio
from datetime import timedelta

import pytest

from rqconc import Job
from tests.contrib.django.conftest import NAMESPACE, worker_options
from tests.support.waiting import wait_for
from tests.support.worker_process import redis_worker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def worker(django_site, tmp_path_factory):
    """One forking worker of 2 children serving every test of this file but the ordering."""
    log_dir = tmp_path_factory.mktemp("django-worker")
    process = redis_worker("forking", 2, django_site, log_dir, *worker_options())
    yield process
    process.close()


def finished(task, result_id, timeout=20):
    def ended():
        result = task.get_result(result_id)
        return result if result.is_finished else None

    return wait_for(ended, timeout=timeout, message=f"task result {result_id} to finish")


def test_a_view_enqueues_and_a_worker_runs_the_task_that_writes_a_row(worker, django_site):
    from django.test import Client
    from notes.models import Note
    from notes.tasks import write_note

    answer = Client().get("/notes/enqueue", {"text": "from a view"}).json()
    assert answer["status"] == "READY"
    result = finished(write_note, answer["id"])
    assert result.status == "SUCCESSFUL"
    assert result.return_value["text"] == "from a view"
    assert Note.objects.get(id=result.return_value["id"]).text == "from a view"
    assert result.attempts == 1 and len(result.worker_ids) == 1 and result.errors == []
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert Client().get(f"/notes/result/{result.id}").json()["status"] == "SUCCESSFUL"
    # The job behind it: OPTIONS' timeout, Django's default priority 0 as rqconc's 50.
    job = Job.fetch(result.id, django_site, NAMESPACE)
    assert (job.timeout, job.priority, job.queue_name) == (30, 50, "default")


def test_a_failing_task_is_failed_with_its_error(worker):
    from notes.tasks import fail

    result = finished(fail, fail.enqueue("boom").id)
    assert result.status == "FAILED"
    (error,) = result.errors
    assert error.exception_class is ValueError
    assert error.exception_class_path == "builtins.ValueError"
    assert "ValueError: boom" in error.traceback and "raise ValueError" in error.traceback
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value


def test_a_deferred_task_waits_until_its_run_after(worker):
    from django.utils import timezone
    from notes.tasks import write_note

    run_after = timezone.now() + timedelta(seconds=1.5)
    enqueued = write_note.using(run_after=run_after).enqueue("later")
    assert write_note.get_result(enqueued.id).status == "READY"
    result = finished(write_note, enqueued.id)
    assert result.status == "SUCCESSFUL"
    assert result.started_at >= run_after.replace(microsecond=run_after.microsecond // 1000 * 1000)
    assert result.task.run_after == run_after


def test_an_async_task_through_aenqueue_and_aget_result(worker):
    from notes.models import Note
    from notes.tasks import write_note_async

    async def enqueue_and_wait():
        enqueued = await write_note_async.aenqueue("async")
        for _ in range(1000):  # polled within the test's own deadline below
            result = await write_note_async.aget_result(enqueued.id)
            if result.is_finished:
                return result
            await asyncio.sleep(0.02)
        raise AssertionError("the async task did not finish in 20 s")

    result = asyncio.run(asyncio.wait_for(enqueue_and_wait(), 20))
    assert result.status == "SUCCESSFUL"
    assert Note.objects.get(id=result.return_value["id"]).text == "async"


def test_a_task_taking_context_gets_its_attempt_and_result(worker):
    from notes.tasks import report_context

    result = finished(report_context, report_context.enqueue("ctx").id)
    assert result.return_value == {
        "attempt": 1,
        "id": result.id,
        "status": "RUNNING",
        "label": "ctx",
        "worker_ids": result.worker_ids,
    }


def test_priorities_order_the_run(django_site, tmp_path_factory):
    """Enqueued while no worker listens on the queue, run by one child: highest first."""
    from notes.models import Note
    from notes.tasks import write_note

    ordered = write_note.using(queue_name="ordered")
    for priority in (-100, 10, 100, -20, 50):
        ordered.using(priority=priority).enqueue(f"priority {priority}")
    log_dir = tmp_path_factory.mktemp("django-ordered")
    process = redis_worker(
        "forking", 1, django_site, log_dir, "--burst", *worker_options("ordered")
    )
    try:
        assert process.wait_exit(30) == 0, process.output()[-3000:]
    finally:
        process.close()
    texts = Note.objects.filter(text__startswith="priority ").order_by("id")
    assert [n.text for n in texts] == [f"priority {p}" for p in (100, 50, 10, -20, -100)]


def test_django_priorities_map_onto_rqconc_keeping_their_order():
    from rqconc.contrib.django.results import rqconc_priority

    mapped = [rqconc_priority(p) for p in range(-100, 101)]
    assert mapped == sorted(mapped)
    assert (mapped[0], rqconc_priority(0), mapped[-1]) == (0, 50, 100)
    assert rqconc_priority(98) == rqconc_priority(99) == 99  # pairs share a priority


def test_a_queue_not_in_queues_is_refused_and_an_unknown_id_does_not_exist(django_site):
    from notes.tasks import write_note

    from rqconc.contrib.django.compat import InvalidTask, TaskResultDoesNotExist

    with pytest.raises(InvalidTask, match="Queue 'elsewhere' is not valid"):
        write_note.using(queue_name="elsewhere")
    with pytest.raises(TaskResultDoesNotExist):
        write_note.get_result("no-such-id")


def test_an_option_the_backend_does_not_know_is_improperly_configured(django_site):
    from django.core.exceptions import ImproperlyConfigured

    from rqconc.contrib.django import RqconcBackend

    with pytest.raises(ImproperlyConfigured, match="OPTIONS has no bogus: it takes url"):
        RqconcBackend("other", {"OPTIONS": {"url": django_site, "bogus": 1}})
