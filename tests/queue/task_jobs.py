"""Module-level tasks for tests/queue/test_task.py (workers import them by name)."""

from rqconc import Priority, Retry, task


@task("tasks", priority=Priority.HIGH, timeout=7, retry=Retry(max=2, backoff=0.1, jitter=False))
def add(a: int, b: int) -> int:
    return a + b


@task
def shout(text: str, suffix: str = "!") -> str:
    return text.upper() + suffix


@task("tasks", meta={"team": "sms"}, result_ttl=60)
def echo(*args: object, **kwargs: object) -> dict:
    return {"args": list(args), "kwargs": kwargs}
