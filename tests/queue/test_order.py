"""SPEC section 3, Order: priority, strict FIFO within a priority, and the strategies."""

import random

from rqconc.queue.queue import Priority, Queue

FUNC = "tests.queue.tasks:add"


def take_all(source, limit=10_000):
    taken = []
    for n in range(limit):
        item = source.take(f"claim-{n}", 0)
        if item is None:
            return taken
        taken.append(item)
    raise AssertionError("the queue never ran dry")


def test_higher_priority_first_then_strict_fifo_for_500_mixed_jobs(queue, source):
    rng = random.Random(4711)
    enqueued = []
    for n in range(500):
        priority = rng.choice([0, 1, 1, 2, 5, 100])
        enqueued.append((priority, n, queue.enqueue(FUNC, n, 0, priority=priority).id))
    expected = [job_id for _, _, job_id in sorted(enqueued, key=lambda e: (-e[0], e[1]))]
    assert queue.job_ids == expected
    assert [item.item_id for item in take_all(source)] == expected


def test_equal_priorities_keep_enqueue_order_across_a_batch(queue, source):
    jobs = queue.enqueue_many([(FUNC, (n, 0)) for n in range(50)], priority=Priority.LOW)
    single = queue.enqueue(FUNC, 50, 0, priority=Priority.LOW)
    assert [i.item_id for i in take_all(source)] == [j.id for j in jobs] + [single.id]


def test_a_job_given_back_goes_before_waiting_jobs_of_its_priority(queue, source):
    first = queue.enqueue(FUNC, 1, 0)
    waiting = queue.enqueue(FUNC, 2, 0)
    item = source.take("claim-1", 0)
    assert item.item_id == first.id
    urgent = queue.enqueue(FUNC, 3, 0, priority=Priority.HIGH)
    source.give_back(item)
    assert queue.job_ids == [urgent.id, first.id, waiting.id]
    assert first.attempts == 0


def test_an_interrupted_job_goes_back_to_the_front_without_counting_an_attempt(queue, source):
    first = queue.enqueue(FUNC, 1, 0)
    waiting = queue.enqueue(FUNC, 2, 0)
    source.take("claim-1", 0)
    source.interrupted(["claim-1", "unknown-claim"])
    assert queue.job_ids == [first.id, waiting.id]
    assert first.status == "queued" and first.attempts == 0


def test_ordered_strategy_drains_earlier_queues_first(redis_url, make_source):
    high, low = Queue("high", connection=redis_url), Queue("low", connection=redis_url)
    lows = [low.enqueue(FUNC, n, 0).id for n in range(3)]
    highs = [high.enqueue(FUNC, n, 0).id for n in range(3)]
    source = make_source(["high", "low"], strategy="ordered")
    assert [i.item_id for i in take_all(source)] == highs + lows


def test_round_robin_strategy_takes_turns(redis_url, make_source):
    a, b = Queue("a", connection=redis_url), Queue("b", connection=redis_url)
    from_a = [a.enqueue(FUNC, n, 0).id for n in range(3)]
    from_b = [b.enqueue(FUNC, n, 0).id for n in range(3)]
    source = make_source(["a", "b"], strategy="round-robin")
    taken = [i.item_id for i in take_all(source)]
    assert taken == [from_a[0], from_b[0], from_a[1], from_b[1], from_a[2], from_b[2]]
