"""lua/complete_many.lua through rqconc.store.steps.batch, against a real Redis: the
completions of several slots of one process in one step, each recorded and fenced as
complete.lua records one, each slot's next job taken under that slot's own claim."""

from rqconc.metrics.read import snapshot
from rqconc.queue.events import entry_events
from rqconc.queue.job import JobStatus
from rqconc.store.steps.batch import complete_many, take_many
from rqconc.store.steps.core import CompleteReply

LEASE_MS = 15_000
ADD = "tests.queue.tasks:add"


def together(steps, completions, queues=("default",)):
    return complete_many(steps, completions, list(queues), LEASE_MS, "worker-1")


def test_each_job_is_recorded_and_each_slot_takes_its_next_in_queue_order(
    queue, steps, client, keys
):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(5)])
    many = take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    assert [job_id for _, (job_id, _) in many] == [jobs[0].id, jobs[1].id]
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("b1", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    assert [code for code, _ in replies] == [CompleteReply.RECORDED, CompleteReply.RECORDED]
    assert [taken[0] for _, taken in replies] == [jobs[2].id, jobs[3].id]
    assert replies[0][1][1]["args"] == b"[2,2]"
    assert [j.get(timeout=1) for j in jobs[:2]] == [0, 2]
    for claim, job in (("a2", jobs[2]), ("b2", jobs[3])):
        assert job.status is JobStatus.STARTED
        assert client.hget(keys.claims, claim) == job.id.encode()
        assert client.hget(keys.job(job.id), "token").decode() == claim
    for claim, job in (("a1", jobs[0]), ("b1", jobs[1])):
        assert client.hget(keys.claims, claim) is None
        assert client.zscore(keys.active, job.id) is None
        assert client.zscore(keys.finished("default"), job.id) is not None
    metrics = snapshot(client).queue("default")  # summed per step, exact per job
    assert metrics.finished == 2 and metrics.run.count == 2 and metrics.wait.count == 4


def test_a_stale_claim_writes_nothing_for_its_job_and_takes_nothing(queue, steps, client, keys):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(4)])
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    before = client.hgetall(keys.job(jobs[1].id))
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("stale", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    assert replies[0][0] is CompleteReply.RECORDED and replies[0][1][0] == jobs[2].id
    assert replies[1] == (CompleteReply.STALE, None)
    assert client.hgetall(keys.job(jobs[1].id)) == before  # still leased under b1
    assert client.hget(keys.claims, "b2") is None and jobs[3].status is JobStatus.QUEUED


def test_once_the_queues_run_dry_the_later_slots_take_nothing(queue, steps):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(3)])
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("b1", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    assert replies[0][1][0] == jobs[2].id and replies[1] == (CompleteReply.RECORDED, -1)
    # with a scheduled job, the slot that found nothing is told how long to wait
    later = queue.enqueue_in(60, ADD, 1, 1)
    replies = together(steps, [("a2", jobs[2].id, "default", "4", "json", "a3")])
    assert 0 < replies[0][1] <= 60_000 and later.status is JobStatus.SCHEDULED


def test_a_slot_without_a_next_claim_takes_nothing(queue, steps, client, keys):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(3)])
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", ""),
            ("b1", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    assert replies == [(CompleteReply.RECORDED, None), (CompleteReply.RECORDED, replies[1][1])]
    assert replies[1][1][0] == jobs[2].id


def test_each_finished_shares_an_entry_with_its_slots_started(queue, steps, client, keys):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(4)])
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    last = client.xrevrange(keys.events, count=1)[0][0]
    together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("b1", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    entries = client.xrange(keys.events, min=b"(" + last)
    events = [e for entry_id, raw in entries for e in entry_events(entry_id, raw)]
    assert len(entries) == 2
    assert [(e["event"], e["job_id"]) for e in events] == [
        ("finished", jobs[0].id),
        ("started", jobs[2].id),
        ("finished", jobs[1].id),
        ("started", jobs[3].id),
    ]


def test_waiters_dependents_and_follow_ups_of_jobs_completed_together(queue, steps, redis_url):
    first = queue.enqueue(ADD, 1, 2)
    second = queue.enqueue(ADD, 3, 4)
    child = queue.enqueue(ADD, 5, 6, depends_on=first)
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    assert steps.await_outcome(second.id)[0] == 2  # job.get() waits for it
    replies = together(
        steps,
        [
            ("a1", first.id, "default", "3", "json", "a2"),
            ("b1", second.id, "default", "7", "json", ""),
        ],
    )
    assert replies[0][1][0] == child.id  # released by its parent, then taken in the same step
    assert second.get(timeout=1) == 7 and first.get(timeout=1) == 3


def test_a_revoked_next_claim_takes_nothing_and_the_others_still_take(queue, steps, client, keys):
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(4)])
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    steps.revoke(["a2"])  # a2's slot was ended while this completion was on its way
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("b1", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    assert replies[0] == (CompleteReply.RECORDED, -1) and replies[1][1][0] == jobs[2].id
    assert client.hget(keys.claims, "a2") is None and jobs[3].status is JobStatus.QUEUED


def test_the_registries_are_written_once_per_key_for_the_whole_step(queue, steps, client, keys):
    """include/gather.lua: eight slots' claims, leases, started entries and deleted hashes
    cost one command per key and kind, not one per job, and end as eight single steps
    would leave them."""
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(16)], result_ttl=0)
    claims = [f"s{slot}" for slot in range(8)]
    take_many(steps, claims, ["default"], LEASE_MS, "worker-1")
    client.config_resetstat()
    replies = together(
        steps,
        [(c, job.id, "default", "0", "json", c + "+") for c, job in zip(claims, jobs)],
    )
    assert [taken[0] for _, taken in replies] == [job.id for job in jobs[8:]]
    calls = {k[len("cmdstat_") :]: v["calls"] for k, v in client.info("commandstats").items()}
    # active and started:default: one ZREM and one ZADD each; claims: one HDEL, and one HSET
    # besides the eight takes' HSETs of their job hashes; one DEL for the eight hashes.
    assert calls["zrem"] == 2 and calls["zadd"] == 2 and calls["hdel"] == 1
    assert calls["hset"] == 8 + 1 and calls["del"] == 1
    running = [job.id.encode() for job in jobs[8:]]
    assert sorted(client.zrange(keys.active, 0, -1)) == sorted(running)
    assert sorted(client.zrange(keys.started("default"), 0, -1)) == sorted(running)
    assert client.hgetall(keys.claims) == {(c + "+").encode(): r for c, r in zip(claims, running)}
    assert not any(client.exists(keys.job(job.id)) for job in jobs[:8])
    leases = client.zrange(keys.active, 0, -1, withscores=True)
    assert all(score > client.time()[0] * 1000 for _, score in leases)


