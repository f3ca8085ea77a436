"""Jobs of a group parked at its cap (parked:<queue>:<group>, lua/include/limits.lua) are
waiting jobs (SPEC 11): counted as queued by q.count, queue_counts (rqconc info, the
dashboard, /metrics), placed by job.position, and removed by q.empty(), q.delete(),
job.delete() and job.cancel() with their group's entry in parkedgroups."""

import json

import pytest

from rqconc import JobFailed, Queue
from rqconc.queue.counts import queue_counts
from rqconc.store.keys import FlowKeys
from rqconc.store.steps.core import Steps
from tests.cli.test_commands import rqconc

JOB = "tests.worker.limit_jobs:span"


def parked_queue(redis_url, name, n=4):
    """Queue `name` with group g at its cap of 1: the first job runs, the others parked;
    plus one job without a group, waiting in the queue. Returns (q, jobs of g, plain)."""
    q = Queue(name, connection=redis_url)
    q.set_group_limits(concurrency=1)
    jobs = [q.enqueue(JOB, redis_url, "runs", i, group="g") for i in range(n)]
    steps = Steps(q.connection, q.keys)
    assert steps.take("c1", [name], 30_000, "w")[0] == jobs[0].id
    assert steps.take("c2", [name], 30_000, "w") == -1  # popped one by one and parked
    plain = q.enqueue(JOB, redis_url, "runs", "plain")
    flow = FlowKeys(q.keys, name)
    assert q.connection.zcard(flow.parked("g")) == n - 1
    assert q.connection.smembers(flow.parked_groups) == {b"g"}
    return q, jobs, plain


def test_parked_jobs_count_as_queued_in_count_queue_counts_and_info(redis_url):
    q, jobs, plain = parked_queue(redis_url, "parked-counts")
    assert q.count == len(q) == 4  # three parked, one in the queue
    (row,) = queue_counts(redis_url, ["parked-counts"])
    assert (row["queued"], row["started"]) == (4, 1)
    info = rqconc("info", "--json", "--url", redis_url)
    (shown,) = [r for r in json.loads(info.stdout)["queues"] if r["name"] == "parked-counts"]
    assert (shown["queued"], shown["started"]) == (4, 1)
    # A canceled parked job waits no more: it leaves the parked set, and the count.
    jobs[2].cancel()
    assert q.count == 3 and queue_counts(redis_url, ["parked-counts"])[0]["queued"] == 3
    assert q.connection.zrange(FlowKeys(q.keys, "parked-counts").parked("g"), 0, -1) == [
        jobs[1].id.encode(),
        jobs[3].id.encode(),
    ]


def test_a_parked_job_has_a_position_the_earliest_it_can_run(redis_url):
    q, jobs, plain = parked_queue(redis_url, "parked-position")
    # Enqueued before the plain job, they run before it once their group may start again;
    # within the group, in order.
    assert [jobs[i].position for i in (1, 2, 3)] == [0, 1, 2]
    assert plain.position == 0 and jobs[0].position is None  # running


def test_empty_removes_parked_jobs_and_their_group_entry(redis_url):
    q, jobs, plain = parked_queue(redis_url, "parked-empty")
    assert q.empty() == 4
    flow = FlowKeys(q.keys, "parked-empty")
    assert q.count == 0 and not q.connection.exists(flow.parked("g"), flow.parked_groups)
    assert all(not q.connection.exists(q.keys.job(j.id)) for j in jobs[1:] + [plain])
    assert jobs[0].status == "started"  # running jobs are not emptied


def test_delete_removes_parked_jobs_and_wakes_their_waiters(redis_url):
    q, jobs, plain = parked_queue(redis_url, "parked-delete")
    dependent = q.enqueue(JOB, redis_url, "runs", "dep", depends_on=jobs[3])
    assert q.delete() == 5  # three parked, the plain one, the dependent (canceled)
    flow = FlowKeys(q.keys, "parked-delete")
    assert not q.connection.exists(flow.parked("g"), flow.parked_groups)
    assert all(not q.connection.exists(q.keys.job(j.id)) for j in jobs[1:] + [plain])
    with pytest.raises(JobFailed):
        jobs[3].get(timeout=1)  # deleted before it ran: its waiters get JobCanceled
    assert not q.connection.exists(q.keys.job(dependent.id))  # deferred in that queue
    assert queue_counts(redis_url, ["parked-delete"])[0]["queued"] == 0


def test_deleting_one_parked_job_takes_it_out_of_its_group(redis_url):
    q, jobs, plain = parked_queue(redis_url, "parked-one", n=2)
    assert jobs[1].delete()
    flow = FlowKeys(q.keys, "parked-one")
    assert not q.connection.exists(flow.parked("g"), flow.parked_groups)
    assert q.count == 1 and q.job_ids == [plain.id]
