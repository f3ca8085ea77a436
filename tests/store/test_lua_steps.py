"""Each Lua step on its own, against a real Redis (docs/architecture.md, 'Lua steps')."""

import ast
import math
import pathlib
import re
import threading
import time
from importlib import resources

import rqconc
from rqconc.connection.direct import DirectConnection
from rqconc.queue.job import JobStatus
from rqconc.store.build import expand as _expand
from rqconc.store.defaults import SHARED_WITH_LUA
from rqconc.store.keys import queue_score
from rqconc.store.scripts import LEAN_SPOILERS, TAKE_FIELDS, script, taken
from rqconc.store.steps.core import CompleteReply, Steps
from rqconc.store.steps.producer import enqueue_step

LEASE_MS = 15_000


def fields_of(client, keys, job_id):
    return {k.decode(): v.decode() for k, v in client.hgetall(keys.job(job_id)).items()}


def take(steps, claim, queues=("default",), lease_ms=LEASE_MS):
    return steps.take(claim, list(queues), lease_ms, "worker-1")


def test_every_script_file_has_a_header_listing_keys_argv_and_returns():
    for name in (
        "enqueue",
        "take",
        "renew",
        "complete",
        "complete_many",
        "take_many",
        "fail",
        "requeue_front",
        "requeue_claims",
        "recover",
        "requeue_failed",
        "purge_failed",
        "trim_ended",
        "enqueue_group",
    ):
        header = script(name).source.split("]]")[0]
        assert "KEYS[1]" in header and "ARGV[1]" in header and "Returns" in header, name


