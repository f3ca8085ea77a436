"""lua/take_many.lua through rqconc.store.steps.batch, against a real Redis: several jobs in
one step, each leased and fenced under its own claim, exactly as a plain take leases one."""

import threading
import time

from rqconc import Queue
from rqconc.connection.direct import DirectConnection
from rqconc.queue.job import JobStatus
from rqconc.store.steps.batch import take_many, wait_then_take_many
from rqconc.store.steps.core import CompleteReply, Steps

LEASE_MS = 15_000
ADD = "tests.queue.tasks:add"


def many(steps, claims, queues=("default",)):
    return take_many(steps, claims, list(queues), LEASE_MS, "worker-1")


def test_take_many_leases_one_job_per_claim_in_queue_order(queue, steps, client, keys):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(5)])
    taken = many(steps, ["c1", "c2", "c3"])
    assert [(claim, job_id) for claim, (job_id, _) in taken] == [
        ("c1", jobs[0].id),
        ("c2", jobs[1].id),
        ("c3", jobs[2].id),
    ]
    assert taken[1][1][1]["args"] == b"[1,1]" and taken[1][1][1]["queue"] == b"default"
    for claim, job in zip(["c1", "c2", "c3"], jobs):
        assert client.hget(keys.job(job.id), "token").decode() == claim
        assert client.hget(keys.claims, claim) == job.id.encode()
        assert client.zscore(keys.active, job.id) is not None
        assert job.status is JobStatus.STARTED
    assert queue.job_ids == [jobs[3].id, jobs[4].id]
    # the remaining jobs still wake the next idle child
    assert client.zcard(keys.marker("default")) == 1


def test_take_many_takes_fewer_when_fewer_wait_and_a_delay_when_none(queue, steps):
    only = queue.enqueue(ADD, 1, 2)
    assert [job_id for _, (job_id, _) in many(steps, ["c1", "c2", "c3"])] == [only.id]
    assert many(steps, ["c4", "c5"]) == -1
    later = queue.enqueue_in(60, ADD, 3, 4)
    delay = many(steps, ["c6", "c7"])
    assert 0 < delay <= 60_000 and later.status is JobStatus.SCHEDULED


def test_take_many_skips_a_revoked_claim(queue, steps, client, keys):
    jobs = queue.enqueue_many([(ADD, (1, 2)), (ADD, (3, 4))])
    steps.revoke(["c1"])
    taken = many(steps, ["c1", "c2", "c3"])
    assert [(claim, job_id) for claim, (job_id, _) in taken] == [
        ("c2", jobs[0].id),
        ("c3", jobs[1].id),
    ]
    assert client.hget(keys.claims, "c1") is None


def test_each_job_taken_together_is_completed_and_fenced_on_its_own(queue, steps):
    jobs = queue.enqueue_many([(ADD, (1, 2)), (ADD, (3, 4))])
    many(steps, ["c1", "c2"])
    assert steps.complete("c2", jobs[0].id, "default", "3", "json") == CompleteReply.STALE
    assert steps.complete("c1", jobs[0].id, "default", "3", "json") == CompleteReply.RECORDED
    assert steps.complete("c2", jobs[1].id, "default", "7", "json") == CompleteReply.RECORDED
    assert [j.get(timeout=1) for j in jobs] == [3, 7]


def test_take_many_takes_across_queues_in_take_order(queue, steps, redis_url):
    high = Queue("high", connection=redis_url)
    first = high.enqueue(ADD, 1, 1)
    second = queue.enqueue(ADD, 2, 2)
    taken = many(steps, ["c1", "c2", "c3"], queues=("high", "default"))
    assert [job_id for _, (job_id, _) in taken] == [first.id, second.id]


def test_wait_then_take_many_returns_jobs_enqueued_while_it_blocked(queue, client, keys):
    steps = Steps(DirectConnection(client), keys)  # type: ignore[arg-type]
    many(steps, ["warm"])  # loads the script, as a worker's first take does
    timer = threading.Timer(0.3, lambda: queue.enqueue_many([(ADD, (1, 2)), (ADD, (3, 4))]))
    timer.start()
    began = time.monotonic()
    taken = wait_then_take_many(steps, 5, ["c1", "c2", "c3"], ["default"], LEASE_MS, "w")
    timer.join()
    assert time.monotonic() - began < 4
    assert [claim for claim, _ in taken] == ["c1", "c2"]
