"""Connections (SPEC sections 4, 6, 7): precedence, credentials, TLS, clear errors."""

from __future__ import annotations

import builtins
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import redis

from rqconc import errors
from rqconc.connection import clients as connection
from rqconc.connection import embedded
from rqconc.connection.backoff import backoff_delays
from rqconc.connection.clients import connect, describe, redact, translated_errors
from tests.support.redis_server import RedisServer, free_port, system_redis_binary

PASSWORD = "s3cret-Pa55"


def served_port(client: redis.Redis) -> int:
    """The TCP port of the server this client really talks to (asked from the server)."""
    return int(client.info("server")["tcp_port"])


def failure_of(client: redis.Redis) -> errors.ConnectionError:
    with pytest.raises(errors.ConnectionError) as caught, translated_errors(client):
        client.ping()
    return caught.value


@pytest.fixture
def two_servers(redis_binary):
    first, second = RedisServer(redis_binary).start(), RedisServer(redis_binary).start()
    yield first, second
    first.close()
    second.close()


@pytest.fixture
def password_server(redis_binary):
    server = RedisServer(redis_binary, password=PASSWORD).start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    if not shutil.which("openssl") or not system_redis_binary():
        pytest.skip("needs openssl and a system redis-server")
    where = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(where / "key.pem"),
            "-out",
            str(where / "cert.pem"),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return where


# --- precedence: explicit > REDIS_URL > embedded ---------------------------------------------


def test_explicit_url_beats_redis_url(two_servers, monkeypatch):
    explicit, from_env = two_servers
    monkeypatch.setenv("REDIS_URL", from_env.url)

    assert served_port(connect(explicit.url)) == explicit.port


def test_explicit_client_is_used_as_it_is(two_servers, monkeypatch):
    explicit, from_env = two_servers
    monkeypatch.setenv("REDIS_URL", from_env.url)
    client = explicit.client()

    assert connect(client) is client


def test_redis_url_beats_the_embedded_server(two_servers, monkeypatch):
    _, from_env = two_servers
    monkeypatch.setenv("REDIS_URL", from_env.url)

    assert served_port(connect()) == from_env.port
    assert connection.resolve_url() == from_env.url
    assert not embedded.paths().socket.exists()  # the embedded server was never started


@pytest.mark.usefixtures("embedded_home")
def test_without_url_the_embedded_server_is_used(monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)

    client = connect()

    assert client.ping()
    assert describe(client) == f"unix://{embedded.paths().socket}"
    assert embedded.status()["running"] is True


# --- credentials ------------------------------------------------------------------------------


def test_password_in_the_url_works(password_server):
    client = connect(password_server.url)

    with translated_errors(client):
        assert client.ping()
    assert PASSWORD not in describe(client)


def test_wrong_password_is_a_clear_error_without_the_password(password_server):
    wrong = "not-the-" + PASSWORD
    client = connect(f"redis://:{wrong}@127.0.0.1:{password_server.port}/0")

    error = failure_of(client)

    assert f"127.0.0.1:{password_server.port}" in str(error)
    assert "credentials" in str(error)
    assert wrong not in str(error) and PASSWORD not in str(error)


def test_missing_password_is_a_clear_error(password_server):
    error = failure_of(connect(f"redis://127.0.0.1:{password_server.port}/0"))

    assert f"127.0.0.1:{password_server.port}" in str(error)
    assert "requires a password" in str(error)


def test_acl_user_and_password_in_the_url_work(redis_binary):
    acl = ("--user", "alice", "on", f">{PASSWORD}", "~*", "&*", "+@all")
    server = RedisServer(redis_binary, extra_args=acl).start()
    try:
        client = connect(f"redis://alice:{PASSWORD}@127.0.0.1:{server.port}/0")
        assert client.acl_whoami() in ("alice", b"alice")
        assert describe(client) == f"redis://alice@127.0.0.1:{server.port}/0"

        error = failure_of(connect(f"redis://alice:wrong-{PASSWORD}@127.0.0.1:{server.port}/0"))
        assert "alice@127.0.0.1" in str(error) and PASSWORD not in str(error)
    finally:
        server.close()


def test_unix_socket_url_with_password_works(redis_binary, tmp_path):
    socket_path = tmp_path / "r.sock"
    server = RedisServer(
        redis_binary, password=PASSWORD, extra_args=("--unixsocket", str(socket_path))
    ).start()
    try:
        client = connect(f"unix://:{PASSWORD}@{socket_path}?db=3")
        assert client.ping()
        assert describe(client) == f"unix://{socket_path}?db=3"
    finally:
        server.close()


