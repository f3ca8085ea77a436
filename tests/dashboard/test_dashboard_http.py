"""SPEC 9 safety, over real HTTP to a real `rqconc dashboard` process: loopback unless told,
Basic auth on every path, POST + CSRF for every action, and no GET that changes anything."""

import re
import subprocess
import sys

from rqconc import Queue
from tests.support.worker_process import ROOT, wait_for

PAGES = ["/", "/workers", "/failed", "/scheduled", "/events", "/jobs/nope"]
READS = [
    "/api/overview",
    "/api/workers",
    "/api/failed?queue=default",
    "/api/scheduled?queue=default",
    "/api/events",
    "/metrics",
]
ACTIONS = [
    ("/api/failed/requeue", {"queue": "default", "all": True}),
    ("/api/failed/purge", {"queue": "default"}),
    ("/api/suspend", {}),
    ("/api/resume", {}),
]


def _csrf(board, auth=None):
    status, page = board.request("/", auth=auth)
    assert status == 200
    return re.search(rb'name="csrf-token" content="([^"]+)"', page).group(1).decode()


def _failed_job(redis_server, start_worker, tmp_path):
    """A real dead letter: a worker ran tests.dashboard.jobs.fail_once and it failed."""
    q = Queue("default", connection=redis_server.url)
    job = q.enqueue("tests.dashboard.jobs:fail_once", str(tmp_path / "ran-once"))
    worker = start_worker("threading", 1, redis_server.url, "--burst")
    worker.wait_exit(60)
    assert job.id in q.failed
    return q, job


