"""SPEC sections 3, 4 and 7: enqueueing, its options, and what bad input gets."""

import datetime as dt
import importlib
import os
import sys
import threading
import time

import pytest
import redis

from rqconc.connection.direct import DirectConnection
from rqconc.errors import ConnectionError as RQConnectionError
from rqconc.errors import NoSuchJob
from rqconc.queue.job import Job, JobStatus
from rqconc.queue.queue import Priority, Queue
from rqconc.queue.retry import Retry
from rqconc.store.keys import KeySpace
from tests.queue import tasks
from tests.queue.helpers import CountingConnection, counting_client
from tests.support.lua_calls import step_calls
from tests.support.redis_server import free_port


def evalsha_calls(client):
    return step_calls(client)  # FCALL on Redis 7, EVALSHA on 6.2


def test_enqueue_returns_a_job_with_a_string_id_and_the_stored_call(queue):
    job = queue.enqueue(
        tasks.add,
        1,
        b=2,
        priority=Priority.HIGH,
        timeout=30,
        description="adding",
        meta={"who": "me"},
    )
    assert isinstance(job.id, str)
    fetched = Job.fetch(job.id, connection=queue.connection)
    assert fetched.func_name == "tests.queue.tasks:add"
    assert (fetched.args, fetched.kwargs) == ([1], {"b": 2})
    assert (fetched.priority, fetched.timeout, fetched.queue_name) == (2, 30, "default")
    assert (fetched.description, fetched.meta) == ("adding", {"who": "me"})
    assert fetched.status is JobStatus.QUEUED and fetched.status == "queued"
    assert fetched.attempts == 0 and fetched.return_value is None


def test_defaults_are_priority_1_timeout_180_result_ttl_500(queue):
    job = Job.fetch(queue.enqueue(tasks.add, 1, 2).id, connection=queue.connection)
    assert (job.priority, job.timeout, job.result_ttl, job.retry) == (1, 180, 500, None)


def test_a_job_stores_only_fields_that_differ_from_their_defaults(queue):
    job = queue.enqueue(tasks.add, 1, 2)
    stored = {k.decode() for k in queue.connection.hgetall(job.key)}
    # `lean`: it has none of the fields of callbacks, flows, groups and unique jobs, so the
    # hot steps skip reading them (scripts.LEAN_SPOILERS)
    assert stored == {"queue", "func", "args", "created_at", "enqueued_at", "status", "lean"}
    fetched = Job.fetch(job.id, connection=queue.connection)
    for seen in (job, fetched):  # the returned job and a fetched one read the same defaults
        assert (seen.kwargs, seen.meta, seen.depends_on, seen.serializer) == ({}, {}, [], "json")
        assert (seen.failure_ttl, seen.description) == (
            365 * 24 * 3600,
            "tests.queue.tasks:add(1, 2)",
        )
    assert fetched.attempts == fetched.lost == 0
    assert job.created_at == fetched.created_at


def test_a_job_depending_on_a_running_parent_is_deferred_with_its_options(queue):
    parent = queue.enqueue(tasks.add, 1, 2)
    job = queue.enqueue(
        tasks.add,
        1,
        2,
        depends_on=parent,
        on_success=tasks.echo,
        on_failure="tests.queue.tasks:boom",
        success_url="http://x/ok",
        failure_url="http://x/ko",
        retry=Retry(max=2, on=[ValueError]),
    )
    job.refresh()
    assert job.depends_on == [parent.id]
    assert job.status == "deferred"
    assert job.retry == Retry(max=2, on=[ValueError])
    assert queue.job_ids == [parent.id]


def test_callbacks_must_be_importable_and_webhooks_http_urls(queue):
    with pytest.raises(ValueError, match="lambda"):
        queue.enqueue(tasks.add, 1, 2, on_success=lambda job, result: None)
    with pytest.raises(ValueError, match="http"):
        queue.enqueue(tasks.add, 1, 2, failure_url="ftp://x/ko")
    assert queue.count == 0


def test_a_classmethod_and_a_string_reference_are_accepted(queue):
    assert queue.enqueue(tasks.Task.run, 2).func_name == "tests.queue.tasks:Task.run"
    assert queue.enqueue("tests.queue.tasks:add", 1, 2).func_name == "tests.queue.tasks:add"