def test_tls_url_with_password_works(tls_files):
    tls_port = free_port()
    server = RedisServer(
        system_redis_binary(),
        password=PASSWORD,
        extra_args=(
            "--tls-port",
            str(tls_port),
            "--tls-cert-file",
            str(tls_files / "cert.pem"),
            "--tls-key-file",
            str(tls_files / "key.pem"),
            "--tls-ca-cert-file",
            str(tls_files / "cert.pem"),
            "--tls-auth-clients",
            "no",
        ),
    )
    try:
        server.start()
    except RuntimeError:
        pytest.skip("this redis-server was built without TLS")
    try:
        ca = quote(str(tls_files / "cert.pem"))
        client = connect(f"rediss://:{PASSWORD}@127.0.0.1:{tls_port}/0?ssl_ca_certs={ca}")
        assert client.ping()
        assert describe(client) == f"rediss://127.0.0.1:{tls_port}/0"
    finally:
        server.close()


# --- unreachable and dead servers -------------------------------------------------------------


def test_unreachable_url_is_a_clear_connection_error_without_the_password():
    port = free_port()  # nothing listens there
    client = connect(f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    started = time.monotonic()

    error = failure_of(client)

    assert time.monotonic() - started < 3.0
    assert isinstance(error, builtins.ConnectionError)
    assert f"127.0.0.1:{port}" in str(error)
    assert PASSWORD not in str(error)


def test_a_dead_server_is_a_clear_connection_error(password_server):
    client = connect(password_server.url)
    assert client.ping()

    password_server.kill()

    error = failure_of(client)
    assert f"127.0.0.1:{password_server.port}" in str(error) and PASSWORD not in str(error)


def test_a_client_rides_over_a_server_restart(password_server):
    client = connect(password_server.url)
    assert client.ping()

    password_server.restart()

    with translated_errors(client):
        assert client.ping()  # its pooled connection died; it reconnected by itself


def test_client_options_keep_blocking_commands_working(redis_server):
    client = connect(redis_server.url)
    options = client.connection_pool.connection_kwargs

    assert options["socket_timeout"] is None  # a read timeout would cut long blocking calls
    assert 0 < options["socket_connect_timeout"] <= 5
    assert options["health_check_interval"] > 0
    assert options["socket_keepalive"] is True
    assert client.bzpopmin("nothing-here", timeout=0.2) is None


def test_url_options_override_the_defaults(redis_server):
    client = connect(redis_server.url + "?health_check_interval=3")

    assert client.connection_pool.connection_kwargs["health_check_interval"] == 3


# --- bad input --------------------------------------------------------------------------------


def test_a_url_with_an_unknown_scheme_is_refused_without_its_password():
    with pytest.raises(ValueError, match="redis://") as caught:
        connect(f"http://:{PASSWORD}@example.com/0")

    assert PASSWORD not in str(caught.value)


def test_a_connection_of_the_wrong_type_is_refused():
    with pytest.raises(TypeError, match="redis.Redis"):
        connect(6379)


# --- redaction and backoff --------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, shown",
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://:pw@host:1/0", "redis://:***@host:1/0"),
        ("redis://alice:pw@host/2?x=1", "redis://alice:***@host/2?x=1"),
        ("rediss://alice:p%40w@[::1]:6380/0", "rediss://alice:***@[::1]:6380/0"),
        ("redis://alice:p@w@host:1", "redis://alice:***@host:1"),
        ("redis://pw@host", "redis://***@host"),
        ("redis://:p/w@host:1/0", "redis://***@host:1/0"),
        ("unix://:pw@/run/redis.sock?db=1", "unix://:***@/run/redis.sock?db=1"),
        ("unix:///run/redis.sock?db=1&password=pw", "unix:///run/redis.sock?db=1&password=***"),
        ("unix:///run/a@b/redis.sock", "unix:///run/a@b/redis.sock"),
        ("redis://[::1", "redis://[::1"),
    ],
)
def test_redact_hides_every_password(url, shown):
    assert redact(url) == shown


def test_backoff_delays_grow_exponentially_with_jitter_up_to_30_seconds():
    delays = backoff_delays()
    first = [next(delays) for _ in range(20)]

    for attempt, delay in enumerate(first):
        ceiling = min(30.0, 0.5 * 2**attempt)
        assert ceiling / 2 <= delay <= ceiling
    assert max(first) <= 30.0 and min(first[-5:]) >= 15.0
    again = backoff_delays()
    assert [next(again) for _ in range(20)] != first  # jittered, not in lockstep


def test_backoff_delays_respect_a_smaller_cap():
    delays = backoff_delays(cap=2.0)

    assert all(next(delays) <= 2.0 for _ in range(50))


def test_connection_module_is_importable_without_side_effects():
    # Building a client sends nothing and starts nothing (safe before a fork).
    client = connect(f"redis://127.0.0.1:{free_port()}/0")

    assert describe(client).startswith("redis://127.0.0.1:")
    assert not Path(embedded.paths().socket).exists()


def test_describe_hides_a_lone_name_that_may_be_a_password():
    client = connect("redis://maybe-a-password@127.0.0.1:1/0")

    assert describe(client) == "redis://127.0.0.1:1/0"
