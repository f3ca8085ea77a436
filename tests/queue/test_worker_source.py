"""RedisSource: performing jobs safely (SPEC section 4), retries, leases, fences, workers."""

import logging
import os
import pickle
import sys
import time

import pytest

from rqconc.engine.source import StopWorker, SupervisorInfo
from rqconc.errors import JobFailed, JobTimeout
from rqconc.queue.job import JobStatus
from rqconc.queue.retry import Retry
from rqconc.queue.serialization import is_allowed
from rqconc.worker.redis_source import RedisSource
from rqconc.worker.refusals import REFUSALS_BEFORE_STOP
from rqconc.worker.registry import list_workers
from tests.conftest import ALLOW
from tests.queue import tasks
from tests.queue.helpers import take_and_run, wait_for
from tests.support.tcp_proxy import TcpProxy


def info(name="w1", busy=0, idle=2, current=()):
    return SupervisorInfo(
        name=name,
        uid="uid",
        pid=os.getpid(),
        host="host",
        backend="threading",
        size=busy + idle,
        state="running",
        busy=busy,
        idle=idle,
        current_items=list(current),
    )


# ---- SPEC section 4: what a worker does with bad jobs ----


def test_a_disallowed_module_goes_back_untouched_without_being_imported(queue, source):
    # Issue 32: a configuration error of the worker, not the job's failure.
    job = queue.enqueue("tests.queue.forbidden_tasks:run")
    source.taker.refusals.pause = 0
    take_and_run(source)
    assert "tests.queue.forbidden_tasks" not in sys.modules
    assert job.status == JobStatus.QUEUED and job.attempts == 0
    assert queue.job_ids == [job.id] and queue.failed.job_ids == []


def test_refusals_of_different_jobs_in_a_row_stop_the_worker_with_the_option_to_add(queue, source):
    jobs = [queue.enqueue("tests.queue.forbidden_tasks:run") for _ in range(REFUSALS_BEFORE_STOP)]
    source.taker.refusals.pause = 0
    for n in range(REFUSALS_BEFORE_STOP - 1):
        take_and_run(source, f"c{n}")
    with pytest.raises(StopWorker) as stop:
        take_and_run(source, "last")
    assert stop.value.exit_code == 2
    assert f"refused {REFUSALS_BEFORE_STOP} jobs in a row" in str(stop.value)
    assert "allow=['tests']) (for tests.queue.forbidden_tasks:run)" in str(stop.value)
    assert all(j.status == JobStatus.QUEUED and j.attempts == 0 for j in jobs)


def test_one_stray_job_met_again_and_again_does_not_stop_a_well_configured_worker(queue, source):
    # A producer's typo alone in the queue: the worker meets the same job each take.
    job = queue.enqueue("tests.queue.forbidden_tasks:run")
    source.taker.refusals.pause = 0
    for n in range(3 * REFUSALS_BEFORE_STOP):
        take_and_run(source, f"c{n}")
    assert job.status == JobStatus.QUEUED and job.attempts == 0


def test_a_refused_job_goes_behind_the_jobs_that_can_run(queue, source):
    # Handed back to the front, one stray job would be taken first again and again.
    stray = queue.enqueue("tests.queue.forbidden_tasks:run")
    allowed = queue.enqueue("tests.queue.tasks:add", 2, 3)
    source.taker.refusals.pause = 0
    take_and_run(source, "c1")
    assert queue.job_ids == [allowed.id, stray.id]
    take_and_run(source, "c2")
    assert allowed.get(timeout=5) == 5


def test_a_name_no_allow_list_could_cover_is_corrupt_and_fails(queue, source, client):
    job = queue.enqueue("tests.queue.forbidden_tasks:run")
    client.hset(job.key, "func", "tests/queue/forbidden_tasks:run")
    take_and_run(source)
    with pytest.raises(JobFailed) as caught:
        job.get(timeout=1)
    assert caught.value.exc_type == "ValueError"
    assert "is not a function name" in caught.value.exc_message


def test_allow_prefixes_match_module_paths():
    assert is_allowed("myapp", ["myapp"]) and is_allowed("myapp.tasks", ["myapp"])
    assert not is_allowed("myapp2", ["myapp"]) and not is_allowed("other", ["myapp"])
    assert is_allowed("anything.at.all", ["*"])
    assert is_allowed("rqconc.demo", []) and not is_allowed("rqconc.worker.redis_source", [])


