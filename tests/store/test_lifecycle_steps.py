"""SPEC section 3, lifecycle, at the level of the Lua steps and RedisSource (in-process, real
Redis 7 and 6.2): dependencies, flows, cancel, callbacks and webhooks as follow-up jobs, and
the event stream."""

import json

import pytest

from rqconc import Dependency, EventStream, JobFailed, Queue, Retry
from tests.queue import tasks
from tests.queue.helpers import take_and_run, wait_for


@pytest.fixture(autouse=True)
def _clear_calls():
    tasks.CALLS.clear()


def run_all(source, limit=20):
    """Take and perform until nothing is left; the ids performed, in order."""
    done = []
    for n in range(limit):
        item = take_and_run(source, f"claim-{n}", timeout=0.05)
        if item is None:
            return done
        done.append(item.item_id)
    raise AssertionError("jobs kept coming")


# ---- dependencies ----


def test_a_diamond_of_dependencies_runs_in_order(queue, source):
    a = queue.enqueue(tasks.add, 1, 1)
    b = queue.enqueue(tasks.add, 2, 2, depends_on=a)
    c = queue.enqueue(tasks.add, 3, 3, depends_on=[a])
    d = queue.enqueue(tasks.add, 4, 4, depends_on=[b, c.id])
    assert [j.status for j in (a, b, c, d)] == ["queued", "deferred", "deferred", "deferred"]
    assert queue.job_ids == [a.id]
    assert take_and_run(source, "c1").item_id == a.id
    assert (b.status, c.status, d.status) == ("queued", "queued", "deferred")
    assert take_and_run(source, "c2").item_id == b.id
    assert d.status == "deferred"  # still waits for c
    assert run_all(source) == [c.id, d.id]
    assert d.get(timeout=1) == 8


def test_a_parent_failing_for_good_cancels_its_dependents_and_theirs(queue, source):
    parent = queue.enqueue(tasks.boom, retry=None)
    child = queue.enqueue(tasks.add, 1, 1, depends_on=parent)
    grandchild = queue.enqueue(tasks.add, 1, 1, depends_on=child)
    tolerant = queue.enqueue(tasks.add, 2, 2, depends_on=Dependency(parent, allow_failure=True))
    assert run_all(source) == [parent.id, tolerant.id]
    assert (child.status, grandchild.status) == ("canceled", "canceled")
    with pytest.raises(JobFailed) as caught:
        grandchild.get(timeout=1)
    assert caught.value.exc_type == "rqconc.errors.JobCanceled"
    assert tolerant.get(timeout=1) == 4


def test_a_parent_already_ended_settles_the_dependent_at_enqueue(queue, source):
    ok = queue.enqueue(tasks.add, 1, 1)
    bad = queue.enqueue(tasks.boom)
    run_all(source)
    assert queue.enqueue(tasks.add, 1, 2, depends_on=ok).status == "queued"
    assert queue.enqueue(tasks.add, 1, 2, depends_on=[ok, bad]).status == "canceled"
    tolerant = queue.enqueue(tasks.add, 1, 2, depends_on=Dependency([ok, bad], True))
    assert tolerant.status == "queued"


def test_depending_on_an_unknown_job_writes_nothing(queue, client):
    with pytest.raises(ValueError, match="does not exist"):
        queue.enqueue(tasks.add, 1, 1, depends_on="no-such-job")
    assert client.keys(queue.keys.job("*")) == [] and not client.exists(queue.keys.events)


def test_dependents_are_kept_under_the_key_that_keys_py_names(queue, client):
    parent = queue.enqueue(tasks.add, 1, 1)
    child = queue.enqueue(tasks.add, 1, 1, depends_on=parent)
    assert client.zrange(queue.keys.dependents(parent.id), 0, -1) == [child.id.encode()]


def test_a_scheduled_job_with_parents_waits_for_both(queue, source):
    parent = queue.enqueue(tasks.add, 1, 1)
    later = queue.enqueue_in(3600, tasks.add, 2, 2, depends_on=parent)
    assert later.status == "deferred"
    run_all(source)
    assert later.status == "scheduled"


# ---- flows ----


def test_a_flow_enqueues_each_next_stage_as_it_completes(redis_url, make_source):
    source = make_source(["default", "stage2", "stage3"])
    first = Queue("default", connection=redis_url).enqueue(tasks.first_stage, 1)
    assert first.flow_id is None
    run_all(source)
    stages = first.flow()
    assert [s.func_name for s in stages] == [
        "tests.queue.tasks:first_stage",
        "tests.queue.tasks:second_stage",
        "tests.queue.tasks:add",
    ]
    assert [s.queue_name for s in stages] == ["default", "stage2", "stage3"]
    assert [s.get(timeout=1) for s in stages] == ["one:1", "two:2", 102]
    assert first.next_id == stages[1].id and stages[1].next_id == stages[2].id
    assert {s.flow_id for s in stages} == {first.id}
    assert stages[2].priority == 5
    assert stages[2].flow() == stages


