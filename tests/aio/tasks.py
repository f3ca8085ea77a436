"""Jobs and a @task for tests/aio (a worker imports them: `--allow tests`)."""

from rqconc.queue.task import task


def add(a, b):
    return a + b


def boom(message="boom"):
    raise RuntimeError(message)


@task("aio")
def double(x):
    return 2 * x
