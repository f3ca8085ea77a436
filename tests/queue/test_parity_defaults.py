"""SPEC section 14: a queue's default options, applied to every job that sets none."""

import pytest

from rqconc.queue.job import Job, JobStatus
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry
from tests.queue import tasks
from tests.queue.helpers import take_and_run

RETRY = Retry(max=2, backoff=5, jitter=False)


@pytest.fixture
def defaulted(redis_url):
    return Queue(
        "defaulted",
        connection=redis_url,
        default_timeout=7,
        default_result_ttl=60,
        default_retry=RETRY,
    )


def settings(job):
    job = Job.fetch(job.id, connection=job.connection)
    return job.timeout, job.result_ttl, job.retry


def test_every_way_of_enqueueing_applies_the_queue_defaults(defaulted):
    jobs = [
        defaulted.enqueue(tasks.add, 1, 2),
        defaulted.enqueue_call(tasks.add, (1, 2)),
        defaulted.enqueue_at(4_000_000_000, tasks.add, 1, 2),
        defaulted.enqueue_in(3600, tasks.add, 1, 2),
        *defaulted.enqueue_many([(tasks.add, (1, 2)), (tasks.add, (3, 4))]),
    ]
    assert [settings(job) for job in jobs] == [(7, 60, RETRY)] * 6


def test_a_job_s_own_option_wins_over_the_queue_default(defaulted):
    own = Retry(max=5)
    job = defaulted.enqueue(tasks.add, 1, 2, timeout=3, result_ttl=-1, retry=own)
    assert settings(job) == (3, -1, own)
    partly = defaulted.enqueue(tasks.add, 1, 2, timeout=None, result_ttl=10)
    assert settings(partly) == (7, 10, RETRY)


def test_a_cron_entry_of_the_queue_carries_its_defaults(defaulted):
    # Every tick's job is made from the entry's template, prepared at registration.
    (entry,) = [defaulted.cron("* * * * *", tasks.add, 1, 2, id="adder")]
    assert entry.template["timeout"] == "7" and entry.template["result_ttl"] == "60"
    assert Retry.from_json(entry.template["retry"]) == RETRY
    (listed,) = defaulted.crons()
    assert listed.template == entry.template


def test_a_queue_without_defaults_stores_the_global_ones(queue):
    job = Job.fetch(queue.enqueue(tasks.add, 1, 2).id, connection=queue.connection)
    assert (job.timeout, job.result_ttl, job.retry) == (180, 500, None)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"default_timeout": -1}, "default_timeout must be"),
        ({"default_timeout": float("nan")}, "default_timeout must be"),
        ({"default_result_ttl": 1.5}, "default_result_ttl must be"),
        ({"default_retry": 3}, "default_retry must be a rqconc.Retry"),
        ({"event_detail": "all"}, "event_detail must be 'basic' or 'full'"),
    ],
)
def test_bad_queue_defaults_are_refused_when_the_queue_is_made(redis_url, options, message):
    with pytest.raises(ValueError, match=message):
        Queue("q", connection=redis_url, **options)


def test_a_worker_runs_a_job_under_its_queue_s_default_retry(defaulted, make_source):
    job = defaulted.enqueue(tasks.boom)
    take_and_run(make_source(["defaulted"]))
    # The queue's Retry(max=2, backoff=5): a first failure waits 5 s for its re-run.
    assert job.refresh() is None and job.status is JobStatus.SCHEDULED
    assert job.attempts == 1