def test_corrupt_job_data_fails_that_job_and_the_next_job_still_runs(queue, source, client, keys):
    bad_args = queue.enqueue(tasks.add, 1, 2)
    bad_func = queue.enqueue(tasks.add, 1, 2)
    good = queue.enqueue(tasks.add, 2, 2)
    client.hset(keys.job(bad_args.id), "args", "{not json")
    client.hset(keys.job(bad_func.id), "func", "\x00garbage")
    for n in range(3):
        take_and_run(source, f"claim-{n}")
    for job in (bad_args, bad_func):
        with pytest.raises(JobFailed, match="corrupt job data"):
            job.get(timeout=1)
    assert good.get(timeout=1) == 4


def test_corrupt_bookkeeping_fields_do_not_stop_the_worker(queue, source, client, keys):
    job = queue.enqueue(tasks.boom, priority=3)
    client.hset(
        keys.job(job.id),
        mapping={"timeout": "soon", "attempts": "many", "retry": "{oops", "priority": "high"},
    )
    item = source.take("claim-1", 1)
    source.perform(item)
    with pytest.raises(JobFailed, match="boom"):
        job.get(timeout=1)
    assert job.attempts == 1
    good = queue.enqueue(tasks.add, 2, 2)
    take_and_run(source, "claim-2")
    assert good.get(timeout=1) == 4


def test_an_unimportable_function_fails_with_a_clear_error(queue, make_source, client):
    source = make_source(allow=["tests.queue"])
    # Stored as by a producer that cannot import tests.queue.tasks (one that can refuses it).
    missing_attr = queue.enqueue("tests.queue.tasks:add")
    client.hset(missing_attr.key, "func", "tests.queue.tasks:no_such_function")
    missing_module = queue.enqueue("tests.queue.no_such_module:run")
    take_and_run(source, "claim-1")
    take_and_run(source, "claim-2")
    with pytest.raises(JobFailed, match="cannot import tests.queue.tasks:no_such_function"):
        missing_attr.get(timeout=1)
    with pytest.raises(JobFailed) as caught:
        missing_module.get(timeout=1)
    assert caught.value.exc_type == "ModuleNotFoundError"
    assert missing_module.status is JobStatus.FAILED  # not retried: it cannot get better


def test_a_function_path_cannot_walk_out_of_the_allowed_module(queue, source):
    into_module = queue.enqueue("tests.queue.tasks:time.sleep", 0)  # tasks imports time
    via_dunder = queue.enqueue("tests.queue.tasks:add.__globals__")
    take_and_run(source, "claim-1")
    take_and_run(source, "claim-2")
    with pytest.raises(JobFailed, match="is a module"):
        into_module.get(timeout=1)
    with pytest.raises(JobFailed, match="dunder"):
        via_dunder.get(timeout=1)


def test_a_non_json_return_value_fails_the_job_with_type_error_naming_it(queue, source):
    job = queue.enqueue(tasks.returns_object, retry=Retry(max=3))
    take_and_run(source)
    with pytest.raises(JobFailed) as caught:
        job.get(timeout=1)
    assert caught.value.exc_type == "TypeError" and "Opaque" in caught.value.exc_message
    assert job.attempts == 1


# ---- retries ----


def test_the_default_policy_retries_a_connection_error_after_a_jittered_delay(
    queue, source, client, keys
):
    job = queue.enqueue(tasks.flaky_connection)
    take_and_run(source)
    assert job.status is JobStatus.SCHEDULED and job.attempts == 1
    due = client.zscore(keys.scheduled("default"), job.id) / 1000
    assert 0.9 < due - time.time() <= 2.0  # backoff 2 s, jitter between half and all of it
    assert job.exc_info[0] == "ConnectionError"


def test_other_exceptions_fail_at_once_under_the_default_policy(queue, source):
    job = queue.enqueue(tasks.boom)
    take_and_run(source)
    assert job.status is JobStatus.FAILED and job.attempts == 1


def test_retry_max_bounds_the_reruns_then_the_job_is_dead_lettered(queue, source, client, keys):
    job = queue.enqueue(tasks.boom, retry=Retry(max=2, backoff=0, jitter=False))
    for n in range(3):
        assert take_and_run(source, f"claim-{n}").item_id == job.id
    assert job.status is JobStatus.FAILED and job.attempts == 3
    assert client.zscore(keys.failed("default"), job.id) is not None
    assert take_and_run(source, "claim-4", timeout=0) is None


