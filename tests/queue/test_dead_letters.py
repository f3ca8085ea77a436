"""SPEC section 3, dead letters: failed-for-good jobs are listed in q.failed with their
traceback; requeue(id), requeue_all() and purge() (requeueing resets attempts, keeps the id)."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from rqconc.cli.app import cli
from rqconc.errors import JobFailed
from rqconc.queue.job import JobStatus
from tests.queue import tasks
from tests.queue.helpers import take_and_run, wait_for
from tests.support.clock import clock_env, install_clock
from tests.support.worker_process import ROOT


def fail_for_good(queue, source, count=1):
    jobs = [queue.enqueue(tasks.boom, f"boom {n}") for n in range(count)]
    for job in jobs:
        take_and_run(source)
        assert job.status == JobStatus.FAILED
    return jobs


def test_a_job_that_failed_for_good_is_listed_with_its_traceback(queue, source):
    (job,) = fail_for_good(queue, source)
    assert queue.failed.job_ids == [job.id] and len(queue.failed) == 1 and job.id in queue.failed
    exc_type, message, traceback = queue.failed.jobs()[0].exc_info
    assert message == "boom 0" and "tasks.py" in traceback and job.attempts == 1


def test_requeue_runs_it_again_with_the_same_id_and_attempts_reset(queue, source):
    (job,) = fail_for_good(queue, source)
    assert queue.failed.requeue(job.id) is True
    assert job.status == JobStatus.QUEUED and job.attempts == 0 and job.exc_info is None
    assert queue.job_ids == [job.id] and len(queue.failed) == 0
    take_and_run(source)  # fails again: a new outcome, not the old one
    with pytest.raises(JobFailed):
        job.get(timeout=2)
    assert job.attempts == 1 and job.id in queue.failed


def test_requeue_all_puts_every_dead_letter_back_in_failure_order(queue, source):
    jobs = fail_for_good(queue, source, 3)
    assert queue.failed.requeue_all() == 3
    assert queue.job_ids == [j.id for j in jobs]
    assert queue.failed.requeue("not-a-dead-letter") is False


def test_purge_deletes_the_dead_letters_and_their_data(queue, source, client, keys):
    jobs = fail_for_good(queue, source, 2)
    assert queue.failed.purge() == 2
    assert len(queue.failed) == 0
    assert not any(client.exists(keys.job(j.id), keys.done(j.id)) for j in jobs)


def cli_json(redis_url, *args):
    done = CliRunner().invoke(cli, [*args, "--json", "--url", redis_url])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_a_dead_letter_is_gone_from_q_failed_once_its_failure_ttl_expired(
    queue, source, client, keys, redis_url
):
    kept = queue.enqueue(tasks.boom, "kept")
    take_and_run(source, "c1")
    brief = queue.enqueue(tasks.boom, "brief", failure_ttl=1)
    take_and_run(source, "c2")
    assert queue.failed.job_ids == [kept.id, brief.id] and len(queue.failed) == 2
    wait_for(
        lambda: not client.exists(keys.job(brief.id), keys.done(brief.id)),
        timeout=5,
        message="the dead letter's data to expire",
    )
    # No maintenance pass has run yet: the readers alone leave it out.
    assert queue.failed.job_ids == [kept.id] and len(queue.failed) == 1
    assert brief.id not in queue.failed and kept.id in queue.failed
    assert [j.id for j in queue.failed.jobs()] == [kept.id]
    assert [row["id"] for row in cli_json(redis_url, "failed", "list")] == [kept.id]
    assert cli_json(redis_url, "info")["queues"][0]["failed"] == 1


def test_a_maintenance_pass_drops_expired_dead_letters_from_the_registry(
    queue, source, client, keys
):
    kept = queue.enqueue(tasks.boom, "kept")
    take_and_run(source, "c1")
    brief = queue.enqueue(tasks.boom, "brief", failure_ttl=1)
    take_and_run(source, "c2")
    source.maintain()
    assert client.zscore(keys.failed("default"), brief.id) is not None  # not expired yet
    wait_for(
        lambda: not client.exists(keys.job(brief.id)),
        timeout=5,
        message="the dead letter's data to expire",
    )
    client.delete(keys.maintenance)  # the pass of another second
    source.maintain()
    assert [m.decode() for m in client.zrange(keys.failed("default"), 0, -1)] == [kept.id]
    assert client.zscore(keys.failed_expiry("default"), brief.id) is None
    assert queue.failed.job_ids == [kept.id] and queue.failed.requeue(brief.id) is False


READERS = """\
import json, sys
from rqconc.dashboard.reads import failed_page
from rqconc.queue.counts import queue_counts
from rqconc.queue.queue import Queue
q = Queue("default", connection=sys.argv[1])
print(json.dumps([len(q.failed), q.failed.job_ids, sys.argv[2] in q.failed,
    queue_counts(q.connection, ["default"])[0]["failed"],
    failed_page(q.connection, "rqconc", "default")["total"]]))
"""


@pytest.mark.parametrize("skew", [2 * 3600, -2 * 3600])
def test_every_reader_of_dead_letters_reads_them_on_redis_clock(
    queue, source, redis_url, tmp_path, skew
):
    """q.failed, the counts of info/metrics and the dashboard read one expiry on one clock:
    a process whose clock is hours off agrees with Redis on what has expired."""
    (kept,) = fail_for_good(queue, source)
    (expired,) = fail_for_good(queue, source)
    seconds, micros = queue.connection.time()
    now = seconds * 1000 + micros // 1000
    expiry = queue.keys.failed_expiry("default")
    queue.connection.zadd(expiry, {kept.id: now + 3600_000, expired.id: now - 1000})
    env = {**os.environ, **clock_env(install_clock(tmp_path / "clock"), skew)}
    env["PYTHONPATH"] += os.pathsep + str(ROOT)
    ran = subprocess.run(
        [sys.executable, "-c", READERS, redis_url, kept.id],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [1, [kept.id], True, 1, 1]
