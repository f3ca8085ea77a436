"""SPEC 18, issue 36: no event lost to a slow reader. A shipper (a consumer group) down while
jobs run on a real worker reads all of their events when it comes back, though the
worker's maintenance pass trimmed the stream meanwhile; a shipper SIGKILLed mid-batch gets,
restarted, every entry it had not acknowledged; the dropped counter stays 0 in both, and
with a tiny cap and no reader it counts exactly what the trim dropped."""

import signal
import subprocess
import sys
import time

import pytest
import redis

from rqconc.queue.events import EventStream
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from tests.support.worker_process import ROOT, wait_for

NOOP = "tests.soak.jobs:noop"
KEYS = KeySpace("rqconc")
WARM_UP = 2_000  # jobs whose events the shipper ships before it stops
WHILE_DOWN = 6_000  # jobs run while it is down: ~12,000 entries, past the old 10,000 cap
CAP = 14_000  # below all entries together: the pass trims the shipped ones


def enqueue(queue, n):
    jobs = []
    for start in range(0, n, 1000):
        jobs += queue.enqueue_many([(NOOP, ())] * min(1000, n - start))
    return jobs


def past(deadline):
    return time.monotonic() > deadline


def dropped(client):
    return int(client.hget(KEYS.metrics, "events_dropped") or 0)


class Shipped:
    """The events a shipper handed over, per job."""

    def __init__(self):
        self.by_job = {}
        self.finished = 0

    def __call__(self, event):
        self.by_job.setdefault(event["job_id"], []).append(event["event"])
        self.finished += event["event"] == "finished"


@pytest.mark.timeout(300)
def test_a_stopped_shipper_reads_every_event_of_the_jobs_run_meanwhile(redis_url, start_worker):
    client = redis.Redis.from_url(redis_url)
    stream, queue = EventStream(client), Queue("shipped", connection=redis_url)
    start_worker("threading", 4, redis_url, "-q", "shipped", "--events-max", str(CAP))
    before = Shipped()
    enqueue(queue, WARM_UP)
    stream.ship(before, group="shippers", stop=lambda: before.finished >= WARM_UP)
    first_kept = stream.stats()["oldest"]

    # The shipper is down while these run; the worker trims the stream meanwhile.
    jobs = enqueue(queue, WHILE_DOWN)
    for job in jobs:
        job.get(timeout=120)
    wait_for(lambda: client.xlen(KEYS.events) <= CAP, timeout=30, message="the trim")
    assert stream.stats()["oldest"] > first_kept  # entries went: the ones shipped already

    after = Shipped()
    deadline = time.monotonic() + 60  # long past the time to read them: then see what lacks
    stream.ship(after, "shippers", stop=lambda: after.finished >= WHILE_DOWN or past(deadline))
    for job in jobs:
        assert after.by_job[job.id] == ["queued", "started", "finished"], job.id
    assert dropped(client) == 0


def test_with_a_tiny_cap_and_no_reader_it_counts_exactly_what_was_dropped(redis_url, start_worker):
    client = redis.Redis.from_url(redis_url)
    EventStream(client).ship(print, group="shippers", stop=lambda: True)  # never reads
    # 500 `queued` entries, one a job; the worker serves another queue: it adds none.
    enqueue(Queue("nobody-takes", connection=redis_url), 500)
    worker = start_worker("threading", 1, redis_url, "-q", "other", "--events-max", "100")
    wait_for(lambda: client.xlen(KEYS.events) == 100, timeout=30, message="the trim")
    assert dropped(client) == 400
    assert EventStream(client).stats()["dropped"] == 400
    wait_for(
        lambda: "consumer group had not acknowledged" in worker.output(), message="the warning"
    )


def shipper(url, out, hang_after, consumer, claim_idle):
    argv = [sys.executable, "-m", "tests.worker.shipper_process", url, str(out)]
    argv += [str(hang_after), consumer, str(claim_idle)]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)


def shipped_ids(out):
    return {line.split()[0] for line in out.read_text().splitlines()} if out.exists() else set()


@pytest.mark.parametrize(
    "first, second, claim_idle",
    [("", "", 60.0), ("shipper-a", "shipper-b", 0.2)],
    ids=["same-default-name", "another-name-claims"],
)
def test_a_shipper_killed_mid_batch_gets_every_unacknowledged_entry_after_restart(
    redis_url, tmp_path, first, second, claim_idle
):
    client = redis.Redis.from_url(redis_url)
    enqueue(Queue("shipped", connection=redis_url), 300)
    every = {entry_id.decode() for entry_id, _ in client.xrange(KEYS.events)}
    out = tmp_path / "shipped.txt"
    crashed = shipper(redis_url, out, 120, first, claim_idle)  # hangs in its third batch
    try:
        assert crashed.stdout.readline().strip() == "hanging"
        crashed.send_signal(signal.SIGKILL)
    finally:
        crashed.wait(10)
    pending = client.xpending_range(KEYS.events, "shippers", "-", "+", 1000)
    unacknowledged = {p["message_id"].decode() for p in pending}
    # It acknowledges each entry once handled: the rest of the batch it was in (50 a batch).
    assert len(unacknowledged) == 30 and not shipped_ids(out) & unacknowledged
    before = shipped_ids(out)
    assert len(before) == 120 and before | unacknowledged < every
    if second != first:  # XAUTOCLAIM takes over entries idle for claim_idle
        wait_for(
            lambda: all(
                p["time_since_delivered"] >= claim_idle * 1000
                for p in client.xpending_range(KEYS.events, "shippers", "-", "+", 1000)
            ),
            message="the crashed shipper's entries to be idle long enough",
        )
    out.write_text("")
    restarted = shipper(redis_url, out, 0, second, claim_idle)
    try:
        wait_for(lambda: unacknowledged <= shipped_ids(out), timeout=30, message="unacked")
        wait_for(lambda: before | shipped_ids(out) == every, timeout=30, message="the rest")
        wait_for(lambda: client.xpending(KEYS.events, "shippers")["pending"] == 0)
    finally:
        restarted.kill()
        restarted.wait(10)
    assert dropped(client) == 0
