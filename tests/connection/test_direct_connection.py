"""The hot steps' own connection (rqconc/direct_connection.py) against a real redis-server:
error replies raise redis-py's exception types and leave the connection in step, and a
server that is still loading its data after a restart is an outage, never a reply."""

import threading

import pytest
import redis

from rqconc.connection.direct import DirectConnection
from tests.conftest import REDIS_BINARIES
from tests.support.redis_server import RedisServer


def test_error_replies_raise_redis_py_types_and_the_connection_stays_in_step(redis_url):
    client = redis.Redis.from_url(redis_url)
    connection = DirectConnection(client)
    with pytest.raises(redis.exceptions.NoScriptError):
        connection.evalsha("0" * 40, 0)
    client.set("a-string", "x")
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        connection.execute("ZADD", "a-string", 1, "m")
    replies = connection.pipelined(("ZADD", "a-string", 1, "m"), ("GET", "a-string"))
    assert isinstance(replies[0], redis.exceptions.ResponseError) and replies[1] == b"x"
    assert connection.execute("PING") == b"PONG"


def test_a_server_loading_its_data_raises_busy_loading_not_a_reply(tmp_path):
    # 7.0 refuses DEBUG unless enabled; 6.2 has no such option and allows it.
    if "redis-system" in REDIS_BINARIES:
        server = RedisServer(
            REDIS_BINARIES["redis-system"], extra_args=("--enable-debug-command", "yes")
        ).start()
    else:
        server = RedisServer(REDIS_BINARIES["redis-6.2"]).start()
    try:
        client = redis.Redis.from_url(server.url, socket_timeout=120)  # a loaded machine
        client.execute_command("DEBUG", "POPULATE", 1_500_000)  # loading it takes a while
        client.save()
        connection = DirectConnection(client)
        assert connection.execute("PING") == b"PONG"
        server.kill()
        restarted = threading.Thread(target=server.start)  # returns once the data is loaded
        restarted.start()
        outcomes = []
        while restarted.is_alive() or not outcomes or outcomes[-1] != b"PONG":
            try:
                outcomes.append(connection.execute("PING"))
            except redis.exceptions.ConnectionError as exc:  # BusyLoadingError is one
                outcomes.append(type(exc))
        restarted.join(30)
        assert redis.exceptions.BusyLoadingError in outcomes, outcomes[-5:]
        # Only replies and raised errors: an error reply never comes back as data.
        assert all(o == b"PONG" or isinstance(o, type) for o in outcomes), outcomes[-5:]
    finally:
        server.close()


def test_a_resp3_client_gets_the_same_replies(redis_url):
    """A client made with protocol=3 hands its handshake to every DirectConnection; the
    take step's reply holds nils for absent fields, which RESP3 encodes differently."""
    connection = DirectConnection(redis.Redis.from_url(redis_url, protocol=3))
    assert connection.execute("EVAL", "return {1, false, 'x', {2, false}}", 0) == [
        1,
        None,
        b"x",
        [2, None],
    ]
    assert connection.execute("HELLO")[b"proto"] == 3