def test_a_stale_stage_enqueues_no_next_stage(queue, source, steps, client):
    job = queue.enqueue(tasks.first_stage, 1)
    item = source.take("old-claim", 0.1)
    steps.requeue_front("old-claim", job.id, "default")  # the lease moved on
    source.perform(item)  # completes with a stale claim: dropped, and with it the next stage
    assert job.status == "queued" and job.next_id is None
    assert Queue("stage2", connection=client).count == 0


# ---- cancel ----


def test_cancel_removes_a_waiting_job_and_cancels_its_dependents(queue, source):
    job = queue.enqueue(tasks.add, 1, 1)
    child = queue.enqueue(tasks.add, 1, 1, depends_on=job)
    later = queue.enqueue_in(3600, tasks.add, 1, 1)
    assert job.cancel() is True and later.cancel() is True
    assert (job.status, child.status, later.status) == ("canceled", "canceled", "canceled")
    assert queue.count == 0 and queue.scheduled_job_ids == []
    assert job.cancel() is False  # already ended
    assert run_all(source) == []


def test_cancel_of_a_running_job_is_carried_out_by_the_supervisor_side(queue, source):
    job = queue.enqueue(tasks.add, 1, 1)
    item = source.take("claim-1", 0.1)
    other = queue.enqueue(tasks.add, 2, 2)
    other_item = source.take("claim-2", 0.1)
    assert job.cancel() is True
    assert job.status == "started"
    assert list(source.stop_requested(["claim-1", "claim-2"])) == ["claim-1"]
    source.canceled("claim-1")
    assert job.status == "canceled"
    source.perform(item)  # the abandoned run ends later: its outcome is refused
    assert job.status == "canceled"
    source.perform(other_item)
    assert other.get(timeout=1) == 4
    assert list(source.stop_requested(["claim-2"])) == []


def test_a_job_that_finishes_before_its_cancel_is_carried_out_stays_finished(queue, source):
    job = queue.enqueue(tasks.add, 1, 1)
    item = source.take("claim-1", 0.1)
    job.cancel()
    source.perform(item)
    source.canceled("claim-1")
    assert job.get(timeout=1) == 2 and job.status == "finished"


# ---- callbacks and webhooks: follow-up jobs made by the step that ends the job ----


def test_on_success_runs_as_a_follow_up_job_with_the_job_and_its_result(queue, source):
    job = queue.enqueue(
        tasks.add, 2, 3, on_success=tasks.note_success, on_failure=tasks.note_failure
    )
    run_all(source)
    assert tasks.CALLS == [("success", job.id, 5)]


def test_on_failure_runs_once_after_the_last_retry(queue, source):
    job = queue.enqueue(
        tasks.boom,
        "bad",
        on_failure="tests.queue.tasks:note_failure",
        retry=Retry(max=1, backoff=0.3, jitter=False),
    )
    take_and_run(source, "c1", timeout=0.05)
    assert job.status == "scheduled" and tasks.CALLS == []
    retried = wait_for(lambda: take_and_run(source, "c2"), timeout=5, message="retry taken")
    assert retried.item_id == job.id
    run_all(source)
    assert job.status == "failed"
    assert tasks.CALLS == [("failure", job.id, "ValueError", "bad")]


def test_a_callback_outside_the_allow_list_waits_for_a_worker_that_allows_it(queue, make_source):
    source = make_source(allow=["tests.queue.tasks"])
    source.taker.refusals.pause = 0
    job = queue.enqueue(tasks.add, 1, 1, on_success="os:system")
    take_and_run(source, "c1")
    take_and_run(source, "c2")
    assert job.get(timeout=1) == 2
    followup = queue.fetch_job(f"{job.id}.on_success.1")
    assert followup.status == "queued" and followup.attempts == 0
    assert queue.job_ids == [followup.id] and queue.failed.job_ids == []


def test_webhooks_are_follow_up_jobs_with_a_transient_error_retry_policy(queue, source):
    job = queue.enqueue(tasks.add, 1, 1, success_url="http://127.0.0.1:9/hook")
    item = take_and_run(source)
    hook = queue.fetch_job(f"{job.id}.success_url.1")
    assert hook.func_name == "rqconc.worker.webhooks:deliver" and hook.callback_of == job.id
    assert hook.kwargs == {"url": "http://127.0.0.1:9/hook"}
    assert hook.retry.on == ("rqconc.worker.webhooks.WebhookUnavailable",)
    assert item.item_id == job.id and job.status == "finished"


# ---- events ----


