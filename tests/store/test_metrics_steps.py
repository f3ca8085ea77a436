"""The counters of lua/include/metrics.lua, step by step against a real Redis (SPEC 9): each
step that creates, retries or ends a job counts it in the same atomic step, whatever path it
takes (lease recovery, poison pill, follow-up jobs, groups, flow stages)."""

import rqconc
from rqconc.metrics.read import snapshot

TASK = "tests.queue.tasks:add"


def take(steps, claim, lease_ms=15_000):
    return steps.take(claim, ["default"], lease_ms, "worker-1")


def counters(redis_url, queue="default"):
    m = snapshot(redis_url).queue(queue)
    return {
        "enqueued": m.enqueued,
        "finished": m.finished,
        "failed": m.failed,
        "retried": m.retried,
        "started": m.wait.count,
    }


def test_lost_leases_count_as_retries_and_a_poison_pill_as_failed(
    redis_url, queue, steps, maintenance
):
    job = queue.enqueue(TASK, 1, 2)
    for n in range(3):
        assert take(steps, f"claim-{n}", lease_ms=0)[0] == job.id
        maintenance.recover(max_lost=3)
    assert counters(redis_url) == {
        "enqueued": 1,
        "finished": 0,
        "failed": 1,
        "retried": 2,
        "started": 3,
    }


def test_a_retry_and_a_final_failure_count_once_each(redis_url, queue, steps):
    first, second = queue.enqueue(TASK, 1, 2), queue.enqueue(TASK, 3, 4)
    exc = ("ValueError", "no", "")
    assert take(steps, "c1")[0] == first.id
    steps.fail("c1", first.id, "default", exc, retry_in_ms=0)
    assert take(steps, "c2")[0] == second.id
    steps.fail("c2", second.id, "default", exc)
    assert take(steps, "c3")[0] == first.id  # promoted: its retry was due at once
    steps.fail("c2", first.id, "default", exc)  # a stale claim counts nothing
    steps.complete("c3", first.id, "default", "3", "json")
    assert counters(redis_url) == {
        "enqueued": 2,
        "finished": 1,
        "failed": 1,
        "retried": 1,
        "started": 3,
    }


def test_follow_ups_groups_and_flow_stages_count_as_enqueued(redis_url, queue, steps):
    group = rqconc.group(*[(TASK, (i, i)) for i in range(3)]).then(TASK, 100).enqueue(queue)
    with_callback = queue.enqueue(TASK, 1, 1, on_success="tests.queue.tasks:note_success")
    assert counters(redis_url)["enqueued"] == 5  # 3 members, the chord, the job
    for n in range(4):
        job_id, _ = take(steps, f"c{n}")
        steps.complete(f"c{n}", job_id, "default", "2", "json")
    # The callback job, and the chord once the last member finished.
    assert counters(redis_url)["enqueued"] == 6
    assert group.chord.status == "queued" and with_callback.status == "finished"
    assert counters(redis_url)["finished"] == 4
