"""Regression tests for the Lua steps (issue 14): a flow's next stage never overwrites a job,
and the queue's score layout keeps strict priority over the counter's whole range."""

import pytest

from rqconc.queue.queue import Priority
from rqconc.queue.retry import Retry, default_policy, policy_of
from rqconc.store.keys import SCORE_BAND, queue_score
from rqconc.store.steps.core import CompleteReply
from tests.queue.helpers import take_and_run

FUNC = "tests.queue.tasks:add"
ALLOW = ["tests.queue"]


def test_next_with_the_id_of_a_finished_job_fails_the_stage_and_overwrites_nothing(
    queue, make_source
):
    source = make_source(allow=ALLOW)
    existing = queue.enqueue(FUNC, 40, 2, job_id="taken-id", result_ttl=-1)
    take_and_run(source, "claim-1")
    assert existing.status == "finished" and existing.return_value == 42

    stage = queue.enqueue("tests.queue.correctness_tasks:hand_on_to", "taken-id", 7)
    take_and_run(source, "claim-2")

    stage.refresh()
    assert stage.status == "failed"
    exc_type, message, _ = stage.exc_info
    assert exc_type == "ValueError" and "'taken-id'" in message and "already exists" in message
    existing.refresh()
    assert existing.status == "finished" and existing.return_value == 42
    assert existing.flow_id is None and queue.job_ids == []


def test_next_with_the_id_of_a_waiting_job_leaves_that_job_alone(queue, make_source):
    source = make_source(allow=ALLOW)
    stage = queue.enqueue("tests.queue.correctness_tasks:hand_on_to", "waiting-id", 7)
    waiting = queue.enqueue(FUNC, 1, 1, job_id="waiting-id")
    take_and_run(source, "claim-1")
    assert stage.status == "failed"
    assert waiting.status == "queued" and queue.job_ids == ["waiting-id"]
    take_and_run(source, "claim-2")
    assert waiting.status == "finished" and waiting.return_value == 2


def test_the_complete_step_refuses_a_next_stage_whose_id_was_taken_meanwhile(
    queue, steps, client, keys
):
    stage = queue.enqueue(FUNC, 1, 1)
    taken_id, _ = steps.take("claim-1", ["default"], 60_000, "w")
    assert taken_id == stage.id
    other = queue.enqueue(FUNC, 2, 2, job_id="raced-id")
    before = client.hgetall(keys.job("raced-id"))
    next_stage = ("raced-id", {"queue": "default", "func": FUNC, "args": "[5,5]"})
    recorded = steps.complete("claim-1", stage.id, "default", "3", "json", "w", next_stage)
    assert recorded is CompleteReply.NEXT_ID_TAKEN
    assert client.hgetall(keys.job("raced-id")) == before and other.status == "queued"
    assert stage.status == "started" and client.hget(keys.claims, "claim-1") is not None
    assert queue.job_ids == ["raced-id"]


# Jobs put back at the front get scores below the waiting ones of their priority, by the
# counter's value: near these values the old layout (2^31 either side of a band's middle)
# slid into the next priority's band.
COUNTERS = [2**31 - 3, 2**31 + 5, 2**32 + 7, 2**40, 2**45 - 1000]


@pytest.mark.parametrize("counter", COUNTERS)
def test_requeued_front_jobs_stay_inside_their_priority_band(queue, source, client, keys, counter):
    client.set(keys.seq, counter)
    normal = queue.enqueue(FUNC, 1, 0)
    low = queue.enqueue(FUNC, 2, 0, priority=Priority.LOW)
    item = source.take("claim-1", 0)
    assert item.item_id == normal.id
    high = queue.enqueue(FUNC, 3, 0, priority=Priority.HIGH)
    highest = queue.enqueue(FUNC, 4, 0, priority=100)
    lowest = queue.enqueue(FUNC, 5, 0, priority=0)
    later = queue.enqueue(FUNC, 6, 0)
    source.give_back(item)
    assert queue.job_ids == [highest.id, high.id, normal.id, later.id, low.id, lowest.id]
    scores = [score for _, score in client.zrange(keys.queue("default"), 0, -1, withscores=True)]
    assert all(score == int(score) < 2**53 for score in scores)


def test_front_and_back_jobs_of_neighbouring_priorities_order_at_the_counter_limit(
    queue, source, client, keys
):
    client.set(keys.seq, 2**45 - 100)
    first = queue.enqueue(FUNC, 1, 0, priority=2)
    second = queue.enqueue(FUNC, 2, 0, priority=2)
    item = source.take("claim-1", 0)
    low = queue.enqueue(FUNC, 3, 0, priority=1)
    high = queue.enqueue(FUNC, 4, 0, priority=3)
    source.give_back(item)
    assert queue.job_ids == [high.id, first.id, second.id, low.id]


@pytest.mark.parametrize("field", ["backoff", "factor", "max_delay"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_retry_refuses_non_finite_numbers_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Retry(**{field: value})


@pytest.mark.parametrize("field", ["backoff", "max_delay"])
def test_retry_refuses_delays_beyond_ten_years(field):
    Retry(**{field: 10 * 365 * 24 * 3600})
    with pytest.raises(ValueError, match=field):
        Retry(**{field: 1e300})


def test_a_stored_retry_field_with_nan_falls_back_on_the_default_policy():
    for stored in ('{"max":3,"max_delay":NaN}', '{"backoff":Infinity}', "[" * 100_000):
        assert policy_of(stored) == default_policy()


@pytest.mark.parametrize("counter", [0, 2**31 + 5, 2**45 - 2, 2**45 + 10])
@pytest.mark.parametrize("priority", [0, 1, 57, 100])
def test_lua_scores_follow_the_layout_in_keys_py(queue, source, client, keys, counter, priority):
    client.set(keys.seq, counter)
    plain = queue.enqueue(FUNC, 1, 0, priority=priority)
    chosen = queue.enqueue(FUNC, 2, 0, priority=priority, job_id=f"chosen-{counter}")
    batch = queue.enqueue_many([(FUNC, (3, 0)), (FUNC, (4, 0))], priority=priority)
    expected = {
        plain.id: queue_score(priority, counter + 1),
        chosen.id: queue_score(priority, counter + 2),
        batch[0].id: queue_score(priority, counter + 3),
        batch[1].id: queue_score(priority, counter + 4),
    }
    stored = dict(client.zrange(keys.queue("default"), 0, -1, withscores=True))
    assert {k.decode(): v for k, v in stored.items()} == expected
    # Every job of the batch lies strictly inside its priority's band.
    for score in expected.values():
        assert (100 - priority) * SCORE_BAND < score < (101 - priority) * SCORE_BAND
    item = source.take("claim-1", 0)
    source.give_back(item)
    front = client.zscore(keys.queue("default"), item.item_id)
    assert front == queue_score(priority, counter + 5, front=True)