def test_fetching_an_unknown_job_raises_no_such_job(queue):
    with pytest.raises(NoSuchJob):
        Job.fetch("nope", connection=queue.connection)


def test_enqueue_many_is_one_round_trip_and_returns_jobs_in_order(redis_url, monkeypatch):
    client = counting_client(redis_url)
    queue = Queue("batch", connection=client)
    queue.enqueue(tasks.add, 0, 0)  # the script is loaded once per server
    calls = [(tasks.add, (n, 1)) for n in range(100)] + [(tasks.echo, (1,), {"k": "v"})]
    writes = []  # enqueue writes to its own connections (direct_connection.py), not the pool's
    send = DirectConnection._send
    monkeypatch.setattr(
        DirectConnection,
        "_send",
        lambda self, packed: (writes.append(packed), send(self, packed))[1],
    )
    before_evalsha, before_sent = evalsha_calls(client), CountingConnection.sent
    jobs = queue.enqueue_many(calls, priority=5)
    assert len(writes) == 1 and CountingConnection.sent == before_sent
    assert evalsha_calls(client) - before_evalsha == 1
    assert [j.args for j in jobs[:3]] == [[0, 1], [1, 1], [2, 1]]
    assert jobs[-1].kwargs == {"k": "v"}
    assert queue.job_ids[:-1] == [j.id for j in jobs]  # the warm-up job has priority 1
    assert all(Job.fetch(j.id, connection=client).priority == 5 for j in jobs[:3])


def test_a_batch_names_each_function_its_jobs_give_and_gives_each_job_its_own_id(queue, client):
    # A batch names a function given again once (JobFields.own_many): each change of
    # function is named and checked again, by object and by text, and nothing is written
    # when any of them is refused.
    calls = [(tasks.add, (1, 2))] * 3 + [("tests.queue.tasks:echo", (3,))] * 2
    jobs = queue.enqueue_many(calls + [(tasks.add, (4, 4))])
    stored = [Job.fetch(j.id, connection=client) for j in jobs]
    assert [j.func_name for j in stored] == ["tests.queue.tasks:add"] * 3 + [
        "tests.queue.tasks:echo"
    ] * 2 + ["tests.queue.tasks:add"]
    assert [j.args for j in stored] == [[1, 2]] * 3 + [[3]] * 2 + [[4, 4]]
    ids = [j.id for j in jobs]
    assert len(set(ids)) == 6 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    before = queue.count
    with pytest.raises(ValueError, match="nope"):
        queue.enqueue_many(calls + [("tests.queue.tasks:nope", ())])
    assert queue.count == before


def test_enqueue_at_and_enqueue_in_schedule_the_job(queue, client, keys):
    naive = dt.datetime.utcnow() + dt.timedelta(seconds=100)  # naive means UTC
    at = queue.enqueue_at(naive, tasks.add, 1, 2)
    in_seconds = queue.enqueue_in(100.0, tasks.add, 1, 2)
    in_delta = queue.enqueue_in(dt.timedelta(seconds=100), tasks.add, 1, 2)
    stamp = queue.enqueue_at(time.time() + 100, tasks.add, 1, 2)
    for job in (at, in_seconds, in_delta, stamp):
        assert job.status is JobStatus.SCHEDULED
        due = client.zscore(keys.scheduled("default"), job.id) / 1000
        assert abs(due - (time.time() + 100)) < 5
    assert len(queue) == 0


def test_a_scheduled_job_runs_when_due(queue, source):
    job = queue.enqueue_in(0.3, tasks.add, 1, 2)
    start = time.monotonic()
    item = None
    while item is None and time.monotonic() - start < 3:
        item = source.take("claim", 0.25)
    assert item is not None and item.item_id == job.id
    assert 0.25 <= time.monotonic() - start < 1.3
    source.perform(item)
    assert job.get(timeout=1) == 3


def test_a_non_json_argument_raises_type_error_naming_it_and_writes_nothing(queue, client):
    culprit = tasks.Opaque()
    with pytest.raises(TypeError, match=r"Opaque object at .* of type Opaque"):
        queue.enqueue(tasks.echo, 1, culprit)
    with pytest.raises(TypeError, match="Opaque"):
        queue.enqueue(tasks.echo, x={"nested": [culprit]})
    with pytest.raises(TypeError, match="Opaque"):
        queue.enqueue_many([(tasks.add, (1, 2)), (tasks.echo, (culprit,))])
    assert client.dbsize() == 0


