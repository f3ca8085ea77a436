"""Eager mode behaves as a worker would where an application's test can tell (issue 30): a
job's `timeout` ends it with `JobTimeout` (retried per its policy), `unique_key` and
`unique_for` hold within the process, the allow-list of RQCONC_EAGER_ALLOW applies, `ttl`
expires a job held by a paused queue, and `pause`/`resume`/`set_limits` are kept; a delay,
which an inline run cannot wait for, is refused with one line."""

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from rqconc import Dependency, JobStatus, JobTimeout, Retry
from rqconc.cli.app import cli
from rqconc.queue.eager import forget_jobs
from rqconc.queue.queue import Queue
from tests.queue import eager_tasks
from tests.support.redis_server import free_port

TIMEOUT = "rqconc.errors.JobTimeout"


@pytest.fixture
def q():
    eager_tasks.SEEN.clear()
    yield Queue("eager-w", connection=f"redis://127.0.0.1:{free_port()}/0", eager=True)
    forget_jobs()


# ---- timeout ----
def test_a_job_past_its_timeout_is_stopped_and_failed_with_job_timeout(q):
    started = time.monotonic()
    job = q.enqueue(eager_tasks.sleeps, 30, timeout=0.2)
    assert time.monotonic() - started < 10  # interrupted, not run to its end
    assert job.status is JobStatus.FAILED and job.attempts == 1  # JobTimeout: not retried
    exc_type, message, _ = job.exc_info
    assert (exc_type, message) == (TIMEOUT, "the job ran past its timeout of 0.2 s and was stopped")


def test_a_timeout_is_retried_when_the_policy_lists_job_timeout(q):
    job = q.enqueue(eager_tasks.sleeps, 30, timeout=0.1, retry=Retry(max=2, on=JobTimeout))
    assert job.status is JobStatus.FAILED and job.attempts == 3
    assert eager_tasks.SEEN == [("sleeps", 30)] * 3


def test_a_job_that_returns_past_its_timeout_fails_even_where_no_signal_reaches_it(q):
    jobs = []
    thread = threading.Thread(
        target=lambda: jobs.append(
            q.enqueue(eager_tasks.sleeps_through_interrupts, 0.3, timeout=0.1)
        )
    )
    thread.start()
    thread.join(30)
    (job,) = jobs
    assert job.status is JobStatus.FAILED and job.return_value is None
    assert job.exc_info[:2] == (TIMEOUT, "the job ran past its timeout of 0.1 s")


def test_an_async_job_past_its_timeout_fails_with_job_timeout(q):
    job = q.enqueue(eager_tasks.sleeps_async, 30, timeout=0.2)
    assert job.status is JobStatus.FAILED and job.exc_info[0] == TIMEOUT
    assert q.enqueue(eager_tasks.sleeps_async, 0, timeout=5).get() == 0  # its loop still runs


def test_a_job_within_its_timeout_finishes(q):
    assert q.enqueue(eager_tasks.sleeps, 0.01, timeout=5).get() == 0.01


# ---- unique_key, unique_for ----
def test_unique_for_returns_the_job_that_holds_the_key(q):
    first = q.enqueue(eager_tasks.add, 1, 2, unique_key="k", unique_for=60)
    again = q.enqueue(eager_tasks.add, 5, 5, unique_key="k", unique_for=60)
    assert again.id == first.id and again.get() == 3
    other = q.enqueue(eager_tasks.add, 5, 5, unique_key="other")
    assert other.id != first.id and other.get() == 10


def test_without_unique_for_an_ended_job_frees_its_key(q):
    first = q.enqueue(eager_tasks.add, 1, 2, unique_key="k")
    again = q.enqueue(eager_tasks.add, 5, 5, unique_key="k")
    assert again.id != first.id and again.get() == 10


def test_a_waiting_job_holds_its_unique_key(q):
    q.pause()
    first = q.enqueue(eager_tasks.add, 1, 2, unique_key="k")
    assert q.enqueue(eager_tasks.add, 5, 5, unique_key="k").id == first.id
    q.resume()
    assert first.get() == 3


