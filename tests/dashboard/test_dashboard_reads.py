"""What each page's JSON carries, from a real dashboard process over real Redis with real
workers: the job page's flow, dead letter and events; workers' children and heartbeat age;
scheduled jobs and cron entries; the hour's chart; and the actions cancel, suspend, resume."""

import re

from rqconc import Queue
from tests.support.worker_process import wait_for


def _csrf(board):
    page = board.request("/")[1]
    return {"X-CSRF-Token": re.search(rb'csrf-token" content="([^"]+)"', page).group(1).decode()}


def test_the_job_page_shows_its_flow_its_events_and_its_dead_letter(
    board, redis_server, start_worker, tmp_path
):
    q = Queue("default", connection=redis_server.url)
    start_worker("threading", 2, redis_server.url)
    first = q.enqueue("tests.dashboard.jobs:first_stage", 41)
    failed = q.enqueue("tests.dashboard.jobs:fail_once", str(tmp_path / "once"))
    wait_for(lambda: first.next_id and q.fetch_job(first.next_id).status == "finished", 30)
    wait_for(lambda: failed.id in q.failed, 30, message="a dead letter")
    page = board.get_json(f"/api/jobs/{first.next_id}")
    assert [s["id"] for s in page["flow"]] == [first.id, first.next_id]
    assert page["flow_id"] == first.id and page["result"] == 42
    assert page["args"] == [41, 1] and page["function"] == "tests.dashboard.jobs:add"
    assert [e["event"] for e in page["events"]][-2:] == ["started", "finished"]
    dead = board.get_json(f"/api/jobs/{failed.id}")
    assert dead["dead_letter_of"] == "default" and dead["status"] == "failed"
    assert "first run fails on purpose" in dead["error"]["traceback"]
    assert board.get_json(f"/api/jobs/{first.id}")["dead_letter_of"] is None


def test_workers_show_each_child_with_its_job_and_the_heartbeat_age(
    board, redis_server, start_worker
):
    q = Queue("default", connection=redis_server.url)
    start_worker("gevent", 3, redis_server.url, "--name", "w-one")
    job = q.enqueue("tests.dashboard.jobs:nap", 60)
    wait_for(lambda: job.status == "started", 30)

    def shown():
        workers = board.get_json("/api/workers")["workers"]
        return workers and job.id in [c["job_id"] for c in workers[0]["children"]] and workers

    (worker,) = wait_for(shown, 20, message="the running job among the children")
    assert worker["name"] == "w-one" and worker["backend"] == "gevent" and worker["size"] == 3
    assert sorted(c["state"] for c in worker["children"]) == ["busy", "idle", "idle"]
    assert 0 <= worker["heartbeat_age"] < 10


