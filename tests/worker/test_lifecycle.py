"""SPEC section 3, lifecycle, through real `python main.py` workers on real Redis:
dependencies, callbacks, webhooks, flows under SIGKILL, cancel in every backend, events."""

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rqconc import Dependency, EventStream, JobFailed, JobStatus, Queue, Retry
from rqconc.connection.clients import connect
from tests.support.redis_server import free_port
from tests.support.worker_process import BACKENDS, wait_for
from tests.worker import lifecycle_jobs

JOBS = "tests.worker.lifecycle_jobs"


def listed(client, key):
    return [v.decode() for v in client.lrange(key, 0, -1)]


def lines_with(output: str, *parts: str) -> list:
    return [line for line in output.splitlines() if all(p in line for p in parts)]


def test_a_diamond_of_dependencies_runs_in_order(redis_server, start_worker):
    url, client = redis_server.url, redis_server.client()
    q = Queue(connection=url)
    a = q.enqueue(f"{JOBS}:mark", url, "a", 0.3)
    b = q.enqueue(f"{JOBS}:mark", url, "b", depends_on=a)
    c = q.enqueue(f"{JOBS}:mark", url, "c", 0.1, depends_on=a)
    d = q.enqueue(f"{JOBS}:mark", url, "d", depends_on=[b, c])
    start_worker("threading", 4, url)
    assert d.get(timeout=15) == "d"
    order = listed(client, "order")
    assert order[0] == "a" and order[-1] == "d" and sorted(order[1:3]) == ["b", "c"]


def test_a_failing_parent_cancels_its_children_unless_they_allow_failure(
    redis_server, start_worker
):
    url, client = redis_server.url, redis_server.client()
    q = Queue(connection=url)
    parent = q.enqueue(f"{JOBS}:broken", url)
    child = q.enqueue(f"{JOBS}:mark", url, "child", depends_on=parent)
    grandchild = q.enqueue(f"{JOBS}:mark", url, "grandchild", depends_on=child)
    cleanup = q.enqueue(
        f"{JOBS}:mark", url, "cleanup", depends_on=Dependency(parent, allow_failure=True)
    )
    start_worker("threading", 2, url)
    assert cleanup.get(timeout=15) == "cleanup"
    for job in (child, grandchild):
        with pytest.raises(JobFailed, match="JobCanceled"):
            job.get(timeout=5)
    assert listed(client, "order") == ["broken", "cleanup"]


def test_callbacks_run_after_the_job_with_its_result_or_error(redis_server, start_worker):
    url, client = redis_server.url, redis_server.client()
    q = Queue(connection=url)
    good = q.enqueue(
        f"{JOBS}:mark",
        url,
        "good",
        on_success=f"{JOBS}:on_success",
        on_failure=f"{JOBS}:on_failure",
    )
    bad = q.enqueue(
        f"{JOBS}:broken", url, on_success=f"{JOBS}:on_success", on_failure=f"{JOBS}:on_failure"
    )
    start_worker("forking", 2, url)
    wait_for(lambda: len(listed(client, "callbacks")) == 2, timeout=15, message="callbacks")
    assert sorted(listed(client, "callbacks")) == sorted(
        [f"success {good.id} good", f"failure {bad.id} ValueError"]
    )


def test_a_callable_on_success_runs_on_a_real_worker(redis_server, start_worker):
    url, client = redis_server.url, redis_server.client()
    q = Queue(connection=url)
    job = q.enqueue(f"{JOBS}:mark", url, "good", on_success=lifecycle_jobs.on_success)
    start_worker("forking", 1, url)
    assert job.get(timeout=15) == "good"
    wait_for(lambda: listed(client, "callbacks"), timeout=15, message="callback")
    assert listed(client, "callbacks") == [f"success {job.id} good"]
    # The callback wrote its line while it ran: its completion is recorded just after.
    callback = q.fetch_job(f"{job.id}.on_success.1")
    wait_for(lambda: callback.refresh() or callback.status == JobStatus.FINISHED, timeout=15)


def test_an_on_failure_outside_the_allow_list_waits_and_the_job_ends_normally(
    redis_server, start_worker
):
    url = redis_server.url
    q = Queue(connection=url)
    bad = q.enqueue(f"{JOBS}:broken", url, on_failure="os:system", retry=None)
    good = q.enqueue(f"{JOBS}:mark", url, "good", on_failure="os:system")
    worker = start_worker("threading", 2, url)
    with pytest.raises(JobFailed) as caught:
        bad.get(timeout=15)
    assert caught.value.exc_type == "ValueError" and bad.status == JobStatus.FAILED
    assert good.get(timeout=15) == "good"
    # The callback is no job of this worker's (module os is not allowed, issue 32): it waits
    # in the queue untouched; one stray job does not stop a worker that is not --burst.
    wait_for(lambda: "job os:system refused" in worker.output(), timeout=30, message="refusal")
    assert worker.process.poll() is None, worker.output()[-3000:]
    refused = q.fetch_job(f"{bad.id}.on_failure.1")
    # Each slot takes it again after its pause (refusals.py) and gives it back at once: it is
    # queued between those takes, never run, never counted as an attempt.
    wait_for(lambda: refused.status == JobStatus.QUEUED, timeout=15, message="back in queue")
    assert refused.attempts == 0
    assert q.failed.job_ids == [bad.id]  # good's on_failure was never created
    assert q.job_ids == [refused.id] and good.status == JobStatus.FINISHED