def test_a_lost_child_is_a_failed_attempt_that_the_default_policy_retries(queue, source):
    job = queue.enqueue(tasks.add, 1, 2)
    item = source.take("claim-1", 1)
    source.lost(item.claim, "child 0 was killed by SIGKILL")
    assert job.status is JobStatus.SCHEDULED and job.attempts == 1
    assert job.exc_info[0] == "rqconc.errors.WorkerLost" and "SIGKILL" in job.exc_info[1]


@pytest.mark.parametrize(
    "retry,status", [(None, "failed"), (Retry(), "failed"), (Retry(on=[JobTimeout]), "scheduled")]
)
def test_a_timeout_fails_with_job_timeout_and_is_retried_only_when_listed(
    queue, source, retry, status
):
    job = queue.enqueue(tasks.add, 1, 2, retry=retry, timeout=3)
    item = source.take("claim-1", 1)
    source.timed_out(item.claim, 2.999963)  # what was left of the deadline
    assert job.status == status and job.attempts == 1
    assert job.exc_info[0] == "rqconc.errors.JobTimeout"
    assert "timeout of 3 s" in job.exc_info[1]  # the job's own timeout


# ---- leases and fences ----


def test_a_worker_that_lost_its_lease_drops_its_result_with_a_warning(queue, make_source, caplog):
    source = make_source(lease_seconds=0)  # the lease is over as soon as it is taken
    job = queue.enqueue(tasks.add, 1, 2)
    item = source.take("claim-1", 1)
    assert source.maintain() == (1, 0)
    with caplog.at_level(logging.WARNING, logger="rqconc.worker"):
        source.perform(item)
    assert "lease was lost" in caplog.text
    assert job.status is JobStatus.QUEUED and job.return_value is None


def test_renew_extends_the_leases_of_running_jobs(queue, make_source, client, keys):
    source = make_source(lease_seconds=1)
    job = queue.enqueue(tasks.add, 1, 2)
    item = source.take("claim-1", 1)
    before = client.zscore(keys.active, job.id)
    source.lease_seconds = 60
    source.renew([item.claim, "unknown"])
    assert client.zscore(keys.active, job.id) > before + 50_000


def test_tick_recovers_expired_leases_at_most_once_per_interval(queue, make_source):
    taker = make_source(lease_seconds=0)
    first, second = make_source(maintenance_interval=30), make_source(maintenance_interval=30)
    jobs = [queue.enqueue(tasks.add, n, 0) for n in range(2)]
    taker.take("claim-1", 1)
    first.tick(info("first"))
    assert jobs[0].status is JobStatus.QUEUED
    taker.take("claim-2", 1)
    second.tick(info("second"))  # within the interval: the gate is closed
    assert jobs[0].status is JobStatus.STARTED


# ---- processes ----


def test_the_source_pickles_without_its_client(queue, source):
    queue.enqueue(tasks.add, 1, 2)
    take_and_run(source)
    copy = pickle.loads(pickle.dumps(source))
    assert not copy.connections.connected and source.connections.connected
    job = queue.enqueue(tasks.add, 2, 2)
    take_and_run(copy)
    assert job.get(timeout=1) == 4


def test_a_forked_child_opens_its_own_client(queue, source):
    take_and_run(source, timeout=0)  # the parent has a connected client now
    job = queue.enqueue(tasks.add, 3, 4)
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            source.child_started(0)
            fresh = not source.connections.connected
            code = 0 if fresh and take_and_run(source) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert job.get(timeout=1) == 7


def test_is_drained_tells_whether_work_waits(queue, source):
    assert source.is_drained()
    queue.enqueue(tasks.add, 1, 2)
    assert not source.is_drained()
    queue.enqueue_in(3600, tasks.add, 1, 2)
    take_and_run(source)
    assert source.is_drained()  # only a job scheduled for later remains


# ---- the worker registry ----


def test_a_supervisor_registers_heartbeats_and_unregisters(redis_url, source, client):
    source.supervisor_started(info("w1", current=()))
    [entry] = list_workers(client)
    assert (entry["name"], entry["state"], entry["backend"]) == ("w1", "started", "threading")
    assert entry["queues"] == ["default"] and entry["pid"] == os.getpid()
    source.tick(info("w1", busy=1, idle=1, current=["job-1"]))
    [entry] = list_workers(client)
    assert (entry["state"], entry["busy"], entry["current_jobs"]) == ("busy", 1, ["job-1"])
    assert entry["birth"] <= entry["last_heartbeat"]
    source.supervisor_stopped(info("w1"))
    assert list_workers(client) == []


