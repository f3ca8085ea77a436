"""Module-level job functions for the queue tests (workers import them by name)."""

import time


def add(a, b):
    return a + b


def echo(*args, **kwargs):
    return {"args": list(args), "kwargs": kwargs}


def boom(message="boom"):
    raise ValueError(message)


def flaky_connection():
    raise ConnectionError("the network hiccuped")


def returns_object():
    return Opaque()


def sleep_then_return(seconds, value):
    time.sleep(seconds)
    return value


class Opaque:
    """Not JSON-serializable."""


class Task:
    @classmethod
    def run(cls, x):
        return x * 2


class Flaky(Exception):
    """A user-defined exception type for retry policies."""


# ---- lifecycle: callbacks and flows ----
CALLS = []  # what the callbacks saw, in this process (the queue tests perform in-process)


def note_success(job, result):
    CALLS.append(("success", job.id, result))


def note_failure(job, error):
    CALLS.append(("failure", job.id, error.exc_type, error.exc_message))


def first_stage(x):
    from rqconc import Next

    return Next("stage2", "tests.queue.tasks:second_stage", x + 1, result=f"one:{x}")


def second_stage(x):
    from rqconc import Next

    return Next("stage3", "tests.queue.tasks:add", x, 100, result=f"two:{x}", priority=5)
