"""SPEC section 8: `redis+cluster://` and `rediss+cluster://` URLs. What each form means,
what a bad one gets (one line, never the password), and an unreachable cluster: a clear
rqconc.ConnectionError for clients, retries for a worker. (A real cluster: tests/scale/.)"""

import signal
import time

import pytest

from rqconc import ConnectionError as RQConcConnectionError
from rqconc import Queue
from rqconc.connection.clients import connect, redact
from rqconc.connection.cluster import parse_url
from tests.support.redis_server import free_port
from tests.support.waiting import wait_for


@pytest.mark.parametrize(
    "url, seeds, options",
    [
        ("redis+cluster://h1:7000", [("h1", 7000)], {}),
        (
            "redis+cluster://app:s%2Fcret@h1:7000,h2:7001/0",
            [("h1", 7000), ("h2", 7001)],
            {"username": "app", "password": "s/cret"},
        ),
        ("redis+cluster://:pw@[::1]:7000", [("::1", 7000)], {"username": None, "password": "pw"}),
        ("redis+cluster://secret@h1:7000", [("h1", 7000)], {"password": "secret"}),
        (
            "rediss+cluster://h1:7000?ssl_cert_reqs=none",
            [("h1", 7000)],
            {"ssl": True, "ssl_cert_reqs": "none"},
        ),
    ],
)
def test_a_cluster_url_names_its_seed_nodes_and_credentials(url, seeds, options):
    assert parse_url(url) == (seeds, options)


@pytest.mark.parametrize(
    "url, named",
    [
        ("redis+cluster://:hunter2@", "names no node"),
        ("redis+cluster://:hunter2@h1", "is not HOST:PORT"),
        ("redis+cluster://:hunter2@h1:99999", "is not HOST:PORT"),
        ("redis+cluster://:hunter2@h1:7000/3", "only database 0"),
        ("redis+cluster://:hunter2@h1:7000?db=1", "unknown option 'db'"),
        ("redis+cluster://:hunter2@h1:7000?ssl_cert_reqs=none", "unknown option"),
    ],
)
def test_a_bad_cluster_url_is_a_value_error_naming_the_problem_without_the_password(url, named):
    with pytest.raises(ValueError) as raised:
        connect(url)
    message = str(raised.value)
    assert named in message and "hunter2" not in message
    assert redact(url) in message


def test_client_calls_on_an_unreachable_cluster_raise_connection_error_naming_it():
    ports = [free_port(), free_port()]
    url = f"redis+cluster://:hunter2@127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
    started = time.monotonic()
    with pytest.raises(RQConcConnectionError) as raised:
        Queue("default", connection=url).enqueue("tests.worker.jobs:add", 1, 2)
    message = str(raised.value)
    assert f"127.0.0.1:{ports[0]}" in message and "hunter2" not in message
    assert "\n" not in message
    assert time.monotonic() - started < 15


def test_a_worker_started_while_the_cluster_is_unreachable_keeps_retrying(start_worker):
    url = f"redis+cluster://:hunter2@127.0.0.1:{free_port()}"
    worker = start_worker("threading", 1, url)
    wait_for(lambda: "keeps retrying" in worker.output(), timeout=20, message="the outage logged")
    # Still in its loop: a warm shutdown ends it with 0 (a worker that gave up exits 1).
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(15) == 0, worker.output()[-2000:]
    assert "hunter2" not in worker.output() and "Traceback" not in worker.output()