@pytest.mark.parametrize("func", [lambda: None, "nested"], ids=["lambda", "nested"])
def test_a_lambda_or_nested_function_raises_value_error(queue, client, func):
    def nested():
        return None

    with pytest.raises(ValueError, match="lambdas and nested functions"):
        queue.enqueue(nested if func == "nested" else func)
    assert client.dbsize() == 0


def test_a_bound_method_or_a_callable_object_raises_value_error(queue):
    with pytest.raises(ValueError):
        queue.enqueue(object().__str__)
    with pytest.raises(ValueError, match="module:qualname"):
        queue.enqueue("no_colon_here")


@pytest.mark.parametrize("priority", [-1, 101, 1.5, True, "high", None])
def test_a_bad_priority_raises_value_error(queue, client, priority):
    with pytest.raises(ValueError, match="priority"):
        queue.enqueue(tasks.add, 1, 2, priority=priority)
    assert client.dbsize() == 0


@pytest.mark.parametrize(
    "option,value",
    [
        ("timeout", 0),
        ("timeout", "x"),
        ("result_ttl", -2),
        ("failure_ttl", 0),
        ("retry", 3),
        ("meta", [1]),
    ],
)
def test_other_bad_options_raise_value_error(queue, option, value):
    with pytest.raises(ValueError, match=option):
        queue.enqueue(tasks.add, 1, 2, **{option: value})


def test_pickle_is_an_explicit_per_queue_opt_in(redis_url, make_source):
    queue = Queue("pickled", connection=redis_url, serializer="pickle")
    job = queue.enqueue(tasks.echo, {1, 2}, when=dt.date(2024, 1, 2))
    source = make_source(["pickled"], allow_pickle=True)
    source.perform(source.take("claim", 1))
    assert job.get(timeout=1) == {"args": [{1, 2}], "kwargs": {"when": dt.date(2024, 1, 2)}}
    with pytest.raises(ValueError, match="serializer"):
        Queue("x", serializer="yaml")


def test_empty_deletes_waiting_jobs(queue, client, keys):
    jobs = queue.enqueue_many([(tasks.add, (n, 1)) for n in range(5)])
    assert queue.count == len(queue) == 5
    assert queue.empty() == 5
    assert len(queue) == 0 and not client.exists(*[keys.job(j.id) for j in jobs])


def test_client_calls_on_unreachable_redis_raise_rqconc_connection_error():
    url = f"redis://:secret@127.0.0.1:{free_port()}/0"
    queue = Queue("default", connection=url)
    with pytest.raises(RQConnectionError) as caught:
        queue.enqueue(tasks.add, 1, 2)
    assert "127.0.0.1" in str(caught.value) and "secret" not in str(caught.value)
    with pytest.raises(RQConnectionError):
        len(queue)
    with pytest.raises(RQConnectionError):
        Job.fetch("x", connection=url)


def test_every_key_shares_the_namespace_hash_tag(queue, client):
    queue.enqueue(tasks.add, 1, 2)
    names = [k.decode() for k in client.keys("*")]
    assert names and all(n.startswith("{rqconc}:") for n in names)
    other = Queue("default", connection=client, namespace="other")
    other.enqueue(tasks.add, 1, 2)
    assert client.exists(KeySpace("other").queue("default"))


@pytest.mark.timeout(30)
def test_takes_just_before_a_scheduled_job_is_due_never_block_forever(queue, source):
    # The take blocks until the earliest due time; a wait of ~1 ms used to truncate to
    # Redis's "block forever". Many near-due takes cross that window.
    for n in range(40):
        job = queue.enqueue_in(0.003 + n * 0.0005, tasks.add, n, 0)
        item = None
        began = time.monotonic()
        while item is None:
            assert time.monotonic() - began < 2, "take hung near the due time"
            item = source.take(f"claim-{n}", 0.25)
        assert item.item_id == job.id
        source.perform(item)


# ---- enqueue on its own connections (pooled_connection.py) ----


