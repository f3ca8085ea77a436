"""The chaos proxy itself: it passes, drops and stalls traffic as told."""

import time

import pytest
import redis

from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for


@pytest.fixture
def proxy(redis_server):
    proxy = TcpProxy(redis_server.port).start()
    yield proxy
    proxy.close()


def _client(proxy):
    return redis.Redis.from_url(proxy.url(), socket_timeout=5, socket_connect_timeout=2)


def test_passes_traffic(proxy):
    client = _client(proxy)
    assert client.set("k", "v") and client.get("k") == b"v"
    assert proxy.connections == 1


def test_drop_closes_connections_and_refuses_new_ones_for_a_while(proxy):
    client = _client(proxy)
    client.ping()
    proxy.drop(1.0)
    with pytest.raises(redis.exceptions.ConnectionError):
        client.ping()  # its connection was closed, and so is the reconnect
    fresh = redis.Redis.from_url(proxy.url(), socket_timeout=1, socket_connect_timeout=1)
    with pytest.raises(redis.exceptions.ConnectionError):
        fresh.ping()
    # Once the drop is over, the same client connects again.
    wait_for(lambda: _pings(client), timeout=5, interval=0.1, message="proxy to pass again")


def test_stall_delays_replies_without_losing_them(proxy):
    client = _client(proxy)
    client.ping()
    proxy.stall(0.8)
    started = time.monotonic()
    assert client.incr("n") == 1  # the reply arrives whole, after the stall
    assert time.monotonic() - started >= 0.7
    short = redis.Redis.from_url(proxy.url(), socket_timeout=0.3)
    short.ping()
    proxy.stall(1.0)
    with pytest.raises(redis.exceptions.TimeoutError):
        short.ping()


def _pings(client):
    try:
        return client.ping()
    except redis.exceptions.ConnectionError:
        return False


def test_cut_replies_runs_each_request_and_cuts_a_share_of_the_replies(proxy, redis_server):
    client = _client(proxy)
    proxy.cut_replies(30, 0.2, seed=7)
    answered = 0
    for _ in range(40):
        try:
            client.incr("n")
            answered += 1
        except redis.exceptions.ConnectionError:
            pass  # the reply was cut: INCR ran all the same
    proxy.heal()
    # Every request ran, answered or not (redis-py resends one whose reply was cut; the
    # handshake of its new connection may be cut too).
    incrs = [request for _, request in proxy.cuts if b"INCR" in request]
    assert incrs and proxy.cut == len(proxy.cuts), proxy.cuts
    assert int(redis_server.client().get("n")) == answered + len(incrs)
    assert client.incr("n") == int(redis_server.client().get("n"))  # healed: nothing cut
