"""SPEC 17 from the command line on real Redis (a real `rqconc` subprocess for each command
and each refusal; the JSON pages read in process): `rqconc jobs` lists a queue's jobs by
status, paged and filtered; `rqconc empty`, `rqconc delete` and `rqconc job delete` delete
through the client API and refuse off a terminal without --yes (nothing deleted)."""

import json
import os
import pty
import select
import subprocess
import sys

from rqconc.queue.job import Job
from rqconc.queue.queue import Queue
from rqconc.worker.redis_source import RedisSource
from tests.cli.test_commands import ENTRY, ROOT, assert_table, in_process, rqconc
from tests.queue import tasks
from tests.queue.helpers import take_and_run


def exists(job_id, url):
    return Job.fetch_many([job_id], url)[0] is not None


def listed(url, queue, *args):
    done = in_process("jobs", queue, "--url", url, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_jobs_lists_waiting_jobs_in_run_order_paged_with_a_table_and_json(redis_url):
    q = Queue("mail", connection=redis_url)
    jobs = [q.enqueue(tasks.add, n, 1) for n in range(7)]
    first = listed(redis_url, "mail", "--limit", 3)
    assert [j["id"] for j in first["jobs"]] == [j.id for j in jobs[:3]]
    assert (first["total"], first["next_offset"], first["status"]) == (7, 3, "queued")
    last = listed(redis_url, "mail", "--limit", 3, "--offset", 6)
    assert [j["id"] for j in last["jobs"]] == [jobs[6].id] and last["next_offset"] is None
    shown = rqconc("jobs", "mail", "--url", redis_url, "--limit", 2)
    assert shown.returncode == 0, shown.stderr
    *rows, footer = shown.stdout.splitlines()
    header, *cells = assert_table("\n".join(rows))
    assert header == ["ID", "FUNCTION", "STATUS", "ATTEMPTS", "ERROR"]
    assert cells[0] == [jobs[0].id, "tests.queue.tasks:add", "queued", "0", "-"]
    assert footer == "2 of 7 queued; next page: --offset 2"


def test_jobs_lists_dead_letters_and_scheduled_jobs_newest_first(redis_url):
    q = Queue("mail", connection=redis_url)
    source = RedisSource(redis_url, queues=["mail"], allow=["tests"])
    bad = [q.enqueue(tasks.boom, f"bad {n}") for n in range(3)]
    for _ in bad:
        take_and_run(source)
    failed = listed(redis_url, "mail", "--status", "failed")
    assert [j["id"] for j in failed["jobs"]] == [j.id for j in reversed(bad)]
    assert failed["jobs"][0]["error"] == "ValueError: bad 2"
    later = [q.enqueue_in(600 + n, tasks.add, n, 1) for n in range(2)]
    scheduled = listed(redis_url, "mail", "--status", "scheduled")
    assert [j["id"] for j in scheduled["jobs"]] == [later[1].id, later[0].id]


def test_the_function_filter_searches_a_bounded_window_and_says_where_to_go_on(redis_url):
    q = Queue("mail", connection=redis_url)
    calls = [(tasks.echo if n % 3 == 0 else tasks.add, n) for n in range(9)]
    jobs = [q.enqueue(func, n, 1) for func, n in calls]
    echoes = [j.id for j, (func, _) in zip(jobs, calls) if func is tasks.echo]
    page = listed(redis_url, "mail", "--func", "echo", "--limit", 2)
    assert [j["id"] for j in page["jobs"]] == echoes[:2]
    assert (page["scanned"], page["next_offset"], page["total"]) == (4, 4, 9)
    rest = listed(redis_url, "mail", "--func", "echo", "--offset", 4)
    assert [j["id"] for j in rest["jobs"]] == echoes[2:] and rest["next_offset"] is None
    text = in_process("jobs", "mail", "--url", redis_url, "--func", "echo", "--limit", 2).stdout
    assert "searched 1-4, a bounded window per page" in text and "--offset 4" in text


def test_jobs_refuses_an_unknown_status_in_one_line_with_exit_2(redis_url):
    done = rqconc("jobs", "mail", "--url", redis_url, "--status", "canceled")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_empty_and_delete_refuse_off_a_terminal_without_yes_and_delete_with_it(redis_url):
    q = Queue("mail", connection=redis_url)
    waiting = [q.enqueue(tasks.add, n, 1) for n in range(3)]
    later = q.enqueue_in(600, tasks.add, 9, 1)
    refused = rqconc("empty", "mail", "--url", redis_url)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert q.count == 3
    done = rqconc("empty", "mail", "--url", redis_url, "--yes")
    assert done.stdout == "deleted 3 jobs of queue mail\n", done.stderr
    assert q.count == 0 and not any(exists(j.id, redis_url) for j in waiting)
    assert later.id in q.scheduled_job_ids  # empty leaves the scheduled ones
    assert rqconc("delete", "mail", "--url", redis_url).returncode == 1
    assert later.id in q.scheduled_job_ids
    done = rqconc("delete", "mail", "--url", redis_url, "--yes")
    assert done.stdout == "deleted queue mail (1 job)\n", done.stderr
    assert q.scheduled_job_ids == [] and not exists(later.id, redis_url)


def test_job_delete_deletes_jobs_and_job_id_still_shows_one(redis_url):
    q = Queue("mail", connection=redis_url)
    one, two = q.enqueue(tasks.add, 1, 1), q.enqueue(tasks.add, 2, 1)
    shown = in_process("job", one.id, "--url", redis_url, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["id"] == one.id
    assert rqconc("job", "delete", one.id, "--url", redis_url).returncode == 1
    assert exists(one.id, redis_url)
    done = rqconc("job", "delete", one.id, "nope", "--url", redis_url, "--yes")
    assert done.returncode == 1 and done.stdout == f"{one.id}  deleted\n"
    assert "no such job nope" in done.stderr
    assert not exists(one.id, redis_url) and q.job_ids == [two.id]


def test_on_a_terminal_the_question_is_asked_and_no_keeps_the_jobs(redis_url):
    q = Queue("mail", connection=redis_url)
    q.enqueue(tasks.add, 1, 1)
    for answer, left in ((b"n\n", 1), (b"y\n", 0)):
        leader, follower = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        argv = [sys.executable, "-c", ENTRY, "empty", "mail", "--url", redis_url]
        child = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=follower, stdout=follower, stderr=follower
        )
        os.close(follower)
        asked = b""
        while b"[y/N]" not in asked:
            ready, _, _ = select.select([leader], [], [], 20)
            assert ready, f"no question asked: {asked!r}"
            asked += os.read(leader, 1024)
        os.write(leader, answer)
        assert child.wait(20) == (1 if left else 0)
        os.close(leader)
        assert q.count == left
