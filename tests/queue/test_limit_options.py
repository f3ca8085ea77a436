"""Flow control's enqueue options and settings (SPEC 11): unique keys and debounce under 20
concurrent producers, unique_for, and what bad input gets (a clear ValueError, nothing
written)."""

import json
import math
import threading
import time

import pytest

from rqconc import Queue
from rqconc.store.build import expand
from rqconc.store.keys import FlowKeys, KeySpace
from rqconc.store.steps.core import Steps
from tests.support.waiting import wait_for

JOB = "tests.worker.limit_jobs:span"
PRODUCERS = 20


def concurrently(produce):
    """Run produce(i) in 20 threads released at once; their results in order of i."""
    barrier, results = threading.Barrier(PRODUCERS), [None] * PRODUCERS

    def run(i):
        barrier.wait()
        results[i] = produce(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_unique_key_under_20_concurrent_producers_stores_one_job(redis_url):
    queues = [Queue("uniq", connection=redis_url) for _ in range(PRODUCERS)]
    jobs = concurrently(lambda i: queues[i].enqueue(JOB, redis_url, "runs", i, unique_key="k"))
    assert len({job.id for job in jobs}) == 1
    assert queues[0].count == 1 and queues[0].job_ids == [jobs[0].id]
    # Another key is another job; the holder is returned with its own (first) arguments.
    assert queues[0].enqueue(JOB, redis_url, "runs", unique_key="other").id != jobs[0].id
    again = queues[0].enqueue(JOB, redis_url, "runs", 99, unique_key="k")
    assert again.id == jobs[0].id and again.args[2] != 99


def test_unique_for_keeps_the_key_after_the_job_ended(redis_url, start_worker):
    q = Queue("uniq", connection=redis_url)
    kept = q.enqueue(JOB, redis_url, "runs", unique_key="kept", unique_for=30)
    freed = q.enqueue(JOB, redis_url, "runs", unique_key="freed")
    start_worker("threading", 2, redis_url, "-q", "uniq")
    wait_for(lambda: kept.status == "finished" and freed.status == "finished", timeout=15)
    assert q.enqueue(JOB, redis_url, "runs", unique_key="kept", unique_for=30).id == kept.id
    assert q.enqueue(JOB, redis_url, "runs", unique_key="freed").id != freed.id


def test_debounce_under_20_concurrent_producers_runs_once_with_the_latest_arguments(
    redis_url, start_worker
):
    queues = [Queue("debounced", connection=redis_url) for _ in range(PRODUCERS)]
    start_worker("gevent", 4, redis_url, "-q", "debounced")
    client = queues[0].connection
    jobs = concurrently(
        lambda i: queues[i].enqueue(JOB, redis_url, "runs", 0, i, unique_key="d", debounce=1.0)
    )
    last_enqueue = time.time()
    assert len({job.id for job in jobs}) == 1
    job = jobs[0]
    wait_for(lambda: job.status == "finished", timeout=15, message="the debounced job")
    # Nothing of the queue is left waiting or scheduled: no second run can come.
    assert queues[0].count == 0 and not client.zcard(KeySpace().scheduled("debounced"))
    (run,) = [json.loads(entry) for entry in client.lrange("runs", 0, -1)]
    job.refresh()
    # The latest enqueue's arguments won (the job's stored ones are those it ran with)...
    assert run["tag"] == job.args[3]
    events = client.xrange(KeySpace().events)
    debounced = [f for _, f in events if f[b"event"] == b"debounced"]
    assert len(debounced) == PRODUCERS - 1
    # ...and its start moved a second past the latest enqueue.
    assert run["start"] >= last_enqueue + 0.9


@pytest.mark.parametrize("backend", ["threading", "forking"])
def test_debounce_while_the_job_runs_waits_behind_it_and_runs_the_latest_arguments_once(
    redis_url, start_worker, backend
):
    """Two jobs of one key never run at once: a debounce while the holder runs stores a
    job deferred behind it (it ran beside it before), and later debounces replace that
    job's arguments."""
    q = Queue("debounced", connection=redis_url)
    client = q.connection
    first = q.enqueue(JOB, redis_url, "runs", 1.0, "first", unique_key="d", debounce=0.1)
    start_worker(backend, 2, redis_url, "-q", "debounced")
    wait_for(lambda: first.status == "started", timeout=15)
    second = q.enqueue(JOB, redis_url, "runs", 0, "second", unique_key="d", debounce=0.1)
    assert second.id != first.id and second.status == "deferred"
    third = q.enqueue(JOB, redis_url, "runs", 0, "third", unique_key="d", debounce=0.1)
    assert third.id == second.id
    wait_for(lambda: second.status == "finished", timeout=15)
    wait_for(lambda: client.llen("runs") >= 2, timeout=5)
    # Nothing of the queue is left waiting, scheduled or deferred: no third run can come.
    keys = q.keys
    assert q.count == 0 and not client.zcard(keys.scheduled("debounced"))
    assert not client.zcard(keys.deferred("debounced"))
    done, latest = [json.loads(entry) for entry in client.lrange("runs", 0, -1)]
    assert (done["tag"], latest["tag"]) == ("first", "third")
    assert latest["start"] >= done["end"]  # one at a time


@pytest.mark.parametrize(
    "limits",
    [
        {"rate": "0/s"},
        {"rate": "abc"},
        {"rate": "5/fortnight"},
        {"rate": "-5/s"},
        {"rate": "1.5/s"},
        {"rate": 5},
        {"concurrency": 0},
        {"concurrency": -1},
        {"concurrency": 1.5},
        {"concurrency": True},
        {"concurrency": math.nan},
    ],
)
def test_bad_limits_are_refused_and_nothing_changes(redis_url, limits):
    q = Queue("strict", connection=redis_url)
    q.set_limits(concurrency=2)
    with pytest.raises(ValueError, match=next(iter(limits))):
        q.set_limits(**limits)
    with pytest.raises(ValueError, match=next(iter(limits))):
        q.set_group_limits(**limits)
    assert q.limits.concurrency == 2 and q.limits.group_concurrency is None


@pytest.mark.parametrize(
    "options, message",
    [
        ({"ttl": 0}, "ttl"),
        ({"ttl": -1}, "ttl"),
        ({"ttl": math.nan}, "ttl"),
        ({"ttl": "10"}, "ttl"),
        ({"unique_for": 10}, "unique_for needs unique_key"),
        ({"debounce": 1}, "debounce needs unique_key"),
        ({"unique_key": "k", "debounce": math.inf}, "debounce"),
        ({"unique_key": ""}, "unique_key"),
        ({"unique_key": 5}, "unique_key"),
        ({"unique_key": "k", "job_id": "x"}, "unique_key cannot"),
        ({"group": ""}, "group"),
        ({"group": "a{b}"}, "group"),
        ({"group": 3}, "group"),
    ],
)
def test_bad_flow_options_are_refused_and_nothing_is_written(redis_url, options, message):
    q = Queue("strict", connection=redis_url)
    with pytest.raises(ValueError, match=message):
        q.enqueue(JOB, redis_url, "runs", **options)
    assert q.count == 0


def test_limits_round_trip_and_removal(redis_url):
    q = Queue("settings", connection=redis_url)
    q.set_limits(concurrency=4, rate="100/min")
    q.set_group_limits(rate="5/h")
    assert (q.limits.concurrency, q.limits.rate, q.limits.group_rate) == (4, "100/min", "5/h")
    q.set_limits()
    q.set_group_limits()
    assert q.limits == type(q.limits)()
    # A plain queue keeps no settings at all: its takes pay one HMGET of nothing.
    assert not q.connection.exists(f"{q.keys.prefix}flow:settings")


@pytest.mark.parametrize("seconds", [0, -3, -0.5, 0.05, 1.0005, math.nan, math.inf, True, "5"])
def test_every_refuses_what_is_not_a_positive_interval_from_a_tenth_of_a_second(redis_url, seconds):
    q = Queue("intervals", connection=redis_url)
    with pytest.raises(ValueError, match="every.*0.1"):
        q.every(seconds, JOB, id="bad")
    assert q.crons() == []


@pytest.mark.parametrize(
    ("seconds", "expr"),
    [(0.5, "@every 0.5s"), (1.5, "@every 1.5s"), (0.1, "@every 0.1s"), (3.0, "@every 3s")],
)
def test_every_takes_fractional_seconds_and_ticks_on_their_multiples(redis_url, seconds, expr):
    q = Queue("intervals", connection=redis_url)
    entry = q.every(seconds, JOB, id="frac")
    assert [(e.id, e.expr) for e in q.crons()] == [("frac", expr)]
    runs = entry.next_runs
    # Each tick is a multiple of the interval since the epoch (checked in whole ms).
    assert all(round(t * 1000) % round(seconds * 1000) == 0 for t in runs)
    assert [round((b - a) * 1000) for a, b in zip(runs, runs[1:])] == [round(seconds * 1000)] * 2


def test_eager_mode_validates_the_flow_options_and_runs_at_once():
    q = Queue("eager-flow", eager=True)
    first = q.enqueue("tests.queue.eager_tasks:add", 1, 2, group="g", ttl=5, unique_key="k")
    again = q.enqueue("tests.queue.eager_tasks:add", 2, 2, unique_key="k")
    assert (first.return_value, again.return_value) == (3, 4)  # the first ended: key free
    with pytest.raises(ValueError, match="unique_for needs unique_key"):
        q.enqueue("tests.queue.eager_tasks:add", 1, 2, unique_for=5)


def test_flow_key_names_built_inside_lua_match_keyspace(redis_url):
    """include/limits.lua completes the per-group keys from the namespace prefix: they must
    be the very keys keys.FlowKeys names (same hash tag, same slot)."""
    source = (
        expand("--#context NS=ARGV[1] SEQ='' EVENTS='' NOW='0' WORKER=''\n--#include limits\n")
        + "\nreturn {flow_key('q'), starts_key('q'), group_running_key('q', 'g'), "
        "group_starts_key('q', 'g'), parked_key('q', 'g'), parked_groups_key('q'), "
        "group_timers_key('q')}"
    )
    client = Queue("q", connection=redis_url).connection
    keys = KeySpace("ns")
    built = [b.decode() for b in client.eval(source, 0, keys.prefix)]
    flow = FlowKeys(keys, "q")
    assert built == [
        flow.settings,
        flow.starts,
        flow.group_running("g"),
        flow.group_starts("g"),
        flow.parked("g"),
        flow.parked_groups,
        flow.group_timers,
    ]


def test_parked_jobs_go_back_when_group_limits_change_and_canceled_ones_stay_out(redis_url):
    q = Queue("parking", connection=redis_url)
    q.set_group_limits(concurrency=1)
    jobs = [q.enqueue(JOB, redis_url, "runs", i, group="g") for i in range(4)]
    steps = Steps(q.connection, q.keys)
    first = steps.take("c1", ["parking"], 30_000, "w")
    assert first[0] == jobs[0].id
    assert steps.take("c2", ["parking"], 30_000, "w") == -1  # the others parked
    assert q.count == 3 and jobs[2].status == "queued"  # parked jobs wait: counted
    jobs[2].cancel()
    q.set_group_limits()  # no cap any more: the parked jobs come back, in order
    assert q.job_ids == [jobs[1].id, jobs[3].id]
    taken = [steps.take(f"c{i}", ["parking"], 30_000, "w")[0] for i in (3, 4)]
    assert taken == [jobs[1].id, jobs[3].id]
