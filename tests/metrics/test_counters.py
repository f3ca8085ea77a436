"""SPEC 9: the counters and histograms the Lua steps keep are exact across every worker,
backend and host, and their times are the jobs' own (read through rqconc.metrics.read)."""

import json

import pytest

from rqconc import group
from rqconc.connection.clients import connect
from rqconc.metrics.read import BOUNDS_MS, Histogram, snapshot, timeline
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry
from rqconc.store.build import expand
from rqconc.store.keys import KeySpace
from rqconc.store.steps.metrics import mark_metrics_minute
from rqconc.worker.registry import list_workers
from tests.support.waiting import wait_for

NAP = "tests.metrics.metrics_jobs:nap"
BOOM = "tests.metrics.metrics_jobs:boom"
FAIL_FIRST = "tests.metrics.metrics_jobs:fail_first"
COUNT = "tests.metrics.metrics_jobs:count"
ENDED = ("finished", "failed")


def wait_ended(jobs, timeout=45):
    wait_for(
        lambda: all(job.status in ENDED for job in jobs),
        timeout=timeout,
        message="every job ended",
    )


def bucket_of(ms):
    """The histogram bucket (its index) a time in whole ms falls into."""
    return next((i for i, bound in enumerate(BOUNDS_MS) if ms <= bound), len(BOUNDS_MS))


# Two workers of different backends at once, every backend in one of the pairs.
@pytest.mark.parametrize("pair", [("forking", "threading"), ("multiprocessing", "gevent")])
def test_counters_are_exact_across_two_workers_of_different_backends(
    redis_server, start_worker, tmp_path, pair
):
    redis_url = redis_server.url
    for backend in pair:
        start_worker(backend, 2, redis_url, "-q", "m")
    wait_for(
        lambda: [w["idle"] for w in list_workers(connect(redis_url))] == [2, 2],
        timeout=30,
        message="2 workers with their children up",
    )
    q = Queue("m", connection=redis_url)
    fast = q.enqueue_many([(NAP, (0.04,))] * 30)
    fast.append(q.enqueue(NAP, 0))
    failing = [q.enqueue(BOOM, f"no {i}", retry=None) for i in range(5)]
    retried = [
        q.enqueue(FAIL_FIRST, str(tmp_path / f"token{i}"), retry=Retry(1, 0.05, jitter=False))
        for i in range(4)
    ]
    wait_ended(fast + failing + retried)
    assert all(job.status == "finished" for job in fast + retried)

    m = snapshot(redis_url).queue("m")
    assert (m.enqueued, m.finished, m.failed, m.retried) == (40, 35, 5, 4)
    assert m.run.count == 44  # every run that ended: 35 finished, 5 failed, 4 retried
    assert m.failed_runs == 9
    assert m.wait.count == 44  # every start: 31 + 5 + 4 twice
    # A dead letter requeued enters its queue again: counted as enqueued once more.
    assert q.failed.requeue(failing[0].id)
    assert snapshot(redis_url).queue("m").enqueued == 41
    assert m.jobs["finished"] == 35 and m.jobs["failed"] == 5 and m.jobs["queued"] == 0
    client = connect(redis_url)
    workers = {client.hget(job.key, "worker") for job in fast + failing + retried}
    assert len(workers) == 2, "both workers took jobs"


def test_every_job_stored_counts_once_as_enqueued_unique_debounced_and_grouped_too(
    redis_server, start_worker
):
    """enqueued_total counts each job stored once, whichever step stored it: a unique job
    (its holder returned again is no new job), a debounced one (its waiting holder moved is
    none either), a group and its chord callback, plain and scheduled jobs; so a queue's
    enqueued equals its finished once every job ran (issue 32: 0 enqueued, 3 finished)."""
    url = redis_server.url
    q = Queue("u", connection=url)
    unique = q.enqueue(NAP, 0, unique_key="report")
    assert q.enqueue(NAP, 0, unique_key="report").id == unique.id  # the holder: no new job
    debounced = q.enqueue(NAP, 0, unique_key="digest", debounce=0.3)
    assert q.enqueue(NAP, 0.01, unique_key="digest", debounce=0.3).id == debounced.id
    plain = [q.enqueue(NAP, 0), q.enqueue_in(0.2, NAP, 0)]
    chord = group((NAP, (0,)), (NAP, (0,))).then(COUNT).enqueue(q)
    assert snapshot(url).queue("u").enqueued == 7
    start_worker("threading", 2, url, "-q", "u")
    wait_ended([unique, debounced, *plain, *chord.jobs])
    wait_for(lambda: chord.chord.status == "finished", 30, message="the chord's callback")
    again = q.enqueue(NAP, 0, unique_key="report")  # its holder ended: the key is free
    assert again.id != unique.id
    wait_ended([again])
    m = snapshot(url).queue("u")
    assert (m.enqueued, m.finished) == (8, 8)


