"""Worker logging: `--log-format json|text`, one line per job transition with its fields,
nothing per job at WARNING, and never a password."""

import io
import json
import logging
import signal

import pytest

from rqconc import JobFailed, Queue
from rqconc.worker.logs import configure
from tests.support.worker_process import BACKENDS

LEAKY_URL = "redis://alice:hunter2-secret@db.internal:6379/0"


def leak_url() -> None:
    """A job whose error message carries a URL with a password."""
    raise RuntimeError(f"could not reach {LEAKY_URL}")


def run_jobs(url, count=3):
    q = Queue(connection=url)
    jobs = [q.enqueue("tests.worker.jobs:add", n, 1) for n in range(count)]
    assert [j.get(timeout=15) for j in jobs] == [n + 1 for n in range(count)]
    return jobs


def stop(worker):
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(10) == 0
    return worker.output()


@pytest.mark.parametrize("backend", BACKENDS)
def test_json_format_every_line_is_an_object_with_the_job_fields(
    backend, redis_server, start_worker
):
    worker = start_worker(backend, 2, redis_server.url, "--log-format", "json", "--name", "w-json")
    jobs = run_jobs(redis_server.url)
    lines = stop(worker).splitlines()
    entries = [json.loads(line) for line in lines]  # every stderr line parses
    for entry in entries:
        assert {"ts", "level", "logger", "message"} <= set(entry), entry
    finished = {e["job_id"]: e for e in entries if e.get("event") == "finished"}
    assert set(finished) == {j.id for j in jobs}, lines
    # Exactly one line per transition, started before finished.
    transitions = [(e["job_id"], e["event"]) for e in entries if "event" in e]
    for job in jobs:
        assert [t for t in transitions if t[0] == job.id] == [
            (job.id, "started"),
            (job.id, "finished"),
        ]
    for entry in finished.values():
        assert entry["queue"] == "default" and entry["worker"] == "w-json"
        assert entry["level"] == "INFO" and entry["logger"] == "rqconc.worker"
        assert isinstance(entry["duration"], float) and 0 <= entry["duration"] < 10
        assert entry["ts"].endswith("Z")


def test_text_format_has_key_value_fields_and_masks_passwords(redis_server, start_worker):
    worker = start_worker("forking", 2, redis_server.url, "--log-format", "text")
    (job,) = run_jobs(redis_server.url, 1)
    failing = Queue(connection=redis_server.url).enqueue("tests.worker.test_logging:leak_url")
    with pytest.raises(JobFailed):
        failing.get(timeout=15)
    output = stop(worker)
    line = next(
        line
        for line in output.splitlines()
        if f"job_id={job.id}" in line and "event=finished" in line
    )
    assert " queue=default " in line and " duration=" in line and " worker=" in line
    failed = [line for line in output.splitlines() if f"job_id={failing.id}" in line]
    assert failed and "event=failed" in failed[-1]
    assert "db.internal" in output and "alice:***@db.internal" in output
    assert "hunter2-secret" not in output


def test_warning_level_prints_nothing_per_job(redis_server, start_worker):
    worker = start_worker("forking", 2, redis_server.url, "--log-level", "WARNING")
    jobs = run_jobs(redis_server.url, 5)
    output = stop(worker)
    assert not any(job.id in output for job in jobs), output
    assert "event=" not in output and "started" not in output


def test_the_filter_masks_passwords_in_messages_extras_and_tracebacks():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    configure("INFO", "json", stream, export=False)
    try:
        log = logging.getLogger("rqconc.test")
        log.info("connecting to %s", LEAKY_URL, extra={"url": LEAKY_URL, "n": 1})
        try:
            raise ValueError(f"bad {LEAKY_URL}")
        except ValueError:
            log.exception("boom")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    entries = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert entries[0]["message"] == "connecting to redis://alice:***@db.internal:6379/0"
    assert entries[0]["url"] == "redis://alice:***@db.internal:6379/0" and entries[0]["n"] == 1
    assert "ValueError" in entries[1]["exc"]
    assert "hunter2-secret" not in stream.getvalue()


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_failure_line_carries_the_jobs_traceback_from_its_own_code(
    fmt, redis_server, start_worker
):
    worker = start_worker("forking", 1, redis_server.url, "--log-format", fmt)
    job = Queue(connection=redis_server.url).enqueue("tests.worker.jobs:fail", "boom", retry=None)
    with pytest.raises(JobFailed):
        job.get(timeout=15)
    output = stop(worker)
    # The stored traceback starts at the job's code: no frame of rqconc's runner above it.
    stored = job.exc_info[2]
    first_frame = stored.splitlines()[1]
    assert stored.startswith("Traceback") and "tests/worker/jobs.py" in first_frame, stored
    assert "rqconc/" not in stored and stored.rstrip().endswith("ValueError: boom"), stored
    if fmt == "json":
        entries = [json.loads(line) for line in output.splitlines()]
        (failed,) = [e for e in entries if e.get("event") == "failed"]
        assert failed["level"] == "INFO" and failed["exc"] == stored, failed
    else:
        lines = output.splitlines()
        (at,) = [i for i, line in enumerate(lines) if "event=failed" in line]
        assert "exc=" not in lines[at] and lines[at + 1] == "Traceback (most recent call last):"
        assert "ValueError: boom" in "\n".join(lines[at + 1 : at + len(stored.splitlines()) + 1])
