"""Functions of the jobs an rqconc from before the second rebuild stored
(tests/fixtures/legacy_jobs.json; tests/queue/test_jobs_from_before_the_rebuild.py)."""

import redis

from rqconc import Next, get_current_job

FAILED_ONCE: set = set()


def add(a, b):
    return a + b


def fail_once(key):
    # Remembered in Redis: a retry may run in another child or process.
    client = get_current_job().connection
    if client.set(f"legacy:failed:{key}", "1", nx=True):
        raise RuntimeError("first attempt fails")
    return "second attempt"


def note(job, result):
    redis.Redis(connection_pool=job.connection.connection_pool).rpush("legacy:noted", result)
    return result


def stage_one(n):
    return Next("legacy", "tests.queue.legacy_tasks:stage_two", n * 10, result="one")


def stage_two(n):
    return n + 1


def total(results):
    return sum(results)
