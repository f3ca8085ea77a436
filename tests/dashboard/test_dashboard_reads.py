"""What each page's JSON carries, from a real dashboard process over real Redis with real
workers: the job page's flow, dead letter and events; workers' children and heartbeat age;
scheduled jobs and cron entries; the hour's chart; and the actions cancel, suspend, resume."""

import re

from rqconc import Queue
from rqconc.store.keys import KeySpace
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
    # Not --burst: a burst worker ends within 0.1 s of the queues draining, between two of the
    # enqueues below.
    start_worker("threading", 1, redis_server.url, "-q", "default,mail,reports")
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


def test_the_overview_says_which_queue_is_paused_and_each_queues_limits(
    board, redis_server, start_worker
):
    held, capped = (Queue(n, connection=redis_server.url) for n in ("held", "capped"))
    held.pause()
    capped.set_limits(rate="5/min")
    capped.set_group_limits(concurrency=1, rate="2/s")
    waiting = held.enqueue("tests.dashboard.jobs:add", 1, 2)
    ran = capped.enqueue("tests.dashboard.jobs:add", 1, 2)
    start_worker("threading", 1, redis_server.url, "-q", "held,capped")
    wait_for(lambda: ran.status == "finished", 30, message="the capped queue's job ran")
    rows = {q["name"]: q for q in board.get_json("/api/overview")["queues"]}
    assert rows["held"]["paused"] is True and rows["held"]["queued"] == 1
    assert waiting.status == "queued" and "limits" not in rows["held"]
    caps = {"rate": "5/min", "group_concurrency": 1, "group_rate": "2/s"}
    assert rows["capped"]["limits"] == caps and "paused" not in rows["capped"]
    held.resume()
    wait_for(lambda: waiting.status == "finished", 30, message="the resumed queue's job ran")
    assert "paused" not in board.get_json("/api/overview")["queues"][1]


def _fill_stream(redis_server, count):
    """`count` events from other jobs: `queued` ones of a queue no worker serves."""
    filler = Queue("filler", connection=redis_server.url)
    for start in range(0, count, 2000):
        size = min(2000, count - start)
        filler.enqueue_many([("tests.dashboard.jobs:add", (i, 1)) for i in range(size)])


def test_the_job_page_finds_its_events_in_a_busy_stream_and_says_when_they_were_trimmed(
    board, redis_server, start_worker
):
    """Issue 32: past ~17 events/s the page read 1,000 entries of the minute before the job
    and showed none of its own; and once the stream's cap (the worker's trim) dropped them,
    nothing said so."""
    _fill_stream(redis_server, 3000)  # the minute before the job: other jobs' events
    q = Queue("default", connection=redis_server.url)
    job = q.enqueue("tests.dashboard.jobs:a_third")
    start_worker("threading", 1, redis_server.url, "--events-max", "10000")
    wait_for(lambda: job.status == "finished", 30, message="the job finished")
    _fill_stream(redis_server, 1500)  # after it: the scan stops at its end
    page = board.get_json(f"/api/jobs/{job.id}")
    assert [e["event"] for e in page["events"]] == ["queued", "started", "progress", "finished"]
    assert page["events_trimmed"] is False and page["events_partial"] is False
    _fill_stream(redis_server, 12000)  # past the worker's cap: its maintenance drops them
    client, events = redis_server.client(), KeySpace("rqconc").events
    wait_for(lambda: client.xlen(events) <= 10000, message="the trim")
    page = board.get_json(f"/api/jobs/{job.id}")
    assert page["events"] == [] and page["events_trimmed"] is True
    assert page["status"] == "finished" and page["progress"]["message"] == "a third"
