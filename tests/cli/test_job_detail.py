"""SPEC section 14: `rqconc job ID` shows log_tag, lost and a running job's elapsed time."""

import json

from click.testing import CliRunner

from rqconc.cli.app import cli
from rqconc.cli.job import describe_job
from rqconc.queue.job import JobStatus
from rqconc.queue.queue import Queue
from tests.support.waiting import wait_for


def show(url, job_id, *extra):
    result = CliRunner().invoke(cli, ["job", job_id, "--url", url, *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_rqconc_job_shows_log_tag_lost_and_the_elapsed_time_of_a_running_job(
    redis_url, start_worker
):
    q = Queue("slow", connection=redis_url)
    job = q.enqueue(
        "tests.queue.tasks:sleep_then_return", 30, "done", meta={"log_tag": "invoice-12"}
    )
    start_worker("threading", 1, redis_url, "-q", "slow")
    wait_for(lambda: job.refresh() or job.status is JobStatus.STARTED, timeout=15)
    first = json.loads(show(redis_url, job.id, "--json"))
    assert first["status"] == "started" and first["log_tag"] == "invoice-12"
    assert first["lost"] == 0 and 0 <= first["elapsed"] < 30
    later = wait_for(
        lambda: (lambda r: r if r["elapsed"] >= first["elapsed"] + 0.5 else None)(
            json.loads(show(redis_url, job.id, "--json"))
        ),
        timeout=10,
        message="elapsed to grow",
    )
    assert later["elapsed"] < 30
    text = show(redis_url, job.id)
    assert "log_tag      invoice-12" in text and "lost         0" in text
    assert "s (running)" in text


def test_rqconc_job_shows_leases_lost_and_no_elapsed_once_ended(redis_url):
    q = Queue(connection=redis_url)
    job = q.enqueue("tests.queue.tasks:add", 1, 2)
    q.connection.hset(job.key, mapping={"lost": 2, "status": "failed"})
    report = json.loads(show(redis_url, job.id, "--json"))
    assert report["lost"] == 2 and "elapsed" not in report and "log_tag" not in report


def test_rqconc_job_shows_the_progress_a_job_reported_rounded(redis_url, start_worker):
    """Issue 32: progress printed raw floats (33.333333333333336)."""
    job = Queue("default", connection=redis_url).enqueue("tests.dashboard.jobs:a_third")
    start_worker("threading", 1, redis_url)
    wait_for(lambda: job.refresh() or job.status is JobStatus.FINISHED, timeout=30)
    shown = json.loads(show(redis_url, job.id, "--json"))["progress"]
    assert shown == {"percent": 33.3, "message": "a third"}
    assert "progress     33.3 % · a third\n" in show(redis_url, job.id)


def test_a_job_report_is_one_moment_even_for_a_job_that_changed_since_its_fetch(
    redis_url, start_worker
):
    q = Queue("moment", connection=redis_url)
    job = q.enqueue("tests.worker.jobs:add", 2, 3)
    stale = q.fetch_job(job.id)  # fetched while queued: no started_at, no ended_at
    start_worker("threading", 1, redis_url, "-q", "moment")
    wait_for(lambda: job.status is JobStatus.FINISHED, timeout=15, message="job finished")
    report = describe_job(stale)
    assert (report["status"], report["attempts"], report["result"]) == ("finished", 1, 5)
    assert report["started_at"] and report["ended_at"], report
