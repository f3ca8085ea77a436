"""Names stored or installed before the package layout moved keep working (issue 13): a job
hash written by an older rqconc names `rqconc.webhooks` (its webhook function and the
exception its retry policy retries on), now `rqconc.worker.webhooks`; and installs run the
`rqconc` console script through `rqconc.gevent_first:console_main`."""

import configparser
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib import metadata
from pathlib import Path

import pytest
import redis

from rqconc import JobStatus, Queue
from rqconc.store.keys import KeySpace
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
MARK = "tests.worker.lifecycle_jobs:mark"
OLD_MODULE = "rqconc.webhooks"
NEW_MODULE = "rqconc.worker.webhooks"


class Endpoint(BaseHTTPRequestHandler):
    """Answers each POST with the next status of `answers`, then 200."""

    answers: list = []
    received: list = []
    arrivals: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Endpoint.arrivals.append(time.monotonic())
        Endpoint.received.append((self.path, body))
        self.send_response(Endpoint.answers.pop(0) if Endpoint.answers else 200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    Endpoint.answers, Endpoint.received, Endpoint.arrivals = [503], [], []
    server = HTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _store_as_an_old_version(client: redis.Redis, job_key: str) -> None:
    """Rewrite the job's webhook spec with the names an rqconc before the move wrote."""
    specs = client.hget(job_key, "on_success_jobs").decode()
    assert specs.count(NEW_MODULE) == 2, specs  # the function and the retried exception
    old = specs.replace(NEW_MODULE, OLD_MODULE)
    assert f"{OLD_MODULE}:deliver" in old and f"{OLD_MODULE}.WebhookUnavailable" in old
    client.hset(job_key, "on_success_jobs", old)


def test_a_webhook_job_stored_under_the_old_module_name_is_delivered_and_retried(
    redis_server, endpoint, start_worker
):
    url, client = redis_server.url, redis_server.client()
    keys = KeySpace()
    q = Queue(connection=url)
    job = q.enqueue(MARK, url, "x", success_url=f"{endpoint}/hook")
    _store_as_an_old_version(client, keys.job(job.id))

    start_worker("threading", 1, url)
    assert job.get(timeout=15) == "x"
    hook = q.fetch_job(f"{job.id}.success_url.1")
    # The follow-up job's hash holds the old names, as an old version's step created it.
    stored = client.hgetall(keys.job(hook.id))
    assert stored[b"func"] == f"{OLD_MODULE}:deliver".encode()
    assert json.loads(stored[b"retry"])["on"] == [f"{OLD_MODULE}.WebhookUnavailable"]

    # The 503 raises WebhookUnavailable, which the old policy names: retried, then delivered.
    assert hook.get(timeout=30) == 200
    wait_for(lambda: len(Endpoint.received) == 2, timeout=5, message="two POSTs")
    assert [path for path, _ in Endpoint.received] == ["/hook", "/hook"]
    assert all(body["id"] == job.id for _, body in Endpoint.received)
    assert hook.attempts == 2 and hook.status == JobStatus.FINISHED
    # The old policy's first delay: backoff 1 s with jitter, drawn from [0.5, 1] s.
    assert Endpoint.arrivals[1] - Endpoint.arrivals[0] >= 0.5


def test_the_console_script_still_enters_through_gevent_first():
    declared = configparser.ConfigParser()
    declared.read(ROOT / "setup.cfg")
    scripts = declared["options.entry_points"]["console_scripts"]
    assert "rqconc = rqconc.gevent_first:console_main" in scripts.splitlines()
    # distribution().entry_points: entry_points(group=...) needs Python 3.10.
    installed = [
        ep
        for ep in metadata.distribution("rqconc").entry_points
        if ep.group == "console_scripts" and ep.name == "rqconc"
    ]
    assert [ep.value for ep in installed] == ["rqconc.gevent_first:console_main"]
    assert callable(installed[0].load())
