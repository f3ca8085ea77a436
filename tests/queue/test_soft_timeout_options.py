"""SPEC 18, soft timeouts, at enqueue: `soft_timeout` below the job's timeout is stored with
the job (the queue, enqueue_call, enqueue_many, @task and .options(), rqconc.aio, the
CLI); a bad value is one line before anything is sent; eager mode raises JobSoftTimeout
inside the job as a worker does."""

import asyncio

import pytest
from click.testing import CliRunner

from rqconc import Job, JobFailed, JobStatus, Queue, task
from rqconc.aio import AsyncQueue
from rqconc.cli.app import cli
from rqconc.queue.eager import forget_jobs
from tests.queue import eager_tasks
from tests.support.redis_server import free_port

ADD = "tests.queue.tasks:add"
BAD = [
    ({"soft_timeout": 2, "timeout": 2}, "below the job's timeout (2 s)"),
    ({"soft_timeout": 5, "timeout": 1.5}, "below the job's timeout (1.5 s)"),
    ({"soft_timeout": 200}, "below the job's timeout (180 s)"),  # the default timeout
    ({"soft_timeout": -1}, "finite number of seconds > 0"),
    ({"soft_timeout": 0}, "finite number of seconds > 0"),
    ({"soft_timeout": "0.3"}, "finite number of seconds > 0, not '0.3'"),
    ({"soft_timeout": True}, "finite number of seconds > 0"),
    ({"soft_timeout": float("nan")}, "finite number of seconds > 0"),
]


@pytest.mark.parametrize("options, message", BAD)
def test_a_bad_soft_timeout_is_refused_in_one_line_before_anything_is_sent(options, message):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens: refused before any command
    nowhere = Queue("soft", connection=url)
    calls = (
        lambda: nowhere.enqueue(ADD, 1, 2, **options),
        lambda: nowhere.enqueue_call(ADD, (1, 2), {}, **options),
        lambda: nowhere.enqueue_many([(ADD, (1, 2)), (ADD, (3, 4))], **options),
        lambda: task("soft", **options)(eager_tasks.add),
        lambda: task("soft")(eager_tasks.add).options(**options),
        lambda: asyncio.run(AsyncQueue("soft", url).enqueue(ADD, 1, 2, **options)),
    )
    for call in calls:
        with pytest.raises(ValueError) as info:
            call()
        assert "soft_timeout must be" in str(info.value) and message in str(info.value)
        assert "\n" not in str(info.value)


def test_a_soft_timeout_is_stored_with_the_job(redis_url):
    q = Queue("soft", connection=redis_url, default_timeout=300)
    job = q.enqueue(ADD, 1, 2, soft_timeout=200)  # below the queue's default timeout
    assert (job.timeout, job.soft_timeout) == (300, 200)
    many = q.enqueue_many([(ADD, (1, 2)), (ADD, (3, 4))], soft_timeout=1.5, timeout=3)
    assert [Job.fetch(j.id, redis_url).soft_timeout for j in many] == [1.5, 1.5]
    sms = task("soft", timeout=10, soft_timeout=4, connection=redis_url)(eager_tasks.add)
    assert Job.fetch(sms.delay(1, 2).id, redis_url).soft_timeout == 4
    assert Job.fetch(sms.options(soft_timeout=2).delay(1, 2).id, redis_url).soft_timeout == 2
    assert q.enqueue(ADD, 1, 2).soft_timeout is None  # none given: no field at all
    assert b"soft_timeout" not in q.connection.hkeys(q.keys.job(q.job_ids[-1]))


def test_the_cli_takes_soft_timeout_and_refuses_a_bad_one_in_one_line(redis_url):
    def run(*argv):
        return CliRunner().invoke(cli, ["enqueue", "-q", "soft", "--url", redis_url, *argv])

    given = run("--timeout", "5", "--soft-timeout", "2.5", ADD, "1", "2")
    assert given.exit_code == 0, given.output
    assert Job.fetch(given.output.strip(), redis_url).soft_timeout == 2.5
    refused = run("--timeout", "2", "--soft-timeout", "3", ADD, "1", "2")
    assert refused.exit_code == 2
    assert "soft_timeout must be below the job's timeout (2 s), not 3.0" in refused.output
    assert "Traceback" not in refused.output


@pytest.fixture
def eager():
    eager_tasks.SEEN.clear()
    yield Queue("eager-soft", connection=f"redis://127.0.0.1:{free_port()}/0", eager=True)
    forget_jobs()


def test_eager_mode_raises_the_soft_timeout_inside_the_job(eager):
    for func in (eager_tasks.saves_at_soft_timeout, eager_tasks.saves_at_soft_timeout_async):
        job = eager.enqueue(func, 30, soft_timeout=0.2, timeout=5)
        assert job.status is JobStatus.FINISHED and job.get() == "saved"
    assert eager_tasks.SEEN == [("saved",), ("saved async",)]
    failing = eager.enqueue(eager_tasks.sleeps, 30, soft_timeout=0.2, timeout=5)
    with pytest.raises(JobFailed) as info:
        failing.get()
    assert info.value.exc_type == "rqconc.errors.JobSoftTimeout"
    quick = eager.enqueue(eager_tasks.add, 1, 2, soft_timeout=0.2, timeout=5)
    assert quick.get() == 3


def test_in_eager_mode_the_hard_timeout_still_ends_a_job_that_ignores_the_soft_one(eager):
    job = eager.enqueue(eager_tasks.ignores_soft_timeout, 30, soft_timeout=0.2, timeout=0.6)
    with pytest.raises(JobFailed) as info:
        job.get()
    assert info.value.exc_type == "rqconc.errors.JobTimeout"
    assert eager_tasks.SEEN == [("ignored",)]
