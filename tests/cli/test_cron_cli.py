"""`rqconc cron list [--json]` and `rqconc cron remove ID` as users run them: real
subprocesses on real Redis (the JSON listings read in process); one-line errors, exit 2 on
misuse, 1 for an unknown id or an unreachable Redis."""

import json
import time

import redis

from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.worker.scheduler import Scheduler
from tests.cli.test_commands import assert_one_line_error, in_process, rqconc, rqconc_all
from tests.queue import tasks
from tests.support.redis_server import free_port

LISTED = ["id", "expr", "func", "queue", "next_run", "last_tick", "description", "tz", "times"]
LISTED += ["fired", "start", "end", "skip_if_running", "next_runs"]


def test_cron_list_shows_each_entry_and_the_leader_in_text_and_json(redis_server):
    redis_url = redis_server.url  # the CLI is the same on every Redis: one version will do
    hourly = Queue("reports", redis_url).cron("0 * * * *", tasks.add, 1, 2, id="hourly")
    every = Queue("default", redis_url).cron("* * * * * *", tasks.echo, "x", id="every")
    every_next = every.next_run  # the next tick from now (the CLI runs a little later)
    text_out = rqconc("cron", "list", "--url", redis_url)
    json_out = in_process("cron", "list", "--json", "--url", redis_url)
    empty = in_process("cron", "list", "--json", "--url", redis_url + "5")  # db 5: nothing there
    done = time.time()  # a loaded machine may take seconds to run the three commands

    listed = json.loads(json_out.stdout)
    assert [e["id"] for e in listed] == ["every", "hourly"] and list(listed[0]) == LISTED
    assert listed[1] == dict(
        listed[1],
        expr="0 * * * *",
        func="tests.queue.tasks:add",
        queue="reports",
        last_tick=None,
        description="tests.queue.tasks:add(1, 2)",
    )
    assert listed[1]["next_run"] == hourly.next_run
    # Ticks planned ahead are not shown as enqueued: never a time in the future.
    assert listed[0]["last_tick"] is None or listed[0]["last_tick"] <= time.time()
    # Six fields read seconds last: every second, as the next three runs show.
    runs = listed[0]["next_runs"]
    assert runs[0] == listed[0]["next_run"] and [b - a for a, b in zip(runs, runs[1:])] == [1, 1]
    assert every_next <= listed[0]["next_run"] <= done + 1  # the next tick of some moment between
    assert json.loads(empty.stdout) == []

    lines = text_out.stdout.splitlines()
    assert lines[0].split() == [
        "ID",
        "EXPR",
        "FUNCTION",
        "QUEUE",
        "ZONE",
        "NEXT",
        "RUNS",
        "LAST",
        "ENQUEUED",
        "BOUNDS",
    ]
    assert lines[1].startswith("every ") and lines[2].startswith("hourly ")
    assert "0 * * * *" in lines[2] and "tests.queue.tasks:add" in lines[2]
    assert lines[-1] == "scheduler: no leader (no worker is running)"

    client = redis.Redis.from_url(redis_url)
    Scheduler(client, KeySpace(), "worker-7").lead()
    led = in_process("cron", "list", "--url", redis_url)
    assert led.returncode == 0 and "scheduler: led by worker worker-7 (pid" in led.stdout


def test_cron_remove_removes_the_entry_and_its_jobs_enqueued_ahead(redis_server):
    redis_url = redis_server.url
    q = Queue("default", redis_url)
    q.cron("* * * * * *", tasks.add, 1, 2, id="every")
    q.cron("0 0 * * *", tasks.add, 1, 2, id="daily")
    Scheduler(redis.Redis.from_url(redis_url), KeySpace(), "worker-7").tick()
    assert q.scheduled_job_ids  # the next ticks wait, enqueued ahead
    removed = rqconc("cron", "remove", "every", "--url", redis_url)
    again = rqconc("cron", "remove", "every", "--url", redis_url)
    assert removed.returncode == 0 and removed.stdout == "removed cron every\n"
    assert [e.id for e in q.crons()] == ["daily"] and q.scheduled_job_ids == []
    assert_one_line_error(again, 1)
    assert "no cron entry every" in again.stderr


