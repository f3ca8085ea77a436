"""SPEC 16, ASGI apps: docs/fastapi.md's app, run as written under a real uvicorn (a
subprocess on a free port) with a real worker and a real Redis, called over HTTP: a signup
is enqueued through the lifespan's AsyncQueue and answered with the job id, and the result
endpoint awaits the job's result (or its failure, or says it still waits). One uvicorn
start: on a loaded 2-core machine importing FastAPI takes seconds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.support.redis_server import free_port
from tests.support.worker_process import ROOT, wait_for

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


def docs_block(name: str) -> str:
    text = (ROOT / "docs" / "fastapi.md").read_text()
    return re.search(rf"```python\n(# myapp/{name}\.py.*?)```", text, re.S).group(1)


def call(url: str, body: object = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


@pytest.fixture
def app_dir(tmp_path):
    package = tmp_path / "myapp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tasks.py").write_text(docs_block("tasks"))
    (package / "api.py").write_text(docs_block("api"))
    return tmp_path


@pytest.fixture
def served(app_dir, redis_server):
    port = free_port()
    env = {**os.environ, "REDIS_URL": redis_server.url, "PYTHONPATH": str(app_dir)}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "myapp.api:app", "--port", str(port)],
        cwd=app_dir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"

    def up():
        assert server.poll() is None, server.stderr.read().decode()
        try:
            urllib.request.urlopen(f"{base}/openapi.json", timeout=5).close()
            return True
        except (urllib.error.URLError, ConnectionError):
            return False

    try:
        wait_for(up, 30, message="uvicorn serving the docs' app")
        yield base
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_the_docs_fastapi_app_enqueues_and_awaits_results_under_uvicorn(
    served, app_dir, redis_server, start_worker
):
    enqueued = call(f"{served}/signups", {"email": "ada@example.org"})
    assert set(enqueued) == {"job_id"}
    result = f"{served}/jobs/{enqueued['job_id']}"
    # No worker yet: the job waits, and the endpoint answers once `wait` has passed.
    assert call(f"{result}?wait=0.2") == {"status": "queued"}

    start_worker(
        "forking", 1, redis_server.url, "-q", "emails", "--allow", "myapp", "--path", str(app_dir)
    )
    answer = call(f"{result}?wait=20")
    assert answer == {"status": "finished", "result": "welcome mail sent to ada@example.org"}

    failing = call(f"{served}/signups", {"email": "nobody"})["job_id"]
    answer = call(f"{served}/jobs/{failing}?wait=20")
    assert answer == {"status": "failed", "error": "ValueError: not an address: 'nobody'"}

    with pytest.raises(urllib.error.HTTPError, match="404"):
        call(f"{served}/jobs/no-such-job")
