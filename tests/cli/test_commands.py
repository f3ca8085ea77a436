"""The `rqconc` inspection commands as users run them on real Redis: real subprocesses for
each command's exit code, one-line errors and first output; the output a test reads over
and over (polling a worker's state, say) in process through the same `main`."""

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from rqconc.cli.app import main
from rqconc.connection.clients import connect
from rqconc.queue.job import Job
from rqconc.queue.queue import Queue
from rqconc.worker.registry import list_workers
from tests.support.redis_server import RedisServer, free_port
from tests.support.waiting import wait_for
from tests.support.worker_process import ROOT, redis_worker

ENTRY = "from rqconc.gevent_first import console_main; console_main()"
JOB_ID = re.compile(r"^[0-9a-f]{32}\n$")
COUNTS = ["name", "queued", "started", "scheduled", "deferred", "failed", "finished"]
WORKER_FIELDS = [
    "name",
    "host",
    "pid",
    "backend",
    "size",
    "busy",
    "idle",
    "state",
    "queues",
    "current_jobs",
    "last_heartbeat",
    "totals",
]


def rqconc(*args, timeout=20):
    """Run `rqconc ARGS...`; the completed process (text output)."""
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rqconc_all(commands, timeout=20):
    """Run several `rqconc` command lines at once; their completed processes, in order."""
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    running = [
        subprocess.Popen(
            [sys.executable, "-c", ENTRY, *map(str, args)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in commands
    ]
    results = []
    for args, process in zip(commands, running):
        out, err = process.communicate(timeout=timeout)
        results.append(subprocess.CompletedProcess(args, process.returncode, out, err))
    return results


def in_process(*args):
    """`rqconc ARGS...` run in this process through the console script's own `main` (the same
    one-line errors and exit codes), from the checkout, without REDIS_URL: a command whose
    output a test reads, or polls, costs no interpreter start (~0.5 s of CPU each). Exit
    codes, signals and one-line errors are the subprocess tests' (`rqconc`); every command
    family keeps at least one of those."""
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with CliRunner().isolation(env={"REDIS_URL": None}) as (out, err, _):
            try:
                main([str(arg) for arg in args])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(args, code, stdout, stderr)


def ok(*args):
    """The output of a command that must succeed (run in process, see `in_process`)."""
    done = in_process(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def ok_process(*args):
    """The output of a command that must succeed, run as the real `rqconc` subprocess."""
    done = rqconc(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_table(text):
    """`text` is a table whose columns line up: every line has the same number of cells
    (two spaces or more apart), and each column's cells share a left or a right edge."""
    lines = text.splitlines()
    spans = [[m.span() for m in re.finditer(r"\S+(?: \S+)*", line)] for line in lines]
    assert len(lines) >= 2 and len({len(row) for row in spans}) == 1, text
    for column in zip(*spans):
        starts, ends = {start for start, _ in column}, {end for _, end in column}
        assert len(starts) == 1 or len(ends) == 1, f"column not aligned:\n{text}"
    return [[line[start:end] for start, end in row] for line, row in zip(lines, spans)]


def assert_one_line_error(done, code):
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("rqconc: error: ")


@pytest.fixture
def worker(tmp_path):
    started = []

    def start(url, *extra):
        process = redis_worker("threading", 2, url, tmp_path, *extra)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


def test_info_counts_each_queue_in_text_and_json(redis_url):
    Queue("high", redis_url).enqueue("tests.worker.jobs:add", 1, 2)
    Queue("high", redis_url).enqueue("tests.worker.jobs:add", 3, 4)
    Queue("low", redis_url).enqueue_in(60, "tests.worker.jobs:add", 1, 2)

    report = json.loads(ok("info", "--json", "--url", redis_url))
    assert list(report) == ["queues"]
    assert [list(q) for q in report["queues"]] == [COUNTS, COUNTS]
    high, low = report["queues"]
    assert high == {
        "name": "high",
        "queued": 2,
        "started": 0,
        "scheduled": 0,
        "deferred": 0,
        "failed": 0,
        "finished": 0,
    }
    assert (low["name"], low["queued"], low["scheduled"]) == ("low", 0, 1)

    lines = ok("info", "--url", redis_url).splitlines()
    assert lines[0].split() == ["queue"] + COUNTS[1:]
    assert lines[1].split() == ["high", "2", "0", "0", "0", "0", "0"]
    assert lines[2].split() == ["low", "0", "0", "1", "0", "0", "0"]
    assert len({len(line) for line in lines}) == 1  # aligned columns

    assert json.loads(ok("info", "-W", "--json", "--url", redis_url))["workers"] == []


def test_info_ping_and_job_with_a_running_worker(redis_server, worker):
    url = redis_server.url
    process = worker(url, "-q", "cli", "--name", "cli-worker")

    def listed():
        report = json.loads(ok("info", "-W", "--json", "--url", url))
        return report["workers"] or None

    (entry,) = wait_for(listed, timeout=15, interval=0.1, message="worker in info -W")
    assert list(entry) == WORKER_FIELDS
    assert (entry["name"], entry["pid"], entry["backend"], entry["size"]) == (
        "cli-worker",
        process.pid,
        "threading",
        2,
    )
    assert entry["queues"] == ["cli"] and isinstance(entry["last_heartbeat"], float)
    text = ok("info", "-W", "--url", url)
    assert "cli-worker" in text and "threading" in text and "last_heartbeat" in text
    assert "PONG" in ok("ping", "--worker", "cli-worker", "--url", url)

    job_id = ok("enqueue", "-q", "cli", "--url", url, "tests.worker.jobs:add", 2, 3).strip()
    shown = wait_for(
        lambda: (lambda r: r if r["status"] == "finished" else None)(
            json.loads(ok("job", job_id, "--json", "--url", url))
        ),
        timeout=10,
        interval=0.1,
        message="job finished",
    )
    assert (shown["result"], shown["attempts"], shown["queue"]) == (5, 1, "cli")
    assert shown["ended_at"] and shown["started_at"]
    assert "finished" in ok("job", job_id, "--url", url)
    finished = json.loads(ok("info", "--json", "--url", url))["queues"][0]
    assert (finished["queued"], finished["started"]) == (0, 0)
    # The worker's totals (SPEC 17), written with its next heartbeat; the queue's functions.
    wait_for(
        lambda: [w["totals"]["finished"] for w in list_workers(connect(url))] == [1],
        timeout=10,
        interval=0.2,
        message="one job in the worker's totals",
    )
    report = json.loads(ok("info", "-W", "-F", "--json", "--url", url))
    totals = report["workers"][0]["totals"]
    assert totals["failed"] == 0 and 0 <= totals["busy_seconds"] < 10
    (func,) = report["functions"]["cli"]
    assert (func["func"], func["finished"], func["failed"]) == ("tests.worker.jobs:add", 1, 0)
    _, workers_text, functions_text = ok("info", "-W", "-F", "--url", url).split("\n\n")
    header, row = assert_table(workers_text)
    assert row[header.index("finished")] == "1" and row[header.index("failed")] == "0"
    header, row = assert_table(functions_text)
    assert header == ["queue", "function", "finished", "failed", "p50_s", "p95_s"]
    assert row[:4] == ["cli", "tests.worker.jobs:add", "1", "0"]

    process.signal(signal.SIGTERM)
    assert process.wait_exit(15) == 0
    done = rqconc("ping", "--worker", "cli-worker", "--url", url)
    assert_one_line_error(done, 1)
    assert "cli-worker" in done.stderr
    assert json.loads(ok("info", "-W", "--json", "--url", url))["workers"] == []


def test_info_workers_shows_a_busy_worker_and_its_job_in_aligned_columns(redis_server, worker):
    url = redis_server.url
    worker(url, "-q", "busy", "--name", "busy-worker")
    worker(url, "-q", "other,default", "--name", "idle-worker-with-a-longer-name")
    job = Queue("busy", url).enqueue("tests.worker.jobs:hold", url, "release")

    def busy_report():
        report = json.loads(ok("info", "-W", "--json", "--url", url))
        states = [w["state"] for w in report["workers"]]
        return report if states == ["busy", "idle"] else None

    report = wait_for(busy_report, timeout=20, interval=0.1, message="one busy, one idle")
    busy, idle = report["workers"]
    assert (busy["name"], busy["busy"], busy["idle"], busy["current_jobs"]) == (
        "busy-worker",
        1,
        1,
        [job.id],
    )
    assert (idle["busy"], idle["idle"], idle["current_jobs"]) == (0, 2, [])

    queues_text, workers_text = ok("info", "-W", "--url", url).split("\n\n")
    assert_table(queues_text)
    header, *rows = assert_table(workers_text)
    totals = ["jobs", "finished", "failed", "busy_s", "last_heartbeat"]
    assert header == WORKER_FIELDS[:-3] + totals
    assert rows[0][:10] == [
        "busy-worker",
        busy["host"],
        str(busy["pid"]),
        "threading",
        "2",
        "1",
        "1",
        "busy",
        "busy",
        "1",
    ]
    assert rows[1][7:10] == ["idle", "other,default", "0"]

    redis_server.client().rpush("release", "done")
    assert job.get(timeout=10) == "done"
    wait_for(
        lambda: (
            json.loads(ok("info", "-W", "--json", "--url", url))["workers"][0]["current_jobs"] == []
        ),
        timeout=10,
        interval=0.1,
        message="busy worker idle again",
    )


def test_enqueue_prints_the_id_alone_and_stores_the_call(redis_url):
    out = ok_process(
        "enqueue",
        "-q",
        "mail",
        "--priority",
        7,
        "--url",
        redis_url,
        "tests.worker.jobs:record",
        '"u"',
        1.5,
        '{"k": [1, null]}',
    )
    assert JOB_ID.match(out), repr(out)
    job = Job.fetch(out.strip(), redis_url)
    assert job.args == ["u", 1.5, {"k": [1, None]}] and job.kwargs == {}
    assert (job.priority, job.queue_name, job.status) == (7, "mail", "queued")
    assert job.func_name == "tests.worker.jobs:record"


def test_enqueue_in_and_at_schedule_the_job(redis_server):
    redis_url = redis_server.url
    later = ok("enqueue", "-q", "mail", "--in", 60, "--url", redis_url, "m:f").strip()
    at = ok(
        "enqueue", "-q", "mail", "--at", "2100-01-01T00:00:00", "--url", redis_url, "m:f"
    ).strip()
    assert Job.fetch(later, redis_url).status == "scheduled"
    assert Job.fetch(at, redis_url).status == "scheduled"
    assert set(Queue("mail", redis_url).scheduled_job_ids) == {later, at}
    assert Queue("mail", redis_url).count == 0


def test_job_and_ping(redis_server):
    redis_url = redis_server.url
    out = ok_process("ping", "--url", redis_url)
    assert out.startswith(f"PONG redis://127.0.0.1:{redis_server.port}/0 (Redis ")
    job = Queue("q1", redis_url).enqueue("tests.worker.jobs:add", 1, 2, priority=3)
    text = ok("job", job.id, "--url", redis_url)
    assert re.search(r"^status\s+queued$", text, re.M)
    assert re.search(r"^function\s+tests\.worker\.jobs:add$", text, re.M)
    assert re.search(r"^priority\s+3$", text, re.M)
    report = json.loads(ok("job", job.id, "--json", "--url", redis_url))
    assert (report["id"], report["queue"], report["attempts"]) == (job.id, "q1", 0)
    assert report["args"] == [1, 2] and report["enqueued_at"]

    done = rqconc("job", "0123abc", "--url", redis_url)
    assert_one_line_error(done, 1)
    assert "no such job 0123abc" in done.stderr


def test_server_status_and_stop_manage_the_embedded_server(request):
    # Real subprocesses: the embedded server is started by, and outlives, the command.
    home = os.environ["RQCONC_HOME"]
    status = json.loads(ok_process("server", "status", "--json"))
    assert status["running"] is False and status["socket"].startswith(home)
    assert "no embedded" in ok_process("server", "stop")

    request.addfinalizer(lambda: rqconc("server", "stop"))
    assert ok_process("ping").startswith("PONG unix://")  # first use starts the embedded server
    status = ok_process("server", "status")
    assert re.search(r"^running\s+yes$", status, re.M)
    assert re.search(r"^pid\s+[0-9]+$", status, re.M) and re.search(r"^version\s+\d", status, re.M)
    assert "stopped" in ok_process("server", "stop")
    assert json.loads(ok_process("server", "status", "--json"))["running"] is False


# Every command of SPEC section 1 that talks to Redis (cron list: test_cron_cli.py).
UNREACHABLE = [
    ["info", "-W", "--json"],
    ["info", "-W"],
    ["enqueue", "-q", "a", "m:f", "1"],
    ["job", "abc"],
    ["ping", "--worker", "w"],
    ["suspend"],
    ["resume"],
    ["requeue", "--all"],
    ["requeue", "abc"],
    ["failed", "list"],
    ["failed", "show", "abc"],
    ["failed", "purge"],
    ["cancel", "abc"],
    ["events"],
    ["events", "--follow"],
    ["cron", "remove", "abc"],
]

MISUSE = [
    (["enqueue", "-q", "a", "m:f", "1", "{oops"], "{oops"),
    (["enqueue", "-q", "a", "--in", "5", "--at", "2100-01-01", "m:f"], "--in"),
    (["enqueue", "-q", "a", "--at", "tomorrow", "m:f"], "tomorrow"),
    (["enqueue", "-q", "a", "--priority", "500", "m:f"], "priority"),
    (["enqueue", "-q", "a", "not-a-function"], "not-a-function"),
    (["enqueue", "m:f"], "-q"),
    (["info", "--url", "http://example"], "redis://"),
]


def test_unreachable_redis_is_one_line_without_the_password():
    port = free_port()
    url = f"redis://:s3cretpw@127.0.0.1:{port}/0"
    for done in rqconc_all([[*args, "--url", url] for args in UNREACHABLE]):
        assert_one_line_error(done, 1)
        assert f"127.0.0.1:{port}" in done.stderr, done.args
        assert "pw" not in done.stderr + done.stdout and done.stdout == "", done.args


def test_events_follow_ends_with_one_line_when_redis_goes_away(redis_binary, request):
    server = RedisServer(redis_binary, password="s3cretpw").start()
    request.addfinalizer(server.close)
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "events", "--follow", "-n", "0", "--url", server.url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    request.addfinalizer(lambda: process.poll() is None and process.kill())
    printed = []
    threading.Thread(target=lambda: printed.extend(process.stdout), daemon=True).start()
    q = Queue("default", server.url)

    def following():
        q.enqueue("tests.worker.jobs:add", 1, 2)  # until the follower has printed one
        return printed

    wait_for(following, timeout=15, interval=0.1, message="a followed event")
    server.kill()
    process.wait(15)
    done = subprocess.CompletedProcess(process.args, process.returncode, "", process.stderr.read())
    assert_one_line_error(done, 1)
    assert f"127.0.0.1:{server.port}" in done.stderr and "s3cretpw" not in done.stderr


def test_misuse_is_one_line_and_exit_2():
    # Nothing listens at the URL: misuse must be reported before Redis is ever needed.
    url = f"redis://127.0.0.1:{free_port()}"
    commands = [args if "--url" in args else [*args, "--url", url] for args, _ in MISUSE]
    for done, (_, named) in zip(rqconc_all(commands), MISUSE):
        assert_one_line_error(done, 2)
        assert named in done.stderr and done.stdout == "", (done.args, done.stderr)


def test_suspend_and_resume_set_and_clear_the_flag_every_worker_reads(redis_url):
    from rqconc.queue.control import is_suspended

    result = rqconc("suspend", "--url", redis_url)
    assert result.returncode == 0 and is_suspended(redis_url)
    result = rqconc("resume", "--url", redis_url)
    assert result.returncode == 0 and not is_suspended(redis_url)
    result = rqconc("suspend", "--duration", "30", "--url", redis_url)
    assert result.returncode == 0 and "30 s" in result.stdout
    assert 0 < Queue(connection=redis_url).connection.pttl("{rqconc}:suspended") <= 30000
    bad = rqconc("suspend", "--duration", "0", "--url", redis_url)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
