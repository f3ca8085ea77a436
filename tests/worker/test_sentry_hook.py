"""docs/hooks.md's Sentry example, run verbatim as the hooks of real workers: with
SENTRY_DSN pointing at a local HTTP server, the failing job's event arrives there; with a
stand-in transport (tests/worker/sentry_standin.py), a timeout is reported from the
supervisor (SPEC 16)."""

import gzip
import json
import re
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rqconc import JobFailed, Queue, Retry
from tests.support.worker_process import ROOT, wait_for


def docs_example() -> str:
    text = (ROOT / "docs" / "hooks.md").read_text()
    return re.search(r"```python\n(# myapp/sentry_hooks\.py.*?)```", text, re.S).group(1)


class FakeSentry(BaseHTTPRequestHandler):
    envelopes: list = []

    def do_POST(self):  # noqa: N802 - the http.server name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        self.envelopes.append((self.path, body.decode("utf-8", "replace")))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_sentry():
    FakeSentry.envelopes = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSentry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_docs_sentry_hook_ships_a_failing_job(
    tmp_path, monkeypatch, redis_server, start_worker, fake_sentry
):
    pytest.importorskip("sentry_sdk")
    (tmp_path / "sentry_hooks.py").write_text(docs_example())
    port = fake_sentry.server_address[1]
    monkeypatch.setenv("SENTRY_DSN", f"http://publickey@127.0.0.1:{port}/42")
    start_worker("forking", 1, redis_server.url, "--hooks", "sentry_hooks", "--path", str(tmp_path))
    job = Queue(connection=redis_server.url).enqueue(
        "tests.worker.jobs:add", 1, "x", retry=Retry(max=0)
    )
    with pytest.raises(JobFailed):
        job.get(timeout=20)
    wait_for(lambda: FakeSentry.envelopes, 15, message="an envelope at the fake Sentry")
    path, envelope = FakeSentry.envelopes[0]
    assert path == "/api/42/envelope/"
    event = json.loads([line for line in envelope.splitlines() if '"exception"' in line][0])
    exception = event["exception"]["values"][-1]
    assert exception["type"] == "TypeError" and "unsupported operand" in exception["value"]
    assert event["tags"]["rqconc.job_id"] == job.id
    assert event["tags"]["rqconc.func"] == "tests.worker.jobs:add"
    assert event["contexts"]["rqconc"]["final"] is True


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_the_docs_sentry_hook_reports_a_timeout_from_the_supervisor(
    backend, tmp_path, monkeypatch, redis_server, start_worker
):
    pytest.importorskip("sentry_sdk")
    # The docs' block verbatim, behind a stand-in transport that writes what it would send.
    hooks = "import tests.worker.sentry_standin  # noqa: F401\n" + docs_example()
    (tmp_path / "sentry_hooks.py").write_text(hooks)
    events = tmp_path / "events.jsonl"
    monkeypatch.setenv("SENTRY_DSN", "http://publickey@sentry.invalid/42")
    monkeypatch.setenv("SENTRY_EVENTS", str(events))
    start_worker(backend, 1, redis_server.url, "--hooks", "sentry_hooks", "--path", str(tmp_path))
    job = Queue(connection=redis_server.url).enqueue(
        "tests.worker.jobs:nap", 30, timeout=1, retry=Retry(max=0)
    )
    with pytest.raises(JobFailed, match="JobTimeout"):
        job.get(timeout=20)
    wait_for(lambda: events.exists() and events.read_text(), 15, message="a Sentry event")
    (event,) = [json.loads(line) for line in events.read_text().splitlines()]
    exception = event["exception"]["values"][-1]
    assert exception["type"] == "JobTimeout" and exception["module"] == "rqconc.errors"
    assert "ran past its timeout of 1 s" in exception["value"]
    assert event["tags"]["rqconc.job_id"] == job.id
    assert event["tags"]["rqconc.func"] == "tests.worker.jobs:nap"
    assert event["contexts"]["rqconc"]["final"] is True