# ---- the allow-list ----
def test_the_allow_list_of_rqconc_eager_allow_refuses_other_modules(monkeypatch, q):
    monkeypatch.setenv("RQCONC_EAGER_ALLOW", "myapp, otherapp")
    strict = Queue("eager-strict", eager=True)
    job = strict.enqueue(eager_tasks.echo, 1)
    assert job.status is JobStatus.FAILED and eager_tasks.SEEN == []  # never imported, run
    exc_type, message, _ = job.exc_info
    assert exc_type == "rqconc.errors.NotAllowed"
    assert "(myapp, otherapp)" in message and "add tests to RQCONC_EAGER_ALLOW" in message
    monkeypatch.setenv("RQCONC_EAGER_ALLOW", "tests.queue")
    assert Queue("eager-strict", eager=True).enqueue(eager_tasks.add, 1, 1).get() == 2


# ---- pause, resume, limits, ttl ----
def test_a_paused_eager_queue_holds_its_jobs_until_resumed(q):
    q.pause()
    assert q.is_paused and Queue("eager-w", eager=True).is_paused  # one setting per queue
    held = [q.enqueue(eager_tasks.echo, n) for n in (1, 2)]
    assert [j.status for j in held] == [JobStatus.QUEUED] * 2 and eager_tasks.SEEN == []
    assert Queue("elsewhere", eager=True).enqueue(eager_tasks.add, 1, 1).get() == 2
    q.resume()
    assert not q.is_paused
    assert [j.status for j in held] == [JobStatus.FINISHED] * 2
    assert [args for _, args, _ in eager_tasks.SEEN] == [(1,), (2,)]


def test_a_dependent_of_a_held_job_waits_for_it(q):
    q.pause()
    parent = q.enqueue(eager_tasks.add, 1, 2)
    child = Queue("eager-other", eager=True).enqueue(
        eager_tasks.echo, depends_on=Dependency(parent)
    )
    assert child.status is JobStatus.DEFERRED
    q.resume()
    assert parent.get() == 3 and child.status is JobStatus.FINISHED


def test_set_limits_are_validated_and_read_back(q):
    q.set_limits(concurrency=2, rate="10/s")
    q.set_group_limits(concurrency=1)
    assert (q.limits.concurrency, q.limits.rate, q.limits.group_concurrency) == (2, "10/s", 1)
    assert q.enqueue(eager_tasks.add, 1, 1).get() == 2  # a cap never holds an inline run
    with pytest.raises(ValueError, match="rate must be like"):
        q.set_limits(rate="fast")
    q.set_limits()
    assert q.limits.concurrency is None and q.limits.rate is None


def test_a_job_held_past_its_ttl_expires_instead_of_running(q):
    q.pause()
    expiring = q.enqueue(eager_tasks.echo, "late", ttl=0.05)
    kept = q.enqueue(eager_tasks.echo, "kept", ttl=3600)
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:  # the ttl runs out while the queue is paused
        time.sleep(0.02)
    q.resume()
    assert expiring.status is JobStatus.CANCELED
    assert expiring.exc_info[1] == "expired: not started within its ttl"
    assert kept.get() == {"args": ["kept"], "kwargs": {}}
    assert q.enqueue(eager_tasks.add, 1, 1, ttl=1).get() == 2  # started at once: in time


# ---- delays: refused ----
def test_a_delay_is_refused_with_what_to_do(q):
    later = datetime.now(timezone.utc) + timedelta(days=1)
    refusal = "is eager and runs each job inline.*enqueue without the delay"
    with pytest.raises(RuntimeError, match=refusal):
        q.enqueue_at(later, eager_tasks.add, 1, 2)
    with pytest.raises(RuntimeError, match=refusal):
        q.enqueue_in(timedelta(hours=1), eager_tasks.add, 2, 2)
    with pytest.raises(RuntimeError, match="cannot wait out a debounce"):
        q.enqueue(eager_tasks.add, 2, 2, unique_key="k", debounce=1)
    with pytest.raises(ValueError):  # a bad delay is still a bad delay
        q.enqueue_in(-1, eager_tasks.add, 1, 1)


def test_the_cli_s_in_on_an_eager_queue_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("RQCONC_EAGER", "1")
    url = f"redis://127.0.0.1:{free_port()}/0"
    result = CliRunner().invoke(
        cli,
        [
            "enqueue",
            "-q",
            "mail",
            "--url",
            url,
            "--in",
            "10",
            "tests.queue.eager_tasks:add",
            "1",
            "2",
        ],
    )
    assert result.exit_code == 2
    assert "is eager" in result.output and "Traceback" not in result.output
