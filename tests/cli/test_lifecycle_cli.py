"""`rqconc cancel`, `rqconc events` and the deferred count of `rqconc info` on real Redis: a
real subprocess for each command's output and errors, the outputs read again in process."""

import json
import signal
import subprocess
import sys
import threading

from rqconc import JobStatus, Queue
from tests.cli.test_commands import ENTRY, ROOT, assert_one_line_error, ok, ok_process, rqconc
from tests.support.waiting import wait_for
from tests.support.worker_process import default_sigint


def test_cancel_cancels_waiting_jobs_and_names_the_missing_ones(redis_url):
    q = Queue("default", redis_url)
    first, second = q.enqueue("tests.worker.jobs:add", 1, 2), q.enqueue_in(60, "x.y:z")
    out = ok_process("cancel", first.id, second.id, "--url", redis_url)
    assert out.splitlines() == [f"{first.id}  canceled", f"{second.id}  canceled"]
    assert (first.status, second.status) == (JobStatus.CANCELED, JobStatus.CANCELED)
    assert ok("cancel", first.id, "--url", redis_url).strip() == f"{first.id}  already ended"
    assert_one_line_error(rqconc("cancel", "nope", "--url", redis_url), 1)
    assert_one_line_error(rqconc("cancel", "--url", redis_url), 2)


def test_events_prints_a_jobs_transitions_in_text_and_json(redis_url):
    q = Queue("default", redis_url)
    job = q.enqueue("tests.worker.jobs:add", 1, 2)
    job.cancel()
    lines = [json.loads(line) for line in ok("events", "--json", "--url", redis_url).splitlines()]
    assert [(e["event"], e["job_id"], e["queue"]) for e in lines] == [
        ("queued", job.id, "default"),
        ("canceled", job.id, "default"),
    ]
    assert all({"event", "job_id", "queue", "ts", "worker"} <= set(e) for e in lines)
    text = ok("events", "--job", job.id, "--url", redis_url).splitlines()
    assert [line.split()[1:3] for line in text] == [["queued", job.id], ["canceled", job.id]]


def test_events_text_lines_up_time_event_and_job(redis_url):
    # A log, not a table (--follow prints each line as it comes, so later widths are
    # unknown): the fixed-width leading columns line up, the rest follows as it is.
    first = Queue("default", redis_url).enqueue("tests.worker.jobs:add", 1, 2)
    second = Queue("newsletters", redis_url).enqueue_in(60, "tests.worker.jobs:add", 1, 2)
    first.cancel()
    second.cancel()
    events = [json.loads(line) for line in ok("events", "--json", "--url", redis_url).splitlines()]
    lines = ok_process("events", "--url", redis_url).splitlines()
    assert [e["event"] for e in events] == ["queued", "scheduled", "canceled", "canceled"]
    assert len(lines) == len(events)
    for line, event in zip(lines, events):
        assert line.split()[1:4] == [event["event"], event["job_id"], event["queue"]]
    job_columns = {line.index(e["job_id"]) for line, e in zip(lines, events)}
    queue_columns = {
        line.index(" " + e["queue"] + " ", line.index(e["job_id"]))
        for line, e in zip(lines, events)
    }
    assert len(job_columns) == 1 and len(queue_columns) == 1, "\n".join(lines)


def test_events_follow_prints_new_events_until_interrupted(redis_url):
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ENTRY,
            "events",
            "--follow",
            "--json",
            "-n",
            "0",
            "--url",
            redis_url,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    seen = []
    reader = threading.Thread(
        target=lambda: seen.extend(map(json.loads, process.stdout)), daemon=True
    )
    reader.start()
    q = Queue("default", redis_url)

    def follower_printed_one():
        # It follows from the moment it started reading, which we cannot see: keep enqueuing.
        q.enqueue("tests.worker.jobs:add", 1, 2)
        return seen

    try:
        wait_for(follower_printed_one, timeout=15, interval=0.1, message="a followed event")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(10)
    assert seen[0]["event"] == "queued"
    assert process.returncode == 0 and "Traceback" not in process.stderr.read()


def test_info_counts_deferred_jobs(redis_url):
    q = Queue("deps", redis_url)
    parent = q.enqueue("tests.worker.jobs:add", 1, 2)
    q.enqueue("tests.worker.jobs:add", 1, 2, depends_on=parent)
    report = json.loads(ok("info", "--json", "--url", redis_url))
    assert report["queues"][0]["deferred"] == 1 and report["queues"][0]["queued"] == 1
    parent.cancel()
    report = json.loads(ok("info", "--json", "--url", redis_url))
    assert report["queues"][0]["deferred"] == 0