def test_scheduled_jobs_and_cron_entries_are_listed(board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    soon = q.enqueue_in(600, "tests.dashboard.jobs:add", 1, 1)
    later = q.enqueue_in(1200, "tests.dashboard.jobs:add", 2, 2)
    q.cron("0 * * * *", "tests.dashboard.jobs:add", 3, 3, id="hourly")
    page = board.get_json("/api/scheduled?queue=mail")
    assert [j["id"] for j in page["jobs"]] == [soon.id, later.id] and page["total"] == 2
    assert page["jobs"][0]["due"] < page["jobs"][1]["due"]
    assert [(c["id"], c["expr"], c["queue"]) for c in page["crons"]] == [
        ("hourly", "0 * * * *", "mail")
    ]


def test_the_overview_carries_the_last_minutes_rates_and_the_hours_chart(
    board, redis_server, start_worker
):
    q = Queue("default", connection=redis_server.url)
    start_worker("threading", 2, redis_server.url)
    jobs = q.enqueue_many([("tests.dashboard.jobs:add", (i, i)) for i in range(20)])
    wait_for(lambda: all(j.status == "finished" for j in jobs), 30, message="20 jobs done")
    overview = board.get_json("/api/overview")
    (row,) = overview["queues"]
    assert row["name"] == "default" and row["finished"] == 20 and row["queued"] == 0
    # Seconds ago: inside the sliding minute (all of them unless a minute began meanwhile).
    assert 10 <= row["finished_last_minute"] <= 20 and row["failed_last_minute"] == 0
    assert 0 <= row["run_p50"] <= row["run_p95"] < 5
    assert len(overview["timeline"]) == 60
    assert sum(p["finished"] for p in overview["timeline"][-2:]) == 20


def test_cancel_suspend_and_resume_act_with_the_token(board, redis_server):
    q = Queue("default", connection=redis_server.url)
    job = q.enqueue("tests.dashboard.jobs:add", 1, 2)
    token = _csrf(board)
    assert board.request(f"/api/jobs/{job.id}/cancel", "POST", {}, token)[0] == 200
    assert job.status == "canceled"
    assert board.request("/api/suspend", "POST", {}, token)[0] == 200
    assert board.get_json("/api/overview")["suspended"] is True
    assert board.request("/api/resume", "POST", {}, token)[0] == 200
    assert board.get_json("/api/overview")["suspended"] is False
    assert board.request("/api/jobs/nope/cancel", "POST", {}, token)[0] == 404


def test_requeue_all_and_purge_act_on_one_queues_dead_letters(board, redis_server, start_worker):
    q = Queue("default", connection=redis_server.url)
    other = Queue("other", connection=redis_server.url)
    start_worker("threading", 2, redis_server.url, "-q", "default,other")
    jobs = [q.enqueue("tests.dashboard.jobs:fail_with", f"no {i}") for i in range(3)]
    kept = other.enqueue("tests.dashboard.jobs:fail_with", "stays")
    wait_for(lambda: len(q.failed) == 3 and len(other.failed) == 1, 30, message="4 failed")
    page = board.get_json("/api/failed?queue=default")
    assert page["total"] == 3 and {j["id"] for j in page["jobs"]} == {j.id for j in jobs}
    token = _csrf(board)
    answer = board.request("/api/failed/purge", "POST", {"queue": "default"}, token)
    assert answer == (200, b'{"purged":3}')
    assert len(q.failed) == 0 and all(
        redis_server.client().exists(f"{{rqconc}}:job:{j.id}") == 0 for j in jobs
    )
    assert kept.id in other.failed
    body = {"queue": "other", "all": True}
    assert board.request("/api/failed/requeue", "POST", body, token) == (200, b'{"requeued":1}')
    wait_for(lambda: kept.id in other.failed and kept.attempts == 1, 30, message="run again")


def test_the_failed_list_without_a_queue_holds_every_queues_dead_letters(
    board, redis_server, start_worker
):
    """An operator whose failures are not in `default` sees them on the first click."""
    mail, reports = (Queue(n, connection=redis_server.url) for n in ("mail", "reports"))
    Queue("default", connection=redis_server.url).enqueue("tests.dashboard.jobs:add", 1, 2)
    start_worker("threading", 1, redis_server.url, "-q", "default,mail,reports", "--burst")
    letters = []
    for i, q in enumerate([mail, reports, mail]):  # one by one: their failure times differ
        letters.append(q.enqueue("tests.dashboard.jobs:fail_with", f"no {i}"))
        wait_for(lambda: letters[-1].status == "failed", 30, message=f"dead letter {i}")
    for path in ("/api/failed", "/api/failed?queue="):
        page = board.get_json(path)
        assert page["total"] == 3 and page["queues"] == {"mail": 2, "reports": 1}, page
        assert [j["id"] for j in page["jobs"]] == [j.id for j in reversed(letters)]
        assert [j["queue"] for j in page["jobs"]] == ["mail", "reports", "mail"]
    assert [j["id"] for j in board.get_json("/api/failed?offset=1")["jobs"]] == [
        letters[1].id,
        letters[0].id,
    ]
    one = board.get_json("/api/failed?queue=reports")
    assert one["total"] == 1 and [j["id"] for j in one["jobs"]] == [letters[1].id]
    assert board.get_json("/api/failed?queue=default")["jobs"] == []
