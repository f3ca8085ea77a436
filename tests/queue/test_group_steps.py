"""The group steps on their own, against a real Redis (docs/architecture.md, 'Groups'):
which ends settle a group, and which cancel its chord callback."""

import json
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
    # Passed by reference: the callback names its group, whose hash keeps the results.
    assert "chord_results" not in fields and fields["chord_of"] in (group.id, group.id.encode())
    assert group.get(timeout=1) == [0, 2, 4]


def test_the_results_are_kept_until_the_chord_callback_ended(queue, steps, client, keys):
    group = chord_of(queue, 2)
    finish(steps, "a", "0")
    finish(steps, "b", "2")
    record = keys.group(group.id)
    fields = ("state", "results_kept", "r1", "r2")
    assert client.hmget(record, *fields) == [b"done", b"1", b"0", b"2"]
    assert client.ttl(record) == -1  # kept until the callback ended, however long it waits
    assert finish(steps, "c", "104") == group.chord.id
    assert client.hmget(record, *fields) == [b"done", None, None, None]
    assert 0 < client.ttl(record) <= 500  # then the record expires like a result


def test_the_step_firing_a_chord_of_big_results_copies_none_of_them(queue, steps, client):
    """5 members of 3 MB results: the step finishing the last one copied 15 MB into the
    callback through cjson (some 250 ms of Redis in one call, growing with members x size);
    by reference it writes O(1), whatever the results weigh."""
    big = json.dumps("x" * 3_000_000)
    group = chord_of(queue, 6)
    for i in range(5):
        finish(steps, f"m{i}", big)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    finish(steps, "last", "0")  # the take, then the completion that fires the chord
    client.config_set("slowlog-log-slower-than", 10000)
    durations = [
        e["duration"]
        for e in client.slowlog_get(16)
        if e["command"].startswith((b"EVALSHA", b"FCALL"))
    ]
    assert group.chord.status is JobStatus.QUEUED
    assert max(durations) < 30_000, durations  # us: a loaded machine stays far below
    assert client.memory_usage(f"{queue.keys.prefix}job:{group.chord.id}") < 10_000


def test_a_failed_chord_callback_keeps_the_results_while_it_is_a_dead_letter(
    queue, steps, client, keys
):
    group = chord_of(queue, 1)
    finish(steps, "a", "0")
    callback, _ = take(steps, "b")
    steps.fail("b", callback, "default", ("ValueError", "bad", ""))
    record = keys.group(group.id)
    assert client.hmget(record, "results_kept", "r1") == [b"1", b"0"]
    assert client.ttl(record) > 500  # as long as the dead letter (failure_ttl)
    assert queue.failed.requeue(callback)
    assert client.ttl(record) == -1  # requeued: kept until it ends again
    assert finish(steps, "c", "100") == callback
    assert client.hmget(record, "results_kept", "r1") == [None, None]


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
    assert client.hmget(record, "state", "pending", "r1", "r2") == [b"done", b"0", b"0", b"2"]


@pytest.mark.parametrize(
    "how", ["fail", "cancel_waiting", "cancel_running", "poison", "delete", "empty", "q.delete"]
)
def test_a_member_ending_without_finishing_cancels_the_chord(how, queue, steps, client, keys):
    group = chord_of(queue)
    member = group.jobs[1]
    if how == "cancel_waiting":
        assert member.cancel()
    elif how == "delete":  # a member removed before it ended did not finish
        assert member.delete()
    elif how == "empty":
        assert queue.empty() == 3
    elif how == "q.delete":
        assert queue.delete() == 4  # the canceled callback goes too: nothing is left stuck
        assert not client.exists(keys.job(group.chord.id))
        assert client.hget(keys.group(group.id), "state") == b"failed"
        return
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
