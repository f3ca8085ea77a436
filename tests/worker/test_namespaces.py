"""SPEC section 8, namespaces on one Redis: they stay apart, and one worker may serve several
(`--namespace a,b`), taking from each in turn, while every lease, recovery, shutdown and
suspend stays inside its own namespace. Real workers (`python main.py ...`) on a real Redis."""

import signal

import pytest

from rqconc import Job, JobStatus, Queue, Supervisor
from rqconc.queue import control
from rqconc.store.keys import KeySpace
from rqconc.worker.registry import list_workers
from rqconc.worker.rotation import CHAIN_LIMIT
from rqconc.worker.scheduler import leader
from tests.support.tcp_proxy import TcpProxy
from tests.support.worker_process import wait_for

NAMESPACES = ("a", "b")


def queues(url, name="default"):
    return {ns: Queue(name, connection=url, namespace=ns) for ns in NAMESPACES}


def hold(queue, url, job_id="same"):
    """A job (of the same id in every namespace) that runs until `release:<namespace>`."""
    key = f"release:{queue.keys.namespace}"
    return queue.enqueue("tests.worker.jobs:hold", url, key, job_id=job_id)


def release(server, namespace):
    server.client().rpush(f"release:{namespace}", namespace)


def wait_status(jobs, status, timeout=15):
    wait_for(lambda: all(j.status == status for j in jobs), timeout, message=f"jobs {status.value}")


def executions(server):
    return [v.decode() for v in server.client().lrange("executions", 0, -1)]


def test_two_namespaces_on_one_server_stay_apart(redis_server, start_worker):
    url = redis_server.url
    qs = queues(url)
    jobs = {
        ns: qs[ns].enqueue("tests.worker.jobs:add", 1, len(ns) * 10, job_id="same") for ns in qs
    }
    start_worker("threading", 1, url, "--namespace", "a")
    assert jobs["a"].get(timeout=15) == 11
    assert Job.fetch("same", url, "b").status == JobStatus.QUEUED
    assert qs["b"].job_ids == ["same"] and qs["a"].job_ids == []
    assert [w["queues"] for w in list_workers(redis_server.client(), "a")] == [["default"]]
    assert list_workers(redis_server.client(), "b") == []


@pytest.mark.parametrize("backend", ["forking", "gevent"])
def test_a_worker_of_two_namespaces_runs_jobs_of_both_and_shuts_down_warm(
    backend, redis_server, start_worker
):
    url = redis_server.url
    worker = start_worker(backend, 2, url, "--namespace", "a,b")
    qs = queues(url)
    held = [hold(qs[ns], url, f"job-{ns}") for ns in NAMESPACES]
    wait_status(held, JobStatus.STARTED)
    for ns in NAMESPACES:  # registered in each, listing only that namespace's running job

        def busy(ns=ns):
            return [w for w in list_workers(redis_server.client(), ns) if w["current_jobs"]]

        (entry,) = wait_for(busy, message=f"the worker busy in {ns}")
        assert entry["current_jobs"] == [f"job-{ns}"] and entry["size"] == 2
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
    for ns in NAMESPACES:
        release(redis_server, ns)
    assert worker.wait_exit(15) == 0
    assert [job.return_value for job in held] == list(NAMESPACES)
    # Same queue, same job id: the log lines tell them apart by their namespace.
    started = [line for line in worker.output().splitlines() if "event=started" in line]
    assert sorted(w for line in started for w in line.split() if "namespace=" in w) == [
        "namespace=a",
        "namespace=b",
    ]
    assert [list_workers(redis_server.client(), ns) for ns in NAMESPACES] == [[], []]
    # Every key the worker and its jobs' steps wrote carries one of the two hash tags.
    assert {key.split(b"}")[0] for key in redis_server.client().keys("*")} == {b"{a", b"{b"}


def test_a_cold_shutdown_puts_each_job_back_in_its_own_namespace(redis_server, start_worker):
    url = redis_server.url
    worker = start_worker("forking", 2, url, "--namespace", "a,b")
    qs = queues(url)
    held = [hold(qs[ns], url) for ns in NAMESPACES]
    wait_status(held, JobStatus.STARTED)
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(10) == 1
    assert [job.status for job in held] == [JobStatus.QUEUED] * 2
    assert [job.attempts for job in held] == [0, 0]
    assert [qs[ns].job_ids for ns in NAMESPACES] == [["same"], ["same"]]
    assert [job.args[1] for job in held] == ["release:a", "release:b"]


def test_leases_are_recovered_by_the_workers_of_their_own_namespace(redis_server, start_worker):
    url = redis_server.url
    first = start_worker("threading", 2, url, "--namespace", "a,b", "--lease-seconds", "1")
    qs = queues(url)
    held = [hold(qs[ns], url) for ns in NAMESPACES]
    wait_status(held, JobStatus.STARTED)
    first.signal(signal.SIGKILL)
    first.wait_exit(5)
    release(redis_server, "b")
    start_worker("threading", 1, url, "--namespace", "b", "--lease-seconds", "1")
    wait_status([held[1]], JobStatus.FINISHED, timeout=30)
    assert held[1].lost == 1
    # Nobody serves `a`: its expired lease stays where it is, untouched by b's worker.
    assert held[0].status == JobStatus.STARTED and held[0].lost == 0
    release(redis_server, "a")
    start_worker("threading", 1, url, "--namespace", "a", "--lease-seconds", "1")
    wait_status([held[0]], JobStatus.FINISHED, timeout=30)
    assert held[0].lost == 1 and held[0].return_value == "a"