class Hooks(BaseHTTPRequestHandler):
    received = []
    arrivals = []  # time.monotonic() of each POST
    answers = []  # the statuses of the first POSTs, in order; then `status`
    status = 200

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Hooks.arrivals.append(time.monotonic())
        Hooks.received.append((self.path, body))
        self.send_response(Hooks.answers.pop(0) if Hooks.answers else Hooks.status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hook_server():
    servers = []

    def start(port=0, status=200, answers=()):
        Hooks.received, Hooks.arrivals, Hooks.answers = [], [], list(answers)
        Hooks.status = status
        server = HTTPServer(("127.0.0.1", port), Hooks)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_webhooks_post_the_outcome_and_a_down_server_is_retried(
    redis_server, hook_server, start_worker
):
    url = redis_server.url
    down_port = free_port()
    q = Queue(connection=url)
    start_worker("threading", 2, url)
    late = q.enqueue(f"{JOBS}:mark", url, "late", success_url=f"http://127.0.0.1:{down_port}/x")
    assert late.get(timeout=10) == "late"
    hook = q.fetch_job(f"{late.id}.success_url.1")
    wait_for(lambda: hook.status == JobStatus.SCHEDULED, timeout=10, message="webhook retry")
    assert "WebhookUnavailable" in hook.exc_info[0] and late.status == JobStatus.FINISHED

    base = hook_server(port=down_port)  # the endpoint comes up: the retry delivers
    wait_for(lambda: Hooks.received, timeout=15, message="webhook delivered")
    path, body = Hooks.received[0]
    assert path == "/x" and body["id"] == late.id and body["status"] == "finished"
    assert body["result"] == "late" and hook.get(timeout=5) == 200

    failed = q.enqueue(f"{JOBS}:broken", url, failure_url=f"{base}/ko", success_url=f"{base}/ok")
    wait_for(lambda: len(Hooks.received) == 2, timeout=10, message="failure webhook")
    path, body = Hooks.received[1]
    assert path == "/ko" and body["id"] == failed.id and body["status"] == "failed"
    assert body["error"]["type"] == "ValueError"


def test_a_webhook_refused_with_a_4xx_is_not_retried(redis_server, hook_server, start_worker):
    url = redis_server.url
    base = hook_server(status=404)
    q = Queue(connection=url)
    start_worker("threading", 1, url)
    job = q.enqueue(f"{JOBS}:mark", url, "x", success_url=f"{base}/gone")
    hook = q.fetch_job(f"{job.id}.success_url.1") if job.get(timeout=10) else None
    with pytest.raises(JobFailed, match="WebhookRejected"):
        hook.get(timeout=10)
    assert hook.attempts == 1 and job.status == JobStatus.FINISHED


def test_a_webhook_answered_with_a_transient_status_is_retried_with_backoff(
    redis_server, hook_server, start_worker
):
    url = redis_server.url
    base = hook_server(answers=[503, 429, 503])  # both transient statuses, then 200
    q = Queue(connection=url)
    start_worker("threading", 1, url)
    job = q.enqueue(f"{JOBS}:mark", url, "x", success_url=f"{base}/hook")
    assert job.get(timeout=10) == "x"
    hook = q.fetch_job(f"{job.id}.success_url.1")
    assert hook.get(timeout=20) == 200  # delivered on the fourth POST
    assert len(Hooks.received) == 4 and hook.attempts == 4
    assert all(body["id"] == job.id for _, body in Hooks.received)
    gaps = [b - a for a, b in zip(Hooks.arrivals, Hooks.arrivals[1:])]
    # Retry(backoff=1, factor=2, jitter): each delay is drawn from [d/2, d], d = 1, 2, 4 s.
    assert gaps == sorted(gaps) and gaps[0] >= 0.5 and gaps[2] >= 2.0, gaps
    assert hook.status == JobStatus.FINISHED and job.status == JobStatus.FINISHED


def test_a_three_stage_flow_survives_sigkill_between_and_during_stages(redis_server, start_worker):
    url, client = redis_server.url, redis_server.client()
    # Stage 2's first run naps long enough to be killed in it; every other run goes on.
    first = Queue("stage1", connection=url).enqueue(f"{JOBS}:stage", url, 1, 60, 2)
    only_first = start_worker("forking", 1, url, "-q", "stage1")
    wait_for(lambda: first.status == JobStatus.FINISHED, timeout=15, message="stage 1")
    only_first.signal(signal.SIGKILL)  # between stages: stage 2 waits, enqueued atomically
    assert Queue("stage2", connection=url).count == 1

    rest = start_worker("forking", 1, url, "-q", "stage2,stage3", "--lease-seconds", "1")
    wait_for(lambda: listed(client, "stages") == ["1", "2"], timeout=15, message="stage 2")
    rest.signal(signal.SIGKILL)  # during stage 2: its lease expires, it runs again
    start_worker("threading", 1, url, "-q", "stage2,stage3", "--lease-seconds", "1")
    stages = wait_for(
        lambda: len(first.flow()) == 3 and first.flow(), timeout=40, message="three stages"
    )
    assert stages[2].get(timeout=20) == "flow done"
    assert [s.get(timeout=1) for s in stages] == ["stage 1 done", "stage 2 done", "flow done"]
    runs = listed(client, "stages")
    assert runs == ["1", "2", "2", "3"]  # stage 2 re-ran because its worker vanished mid-run
    assert stages[1].lost == 1 and len(Queue("stage3", connection=url).job_ids) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancel_stops_a_running_job_within_2_s(backend, redis_server, start_worker):
    """Also: the worker's cancel line names the job's queue and its id once (issue 15, read
    here on the same worker: a worker costs ~1 s of CPU to start)."""
    url, client = redis_server.url, redis_server.client()
    q = Queue("slow", connection=url)
    worker = start_worker(backend, 1, url, "--queues", "slow")
    nap = 2.5  # longer than the 2 s the cancel may take
    job = q.enqueue(f"{JOBS}:nap", url, nap)
    wait_for(lambda: listed(client, "started"), timeout=20, message="job started")
    asked = time.monotonic()
    assert job.cancel() is True
    wait_for(lambda: job.status == JobStatus.CANCELED, timeout=5, message="canceled")
    assert time.monotonic() - asked < 2.0
    line = wait_for(
        lambda: lines_with(worker.output(), f"job {JOBS}:nap canceled", "event=canceled"),
        message="the cancel line",
    )[0]
    assert "queue=slow" in line and line.count(job.id) == 1, line
    with pytest.raises(JobFailed, match="JobCanceled"):
        job.get(timeout=1)
    # The slot is free again: the next job runs on this one-child worker, and it ends only
    # after the canceled nap would have ended.
    assert q.enqueue(f"{JOBS}:mark", url, "next", nap + 0.5).get(timeout=20) == "next"
    assert time.monotonic() - asked > nap
    if backend in ("threading", "asyncio"):
        # A thread cannot be killed (docs/backends.md; asyncio runs plain functions in
        # threads too): it naps on, and the fence refuses
        # the outcome it then records.
        assert listed(client, "order") == ["nap ended", "next"]
        wait_for(
            lambda: any(
                "it was canceled meanwhile" in line and f"job_id={job.id}" in line
                for line in worker.output().splitlines()
            ),
            message="the late outcome refused, saying why",
        )
        assert job.status == JobStatus.CANCELED
    else:
        assert listed(client, "order") == ["next"]
    assert [e["event"] for e in EventStream(url).for_job(job.id)] == [
        "queued",
        "started",
        "canceled",
    ]


def test_a_jobs_life_is_in_the_event_stream_and_the_log_in_order(redis_server, start_worker):
    url = redis_server.url
    worker = start_worker("threading", 1, url)
    job = Queue(connection=url).enqueue(
        f"{JOBS}:fail_first_times", url, 1, retry=Retry(max=2, backoff=0.2, jitter=False)
    )
    assert job.get(timeout=15) == "ok after 2"
    events = [e["event"] for e in EventStream(url).for_job(job.id)]
    assert events == ["queued", "started", "retry", "queued", "started", "finished"]
    wait_for(
        lambda: f"job {JOBS}:fail_first_times finished in" in worker.output(), message="log line"
    )
    assert f"job {JOBS}:fail_first_times retry in" in worker.output()


def test_the_event_stream_hook_ships_every_event_once(redis_server, start_worker):
    url = redis_server.url
    shipped = []
    q = Queue(connection=url)
    jobs = [q.enqueue(f"{JOBS}:mark", url, str(n)) for n in range(5)]
    start_worker("threading", 2, url)
    for job in jobs:
        job.get(timeout=10)
    stream = EventStream(connect(url))
    stream.ship(shipped.append, group="elastic", stop=lambda: len(shipped) >= 15)
    assert sorted((e["job_id"], e["event"]) for e in shipped) == sorted(
        (j.id, event) for j in jobs for event in ("queued", "started", "finished")
    )
