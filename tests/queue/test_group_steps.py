"""The group steps on their own, against a real Redis (docs/architecture.md, 'Groups'):
which ends settle a group, and which cancel its chord callback."""

import time

import pytest

import rqconc
from rqconc import JobFailed
from rqconc.queue.job import JobStatus
from rqconc.store.steps.core import CompleteReply, FailReply
from rqconc.store.steps.maintenance import MaintenanceSteps

TASK = "tests.queue.tasks:add"


def chord_of(queue, n=3):
    calls = [(TASK, (i, i)) for i in range(n)]
    return rqconc.group(*calls).then(TASK, 100).enqueue(queue)


def take(steps, claim, lease_ms=15_000):
    return steps.take(claim, ["default"], lease_ms, "worker-1")


def finish(steps, claim, result):
    job_id, _ = take(steps, claim)
    assert steps.complete(claim, job_id, "default", result, "json") is CompleteReply.RECORDED
    return job_id


def test_the_last_member_to_finish_queues_the_chord_with_the_results_in_group_order(queue, steps):
    group = chord_of(queue)
    taken = [take(steps, f"c{i}")[0] for i in range(3)]
    assert taken == [job.id for job in group.jobs]
    for claim, job_id, result in (("c2", taken[2], "4"), ("c0", taken[0], "0")):
        steps.complete(claim, job_id, "default", result, "json")
        assert group.chord.status is JobStatus.DEFERRED
    steps.complete("c1", taken[1], "default", "2", "json")
    assert group.chord.status is JobStatus.QUEUED
    chord_id, fields = take(steps, "c3")
    assert chord_id == group.chord.id
    assert fields["chord_results"] in ('["0","2","4"]', b'["0","2","4"]')
    assert group.get(timeout=1) == [0, 2, 4]


def test_a_retry_is_no_end_and_a_member_counts_once(queue, steps, client, keys):
    group = chord_of(queue, 2)
    first, _ = take(steps, "a")
    assert steps.fail("a", first, "default", ("E", "m", ""), retry_in_ms=0) is FailReply.RETRYING
    assert group.chord.status is JobStatus.DEFERRED
    finish(steps, "b", "2")  # the second member
    assert group.chord.status is JobStatus.DEFERRED
    assert finish(steps, "c", "0") == first  # the retried one, promoted by this take
    assert group.chord.status is JobStatus.QUEUED
    record = keys.group(group.id)
    assert client.hmget(record, "state", "pending", "r1", "r2") == [b"done", b"0", None, None]
    assert 0 < client.ttl(record) <= 500  # the record expires once the group ended


@pytest.mark.parametrize("how", ["fail", "cancel_waiting", "cancel_running", "poison"])
def test_a_member_ending_without_finishing_cancels_the_chord(how, queue, steps, client, keys):
    group = chord_of(queue)
    member = group.jobs[1]
    if how == "cancel_waiting":
        assert member.cancel()
    else:
        claims = {take(steps, f"c{i}")[0]: f"c{i}" for i in range(2)}
        claim = claims[member.id]
        if how == "fail":
            steps.fail(claim, member.id, "default", ("ValueError", "bad", ""))
        elif how == "cancel_running":
            member.cancel()
            steps.cancel(member.id, claim, "worker-1")
        else:
            client.zadd(keys.active, {member.id: 0})  # its lease ran out long ago
            assert MaintenanceSteps(client, keys).recover(max_lost=1) == (0, 1)
    assert group.chord.status is JobStatus.CANCELED
    with pytest.raises(JobFailed) as info:
        group.chord.get(timeout=1)
    assert info.value.exc_type == "rqconc.errors.JobCanceled"
    assert client.hget(keys.group(group.id), "state") == b"failed"
    assert client.ttl(keys.group(group.id)) > 0
    # The other members still run; the group's last one queues nothing.
    while True:
        reply = take(steps, f"late{time.monotonic()}")
        if not isinstance(reply, tuple):
            break
    assert group.chord.status is JobStatus.CANCELED
