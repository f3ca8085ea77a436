"""SPEC 17 over real HTTP to a real `rqconc dashboard` process on real Redis: a queue's jobs
listed by status, paged, filtered by function; and every action on jobs and queues, each
a POST needing the CSRF token and the dashboard's own Host, done through the client API."""

import json
import re

from rqconc import Queue
from rqconc.queue.job import Job
from rqconc.worker.redis_source import RedisSource
from tests.queue import tasks
from tests.queue.helpers import take_and_run

ADD, BOOM = "tests.queue.tasks:add", "tests.queue.tasks:boom"


def _csrf(board):
    status, page = board.request("/")
    assert status == 200
    return re.search(rb'name="csrf-token" content="([^"]+)"', page).group(1).decode()


def _post(board, path, body=None, token=None):
    status, answer = board.request(
        path, "POST", body or {}, {"X-CSRF-Token": token or _csrf(board)}
    )
    return status, json.loads(answer)


def _ids(board, queue, status, query=""):
    page = board.get_json(f"/api/queues/{queue}/jobs?status={status}{query}")
    return [j["id"] for j in page["jobs"]], page


def _source(url, queue="mail"):
    return RedisSource(url, queues=[queue], allow=["tests"])


def test_each_status_is_listed_in_its_order(board, redis_server):
    url = redis_server.url
    q = Queue("mail", connection=url)
    done = [q.enqueue(tasks.add, n, 1) for n in range(2)]
    bad = [q.enqueue(tasks.boom, f"bad {n}") for n in range(2)]
    source = _source(url)
    for _ in done + bad:
        take_and_run(source)
    running = q.enqueue(tasks.add, 5, 5)
    assert source.take("claim", 1.0).item_id == running.id  # leased: started, not run
    waiting = [q.enqueue(tasks.add, n, 2) for n in range(3)]
    later = [q.enqueue_in(600 + n, tasks.add, n, 3) for n in range(2)]
    child = q.enqueue(tasks.add, 1, 4, depends_on=later[0])
    assert _ids(board, "mail", "queued")[0] == [j.id for j in waiting]  # run order
    assert _ids(board, "mail", "started")[0] == [running.id]
    assert _ids(board, "mail", "scheduled")[0] == [later[1].id, later[0].id]  # newest first
    assert _ids(board, "mail", "deferred")[0] == [child.id]
    assert set(_ids(board, "mail", "finished")[0]) == {j.id for j in done}
    ids, page = _ids(board, "mail", "failed")
    assert ids == [bad[1].id, bad[0].id] and page["total"] == 2
    assert page["jobs"][0]["exc_message"] == "bad 1" and page["jobs"][0]["function"] == BOOM


def test_pages_hold_50_jobs_and_the_filter_searches_a_bounded_window(board, redis_server):
    q = Queue("bulk", connection=redis_server.url)
    calls = [(tasks.echo if n % 10 == 0 else tasks.add, (n, 1)) for n in range(120)]
    jobs = q.enqueue_many(calls)
    first, page = _ids(board, "bulk", "queued")
    assert first == [j.id for j in jobs[:50]] and (page["total"], page["next_offset"]) == (120, 50)
    last, page = _ids(board, "bulk", "queued", "&offset=100")
    assert last == [j.id for j in jobs[100:]] and page["next_offset"] is None
    echoes, page = _ids(board, "bulk", "queued", "&func=echo")
    assert echoes == [j.id for j in jobs[::10]]
    assert (page["func"], page["scanned"], page["next_offset"]) == ("echo", 120, None)
    assert _ids(board, "bulk", "queued", "&func=nothing-like-it")[0] == []


def test_bad_listings_answer_400_in_one_line(board):
    for query in ("status=canceled", "status=nope", "offset=-1"):
        status, body = board.request(f"/api/queues/mail/jobs?{query}")
        assert status == 400 and len(json.loads(body)["error"].splitlines()) == 1, query
    assert "opened by" not in board.request("/api/queues/mail/jobs?status=canceled")[1].decode()
    assert board.request("/api/queues/a%20b/jobs")[0] == 400


ACTIONS = [
    ("/api/selected/delete", {"ids": ["x"]}),
    ("/api/selected/cancel", {"ids": ["x"]}),
    ("/api/selected/requeue", {"queue": "mail", "ids": ["x"]}),
    ("/api/selected/promote", {"queue": "mail", "ids": ["x"]}),
    ("/api/queues/mail/empty", {}),
    ("/api/queues/mail/delete", {}),
    ("/api/queues/mail/pause", {}),
    ("/api/queues/mail/resume", {}),
    ("/api/queues/mail/limits", {"concurrency": 1}),
]