def test_run_and_wait_histograms_hold_the_jobs_own_times(redis_server, start_worker):
    redis_url = redis_server.url
    q = Queue("h", connection=redis_url)
    naps = (0.0, 0.03, 0.12, 0.3, 0.3)
    jobs = [q.enqueue(NAP, s) for s in naps]
    start_worker("threading", 3, redis_url, "-q", "h")
    wait_ended(jobs)
    client = connect(redis_url)
    runs, waits = Histogram(), Histogram()
    for job, seconds in zip(jobs, naps):
        started, ended, enqueued = (
            int(v) for v in client.hmget(job.key, "started_at", "ended_at", "enqueued_at")
        )
        runs.counts[bucket_of(ended - started)] += 1
        runs.sum_seconds += (ended - started) / 1000
        waits.counts[bucket_of(max(0, started - enqueued))] += 1
        waits.sum_seconds += max(0, started - enqueued) / 1000
        assert ended - started >= 1000 * seconds
    m = snapshot(redis_url).queue("h")
    assert m.run.counts == runs.counts and m.run.sum_seconds == pytest.approx(runs.sum_seconds)
    assert m.wait.counts == waits.counts
    assert m.wait.sum_seconds == pytest.approx(waits.sum_seconds)
    assert 0.3 <= m.run.quantile(0.95) <= 0.5  # 2 of 5 runs took 0.3 s: the 250-500 ms bucket


def test_timeline_gives_the_last_hour_per_minute(redis_server, start_worker):
    redis_url = redis_server.url
    q = Queue("t", connection=redis_url)
    jobs = [q.enqueue(NAP, 0.02) for _ in range(6)] + [q.enqueue(BOOM, "x", retry=None)]
    other = q.__class__("other", connection=redis_url).enqueue(NAP, 0)
    start_worker("gevent", 4, redis_url, "-q", "t,other")
    wait_ended(jobs + [other])
    points = timeline(redis_url, queue="t")
    assert len(points) == 60 and points[-1].minute - points[0].minute == 59 * 60
    assert sum(p.finished for p in points) == 6 and sum(p.failed for p in points) == 1
    busy = [p for p in points if p.finished]
    # 20 ms naps: the quantiles are interpolated inside the run histogram's buckets (a 20 ms
    # run lies in the 10-25 ms one), and a loaded machine may stretch a nap, never shorten it.
    assert all(0.01 <= p.run_p50 <= p.run_p95 <= 0.5 for p in busy), busy
    assert sum(p.finished for p in timeline(redis_url, minutes=5)) == 7  # every queue
    keys = KeySpace()
    ttl = connect(redis_url).ttl(keys.metrics_minute(busy[0].minute))
    assert 3600 < ttl <= 3720  # an hour after its minute, then gone: memory stays bounded
    with pytest.raises(ValueError):
        timeline(redis_url, minutes=61)


def redis_minute(client):
    """The current minute (Unix seconds) by Redis' clock, once at least 5 s remain in it,
    so that a test reading minutes does not straddle two."""
    wait_for(lambda: client.time()[0] % 60 < 55, timeout=10, message="a fresh minute")
    return client.time()[0] // 60 * 60


def test_the_minute_mark_copies_run_buckets_and_failures_once_a_minute(redis_url):
    client, keys = connect(redis_url), KeySpace()
    minute = redis_minute(client)
    totals = {"run:10:t": 3, "run_failed:t": 2, "failed:t": 1, "wait:10:t": 3, "run_ms:t": 9}
    client.hset(keys.metrics, mapping=totals)
    assert mark_metrics_minute(client, keys) is True
    assert mark_metrics_minute(client, keys) is False  # this minute has its copy
    copy = client.hgetall(keys.metrics_minute(minute))
    assert copy.pop(b"at")
    assert copy == {b"run:10:t": b"3", b"run_failed:t": b"2", b"failed:t": b"1"}
    assert 3600 < client.ttl(keys.metrics_minute(minute)) <= 3720


