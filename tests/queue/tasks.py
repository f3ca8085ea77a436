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