def test_every_action_needs_the_csrf_token_and_the_dashboards_host(board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    job = q.enqueue(tasks.add, 1, 1)
    token = _csrf(board)
    for path, body in ACTIONS:
        for headers in ({}, {"X-CSRF-Token": "forged"}):
            status, answer = board.request(path, "POST", body, headers)
            assert status == 403 and b"CSRF" in answer, (path, headers)
        assert board.request(path)[0] == 405, path  # a GET is no way around it
        rebound = {"X-CSRF-Token": token, "Host": f"rebound.example:{board.port}"}
        assert board.request(path, "POST", body, rebound)[0] == 400, path
    assert q.job_ids == [job.id] and not q.is_paused and q.limits.concurrency is None


def test_selected_jobs_are_deleted_canceled_and_promoted_and_refusals_say_why(board, redis_server):
    url = redis_server.url
    q = Queue("mail", connection=url)
    running = q.enqueue(tasks.add, 0, 0)
    assert _source(url).take("claim", 1.0).item_id == running.id
    gone, kept, stopped = (q.enqueue(tasks.add, n, 1) for n in range(3))
    status, answer = _post(board, "/api/selected/delete", {"ids": [gone.id, running.id, "nope"]})
    assert status == 200 and answer["deleted"] == 1
    assert "running" in answer["refused"][running.id] and "no such job" in answer["refused"]["nope"]
    assert Job.fetch_many([gone.id], url) == [None] and q.job_ids == [kept.id, stopped.id]
    assert _post(board, "/api/selected/cancel", {"ids": [stopped.id]})[1]["canceled"] == 1
    assert stopped.status == "canceled" and q.job_ids == [kept.id]
    later = q.enqueue_in(600, tasks.add, 2, 2)
    status, answer = _post(
        board, "/api/selected/promote", {"queue": "mail", "ids": [later.id, kept.id]}
    )
    assert answer["promoted"] == 1 and kept.id in answer["refused"]
    assert q.job_ids == [kept.id, later.id]
    assert _post(board, "/api/selected/delete", {"ids": []})[0] == 400


def test_selected_dead_letters_are_requeued(board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    source = _source(redis_server.url)
    bad = [q.enqueue(tasks.boom, f"bad {n}") for n in range(3)]
    for _ in bad:
        take_and_run(source)
    body = {"queue": "mail", "ids": [bad[0].id, bad[2].id]}
    assert _post(board, "/api/selected/requeue", body)[1] == {"requeued": 2, "refused": {}}
    assert q.failed.job_ids == [bad[1].id] and q.job_ids == [bad[0].id, bad[2].id]


def test_a_queue_is_paused_resumed_limited_emptied_and_deleted(board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    assert _post(board, "/api/queues/mail/pause")[1] == {"paused": True} and q.is_paused
    assert _post(board, "/api/queues/mail/resume")[1] == {"paused": False} and not q.is_paused
    body = {"concurrency": 2, "rate": "10/s", "group_concurrency": 1, "group_rate": ""}
    assert _post(board, "/api/queues/mail/limits", body)[0] == 200
    limits = q.limits
    assert (limits.concurrency, limits.rate, limits.group_concurrency) == (2, "10/s", 1)
    status, answer = _post(board, "/api/queues/mail/limits", {"concurrency": "lots"})
    assert status == 400 and "concurrency" in answer["error"] and q.limits.concurrency == 2
    assert _post(board, "/api/queues/mail/limits", {"clear": True})[0] == 200
    assert q.limits == type(limits)()
    waiting = [q.enqueue(tasks.add, n, 1) for n in range(3)]
    later = q.enqueue_in(600, tasks.add, 9, 9)
    assert _post(board, "/api/queues/mail/empty")[1] == {"deleted": 3}
    assert q.count == 0 and Job.fetch_many([j.id for j in waiting], q.connection) == [None] * 3
    assert q.scheduled_job_ids == [later.id]
    assert _post(board, "/api/queues/mail/delete")[1] == {"deleted": 1}
    assert q.scheduled_job_ids == [] and "mail" not in board.get_json("/api/overview")["queues"]


def test_a_jobs_page_carries_the_lines_it_logged(board, redis_server):
    """SPEC 17: the job's log, oldest first, as text (a line that looks like markup too)."""
    q = Queue("mail", connection=redis_server.url)
    talked, silent = q.enqueue(tasks.add, 1, 1), q.enqueue(tasks.add, 2, 2)
    for line in ("first step", "<b>not markup</b>"):
        talked.log(line)
    logs = board.get_json(f"/api/jobs/{talked.id}")["logs"]
    assert logs == talked.logs() and [line.split(" ", 2)[2] for line in logs] == [
        "first step",
        "<b>not markup</b>",
    ]
    assert board.get_json(f"/api/jobs/{silent.id}")["logs"] == []
