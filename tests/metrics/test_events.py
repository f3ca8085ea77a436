"""SPEC 10: every event carries attempt and func besides event, job_id, queue, ts, worker;
failed and retry carry the exception's type and message; finished carries the run time.
`rqconc events --json` shows them."""

import json
import subprocess
import sys

from rqconc.queue.events import EventStream
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry
from tests.support.waiting import wait_for

NAP = "tests.metrics.metrics_jobs:nap"
BOOM = "tests.metrics.metrics_jobs:boom"
FAIL_FIRST = "tests.metrics.metrics_jobs:fail_first"


def shape(events):
    """(event, attempt) of each event, in order."""
    return [(e["event"], e["attempt"]) for e in events]


def test_events_carry_attempt_func_exception_and_run_time(redis_server, start_worker, tmp_path):
    url = redis_server.url
    q = Queue("e", connection=url)
    plain = q.enqueue(NAP, 0.05)
    (batched,) = q.enqueue_many([(NAP, (0,))])
    retried = q.enqueue(FAIL_FIRST, str(tmp_path / "token"), retry=Retry(1, 0.05, jitter=False))
    failed = q.enqueue(BOOM, "card declined", retry=None)
    later = q.enqueue_in(3600, NAP, 0)
    assert later.cancel()
    start_worker("threading", 2, url, "-q", "e")
    ended = (plain, batched, retried, failed)
    wait_for(lambda: all(j.status in ("finished", "failed") for j in ended), timeout=30)
    stream = EventStream(url)

    for job, func in ((plain, NAP), (batched, NAP), (retried, FAIL_FIRST), (failed, BOOM)):
        events = stream.for_job(job.id)
        for event in events:
            assert event["func"] == func and isinstance(event["attempt"], int), event
            assert event["queue"] == "e" and event["ts"] > 0 and "worker" in event
    events = stream.for_job(plain.id)
    assert shape(events) == [("queued", 1), ("started", 1), ("finished", 1)]
    assert 0.05 <= events[-1]["run_time"] < 5
    assert shape(stream.for_job(batched.id))[-1] == ("finished", 1)

    events = stream.for_job(retried.id)
    assert shape(events) == [
        ("queued", 1),
        ("started", 1),
        ("retry", 1),
        ("queued", 2),
        ("started", 2),
        ("finished", 2),
    ]
    retry = events[2]
    assert retry["exc_type"] == "ConnectionError" and retry["exc_message"] == "first run of token"

    events = stream.for_job(failed.id)
    assert shape(events)[-1] == ("failed", 1)
    assert events[-1]["exc_type"] == "ValueError"
    assert events[-1]["exc_message"] == "card declined"
    assert shape(stream.for_job(later.id)) == [("scheduled", 1), ("canceled", 1)]

    shown = subprocess.run(
        [sys.executable, "-m", "rqconc", "events", "--json", "--job", retried.id, "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    lines = [json.loads(line) for line in shown.stdout.splitlines()]
    assert shape(lines) == shape(stream.for_job(retried.id))
    assert lines[2]["exc_message"] == "first run of token" and lines[-1]["run_time"] >= 0
    assert all(line["func"] == FAIL_FIRST for line in lines)


def test_every_enqueue_path_writes_the_same_queued_scheduled_and_deferred_entry(
    redis_url, client, keys
):
    """The entries an enqueue writes, raw from the stream: the single-job fast path, a batch
    mixing functions (enqueue.lua's emit_next, from one shared table of what it knows), a
    caller's id, a delay and a parent still waiting each write the same fields in the same
    order, attempt 1 and the job's own function; a full-detail queue's batch adds its call."""
    q = Queue("paths", connection=redis_url)
    plain = q.enqueue(NAP, 0)
    batch = q.enqueue_many([(NAP, (1,)), (BOOM, ("x",)), (NAP, (2,))])
    chosen = q.enqueue(NAP, 3, job_id="chosen-id")
    later = q.enqueue_in(3600, BOOM, "y")
    child = q.enqueue(NAP, 4, depends_on=[later])
    full = Queue("paths-full", connection=redis_url, event_detail="full")
    (detailed,) = full.enqueue_many([(NAP, (5,))])

    entries = {}
    for _, fields in client.xrange(keys.events):
        entry = {k.decode(): v.decode() for k, v in fields.items()}
        entries[entry["job_id"]] = entry
    basic = ["event", "job_id", "queue", "ts", "worker", "attempt", "func"]
    expected = [
        (plain, "queued", NAP),
        (batch[0], "queued", NAP),
        (batch[1], "queued", BOOM),
        (batch[2], "queued", NAP),
        (chosen, "queued", NAP),
        (later, "scheduled", BOOM),
        (child, "deferred", NAP),
    ]
    for job, event, func in expected:
        entry = entries[job.id]
        assert list(entry) == basic, entry
        assert (entry["event"], entry["queue"], entry["worker"]) == (event, "paths", "")
        assert (entry["attempt"], entry["func"]) == ("1", func), entry
        assert int(entry["ts"]) > 0
    entry = entries[detailed.id]
    assert list(entry)[: len(basic)] == basic and entry["func"] == NAP, entry
    assert json.loads(entry["args"]) == [5] and entry["kwargs"] == "{}", entry