def test_a_job_sent_twice_in_one_step_is_recorded_once(queue, steps, client, keys):
    """Its hash is deleted at the end of the step (result_ttl 0): the second copy is refused
    as stale, as it would be in a step of its own."""
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(3)], result_ttl=0)
    take_many(steps, ["a1"], ["default"], LEASE_MS, "worker-1")
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("a1", jobs[0].id, "default", "0", "json", "b2"),
        ],
    )
    assert replies[0][0] is CompleteReply.RECORDED and replies[1] == (CompleteReply.STALE, None)
    assert snapshot(client).queue("default").finished == 1
    assert client.hget(keys.claims, "b2") is None and jobs[2].status is JobStatus.QUEUED


def test_a_capped_queue_counts_the_runs_ended_earlier_in_the_same_step(queue, steps, client, keys):
    """Flow control reads started:<queue>: the ends gathered before a take must be sent
    before it counts them, or a queue at its cap would refuse every slot's next job."""
    queue.set_limits(concurrency=2)
    jobs = queue.enqueue_many([(ADD, (n, n)) for n in range(5)], result_ttl=0)
    take_many(steps, ["a1", "b1"], ["default"], LEASE_MS, "worker-1")
    replies = together(
        steps,
        [
            ("a1", jobs[0].id, "default", "0", "json", "a2"),
            ("b1", jobs[1].id, "default", "2", "json", "b2"),
        ],
    )
    assert [taken[0] for _, taken in replies] == [jobs[2].id, jobs[3].id]
    assert client.zcard(keys.started("default")) == 2 and jobs[4].status is JobStatus.QUEUED
