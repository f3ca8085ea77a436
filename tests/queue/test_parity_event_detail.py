"""SPEC section 14: Queue(..., event_detail="full") events carry the call, the outcome, the
host and meta["log_tag"]; a basic queue's events stay small."""

import json
import socket

import pytest

from rqconc.connection.clients import connect
from rqconc.queue.events import EventStream
from rqconc.queue.queue import Queue
from rqconc.worker.registry import list_workers
from tests.support.waiting import wait_for
from tests.support.worker_process import BACKENDS

TAGGED = "tests.queue.parity_tasks:tagged"
# exc_message is no detail: every failed/retry event carries it (SPEC 10).
DETAIL = {"args", "kwargs", "host", "log_tag", "result"}


def events_of(stream, job, until):
    return wait_for(
        lambda: (lambda e: e if until in [x["event"] for x in e] else None)(stream.for_job(job.id)),
        timeout=20,
        message=f"{until} event of {job.id}",
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_full_detail_queue_s_events_carry_call_outcome_host_and_log_tag(
    redis_url, start_worker, backend
):
    q = Queue("full", connection=redis_url, event_detail="full")
    start_worker(backend, 2, redis_url, "-q", "full")
    # The worker's host comes from its registry entry: a job taken before the entry lands
    # has none (the registration is the supervisor's first step, its children may be quicker).
    wait_for(lambda: list_workers(connect(redis_url)), message="worker registered")
    ok = q.enqueue(TAGGED, "x", meta={"log_tag": "order-7"})
    bad = q.enqueue(TAGGED, "bad", retry=None)
    stream = EventStream(redis_url)

    events = events_of(stream, ok, "finished")
    # The first run's: a child may give a just-taken job back (requeued, taken again).
    named = {e["event"]: e for e in reversed(events)}
    assert named["queued"]["worker"] == ""  # the producer's step: the producer's host
    started, finished = named["started"], named["finished"]
    host = socket.gethostname()
    for event in events:
        assert json.loads(event["args"]) == ["x"] and event["kwargs"] == "{}"
        assert event["host"] == host and event["log_tag"] == "order-7", events
    assert json.loads(finished["result"]) == {"got": "x"}
    assert "result" not in started and "exc_message" not in finished

    failed = events_of(stream, bad, "failed")[-1]
    assert failed["exc_message"] == "no good: bad" and "log_tag" not in failed
    assert json.loads(failed["args"]) == ["bad"] and failed["worker"]


def test_a_basic_queue_s_events_carry_no_detail(redis_url, start_worker):
    q = Queue("basic", connection=redis_url)
    job = q.enqueue(TAGGED, "x", meta={"log_tag": "order-8"})
    batch = q.enqueue_many([(TAGGED, ("y",))], meta={"log_tag": "t"})
    start_worker("threading", 1, redis_url, "-q", "basic")
    stream = EventStream(redis_url)
    for one in (job, *batch):
        for event in events_of(stream, one, "finished"):
            assert not DETAIL & set(event), event


def test_full_detail_covers_batches_delays_and_a_corrupt_meta(redis_url, client):
    q = Queue("full", connection=redis_url, event_detail="full")
    (first, second) = q.enqueue_many([(TAGGED, ("a",)), (TAGGED, ("b",))])
    later = q.enqueue_in(3600, TAGGED, "c", meta={"log_tag": 42})
    stream = EventStream(redis_url)
    assert [e["args"] for e in stream.for_job(first.id)] == ['["a"]']
    (scheduled,) = stream.for_job(later.id)
    assert scheduled["event"] == "scheduled" and scheduled["log_tag"] == "42"
    client.hset(second.key, "meta", "{not json")
    # A corrupt meta costs only the tag: the step still emits, with the rest of the detail.
    assert second.cancel()
    canceled = stream.for_job(second.id)[-1]
    assert canceled["event"] == "canceled" and canceled["args"] == '["b"]'
    assert "log_tag" not in canceled and canceled["host"] == socket.gethostname()
