"""Groups and chords (SPEC section 12) on real workers: `rqconc.group(...).enqueue(q)`,
`Group.get/status`, and a chord's callback enqueued once, in the step that finishes the
last job of its group, with the results in group order (docs/architecture.md, Groups)."""

import json
import signal

import pytest

import rqconc
from rqconc import Group, JobFailed, Queue, Retry
from rqconc.queue.workflow.signature import Signature
from rqconc.worker.registry import list_workers
from tests.support.waiting import wait_for
from tests.support.worker_process import BACKENDS

JOBS = "tests.worker.group_jobs"


def runs(client, key):
    return [json.loads(entry) for entry in client.lrange(key, 0, -1)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_group_get_returns_the_results_in_order_and_status_counts_them(
    backend, redis_server, start_worker
):
    q = Queue(connection=redis_server.url)
    calls = [(f"{JOBS}:square", (i, 0.01 * (5 - i))) for i in range(5)]
    group = rqconc.group(*calls).enqueue(q)
    assert len(group.jobs) == 5 and group.chord is None
    assert group.status() == {"queued": 5}
    start_worker(backend, 3, redis_server.url)
    assert group.get(timeout=20) == [0, 1, 4, 9, 16]
    assert group.status() == {"finished": 5}
    fetched = Group.fetch(group.id, redis_server.url)
    assert [job.id for job in fetched.jobs] == [job.id for job in group.jobs]
    assert fetched.get(timeout=1) == [0, 1, 4, 9, 16]
    assert {job.field("group_id") for job in fetched.jobs} == {group.id}


def test_group_enqueue_stores_every_job_in_one_step(redis_server):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    rqconc.group((f"{JOBS}:square", (0,))).enqueue(q)  # loads the script

    def script_calls():
        stats = client.info("commandstats")
        names = ("evalsha", "eval", "fcall")
        return sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in names)

    before = script_calls()
    spec = rqconc.group(*[(f"{JOBS}:square", (i,)) for i in range(50)])
    group = spec.then(f"{JOBS}:record", redis_server.url, "runs").enqueue(q)
    assert script_calls() - before == 1
    assert q.job_ids[1:] == [job.id for job in group.jobs]
    assert group.chord.status == "deferred" and group.chord.field("chord_of") == group.id


def test_group_takes_signatures_and_their_options(redis_server, start_worker):
    q = Queue(connection=redis_server.url)
    urgent = Signature(f"{JOBS}:square", (3,), options={"priority": 50})
    group = rqconc.group((f"{JOBS}:square", (2,)), urgent).enqueue(q)
    assert q.job_ids == [group.jobs[1].id, group.jobs[0].id]  # priority holds in a group
    with pytest.raises(ValueError, match="job_id"):
        rqconc.group(Signature(f"{JOBS}:square", (1,), options={"job_id": "x"})).enqueue(q)
    with pytest.raises(ValueError, match="at least one"):
        rqconc.group()
    start_worker("threading", 2, redis_server.url)
    assert group.get(timeout=20) == [4, 9]


@pytest.mark.parametrize("backend", ["forking", "gevent"])
def test_a_job_failing_for_good_fails_get_and_cancels_the_chord(
    backend, redis_server, start_worker
):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    calls = [(f"{JOBS}:fail_on", (i, 2)) for i in range(4)]
    group = rqconc.group(*calls).then(f"{JOBS}:record", redis_server.url, "runs").enqueue(q)
    start_worker(backend, 2, redis_server.url)
    with pytest.raises(JobFailed) as info:
        group.get(timeout=20)
    assert info.value.job_id == group.jobs[2].id and info.value.exc_type == "ValueError"
    with pytest.raises(JobFailed) as canceled:
        group.chord.get(timeout=10)
    assert canceled.value.exc_type == "rqconc.errors.JobCanceled"
    assert group.chord.status == "canceled"
    group.chord.refresh()
    assert group.jobs[2].id in group.chord.field("exc_message")
    wait_for(lambda: group.status() == {"finished": 3, "failed": 1}, 20, message="the rest")
    events = [e["event"] for e in rqconc.EventStream(redis_server.url).for_job(group.chord.id)]
    assert events == ["deferred", "canceled"]
    assert runs(client, "runs") == []


def test_a_retried_job_does_not_end_its_group(redis_server, start_worker):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    retry = {"retry": Retry(max=2, backoff=0.1, jitter=False)}
    calls = [
        Signature(f"{JOBS}:flaky", (i, redis_server.url, "tries"), options=retry) for i in range(3)
    ]
    group = rqconc.group(*calls).then(f"{JOBS}:record", redis_server.url, "runs").enqueue(q)
    start_worker("forking", 2, redis_server.url)
    assert group.chord.get(timeout=20) == 3
    assert runs(client, "runs") == [[0, 1, 2]]
    assert [job.attempts for job in group.jobs] == [2, 2, 2]


