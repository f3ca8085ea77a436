"""Passwords holding "/", "?" or "#" (base64 secrets do) never show (issue 14 item 15): not in
exception text, CLI errors or worker logs; percent-encoded, they work."""

import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from rqconc import Queue
from rqconc.connection.clients import connect
from tests.support.redis_server import RedisServer

PASSWORDS = ["Zx9/Qw7?Kp3#Lm5", "123/secretpart", "456?secretpart", "789#secretpart", "a+b/c="]
RQCONC = str(Path(sys.executable).with_name("rqconc"))


def _pieces(password):
    """Every run of 3 or more characters of the password between its separators."""
    parts = password.replace("?", "/").replace("#", "/").replace("=", "/").split("/")
    return [p for p in parts if len(p) >= 3]


def _assert_hidden(password, text):
    leaked = [piece for piece in _pieces(password) if piece in text]
    assert not leaked, f"password pieces {leaked} shown in: {text[-2000:]}"


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_raw_password_is_refused_without_showing_any_of_it(password):
    for url in (f"redis://:{password}@127.0.0.1:1/0", f"redis://user:{password}@host:1/0"):
        with pytest.raises(ValueError, match="percent-encoded") as caught:
            connect(url)
        _assert_hidden(password, str(caught.value))
        _assert_hidden(password, repr(caught.value))


@pytest.mark.parametrize("backend", ["threading", "forking"])
def test_a_percent_encoded_password_works_for_producer_and_worker(
    backend, redis_binary, start_worker
):
    password = PASSWORDS[0]
    server = RedisServer(redis_binary, password=password).start()
    try:
        url = server.url  # percent-encoded
        assert quote(password, safe="") in url
        worker = start_worker(backend, 1, url)
        assert Queue(connection=url).enqueue("tests.worker.jobs:add", 1, 2).get(20) == 3
        _assert_hidden(password, worker.output())
    finally:
        server.close()


@pytest.mark.parametrize("password", PASSWORDS[:2])
def test_the_cli_and_a_worker_never_show_a_raw_password(password, start_worker):
    url = f"redis://:{password}@127.0.0.1:1/0"
    cli = subprocess.run([RQCONC, "ping", "--url", url], capture_output=True, text=True, timeout=60)
    assert cli.returncode != 0
    _assert_hidden(password, cli.stdout + cli.stderr)
    worker = start_worker("threading", 1, url)
    assert worker.process.wait(60) != 0
    _assert_hidden(password, worker.output())
    assert "percent-encoded" in worker.output()