def test_cron_misuse_is_exit_2_and_an_unreachable_redis_exit_1_without_the_password():
    url = f"redis://:s3cretpw@127.0.0.1:{free_port()}/0"
    no_id, unknown, bad_flag, bad_url, down = rqconc_all(
        [
            ["cron", "remove", "--url", url],
            ["cron", "frobnicate"],
            ["cron", "list", "--bogus", "--url", url],
            ["cron", "list", "--url", "http://x"],
            ["cron", "list", "--url", url],
        ]
    )
    for done in (no_id, unknown, bad_flag, bad_url):
        assert_one_line_error(done, 2)
        assert done.stdout == ""
    assert "ID" in no_id.stderr and "frobnicate" in unknown.stderr
    assert "--bogus" in bad_flag.stderr and "redis://" in bad_url.stderr
    assert_one_line_error(down, 1)
    assert "127.0.0.1" in down.stderr and "s3cretpw" not in down.stderr + down.stdout


def test_cron_list_shows_a_fractional_interval_with_its_milliseconds(redis_server):
    redis_url = redis_server.url
    Queue("default", redis_url).every(1.5, tasks.add, 1, 2, id="sesqui")
    Scheduler(redis.Redis.from_url(redis_url), KeySpace(), "worker-7").tick()
    text_out = in_process("cron", "list", "--url", redis_url)
    json_out = in_process("cron", "list", "--json", "--url", redis_url)
    (listed,) = json.loads(json_out.stdout)
    assert listed["expr"] == "@every 1.5s"
    runs = listed["next_runs"]
    assert [round((b - a) * 1000) for a, b in zip(runs, runs[1:])] == [1500, 1500]
    assert all(round(run * 1000) % 1500 == 0 for run in runs)
    # A tick on a half second shows its milliseconds; one on a whole second does not.
    row = text_out.stdout.splitlines()[1]
    assert row.startswith("sesqui ") and "@every 1.5s" in row and ".500+00:00" in row


def test_cron_add_and_every_register_entries_as_q_cron_and_q_every_do(redis_server):
    redis_url = redis_server.url
    half, five = rqconc_all(
        [
            ["cron", "every", "0.5", "tests.queue.tasks:echo", '"x"', "-5", "--id", "half",
             "-q", "ticks", "--kwargs", '{"k": 1}', "--url", redis_url],
            ["cron", "add", "*/5 * * * *", "tests.queue.tasks:add", "1", "2", "--id", "five",
             "-q", "reports", "--url", redis_url],
        ]
    )  # fmt: skip
    assert half.returncode == 0 and five.returncode == 0, (half.stderr, five.stderr)
    assert half.stdout.startswith("cron half: tests.queue.tasks:echo every 0.5 s on queue ticks")
    assert "at '*/5 * * * *' on queue reports" in five.stdout
    (entry,) = Queue("ticks", redis_url).crons()
    assert (entry.id, entry.expr, entry.func) == ("half", "@every 0.5s", "tests.queue.tasks:echo")
    (other,) = Queue("reports", redis_url).crons()
    assert (other.id, other.expr) == ("five", "*/5 * * * *")
    # The scheduler plans its ticks like any entry's: each job calls echo("x", -5, k=1).
    Scheduler(redis.Redis.from_url(redis_url), KeySpace(), "worker-7").tick()
    ticks = Queue("ticks", redis_url)
    jobs = ticks.fetch_jobs(ticks.job_ids + ticks.scheduled_job_ids)
    assert len(jobs) >= 2 and all(j.args == ["x", -5] and j.kwargs == {"k": 1} for j in jobs)


def test_cron_add_and_every_refuse_bad_schedules_with_exit_2():
    url = f"redis://127.0.0.1:{free_port()}/0"  # refused before Redis is asked
    runs = rqconc_all(
        [
            ["cron", "every", "nan", "tests.queue.tasks:add", "-q", "q", "--url", url],
            ["cron", "every", "0.05", "tests.queue.tasks:add", "-q", "q", "--url", url],
            ["cron", "every", "1", "tests.queue.tasks:add", "--url", url],
            ["cron", "add", "61 * * * *", "tests.queue.tasks:add", "-q", "q", "--url", url],
            ["cron", "every", "1", "tests.queue.tasks:add", "nope", "-q", "q", "--url", url],
        ]
    )
    for done in runs:
        assert_one_line_error(done, 2)
    assert "0.1" in runs[1].stderr and "--queue" in runs[2].stderr
    assert "61 * * * *" in runs[3].stderr and "JSON_ARG" in runs[4].stderr