def test_the_minute_mark_keeps_the_totals_a_hash_table_that_readers_ignore(redis_url):
    """Every job increments {ns}:metrics a few times: a listpack would be scanned field by
    field on each (lua/metrics_mark.lua). The mark converts it, also after a reset (DEL),
    and its layout field is neither copied nor read as a metric."""
    client, keys = connect(redis_url), KeySpace()
    client.hset(keys.metrics, mapping={"run:10:t": 3, "wait:10:t": 3})
    assert client.object("encoding", keys.metrics) in (b"listpack", b"ziplist")  # 7 / 6.2
    mark_metrics_minute(client, keys)
    assert client.object("encoding", keys.metrics) == b"hashtable"
    queue = snapshot(client).queue("t")
    assert (sum(queue.run.counts), sum(queue.wait.counts)) == (3, 3)
    minute = redis_minute(client)  # at least 5 s of it left: the mark below copies into it
    client.delete(keys.metrics, keys.metrics_minute(minute))
    client.hincrby(keys.metrics, "run:10:t", 1)
    mark_metrics_minute(client, keys)  # the next tick, after a reset
    assert client.object("encoding", keys.metrics) == b"hashtable"
    copy = client.hgetall(keys.metrics_minute(minute))
    assert b"layout" not in copy and copy[b"run:10:t"] == b"1"


def test_timeline_counts_each_minute_from_one_copy_to_the_next(redis_url):
    client, keys = connect(redis_url), KeySpace()
    m = redis_minute(client)
    copies = {
        m - 180: {"run:10:t": 2, "failed:t": 0},
        # m - 120: no copy, no worker ran when it began
        m - 60: {"run:10:t": 5, "run:1000:t": 0, "failed:t": 1, "run_failed:t": 1},
        m: {"run:10:t": 9, "run:1000:t": 1, "failed:t": 1, "run:10:other": 7, "run_failed:t": 2},
    }
    for minute, fields in copies.items():
        client.hset(keys.metrics_minute(minute), mapping=dict(fields, at=minute * 1000))
    totals = {"run:10:t": 12, "run:1000:t": 1, "failed:t": 3, "run_failed:t": 2}
    client.hset(keys.metrics, mapping=totals)
    points = timeline(redis_url, queue="t", minutes=5)
    assert [p.minute for p in points] == [m - 240, m - 180, m - 120, m - 60, m]
    # m - 180 runs until the next copy (m - 60): 3 runs ended, 1 failed; m - 60: 5 runs, one
    # of them 1 s, 1 failed; the current minute: up to the totals now, 3 runs, none failed.
    assert [p.finished for p in points] == [0, 2, 0, 4, 3]
    assert [p.failed for p in points] == [0, 1, 0, 0, 2]
    assert points[3].run_p95 > 0.25 and points[4].run_p95 <= 0.01
    # Every queue: other's 7 runs are gone from the totals (a reset): nothing, not negative.
    assert [p.finished for p in timeline(redis_url, minutes=1)] == [0]


def test_lua_and_python_share_the_bucket_bounds(redis_url):
    """metrics.lua's metric_bucket puts each time in the bucket read.py reads it from: a
    bound in its own bucket, just above it in the next one, past the last in 'inf'."""
    client = connect(redis_url)
    source = expand("--#context NS='' NOW='0'\n--#include metrics\n")
    times = [0, *BOUNDS_MS, *(bound + 0.5 for bound in BOUNDS_MS)]
    asked = (
        source + "\nlocal out = {}\nfor i, ms in ipairs(cjson.decode(ARGV[1])) do "
        "out[i] = metric_bucket(ms) end\nreturn out"
    )
    buckets = [b.decode() for b in client.eval(asked, 0, json.dumps(times))]
    expected = [str(BOUNDS_MS[0]), *map(str, BOUNDS_MS), *map(str, BOUNDS_MS[1:]), "inf"]
    assert buckets == expected
