"""What a plain job's hot path asks of Redis (issue 21): the commands each step calls, counted
by the server itself (INFO commandstats), so a change that adds one shows here."""

from rqconc import Queue
from rqconc.queue.events import EventStream
from rqconc.store.steps.core import Steps
from tests.support.lua_calls import preloaded

JOBS = 50
LEASE_MS = 30_000


def calls_per_job(client, jobs):
    stats = client.info("commandstats")
    return {
        name[len("cmdstat_") :]: v["calls"] / jobs
        for name, v in stats.items()
        if not name.startswith(("cmdstat_config", "cmdstat_info"))
    }


def test_fused_complete_and_take_of_a_plain_job_calls_nineteen_commands(redis_url, client, keys):
    queue = Queue("plain", connection=redis_url)
    queue.enqueue_many([("tests.queue.tasks:add", (1, 2))] * (JOBS + 1), result_ttl=0)
    steps = Steps(client, keys)
    job_id, _ = steps.take("c0", ["plain"], LEASE_MS, "w")
    preloaded(client, "complete")  # not counted: once per server (the script, or its library)
    client.config_resetstat()
    for i in range(1, JOBS + 1):
        code, (job_id, _) = steps.complete(
            f"c{i - 1}", job_id, "plain", "3", "json", "w", next_take=(f"c{i}", ["plain"], LEASE_MS)
        )
    calls = calls_per_job(client, JOBS)
    # One request per job: the step's function of the library on Redis 7, its script on 6.2
    # (rqconc/store/functions.py).
    path = "fcall" if int(client.info("server")["redis_version"].split(".")[0]) >= 7 else "evalsha"
    assert calls.pop(path) == 1 and "evalsha" not in calls and "fcall" not in calls
    # One EXISTS asks at once for dependents (a mark on the parent would save it, but a
    # dependent enqueued by an older producer, during a rolling upgrade, would then never be
    # released), flow settings and a revoked next claim; no group, waiter, follow-up or flow
    # stage.
    assert calls["exists"] == 1 and "zrange" not in calls and "smembers" not in calls
    inner = sum(round(n) for n in calls.values() if n >= 0.5)
    assert inner <= 19, calls
    # Every promise still paid for: fenced lease, FIFO pop, the counters (the per-minute
    # timeline costs no job anything: lua/metrics_mark.lua), and both events,
    # finished and started, in one stream entry (queue/events.py splits it).
    assert calls["zpopmin"] == 1 and calls["xadd"] == 1
    # The two buckets always; the two sums only for a time of 1 ms or more (adding 0 is no
    # call): here the runs take no time, and each job waited since the enqueue above.
    assert calls["hincrby"] >= 2 and calls["hincrby"] <= 4
    events = EventStream(client, keys.namespace).latest(2 * JOBS)
    assert [e["event"] for e in events] == ["finished", "started"] * JOBS
    assert [e["job_id"] for e in events[1::2]] == [e["job_id"] for e in events[2::2]] + [job_id]