def test_a_worker_not_heard_from_within_its_ttl_drops_out(redis_url, client):
    source = RedisSource(redis_url, ["default"], registry_ttl=0.3)
    source.supervisor_started(info("ghost"))
    assert [w["name"] for w in list_workers(client)] == ["ghost"]
    wait_for(lambda: list_workers(client) == [], timeout=3, message="the entry to expire")


def test_perform_with_a_next_claim_returns_the_next_job_taken_in_the_same_step(queue, source):
    first, second = queue.enqueue(tasks.add, 1, 1), queue.enqueue(tasks.add, 2, 2)
    item = source.take("claim-1", 0.1)
    following = source.perform(item, lambda: "claim-2")
    assert following.item_id == second.id and following.claim == "claim-2"
    assert first.get(timeout=1) == 2 and second.status == JobStatus.STARTED
    assert source.perform(following, lambda: "claim-3") is None
    assert second.get(timeout=1) == 4


def test_the_next_claim_is_asked_for_only_after_a_success(queue, source):
    queue.enqueue(tasks.boom)
    queue.enqueue(tasks.add, 1, 1)
    asked = []
    assert source.perform(source.take("claim-1", 0.1), lambda: asked.append(1)) is None
    assert asked == []


def test_pickle_jobs_run_only_on_a_worker_that_opted_in(redis_url, make_source):
    from rqconc.queue.queue import Queue

    queue = Queue("pickled", connection=redis_url, serializer="pickle")
    refused, accepted = queue.enqueue(tasks.add, 1, 2), queue.enqueue(tasks.add, 3, 4)
    take_and_run(make_source(["pickled"]), "claim-1")
    with pytest.raises(JobFailed, match="allow-pickle") as caught:
        refused.get(timeout=1)
    assert caught.value.exc_type == "rqconc.errors.NotAllowed"
    take_and_run(make_source(["pickled"], allow_pickle=True), "claim-2")
    assert accepted.get(timeout=1) == 7


def test_a_timeout_or_lost_child_reported_while_redis_is_away_is_recorded_once_it_is_back(
    queue, redis_versions_server
):
    proxy = TcpProxy(redis_versions_server.port).start()
    try:
        source = RedisSource(proxy.url(), ["default"], allow=ALLOW)
        jobs = [queue.enqueue(tasks.add, n, 0, retry=Retry(max=0)) for n in range(2)]
        items = [source.take(f"claim-{n}", 1) for n in range(2)]
        proxy.drop(60)
        source.timed_out(items[0].claim, 1)  # neither raises: both wait for Redis
        source.lost(items[1].claim, "killed by signal 9")
        assert [j.status for j in jobs] == [JobStatus.STARTED] * 2
        proxy.heal()
        source.tick(info())
        assert [j.status for j in jobs] == [JobStatus.FAILED] * 2
        assert [j.exc_info[0] for j in jobs] == [
            "rqconc.errors.JobTimeout",
            "rqconc.errors.WorkerLost",
        ]
        assert [j.attempts for j in jobs] == [1, 1]
    finally:
        proxy.close()


# ---- the worker's own path raises nothing for a plain job ----


def test_a_plain_job_is_taken_run_and_recorded_without_raising_anything(queue, source):
    """Every job pays for an exception the worker's own code raises and catches: about
    7,000 instructions a raise (callgrind; a missing timeout read with float(None) cost each
    job that much, bench/PROFILE.md section 12). The path of a plain job, the fused step that
    records one job and takes the next included, raises none once its steps are loaded (a
    server without them answers the first call NOSCRIPT: once, not per job)."""
    jobs = [queue.enqueue(tasks.add, 1, i) for i in range(4)]
    raised = []

    def tracer(frame, event, arg):
        if event == "exception" and f"{os.sep}rqconc{os.sep}" in frame.f_code.co_filename:
            raised.append(f"{frame.f_code.co_name}: {arg[0].__name__}")
        return tracer

    second = source.perform(source.take("c1", 1.0), lambda: "c2")  # loads the steps
    sys.settrace(tracer)
    try:
        third = source.perform(second, lambda: "c3")
        fourth = source.perform(third, lambda: "c4")
    finally:
        sys.settrace(None)
    assert [second.item_id, third.item_id, fourth.item_id] == [j.id for j in jobs[1:]]
    assert [j.return_value for j in jobs[:3]] == [1, 2, 3]
    assert raised == []