def test_a_jobs_life_is_in_the_event_stream_in_order(queue, source, redis_url):
    job = queue.enqueue(tasks.boom, retry=Retry(max=1, backoff=0.3, jitter=False))
    take_and_run(source, "c1", timeout=0.05)
    wait_for(lambda: take_and_run(source, "c2"), timeout=5, message="retry taken")
    events = EventStream(redis_url).for_job(job.id)
    assert [e["event"] for e in events] == [
        "queued",
        "started",
        "retry",
        "queued",
        "started",
        "failed",
    ]
    assert all(e["queue"] == "default" for e in events)
    assert events[1]["worker"] == source.name and events[2]["exc_type"] == "ValueError"
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def events_of(redis_url, job):
    return [e["event"] for e in EventStream(redis_url).for_job(job.id)]


def test_a_requeued_dead_letter_a_handed_back_job_and_a_recovered_one_are_requeued_events(
    queue, source, steps, maintenance, redis_url
):
    handed = queue.enqueue(tasks.add, 1, 1)
    source.give_back(source.take("c1", 0.1))  # e.g. its child was suspended after the take
    assert events_of(redis_url, handed) == ["queued", "started", "requeued", "queued"]
    take_and_run(source, "c2")

    lost = queue.enqueue(tasks.add, 2, 2)
    steps.take("c3", ["default"], 0, "vanished-worker")  # its lease ends at once
    assert maintenance.recover(max_lost=3) == (1, 0)
    events = EventStream(redis_url).for_job(lost.id)
    assert [e["event"] for e in events] == ["queued", "started", "requeued", "queued"]
    assert events[2]["reason"] == "lease expired"
    take_and_run(source, "c4")

    dead = queue.enqueue(tasks.boom, retry=None)
    take_and_run(source, "c5")
    assert queue.failed.requeue(dead.id) is True
    assert events_of(redis_url, dead) == ["queued", "started", "failed", "requeued", "queued"]


def test_a_scheduled_job_is_a_scheduled_event_then_queued_when_due(queue, source, redis_url):
    job = queue.enqueue_in(0.2, tasks.add, 1, 1)
    assert events_of(redis_url, job) == ["scheduled"]
    wait_for(lambda: take_and_run(source, "c1", timeout=0.05), timeout=5, message="due job")
    assert events_of(redis_url, job) == ["scheduled", "queued", "started", "finished"]


def test_a_deferred_job_is_a_deferred_event_until_its_parent_settles_it(queue, source, redis_url):
    parent = queue.enqueue(tasks.add, 1, 1)
    child = queue.enqueue(tasks.add, 2, 2, depends_on=parent)
    later = queue.enqueue_in(3600, tasks.add, 3, 3, depends_on=parent)
    bad = queue.enqueue(tasks.boom, retry=None)
    orphan = queue.enqueue(tasks.add, 4, 4, depends_on=bad)
    assert {events_of(redis_url, j)[0] for j in (child, later, orphan)} == {"deferred"}
    run_all(source)
    assert events_of(redis_url, child) == ["deferred", "queued", "started", "finished"]
    assert events_of(redis_url, later) == ["deferred", "scheduled"]  # released, not yet due
    assert events_of(redis_url, orphan) == ["deferred", "canceled"]


def test_canceling_a_waiting_or_a_running_job_is_a_canceled_event(queue, source, redis_url):
    waiting = queue.enqueue_in(3600, tasks.add, 1, 1)
    assert waiting.cancel() is True
    assert events_of(redis_url, waiting) == ["scheduled", "canceled"]
    running = queue.enqueue(tasks.add, 2, 2)
    item = source.take("c1", 0.1)
    assert running.cancel() is True
    assert events_of(redis_url, running) == ["queued", "started"]  # asked, not yet stopped
    source.canceled("c1")  # the supervisor ended the child running it
    source.perform(item)  # a late outcome (an abandoned thread) is refused: no event
    assert events_of(redis_url, running) == ["queued", "started", "canceled"]


def test_the_event_stream_is_capped(queue, client):
    queue.enqueue_many([(tasks.add, (1, 1))] * 200)
    info = client.xinfo_stream(queue.keys.events)
    assert info["length"] == 200
    assert json.loads(json.dumps(EventStream(client).latest(3)))[-1]["event"] == "queued"


def test_shippers_of_one_group_share_the_events_once_each(queue, redis_url):
    for n in range(5):
        queue.enqueue(tasks.add, n, n)
    stream = EventStream(redis_url)
    seen = []
    stream.ship(seen.append, group="g", consumer="a", stop=lambda: len(seen) >= 3, batch=3)
    more = []
    stream.ship(more.append, group="g", consumer="b", stop=lambda: len(more) >= 2, batch=10)
    assert len(seen) == 3 and len(more) == 2
    assert {e["id"] for e in seen}.isdisjoint(e["id"] for e in more)
