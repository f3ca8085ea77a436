"""`rqconc failed list|show|purge` and `rqconc requeue --all | ID ...` on real Redis."""

import json

from rqconc.queue.job import JobStatus
from rqconc.queue.queue import Queue
from rqconc.worker.redis_source import RedisSource
from tests.cli.test_commands import assert_table, in_process, rqconc
from tests.queue import tasks
from tests.queue.helpers import take_and_run


def dead_letters(url, count, queue_name="mail"):
    queue = Queue(queue_name, connection=url)
    source = RedisSource(url, queues=[queue_name], allow=["tests"])
    jobs = [queue.enqueue(tasks.boom, f"bad address {n}") for n in range(count)]
    for _ in jobs:
        take_and_run(source)
    assert all(job.status == JobStatus.FAILED for job in jobs)
    return queue, jobs


def test_failed_list_and_show_name_each_dead_letter_and_its_error(redis_url):
    _, jobs = dead_letters(redis_url, 2)
    _, (other,) = dead_letters(redis_url, 1, "newsletters")
    listed = rqconc("failed", "list", "--url", redis_url)
    assert listed.returncode == 0
    header, *rows = assert_table(listed.stdout)
    assert header == ["ID", "QUEUE", "FUNCTION", "ATTEMPTS", "ERROR"]
    expected = [
        [job.id, "mail", "tests.queue.tasks:boom", "1", f"ValueError: bad address {n}"]
        for n, job in enumerate(jobs)
    ]
    expected.append(
        [other.id, "newsletters", "tests.queue.tasks:boom", "1", "ValueError: bad address 0"]
    )
    assert sorted(rows) == sorted(expected)
    rows = json.loads(in_process("failed", "list", "--json", "--url", redis_url).stdout)
    assert sorted(row["id"] for row in rows) == sorted(job.id for job in [*jobs, other])
    assert {(row["queue"], row["attempts"]) for row in rows} == {("mail", 1), ("newsletters", 1)}
    shown = in_process("failed", "show", jobs[0].id, "--url", redis_url)
    assert shown.returncode == 0 and "Traceback" in shown.stdout
    missing = rqconc("failed", "show", "nope", "--url", redis_url)
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1


def test_requeue_by_id_and_all_then_purge(redis_url):
    queue, jobs = dead_letters(redis_url, 3)
    one = rqconc("requeue", jobs[0].id, "--url", redis_url)
    assert one.returncode == 0 and one.stdout.strip() == "requeued 1 job"
    assert queue.job_ids == [jobs[0].id] and jobs[0].attempts == 0
    assert in_process("requeue", "--all", "--url", redis_url).stdout.strip() == "requeued 2 jobs"
    # Dead letters are ordered by failure time (ms): two of the same ms may come back in
    # either order.
    assert queue.job_ids[0] == jobs[0].id and set(queue.job_ids) == {j.id for j in jobs}
    assert len(queue.failed) == 0
    queue.empty()
    dead_letters(redis_url, 2)
    assert rqconc("failed", "purge", "--url", redis_url).stdout.strip() == "purged 2 dead letters"
    dead_letters(redis_url, 1)
    assert (
        in_process("failed", "purge", "--url", redis_url).stdout.strip() == "purged 1 dead letter"
    )
    assert len(queue.failed) == 0


def test_requeue_misuse_is_one_line_and_exit_2(redis_url):
    for args in (["requeue"], ["requeue", "--all", "some-id"]):
        result = rqconc(*args, "--url", redis_url)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