def test_enqueue_stores_jobs_in_one_queue_with_markers(queue, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    assert job.status is JobStatus.QUEUED
    assert client.zscore(keys.queue("default"), job.id) is not None
    assert client.zcard(keys.marker("default")) == 1
    assert client.sismember(keys.queues, "default")
    stored = fields_of(client, keys, job.id)
    assert stored["func"] == "tests.queue.tasks:add" and stored["args"] == "[1,2]"


def test_a_job_enqueued_alone_is_stored_as_a_job_of_a_batch_under_keyspaces_keys(
    queue, client, keys
):
    """enqueue_one.lua (one job, a fresh id, waiting now) writes what enqueue.lua's general
    path writes for each job of a batch: the same hash fields, a score of the same layout
    (keys.queue_score), the same event, the counter and the resend mark; and every key it
    names from the prefix is the one keys.py names (nothing else appears)."""
    alone = queue.enqueue("tests.queue.tasks:add", 1, 2, result_ttl=0, priority=7)
    written = {k.decode() for k in client.keys("*")}
    assert written == {
        keys.job(alone.id),
        keys.queue("default"),
        keys.marker("default"),
        keys.seq,
        keys.queues,
        keys.events,
        keys.metrics,
        keys.enqueued(alone.id),  # result_ttl=0: the job may be gone before a resend
    }
    batch = queue.enqueue_many(
        [("tests.queue.tasks:add", (1, 2)), ("tests.queue.tasks:add", (3, 4))],
        result_ttl=0,
        priority=7,
    )
    one, of_batch = fields_of(client, keys, alone.id), fields_of(client, keys, batch[0].id)
    assert one.pop("created_at") == one.pop("enqueued_at")
    assert of_batch.pop("created_at") == of_batch.pop("enqueued_at")
    assert one == of_batch and one["lean"] == "1" and one["status"] == "queued"
    assert one["priority"] == "7" and one["result_ttl"] == "0"
    scores = dict(client.zrange(keys.queue("default"), 0, -1, withscores=True))
    assert [scores[j.id.encode()] for j in (alone, *batch)] == [
        queue_score(7, n) for n in (1, 2, 3)
    ]
    assert client.exists(keys.marker("default"), keys.enqueued(batch[0].id)) == 2
    assert client.smembers(keys.queues) == {b"default"}
    assert client.hget(keys.metrics, "enqueued:default") == b"3"
    events = [fields for _, fields in client.xrange(keys.events)]
    assert [e[b"job_id"].decode() for e in events] == [alone.id, batch[0].id, batch[1].id]
    assert {k: v for k, v in events[0].items() if k not in (b"job_id", b"ts")} == {
        k: v for k, v in events[1].items() if k not in (b"job_id", b"ts")
    }


def test_enqueue_one_sent_again_stores_nothing_more_even_after_its_job_is_gone(
    queue, steps, client, keys
):
    """A resend of enqueue_one after a lost reply: its job is still there (found), or ran
    and was deleted (the mark says this request stored it): nothing is written again."""
    job = queue.enqueue("tests.queue.tasks:add", 1, 2, result_ttl=0)
    again = enqueue_step(
        keys,
        "default",
        [(job.id, {"func": "tests.queue.tasks:add", "args": "[1,2]"})],
        common={"result_ttl": "0"},
        fresh_ids=True,
        mark=True,
    )
    assert again.script.name == "enqueue_one"
    assert steps.run(again) is None
    assert client.zcard(keys.queue("default")) == 1 and client.xlen(keys.events) == 1
    client.delete(keys.job(job.id))
    client.zrem(keys.queue("default"), job.id)  # as if it ran and was deleted (kept 0 s)
    assert steps.run(again) is None
    assert not client.exists(keys.job(job.id)) and client.zcard(keys.queue("default")) == 0
    assert client.hget(keys.metrics, "enqueued:default") == b"1" and client.xlen(keys.events) == 1
    client.delete(keys.enqueued(job.id))  # the mark gone too: no mark is asked, so it stores
    resent = enqueue_step(keys, "default", [(job.id, {"func": "f"})], fresh_ids=True)
    assert steps.run(resent) is None and client.exists(keys.job(job.id))


def test_enqueue_refuses_an_existing_job_id_and_writes_nothing(queue, client):
    queue.enqueue("tests.queue.tasks:add", 1, 2, job_id="fixed")
    before = client.dbsize()
    try:
        queue.enqueue("tests.queue.tasks:add", 3, 4, job_id="fixed")
    except ValueError as exc:
        assert "fixed" in str(exc)
    else:
        raise AssertionError("a duplicate job id was accepted")
    assert client.dbsize() == before and len(queue) == 1


def test_enqueue_in_puts_the_job_in_the_scheduled_zset(queue, client, keys):
    job = queue.enqueue_in(60, "tests.queue.tasks:add", 1, 2)
    assert job.status is JobStatus.SCHEDULED
    due = client.zscore(keys.scheduled("default"), job.id)
    assert abs(due / 1000 - (time.time() + 60)) < 5
    assert len(queue) == 0


def test_take_leases_the_job_with_its_claim_as_fencing_token(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    job_id, fields = take(steps, "claim-1")
    assert job_id == job.id and fields["func"] == b"tests.queue.tasks:add"
    assert fields["args"] == b"[1,2]" and fields["queue"] == b"default"
    assert fields_of(client, keys, job.id)["token"] == "claim-1"
    assert fields_of(client, keys, job.id)["status"] == "started"
    assert client.hget(keys.claims, "claim-1") == job.id.encode()
    deadline = client.zscore(keys.active, job.id) / 1000
    assert abs(deadline - (time.time() + LEASE_MS / 1000)) < 5
    assert client.zscore(keys.started("default"), job.id) is not None
    stored = fields_of(client, keys, job.id)
    assert stored["worker"] == "worker-1" and "started_at" in stored


def test_take_returns_minus_one_when_nothing_waits(steps):
    assert take(steps, "claim-1") == -1


def test_take_rearms_the_marker_while_jobs_remain(queue, steps, client, keys):
    queue.enqueue_many([("tests.queue.tasks:add", (1, 2)), ("tests.queue.tasks:add", (3, 4))])
    client.delete(keys.marker("default"))  # as if a blocked worker had popped it
    take(steps, "claim-1")
    assert client.zcard(keys.marker("default")) == 1
    client.delete(keys.marker("default"))
    take(steps, "claim-2")
    assert client.zcard(keys.marker("default")) == 0


def test_take_promotes_due_scheduled_jobs_before_popping(queue, steps, client, keys):
    due = queue.enqueue_at(time.time() - 1, "tests.queue.tasks:add", 1, 2)
    later = queue.enqueue_in(3600, "tests.queue.tasks:add", 3, 4)
    job_id, _ = take(steps, "claim-1")
    assert job_id == due.id
    assert client.zscore(keys.scheduled("default"), later.id) is not None
    assert later.status is JobStatus.SCHEDULED
    # with nothing waiting, take tells how long until the next scheduled job is due, by
    # Redis' clock (a worker's own clock may be off)
    seconds, micros = client.time()
    before_ms = seconds * 1000 + micros // 1000
    delay = take(steps, "claim-2")
    due_ms = int(client.zscore(keys.scheduled("default"), later.id))
    assert due_ms - before_ms - 1000 <= delay <= due_ms - before_ms


def test_take_skips_ids_whose_job_was_deleted(queue, steps, client, keys):
    gone = queue.enqueue("tests.queue.tasks:add", 1, 2)
    kept = queue.enqueue("tests.queue.tasks:add", 3, 4)
    client.delete(keys.job(gone.id))
    assert take(steps, "claim-1")[0] == kept.id
    assert len(queue) == 0


def test_renew_extends_the_leases_of_current_claims(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1", lease_ms=1000)
    before = client.zscore(keys.active, job.id)
    assert steps.renew(["claim-1"], 60_000) == 1
    assert client.zscore(keys.active, job.id) > before + 50_000


def test_renew_ignores_unknown_and_stale_claims(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1", lease_ms=1000)
    before = client.zscore(keys.active, job.id)
    assert steps.renew(["no-such-claim"], 60_000) == 0
    steps.requeue_front("claim-1", job.id, "default")
    take(steps, "claim-2", lease_ms=1000)
    assert steps.renew(["claim-1"], 60_000) == 0  # the earlier claim is stale now
    assert client.zscore(keys.active, job.id) < before + 50_000


def test_complete_records_the_result_and_wakes_waiters(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1")
    assert steps.await_outcome(job.id)[0] == 2  # what job.get() does before it blocks
    assert steps.complete("claim-1", job.id, "default", "3", "json") == CompleteReply.RECORDED
    stored = fields_of(client, keys, job.id)
    assert stored["status"] == "finished" and stored["result"] == "3"
    assert stored["attempts"] == "1" and "token" not in stored
    assert client.hget(keys.claims, "claim-1") is None
    assert client.zscore(keys.active, job.id) is None
    assert client.zscore(keys.started("default"), job.id) is None
    assert client.zscore(keys.finished("default"), job.id) is not None
    assert client.lrange(keys.done(job.id), 0, -1) == [b"finished:json:3"]
    assert 0 < client.ttl(keys.job(job.id)) <= 500
    assert job.get(timeout=1) == 3


def test_complete_pushes_no_outcome_list_when_nobody_waits(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1")
    assert steps.complete("claim-1", job.id, "default", "3", "json") == CompleteReply.RECORDED
    assert not client.exists(keys.done(job.id))
    assert job.get(timeout=1) == 3  # read from the job's hash


def test_complete_with_a_stale_claim_writes_nothing(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1")
    steps.requeue_front("claim-1", job.id, "default")
    take(steps, "claim-2")
    before = fields_of(client, keys, job.id)
    assert steps.complete("claim-1", job.id, "default", "3", "json") == CompleteReply.STALE
    assert fields_of(client, keys, job.id) == before
    assert client.exists(keys.done(job.id)) == 0
    assert client.hget(keys.claims, "claim-2") == job.id.encode()


def test_fail_with_a_retry_time_schedules_the_job(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:boom")
    take(steps, "claim-1")
    seconds, micros = client.time()
    before = seconds * 1000 + micros // 1000
    assert steps.fail("claim-1", job.id, "default", ("ValueError", "no", "tb"), 60_000) == 2
    assert job.status is JobStatus.SCHEDULED and job.attempts == 1
    due = client.zscore(keys.scheduled("default"), job.id)
    assert before + 60_000 <= due < before + 70_000  # 60 s on Redis' clock
    assert client.zscore(keys.failed("default"), job.id) is None
    assert client.exists(keys.done(job.id)) == 0  # not final: waiters keep waiting
    assert client.zscore(keys.active, job.id) is None


def test_fail_without_retry_moves_the_job_to_the_dead_letters(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:boom", failure_ttl=100)
    take(steps, "claim-1")
    assert steps.fail("claim-1", job.id, "default", ("ValueError", "no", "tb")) == 1
    assert job.status is JobStatus.FAILED and job.exc_info == ("ValueError", "no", "tb")
    assert client.zscore(keys.failed("default"), job.id) is not None
    assert 0 < client.ttl(keys.job(job.id)) <= 100
    assert client.llen(keys.done(job.id)) == 1


def test_fail_with_a_stale_claim_writes_nothing(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:boom")
    take(steps, "claim-1")
    before = fields_of(client, keys, job.id)
    assert steps.fail("other-claim", job.id, "default", ("ValueError", "no", "tb")) == -1
    assert fields_of(client, keys, job.id) == before
    assert client.zcard(keys.failed("default")) == 0


def test_requeue_front_puts_the_job_first_without_counting_an_attempt(queue, steps, client, keys):
    first = queue.enqueue("tests.queue.tasks:add", 1, 2)
    waiting = queue.enqueue("tests.queue.tasks:add", 3, 4)
    take(steps, "claim-1")
    assert steps.requeue_front("claim-1", first.id, "default") is True
    assert queue.job_ids == [first.id, waiting.id]
    assert first.status is JobStatus.QUEUED and first.attempts == 0
    assert client.hget(keys.claims, "claim-1") is None
    assert client.zscore(keys.active, first.id) is None


def test_requeue_front_with_an_unknown_or_stale_claim_is_a_no_op(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1")
    assert steps.requeue_front("nobody", job.id, "default") is False
    assert steps.requeue_front("nobody", "no-such-job", "default") is False
    assert job.status is JobStatus.STARTED and len(queue) == 0


def test_requeue_claims_puts_every_held_job_first_in_one_step(queue, steps, client, keys):
    """A cold shutdown's step (requeue_claims.lua): each claim's job back at the front, as
    requeue_front after requeue_front would leave them (the last claim's job first), no
    attempt counted, claims and leases gone, an `interrupted` event each; a job asked to
    stop is canceled; a stale or unknown claim is skipped."""
    jobs = [queue.enqueue("tests.queue.tasks:add", n, 1) for n in range(4)]
    waiting = queue.enqueue("tests.queue.tasks:add", 9, 9)
    for n in range(4):
        take(steps, f"claim-{n}")
    client.hset(keys.job(jobs[3].id), "cancel_requested", "1")
    client.sadd(keys.canceling, jobs[3].id)
    client.hset(keys.claims, "claim-stale", jobs[2].id)  # holds no lease of that job
    done = steps.requeue_claims(
        ["claim-0", "nobody", "claim-1", "claim-stale", "claim-2", "claim-3"], "worker-1"
    )
    func = "tests.queue.tasks:add"
    assert done == [(j.id, "default", func) for j in jobs]
    assert queue.job_ids == [jobs[2].id, jobs[1].id, jobs[0].id, waiting.id]
    assert [(j.status, j.attempts) for j in jobs[:3]] == [(JobStatus.QUEUED, 0)] * 3
    assert jobs[3].status is JobStatus.CANCELED
    assert client.zcard(keys.active) == 0 and client.zcard(keys.started("default")) == 0
    assert client.hkeys(keys.claims) == [b"claim-stale"]
    events = [
        f[b"job_id"].decode()
        for _, f in client.xrange(keys.events)
        if f[b"event"] == b"interrupted"
    ]
    assert events == [j.id for j in jobs[:3]]


def test_recover_requeues_jobs_whose_lease_expired_at_the_front(
    queue, steps, maintenance, client, keys
):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1", lease_ms=0)  # the lease ends at once, as if the worker vanished
    waiting = queue.enqueue("tests.queue.tasks:add", 3, 4)
    assert maintenance.recover(max_lost=3) == (1, 0)
    assert queue.job_ids == [job.id, waiting.id]
    assert job.status is JobStatus.QUEUED and job.lost == 1
    assert client.hget(keys.claims, "claim-1") is None
    assert steps.complete("claim-1", job.id, "default", "3", "json") == CompleteReply.STALE


def test_recover_leaves_live_leases_alone(queue, steps, maintenance):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    take(steps, "claim-1")
    assert maintenance.recover(max_lost=3) == (0, 0)
    assert job.status is JobStatus.STARTED


def test_recover_dead_letters_a_poison_pill_after_three_lost_leases(
    queue, steps, maintenance, client, keys
):
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    for n in range(3):
        assert take(steps, f"claim-{n}", lease_ms=0)[0] == job.id
        assert maintenance.recover(max_lost=3) == ((1, 0) if n < 2 else (0, 1))
    assert job.status is JobStatus.FAILED and job.lost == 3
    exc_type, message, _ = job.exc_info
    assert exc_type == "rqconc.errors.WorkerLost" and "poison pill" in message
    assert client.zscore(keys.failed("default"), job.id) is not None
    assert len(queue) == 0


# ---- complete chained with the next take: one round trip per job while work waits ----


def test_complete_can_take_the_next_job_in_the_same_step(queue, steps, client, keys):
    first = queue.enqueue("tests.queue.tasks:add", 1, 1)
    second = queue.enqueue("tests.queue.tasks:add", 2, 2)
    job_id, _ = steps.take("claim-1", ["default"], 5000, "w")
    recorded, taken = steps.complete(
        "claim-1", job_id, "default", "2", "json", "w", next_take=("claim-2", ["default"], 5000)
    )
    assert recorded is CompleteReply.RECORDED and job_id == first.id and taken[0] == second.id
    assert first.status == "finished" and second.status == "started"
    assert client.hget(keys.claims, "claim-2") == second.id.encode()
    recorded, taken = steps.complete(
        "claim-2", second.id, "default", "4", "json", "w", next_take=("claim-3", ["default"], 5000)
    )
    assert (
        recorded is CompleteReply.RECORDED and taken == -1
    )  # nothing left: the earliest due time, none


def test_a_stale_complete_takes_nothing(queue, steps, client, keys):
    job = queue.enqueue("tests.queue.tasks:add", 1, 1)
    queue.enqueue("tests.queue.tasks:add", 2, 2)
    steps.take("claim-1", ["default"], 5000, "w")
    steps.requeue_front("claim-1", job.id, "default")
    assert steps.complete(
        "claim-1", job.id, "default", "2", "json", "w", next_take=("claim-2", ["default"], 5000)
    ) == (CompleteReply.STALE, None)
    assert client.hget(keys.claims, "claim-2") is None and queue.count == 2


# ---- revoked claims: a take still on its way when its child was ended takes nothing ----


def test_a_take_or_chained_take_under_a_revoked_claim_leaves_the_job_waiting(
    queue, steps, client, keys
):
    first = queue.enqueue("tests.queue.tasks:add", 1, 1)
    second = queue.enqueue("tests.queue.tasks:add", 2, 2)
    steps.revoke(["claim-gone", "claim-next"])
    assert take(steps, "claim-gone") == -1
    assert queue.job_ids == [first.id, second.id] and client.hlen(keys.claims) == 0
    job_id, _ = take(steps, "claim-1")
    recorded, taken = steps.complete(
        "claim-1", job_id, "default", "2", "json", "w", next_take=("claim-next", ["default"], 5000)
    )
    assert recorded is CompleteReply.RECORDED and taken == -1 and queue.job_ids == [second.id]
    assert 0 < client.pttl(keys.revoked("claim-gone")) <= 600_000  # removes itself
    # Listening to two queues (complete.lua asks through the general takes_clear then).
    steps.revoke(["claim-next-2"])
    job_id, _ = take(steps, "claim-2")
    recorded, taken = steps.complete(
        "claim-2",
        job_id,
        "default",
        "2",
        "json",
        "w",
        next_take=("claim-next-2", ["other", "default"], 5000),
    )
    assert recorded is CompleteReply.RECORDED and taken == -1 and queue.job_ids == []
    third = queue.enqueue("tests.queue.tasks:add", 3, 3)
    job_id, _ = take(steps, "claim-3")
    assert job_id == third.id


def test_a_chained_completion_asks_once_and_still_releases_dependents_and_takes(
    queue, steps, client, keys
):
    """complete.lua asks one EXISTS for the job's dependents, the next claim's revocation and
    flow settings; when it finds some, a second tells which: here the dependents, so the
    child is released and, the claim being clear, taken in the same step."""
    parent = queue.enqueue("tests.queue.tasks:add", 1, 1)
    child = queue.enqueue("tests.queue.tasks:add", 2, 2, depends_on=parent)
    job_id, _ = take(steps, "claim-1")
    client.config_resetstat()
    recorded, taken = steps.complete(
        "claim-1", job_id, "default", "2", "json", "w", next_take=("claim-2", ["default"], 5000)
    )
    assert recorded is CompleteReply.RECORDED and taken[0] == child.id
    assert client.hget(keys.claims, "claim-2") == child.id.encode()
    # the combined EXISTS, which tells, and settle_dependents' own; none by the take
    assert client.info("commandstats")["cmdstat_exists"]["calls"] == 3


# ---- an idle child's wait and take in one round trip ----


def child_steps(client, keys):
    # A worker's first take is a plain one, which loads the script; the wait then finds it.
    client.script_load(script("take").source)
    return Steps(DirectConnection(client), keys)


def test_wait_then_take_returns_the_job_enqueued_while_it_blocked(queue, client, keys):
    steps = child_steps(client, keys)
    later = threading.Timer(0.2, queue.enqueue, ("tests.queue.tasks:add", 1, 2))
    began = time.monotonic()
    later.start()
    job_id, fields = steps.wait_then_take(2.0, "claim-1", ["default"], LEASE_MS, "w")
    assert 0.15 < time.monotonic() - began < 1.5
    assert fields["func"] == b"tests.queue.tasks:add" and queue.job_ids == []
    assert fields_of(client, keys, job_id)["token"] == "claim-1"


def test_wait_then_take_times_out_empty_handed_and_the_connection_stays_in_step(
    queue, client, keys
):
    steps = child_steps(client, keys)
    began = time.monotonic()
    assert steps.wait_then_take(0.1, "claim-1", ["default"], LEASE_MS, "w") == -1
    assert time.monotonic() - began >= 0.09
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    assert take(steps, "claim-2")[0] == job.id  # both replies were read: no stale reply


def test_wait_then_take_without_the_script_loaded_takes_nothing_then_a_take_loads_it(
    queue, client, keys
):
    steps = child_steps(client, keys)
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    client.script_flush()
    assert steps.wait_then_take(0.1, "claim-1", ["default"], LEASE_MS, "w") == -1
    assert queue.job_ids == [job.id]
    assert take(steps, "claim-2")[0] == job.id


def test_key_names_built_inside_lua_match_keyspace(client, keys):
    """The few keys a step only learns while it runs are named in lua/include/keys.lua
    and take.lua; they must be the very keys keys.py names (same hash tag, same slot)."""
    source = (
        _expand("--#context NS=ARGV[1] NOW='0'\n--#include keys\n--#include metrics\n") + "\n"
        "return {job_key('j'), queue_key('q'), marker_key('q'), scheduled_key('q'), "
        "started_key('q'), deferred_key('q'), done_key('j'), dependents_key('j'), "
        "NS .. 'revoked:' .. 'c', group_key('g'), metrics_key(), metrics_minute_key(60), "
        "functions_key('q'), canceling_key()}"
    )
    built = [b.decode() for b in client.eval(source, 0, keys.prefix)]
    assert built == [
        keys.job("j"),
        keys.queue("q"),
        keys.marker("q"),
        keys.scheduled("q"),
        keys.started("q"),
        keys.deferred("q"),
        keys.done("j"),
        keys.dependents("j"),
        keys.revoked("c"),
        keys.group("g"),
        keys.metrics,
        keys.metrics_minute(60),
        keys.functions("q"),
        keys.canceling,
    ]
    # complete.lua takes its NS from KEYS[1], `{ns}:active`, by cutting the 6 letters off.
    assert keys.active == keys.prefix + "active"


def test_the_fields_a_take_reads_are_the_fields_python_names():
    """take.lua writes the fields it reads in its HMGETs (no table built per call): after the
    previous token, scripts.TAKE_FIELDS in order (enqueued_at, for the wait metric, and the
    `lean` mark between the two calls); the second HMGET, and complete.lua's, only ask for
    fields a lean job cannot have (scripts.LEAN_SPOILERS)."""
    lua = resources.files("rqconc.store").joinpath("lua/include")
    calls = re.findall(r"'HMGET', key, ([^)]*)\)", lua.joinpath("take.lua").read_text())
    first, rare = (re.findall(r"'(\w+)'", call) for call in calls)
    assert first == ["token", *TAKE_FIELDS[:9], "enqueued_at", "lean"]
    assert rare == list(TAKE_FIELDS[9:])
    complete = re.findall(r"'HMGET', key, ([^)]*)\)", lua.joinpath("complete.lua").read_text())
    assert "'lean'" in complete[0]
    assert set(rare) | set(re.findall(r"'(\w+)'", complete[1])) <= LEAN_SPOILERS


def test_only_a_job_without_the_fields_of_callbacks_flows_groups_is_stored_lean(
    steps, client, keys
):
    plain = {"func": "tests.queue.tasks:add", "args": "[1,2]"}
    steps.enqueue("default", [("a", plain), ("b", {**plain, "expires_at": "9" * 13})])
    assert client.hget(keys.job("a"), "lean") == b"1"
    assert client.hget(keys.job("b"), "lean") is None
    steps.enqueue("soft", [("e", {**plain, "soft_timeout": "0.5"})])  # SPEC 18: rare
    assert client.hget(keys.job("e"), "lean") is None
    assert steps.take("c", ["soft"], LEASE_MS, "w")[1]["soft_timeout"] == b"0.5"
    steps.enqueue("default", [("c", plain), ("d", plain)], common={"on_success_jobs": "[]"})
    assert client.hmget(keys.job("c"), "lean") == client.hmget(keys.job("d"), "lean") == [None]


def test_a_lean_jobs_take_reply_stops_before_the_fields_it_cannot_have(queue, steps, client):
    """take.lua sends a lean job's id and its first nine TAKE_FIELDS only (the rest, which
    only callbacks, chords, ttl and soft-timeout jobs have, are absent); a job that is not
    lean gets all nineteen, absent ones as nil. scripts.taken reads both alike."""
    lean = queue.enqueue("tests.queue.tasks:add", 1, 2)
    full = queue.enqueue("tests.queue.tasks:add", 3, 4, soft_timeout=5)  # not lean
    replies = [
        script("take")(client, *steps.take_call(claim, ["default"], LEASE_MS, "w"))
        for claim in ("c1", "c2")
    ]
    assert [r[0].decode() for r in replies] == [lean.id, full.id]
    assert [len(r) for r in replies] == [1 + 9, 1 + len(TAKE_FIELDS)]
    lean_fields, full_fields = (taken(r)[1] for r in replies)
    assert full_fields.pop("soft_timeout") == b"5"
    assert (lean_fields.pop("args"), full_fields.pop("args")) == (b"[1,2]", b"[3,4]")
    assert lean_fields == full_fields and lean_fields["func"] == b"tests.queue.tasks:add"


def test_a_job_without_the_lean_mark_is_read_in_full(queue, steps, client, keys):
    """A job stored by an older producer has no mark: its take still reads the fields only
    jobs that are not lean have (here a ttl long past), and a marked job would not."""
    job = queue.enqueue("tests.queue.tasks:add", 1, 2)
    client.hdel(keys.job(job.id), "lean")
    client.hset(keys.job(job.id), "expires_at", "1")
    assert steps.take("c1", ["default"], LEASE_MS, "w") == -1  # expired, not run
    assert client.hget(keys.job(job.id), "status") == b"canceled"
    marked = queue.enqueue("tests.queue.tasks:add", 3, 4)
    client.hset(keys.job(marked.id), "expires_at", "1")  # no step writes it on a lean job
    assert steps.take("c2", ["default"], LEASE_MS, "w")[0] == marked.id


# `local NAME = <number>` (a product or sum of integers) in a Lua file.
_LUA_NUMBER = re.compile(r"^local ([A-Z][A-Z0-9_]*) = ([0-9][0-9 *+]*?)\s*(?:--.*)?$", re.M)


def test_numbers_lua_and_python_share_agree():
    """Every default the Lua steps hard-code (a job's missing field, the stream cap, the TTL
    bound) equals rqconc/store/defaults.py's: a drift would make Python and Lua read one
    job differently."""
    lua_dir = resources.files("rqconc.store").joinpath("lua")
    files = [*lua_dir.iterdir(), *lua_dir.joinpath("include").iterdir()]
    found = {}
    for path in files:
        if not path.name.endswith(".lua"):
            continue
        for name, value in _LUA_NUMBER.findall(path.read_text()):
            if name in SHARED_WITH_LUA:
                total = sum(math.prod(int(f) for f in term.split("*")) for term in value.split("+"))
                found.setdefault(name, set()).add((path.name, total))
    assert set(found) == set(SHARED_WITH_LUA), "a shared number is declared in no Lua file"
    for name, values in found.items():
        assert {v for _, v in values} == {SHARED_WITH_LUA[name]}, (name, values)


def test_only_the_steps_module_runs_lua_and_the_queue_imports_no_worker_or_cli():
    package = pathlib.Path(rqconc.__file__).parent
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text())
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
        # The modules of rqconc/store/steps/ are the Lua callers.
        callers = ("rqconc.store.scripts", "rqconc.store.functions")  # FCALL's path and load
        if not module.startswith("rqconc.store.steps.") and module not in callers:
            assert "rqconc.store.scripts.script" not in imported, module
            assert "rqconc.store.scripts.Script" not in imported, module
            if not module.startswith("rqconc.connection"):  # which implements the commands
                assert "evalsha" not in path.read_text().lower(), module
                text = path.read_text()
                assert ".fcall(" not in text and '"FCALL"' not in text, module
        if module.startswith(("rqconc.queue", "rqconc.store")):
            assert not any(i.startswith(("rqconc.worker", "rqconc.cli")) for i in imported), module