def test_chord_of_100_jobs_over_3_workers_of_different_backends_fires_once_in_order(
    redis_server, start_worker
):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    for backend in ("forking", "threading", "gevent"):
        start_worker(backend, 4, redis_server.url)
    # Every child of every worker ready to take, and jobs long enough (100 x 0.1 s over 12
    # children) that a worker slowed by a loaded machine still gets some: a CI run under
    # load saw two workers finish all 100 jobs of 20 ms while the third was registered but
    # not yet taking.
    wait_for(
        lambda: len(w := list_workers(client)) == 3 and all(x["idle"] == 4 for x in w),
        30,
        message="three workers with 4 idle children each",
    )
    calls = [(f"{JOBS}:square", (i, 0.1)) for i in range(100)]
    group = rqconc.group(*calls).then(f"{JOBS}:record", redis_server.url, "runs").enqueue(q)
    assert group.chord.get(timeout=60) == 100
    assert runs(client, "runs") == [[i * i for i in range(100)]]
    workers = {job.worker_name for job in Group.fetch(group.id, redis_server.url).jobs}
    assert len(workers) == 3, workers  # spread over the three workers
    assert group.chord.attempts == 1


def test_chord_fires_once_in_order_when_a_worker_is_killed_mid_group(redis_server, start_worker):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    lease = ("--lease-seconds", "1")
    victim = start_worker("forking", 4, redis_server.url, *lease)
    calls = [(f"{JOBS}:square", (i, 0.05)) for i in range(100)]
    group = rqconc.group(*calls).then(f"{JOBS}:record", redis_server.url, "runs").enqueue(q)
    wait_for(lambda: group.status().get("finished", 0) >= 8, 20, message="jobs finished")
    victim.signal_group(signal.SIGKILL)
    start_worker("threading", 4, redis_server.url, *lease)
    start_worker("gevent", 4, redis_server.url, *lease)
    assert group.chord.get(timeout=60) == 100
    assert runs(client, "runs") == [[i * i for i in range(100)]]
    assert sum(job.lost for job in group.jobs) >= 1  # some came back by lease recovery
    assert group.status() == {"finished": 100}


def test_many_small_chords_over_several_workers_each_fire_exactly_once(redis_server, start_worker):
    """Two jobs of a group finishing at the same instant on two workers: the pending count
    is settled inside each completion step, so exactly one of them fires the callback."""
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    for backend in ("forking", "multiprocessing", "gevent"):
        start_worker(backend, 4, redis_server.url)
    groups = [
        rqconc.group((f"{JOBS}:square", (i,)), (f"{JOBS}:square", (i + 1,)))
        .then(f"{JOBS}:record", redis_server.url, f"runs:{n}")
        .enqueue(q)
        for n, i in enumerate(range(0, 120, 2))
    ]
    for group in groups:
        assert group.chord.get(timeout=60) == 2
    for n, i in enumerate(range(0, 120, 2)):
        assert runs(client, f"runs:{n}") == [[i * i, (i + 1) ** 2]]


def test_a_chord_of_big_results_runs_its_callback_with_them(redis_server, start_worker):
    """6 members of 3 MB results: the callback reads them from the group's hash when it
    runs (the step firing it copies nothing: tests/queue/test_group_steps.py times it), and
    they go once it ended."""
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    size, members = 3_000_000, 6
    calls = [(f"{JOBS}:blob", (size,)) for _ in range(members)]
    group = rqconc.group(*calls).then(f"{JOBS}:record_sizes", redis_server.url, "runs")
    handle = group.enqueue(q)
    start_worker("forking", 3, redis_server.url)
    assert handle.chord.get(timeout=30) == members
    assert runs(client, "runs") == [[size] * members]
    record = client.hgetall(f"{q.keys.prefix}group:{handle.id}")
    assert b"r1" not in record and b"results_kept" not in record  # gone with the callback
    assert not client.hexists(f"{q.keys.prefix}job:{handle.chord.id}", "chord_results")


def test_a_chord_callback_fired_by_older_code_runs_with_its_copied_results(
    redis_server, start_worker
):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    job = q.enqueue(f"{JOBS}:record", redis_server.url, "runs")
    key = f"{q.keys.prefix}job:{job.id}"
    # As an older rqconc fired it: the results copied into the callback's hash.
    client.hset(key, mapping={"chord_of": "gone", "chord_results": '["1","4"]'})
    client.hdel(key, "lean")
    start_worker("threading", 1, redis_server.url)
    assert job.get(timeout=20) == 2
    assert runs(client, "runs") == [[1, 4]]


@pytest.mark.parametrize("how", ["delete", "empty"])
def test_a_member_removed_while_waiting_cancels_the_chord(how, redis_server, start_worker):
    q = Queue(connection=redis_server.url)
    client = redis_server.client()
    calls = [(f"{JOBS}:square", (i,)) for i in range(3)]
    group = rqconc.group(*calls).then(f"{JOBS}:record", redis_server.url, "runs").enqueue(q)
    if how == "delete":
        assert group.jobs[1].delete()
    else:
        assert q.empty() == 3
    start_worker("threading", 2, redis_server.url)
    with pytest.raises(JobFailed) as info:
        group.chord.get(timeout=20)  # it waited for ever before
    assert info.value.exc_type == "rqconc.errors.JobCanceled"
    assert client.hget(f"{q.keys.prefix}group:{group.id}", "state") == b"failed"
    assert client.ttl(f"{q.keys.prefix}group:{group.id}") > 0
    if how == "delete":
        wait_for(lambda: group.status().get("finished") == 2, 20, message="the other two")
    assert runs(client, "runs") == []