def test_a_non_loopback_host_without_auth_refuses_to_start_with_exit_2(redis_server):
    argv = [sys.executable, "-m", "rqconc", "dashboard", "--url", redis_server.url]
    done = subprocess.run(
        [*argv, "--host", "0.0.0.0", "--port", "0"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--auth" in lines[0] and "Traceback" not in done.stderr
    malformed = subprocess.run(
        [*argv, "--auth", "only-a-user-and-s3cret-password"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert malformed.returncode == 2 and "USER:PASSWORD" in malformed.stderr
    assert "s3cret" not in malformed.stderr  # never echoed back


def test_auth_puts_every_path_behind_basic_credentials(dashboard):
    auth = ("ops", "s3cret:with:colons")
    board = dashboard("--auth", f"{auth[0]}:{auth[1]}", auth=auth)
    for path in PAGES[:-1] + READS + ["/static/app.js"]:
        status, _ = board.request(path)
        assert status == 401, path
        assert board.request(path, auth=("ops", "wrong"))[0] == 401, path
        assert board.request(path, auth=auth)[0] == 200, path
    token = _csrf(board, auth)
    assert board.request("/api/suspend", "POST", {}, {"X-CSRF-Token": token})[0] == 401


def test_the_auth_may_come_from_the_environment_and_then_any_host_is_allowed(dashboard):
    board = dashboard("--host", "0.0.0.0", env={"RQCONC_DASHBOARD_AUTH": "a:b"}, auth=("a", "b"))
    assert board.request("/api/overview")[0] == 401
    assert board.request("/api/overview", auth=("a", "b"))[0] == 200


def test_actions_without_the_csrf_token_are_refused_and_change_nothing(
    board, redis_server, start_worker, tmp_path
):
    q, job = _failed_job(redis_server, start_worker, tmp_path)
    token = _csrf(board)
    for path, body in ACTIONS + [(f"/api/jobs/{job.id}/cancel", {})]:
        for headers in ({}, {"X-CSRF-Token": "forged"}, {"X-CSRF-Token": token + "x"}):
            status, answer = board.request(path, "POST", body, headers)
            assert status == 403 and b"CSRF" in answer, (path, headers, status)
        assert board.request(path)[0] == 405, path  # a GET is no way around it
    assert job.id in q.failed and job.status == "failed"
    assert not redis_server.client().exists("{rqconc}:suspended")
    body = {"queue": "default", "job_id": job.id}
    answer = board.request("/api/failed/requeue", "POST", body, {"X-CSRF-Token": token})
    assert answer[0] == 200
    assert job.id not in q.failed and job.status == "queued"


def _snapshot(client):
    return {key: (client.dump(key), client.pttl(key) > 0) for key in client.keys("*")}


def test_no_get_changes_anything_in_redis(board, redis_server, start_worker, tmp_path):
    q, job = _failed_job(redis_server, start_worker, tmp_path)
    q.enqueue_in(3600, "tests.dashboard.jobs:add", 1, 2)
    q.cron("*/5 * * * *", "tests.dashboard.jobs:add", 3, 4, id="every-five")
    client = redis_server.client()
    wait_for(lambda: not client.zcard("{rqconc}:workers"), 30, message="the burst worker gone")
    # A registry entry whose TTL ran out: listings leave it out, and only a heartbeat may
    # remove it (a listing that pruned it was a GET that wrote).
    client.zadd("{rqconc}:workers", {"vanished.1.abcd": 1})
    # The gone worker's maintenance lease expires on its own, maybe during the GETs (a CI run
    # saw it go): an expiry is nobody's write, so it is not part of the snapshot.
    client.delete("{rqconc}:maintenance")
    before = _snapshot(client)
    for path in PAGES + READS + [f"/jobs/{job.id}", f"/api/jobs/{job.id}", "/api/failed/purge"]:
        board.request(path)
    assert _snapshot(client) == before


def test_a_missing_job_and_bad_parameters_answer_one_line_errors(board):
    missing = (404, b'{"error":"no such job (it may have expired)"}')
    assert board.request("/api/jobs/nope") == missing
    assert board.request("/api/failed?queue=a%20b")[0] == 400
    assert board.request("/api/events?after=x")[0] == 400


REBOUND = "rebound.example"  # a DNS-rebinding page's own name, pointed at 127.0.0.1


def _suspended(redis_server):
    return bool(redis_server.client().exists("{rqconc}:suspended"))


def test_a_request_for_another_host_name_is_refused_and_changes_nothing(
    board, redis_server, start_worker, tmp_path
):
    """DNS rebinding: the browser reaches 127.0.0.1 but sends the attacker's name as Host."""
    q, job = _failed_job(redis_server, start_worker, tmp_path)
    token = _csrf(board)
    forged = [f"{REBOUND}:{board.port}", REBOUND, f"127.0.0.1:{board.port + 1}", "localhost"]
    reads = PAGES + READS + [f"/api/jobs/{job.id}", "/static/app.js"]
    for host in forged:
        for path in reads:
            status, answer = board.request(path, headers={"Host": host})
            assert status == 400, (host, path, status)
            assert answer.count(b"\n") == 1 and b"--allowed-host" in answer, answer
            assert token.encode() not in answer and job.id.encode() not in answer
        for path, body in ACTIONS + [(f"/api/jobs/{job.id}/cancel", {})]:
            headers = {"Host": host, "X-CSRF-Token": token}
            assert board.request(path, "POST", body, headers)[0] == 400, (host, path)
    assert job.id in q.failed and job.status == "failed" and not _suspended(redis_server)
    for host in (f"127.0.0.1:{board.port}", f"LOCALHOST:{board.port}", f"[::1]:{board.port}"):
        assert board.request("/api/overview", headers={"Host": host})[0] == 200, host
        headers = {"Host": host, "X-CSRF-Token": token}
        assert board.request("/api/suspend", "POST", {}, headers)[0] == 200, host
        assert board.request("/api/resume", "POST", {}, headers)[0] == 200, host


def test_allowed_host_names_are_answered_and_others_still_refused(dashboard, redis_server):
    board = dashboard("--allowed-host", "dash.example", "--allowed-host", "Proxy.Example:8443")
    token = _csrf(board)
    for host in ("dash.example", "dash.example:9999", "proxy.example:8443"):
        assert board.request("/api/overview", headers={"Host": host})[0] == 200, host
    for host in ("proxy.example", "proxy.example:8080", f"{REBOUND}:{board.port}"):
        assert board.request("/api/overview", headers={"Host": host})[0] == 400, host
    headers = {"Host": "dash.example", "X-CSRF-Token": token}
    assert board.request("/api/suspend", "POST", {}, headers)[0] == 200
    assert _suspended(redis_server)
    from_env = dashboard(env={"RQCONC_DASHBOARD_ALLOWED_HOSTS": "a.example b.example"})
    for host, status in (("a.example", 200), ("b.example", 200), (REBOUND, 400)):
        assert from_env.request("/", headers={"Host": host})[0] == status, host
    anything = dashboard("--allowed-host", "*")
    assert anything.request("/", headers={"Host": REBOUND})[0] == 200


def test_a_wildcard_address_answers_the_address_a_request_arrived_on_only(dashboard):
    auth = ("a", "b")
    board = dashboard("--host", "0.0.0.0", "--auth", "a:b", auth=auth)
    assert board.request("/", headers={"Host": f"127.0.0.1:{board.port}"}, auth=auth)[0] == 200
    assert board.request("/", headers={"Host": f"{REBOUND}:{board.port}"}, auth=auth)[0] == 400


def test_a_malformed_allowed_host_is_one_line_and_exit_2(redis_server):
    argv = [sys.executable, "-m", "rqconc", "dashboard", "--url", redis_server.url]
    done = subprocess.run(
        [*argv, "--allowed-host", "a.example/path"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2 and "--allowed-host 'a.example/path'" in done.stderr
    assert "Traceback" not in done.stderr
