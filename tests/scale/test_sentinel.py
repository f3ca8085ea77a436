"""Sentinel URLs and failover handling (SPEC section 8), on a real Sentinel group."""

import asyncio
import signal
import time

import pytest
import redis

from rqconc import ConnectionError, Queue
from rqconc.aio import AsyncQueue
from rqconc.connection.clients import connect, describe, redact
from rqconc.connection.direct import DirectConnection
from rqconc.connection.sentinel import SentinelURL
from tests.cli.test_commands import assert_one_line_error, ok, rqconc
from tests.support.redis_server import RedisServer
from tests.support.sentinel import SentinelDeployment


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://127.0.0.1:26379",  # no service name
        "redis+sentinel://127.0.0.1:26379/",
        "redis+sentinel://127.0.0.1/svc",  # no port
        "redis+sentinel://127.0.0.1:26379/svc/0/extra",
        "redis+sentinel://127.0.0.1:26379/svc/notadb",
        "redis+sentinel://u:s3cret@127.0.0.1:x/svc",
    ],
)
def test_a_malformed_sentinel_url_is_a_value_error_without_the_password(url):
    with pytest.raises(ValueError, match="SERVICE_NAME") as info:
        connect(url)
    assert "s3cret" not in str(info.value)


def test_a_sentinel_url_names_sentinels_service_db_and_the_data_nodes_credentials():
    parsed = SentinelURL("rediss+sentinel://app:p%40ss@h1:26379,[::1]:26380/my-master/3")
    assert parsed.sentinels == [("h1", 26379), ("::1", 26380)]
    assert (parsed.service, parsed.db, parsed.tls) == ("my-master", 3, True)
    options = parsed.data_node_options()
    assert (options["username"], options["password"], options["db"]) == ("app", "p@ss", 3)
    assert redact("redis+sentinel://app:p%40ss@h1:26379/m") == "redis+sentinel://app:***@h1:26379/m"


def test_cli_misuse_of_a_sentinel_url_is_one_line_and_exit_2():
    done = rqconc("info", "--url", "redis+sentinel://:s3cret@127.0.0.1:1")
    assert_one_line_error(done, 2)
    assert "s3cret" not in done.stderr


@pytest.fixture
def deployment(redis_binary):
    """A group of its own: these tests kill its nodes."""
    started = SentinelDeployment(redis_binary).start()
    yield started
    started.close()


def test_clients_find_the_promoted_master_and_direct_connections_follow_it(deployment):
    q = Queue("default", connection=deployment.url)
    job = q.enqueue("tests.worker.jobs:add", 1, 2)
    client = connect(deployment.url)
    direct = DirectConnection(client)
    assert direct.execute("PING") in (b"PONG", "PONG")
    first = deployment.current_master().port
    assert f"master 127.0.0.1:{first}" in describe(client)
    deployment.wait_replica_caught_up()
    old = deployment.kill_master()
    promoted = deployment.wait_promoted(old)
    deadline = promoted + 10  # SPEC: found within 10 s of the promotion
    while True:
        try:
            q.enqueue("tests.worker.jobs:add", 3, 4)
            direct.execute("SET", "direct", "1")
            break
        except (ConnectionError, redis.exceptions.ConnectionError):
            assert time.monotonic() < deadline, "the promoted master was not found in 10 s"
            time.sleep(0.1)
    assert q.fetch_jobs([job.id])[0] is not None  # replicated before the kill: still there
    assert f"master 127.0.0.1:{first}" not in describe(client)
    assert ok("info", "--json", "--url", deployment.url)


def test_client_calls_raise_connection_error_within_15_s_when_no_master_answers(deployment):
    q = Queue("default", connection=deployment.url)
    q.enqueue("tests.worker.jobs:add", 1, 2)
    for node in deployment.data_nodes():
        node.kill()
    started = time.monotonic()
    with pytest.raises(ConnectionError) as info:
        q.enqueue("tests.worker.jobs:add", 1, 2)
    assert time.monotonic() - started < 15
    assert "redis+sentinel://" in str(info.value)
    done = rqconc("info", "--url", deployment.url)
    assert_one_line_error(done, 1)


def test_a_demoted_master_answering_readonly_is_an_outage_not_a_failure(redis_binary):
    """A direct connection still open to a node that became a replica: the write is refused
    (READONLY) and reported as a connection error, so the caller retries on the master."""
    node = RedisServer(redis_binary).start()
    other = RedisServer(redis_binary).start()
    try:
        direct = DirectConnection(connect(node.url))
        direct.execute("SET", "k", "1")
        node.client().replicaof("127.0.0.1", other.port)
        with pytest.raises(redis.exceptions.ConnectionError, match="replica"):
            direct.execute("SET", "k", "2")
        with pytest.raises(redis.exceptions.ConnectionError, match="replica"):
            direct.pipelined(("SET", "k", "3"), ("GET", "k"))
    finally:
        node.close()
        other.close()


def test_a_wedged_master_is_left_for_the_promoted_one_instead_of_hanging(deployment):
    """A master that stops answering but keeps its connections (SIGSTOP: its kernel still
    acknowledges every byte): no call hangs on it, and calls reach the promoted master."""
    q = Queue("default", connection=deployment.url)
    q.enqueue("tests.worker.jobs:add", 1, 2)
    deployment.wait_replica_caught_up()
    wedged = deployment.current_master()
    wedged.process.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        while True:
            call = time.monotonic()
            try:
                q.enqueue("tests.worker.jobs:add", 3, 4)
                break
            except ConnectionError:
                pass
            assert time.monotonic() - call < 15, "a call hung on the wedged master"
            assert time.monotonic() - started < 60
        assert deployment.current_master() is not wedged
    finally:
        wedged.process.send_signal(signal.SIGCONT)


def test_a_password_protected_group_works_through_the_url_and_never_shows_it(
    redis_binary, start_worker
):
    secret = "s3cret/pw"
    group = SentinelDeployment(redis_binary, password=secret).start()
    try:
        worker = start_worker("threading", 1, group.url)
        job = Queue("default", connection=group.url).enqueue("tests.worker.jobs:add", 1, 2)
        assert job.get(timeout=20) == 3
        assert ok("info", "--json", "--url", group.url)
        wrong = group.url.replace("s3cret%2Fpw", "wrong")
        done = rqconc("info", "--url", wrong)
        assert_one_line_error(done, 1)
        quoted = "s3cret%2Fpw"
        for text in (worker.output(), done.stderr, describe(connect(group.url))):
            assert secret not in text and quoted not in text
    finally:
        group.close()


def test_async_enqueues_through_a_sentinel_url_go_as_one_pipeline_in_order(deployment):
    """rqconc/aio/batch.py on Sentinel's client (its pool finds the master)."""

    async def main():
        q = AsyncQueue("aio", deployment.url)
        jobs = await asyncio.gather(*(q.enqueue("tests.worker.jobs:add", i, i) for i in range(200)))
        await q.aclose()
        return [job.id for job in jobs]

    sent = asyncio.run(main())
    assert Queue("aio", connection=deployment.url).job_ids == sent
