"""Jobs stored by the rqconc before the second rebuild (e7e3647: rqconc/queue/ held the
keys and the Lua, the lifecycle include was one file) run with today's worker: plain jobs,
kept results, retries, dependencies (one that allows failure), a success callback, a flow
stage, a unique key with unique_for, a limit group, two queues and priorities, and a chord.

The keys are in tests/fixtures/legacy_jobs.json, recorded by
tests/fixtures/record_legacy_jobs.py from a checkout of that revision with its public API,
so they are what producers of that version wrote, field for field."""

import json
from pathlib import Path

import pytest
import redis

from rqconc import Job, JobStatus, Queue
from tests.support.waiting import wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_jobs.json"
RECORDED = json.loads(FIXTURE.read_text())


def _load(client: redis.Redis) -> None:
    pipe = client.pipeline(transaction=False)
    for key, stored in RECORDED["keys"].items():
        kind, value = stored["type"], stored["value"]
        if kind == "hash":
            pipe.hset(key, mapping=value)
        elif kind == "zset":
            pipe.zadd(key, {member: score for member, score in value})
        elif kind == "set":
            pipe.sadd(key, *value)
        elif kind == "list":
            pipe.rpush(key, *value)
        else:
            pipe.set(key, value)
    pipe.execute()


@pytest.mark.parametrize("backend", ["threading", "forking"])
def test_jobs_stored_before_the_rebuild_run_to_the_same_ends(backend, redis_url, start_worker):
    client = redis.Redis.from_url(redis_url)
    _load(client)
    q = Queue("legacy", connection=redis_url)
    assert q.count == 9  # seven jobs and the two members of the chord; deferred ones aside
    start_worker(backend, 2, redis_url, "-q", "legacy,legacy_low")

    def result(job_id):
        return Job.fetch(job_id, connection=redis_url).get(timeout=30)

    assert result("plain") == 5
    assert result("kwargs") == 2
    assert result("retried") == "second attempt"
    assert Job.fetch("retried", connection=redis_url).attempts == 2
    assert result("child") == 15  # released by its parent's completion
    assert result("tolerant") == 7
    assert result("called_back") == 8
    wait_for(lambda: client.lrange("legacy:noted", 0, -1) == [b"8"], message="the callback")
    assert result("flow") == "one"
    next_id = Job.fetch("flow", connection=redis_url).next_id
    assert next_id and result(next_id) == 31  # the flow's second stage, enqueued by today's step
    assert result(RECORDED["unique_id"]) == 16
    held = client.pttl("{rqconc}:unique:only-one")
    assert 0 < held <= 60_000  # kept for unique_for after its holder ended, then gone
    assert result("grouped_limit") == 12
    assert result("low") == 18
    group_key = "{rqconc}:group:" + RECORDED["group_id"]
    chord_id = client.hget(group_key, "chord_id").decode()
    assert result(chord_id) == 10  # (1 + 2) + (3 + 4), fired by the last member's completion
    wait_for(lambda: client.hget(group_key, "state") == b"done", message="the group's end")
    assert all(
        Job.fetch(i, connection=redis_url).status == JobStatus.FINISHED
        for i in ("plain", "child", "tolerant", "called_back", "low")
    )