def test_a_busy_namespace_never_starves_another(redis_server, start_worker):
    url = redis_server.url
    qs = queues(url)
    busy = [qs["a"].enqueue("tests.worker.jobs:record", url, f"a{n}") for n in range(30)]
    quiet = qs["b"].enqueue("tests.worker.jobs:record", url, "b0")
    start_worker("threading", 1, url, "--namespace", "a,b")
    wait_status([*busy, quiet], JobStatus.FINISHED, timeout=30)
    # One child: it takes at most CHAIN_LIMIT jobs of `a` in a row before `b`'s turn.
    assert executions(redis_server).index("b0") <= CHAIN_LIMIT


def test_suspend_stops_only_its_own_namespace(redis_server, start_worker):
    url = redis_server.url
    client = redis_server.client()
    start_worker("threading", 1, url, "--namespace", "a,b")
    control.suspend(url, namespace="a")

    def suspended_seen():
        entries = list_workers(client, "a")
        return entries and entries[0]["state"] == "suspended" and entries[0]["last_heartbeat"]

    seen = wait_for(suspended_seen, message="a suspended in the registry")
    # One heartbeat later (about 1 s), every child has read the flag again (SUSPEND_REFRESH).
    wait_for(lambda: list_workers(client, "a")[0]["last_heartbeat"] > seen, message="heartbeat")
    assert list_workers(client, "b")[0]["state"] != "suspended"
    qs = queues(url)
    waiting = qs["a"].enqueue("tests.worker.jobs:add", 1, 1)
    assert qs["b"].enqueue("tests.worker.jobs:add", 2, 2).get(timeout=15) == 4
    assert waiting.status == JobStatus.QUEUED
    control.resume(url, namespace="a")
    assert waiting.get(timeout=15) == 2


def test_the_supervisor_takes_a_list_or_a_comma_string_of_namespaces(redis_server):
    url = redis_server.url
    for given in (["a", "b"], "a,b"):
        sup = Supervisor("threading", 2, connection=url, namespace=given, allow="tests").start()
        try:
            jobs = [q.enqueue("tests.worker.jobs:add", 1, 2) for q in queues(url).values()]
            assert [job.get(timeout=15) for job in jobs] == [3, 3]
        finally:
            sup.stop()
            assert sup.join(10) == 0
    for bad in ("a,a", "", ["a", ""], "a b"):
        with pytest.raises(ValueError):
            Supervisor("threading", 1, connection=url, namespace=bad)


def test_with_a_child_per_namespace_an_idle_worker_starts_each_namespaces_jobs_at_once(
    redis_server, start_worker
):
    url = redis_server.url
    # Idle children block for 10 s: only a child blocked on b's queue can start b's job soon.
    start_worker("threading", 2, url, "--namespace", "a,b", "--take-wait", "10")
    client = redis_server.client()
    wait_for(lambda: [w["idle"] for w in list_workers(client, "b")] == [2], message="idle")
    qs = queues(url)
    for ns in ("b", "a", "b"):
        assert qs[ns].enqueue("tests.worker.jobs:add", 1, 1).get(timeout=5) == 2


def test_each_namespace_has_its_own_cron_scheduler_lease_and_ticks(redis_server, start_worker):
    url = redis_server.url
    for ns, queue in queues(url).items():
        queue.cron("* * * * * *", "tests.worker.jobs:record", url, f"tick-{ns}", id="every")
    start_worker("threading", 2, url, "--namespace", "a,b", "--name", "w2")
    wait_for(
        lambda: {"tick-a", "tick-b"} <= set(executions(redis_server)),
        timeout=20,
        message="a tick of each namespace's cron",
    )
    client = redis_server.client()
    assert [leader(client, KeySpace(ns))[2] for ns in NAMESPACES] == ["w2", "w2"]


def test_a_cold_shutdown_while_redis_is_away_waits_one_lease_for_all_namespaces(
    redis_server, start_worker
):
    proxy = TcpProxy(redis_server.port).start()
    try:
        worker = start_worker(
            "threading", 2, proxy.url(), "--namespace", "a,b", "--lease-seconds", "3"
        )
        held = [hold(queue, redis_server.url) for queue in queues(redis_server.url).values()]
        wait_status(held, JobStatus.STARTED)
        proxy.drop(120.0)  # unreachable for longer than the test lasts
        worker.signal(signal.SIGTERM)
        wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown")
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit(30) == 1
        lines = worker.output().splitlines()
        waits = [n for n, line in enumerate(lines) if "waiting up to 3 s" in line]
        gave_up = [n for n, line in enumerate(lines) if "Redis stayed unreachable" in line]
        # Both namespaces wait at once (one lease in all), each saying which it is.
        assert len(waits) == len(gave_up) == 2 and max(waits) < min(gave_up), lines[-20:]
        assert {lines[n].split("namespace=")[1].split()[0] for n in waits} == {"a", "b"}
    finally:
        proxy.close()