def test_threads_enqueueing_at_once_share_a_few_connections_and_lose_nothing(redis_url):
    # Named, so that its connections can be told from other tests' on the shared server.
    client = redis.Redis.from_url(redis_url, client_name="producer-threads")
    queue = Queue("threads", connection=client)
    ids, errors_seen = [], []

    def produce(n):
        try:
            ids.extend(queue.enqueue(tasks.add, n, i).id for i in range(100))
        except Exception as exc:  # pragma: no cover - reported below
            errors_seen.append(exc)

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors_seen == []
    assert len(set(ids)) == 800 and set(queue.job_ids) == set(ids)
    # One connection per thread at most (plus the test's own), never one per call.
    mine = [c for c in client.client_list() if c["name"] == "producer-threads"]
    assert 1 <= len(mine) <= 8 + 1


def test_a_forked_process_enqueues_on_connections_of_its_own(redis_url):
    queue = Queue("forked", connection=redis.Redis.from_url(redis_url))
    first = queue.enqueue(tasks.add, 1, 1)  # the parent now holds an idle connection
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 only if its enqueue went through
        try:
            queue.enqueue(tasks.add, 2, 2, job_id="from-child")
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    last = queue.enqueue(tasks.add, 3, 3)  # the parent's connection still in step
    assert queue.job_ids == [first.id, "from-child", last.id]


def test_a_pool_at_its_max_connections_still_enqueues_through_the_client(redis_url):
    client = redis.Redis(
        connection_pool=redis.ConnectionPool.from_url(redis_url, max_connections=1)
    )
    client.ping()  # the pool's only connection exists now
    job = Queue("capped", connection=client).enqueue(tasks.add, 1, 2)
    assert Queue("capped", connection=client).job_ids == [job.id]


def test_rqs_job_timeout_is_refused_at_enqueue_with_rqconcs_name(queue):
    # Passed on, it would reach the function and fail only in the worker (issue 32, item 5).
    for enqueue in (queue.enqueue, lambda *a, **k: queue.enqueue_in(5, *a, **k)):
        with pytest.raises(TypeError, match=r"job_timeout= is RQ's name: .*timeout="):
            enqueue(tasks.add, 1, 2, job_timeout=30)
    assert queue.count == 0
    # A function that really takes job_timeout still gets it through enqueue_call.
    job = queue.enqueue_call(tasks.add, (1,), {"job_timeout": 2})
    assert job.kwargs == {"job_timeout": 2}


def test_a_function_the_module_here_does_not_define_is_refused_at_enqueue(
    queue, client, tmp_path, monkeypatch
):
    """Issue 32, item 6: the producer can import the module, so a missing function is said
    here, not by a worker later; a module this process cannot import is accepted as named."""
    for name in (
        "tests.queue.tasks:nosuch",
        "tests.queue.tasks.nosuch",
        "tests.queue.tasks:Task.x",
    ):
        with pytest.raises(ValueError, match=r"module tests\.queue\.tasks has no '"):
            queue.enqueue(name)
    with pytest.raises(ValueError, match="has no 'nosuch'"):
        queue.enqueue(tasks.add, 1, 1, on_success="tests.queue.tasks:nosuch")
    # A module nothing here imported yet is imported to be looked into.
    (tmp_path / "producer_side_app.py").write_text("def send():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="module producer_side_app has no 'sned'"):
        queue.enqueue("producer_side_app:sned")
    assert client.keys("*job:*") == []
    queue.enqueue("producer_side_app:send")
    queue.enqueue("tests.queue.tasks:Task.run", 1)
    queue.enqueue("workers_only.tasks:send")  # not importable here: the worker's business
    queue.enqueue("workers_only.tasks.send")
    assert queue.count == 4


def test_a_name_whose_module_another_thread_is_importing_is_accepted_once_imported(queue):
    # 20 producers naming one module at once: sys.modules holds it half made while the first
    # import runs, and enqueue refused its function as missing (a CI run of the unique-key
    # test with concurrent producers).
    name = "tests.queue.slow_import_tasks"
    sys.modules.pop(name, None)
    importer = threading.Thread(target=importlib.import_module, args=(name,))
    importer.start()
    deadline = time.monotonic() + 5
    while name not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.001)  # until the other thread's import has begun
    assert name in sys.modules and not hasattr(sys.modules[name], "ready")
    job = queue.enqueue(f"{name}:ready")
    importer.join()
    assert job.func_name == f"{name}:ready"
