"""Job functions for the eager-mode tests: eager jobs run in the test's own process, so
what they saw is kept here."""

import asyncio
import time

from rqconc import JobSoftTimeout, Next

SEEN: list = []  # (what, ...) in the order it happened


class Flaky(Exception):
    """Raised by `fails_then_returns` until its count runs out."""


def add(a, b):
    return a + b


def echo(*args, **kwargs):
    SEEN.append(("echo", args, kwargs))
    return {"args": list(args), "kwargs": kwargs}


def boom(message="boom"):
    raise ValueError(message)


def returns_object():
    return object()


_LEFT: dict = {}


def fails_then_returns(token, failures, value):
    """Raises Flaky `failures` times per token, then returns value."""
    left = _LEFT.setdefault(token, failures)
    if left:
        _LEFT[token] = left - 1
        raise Flaky(f"{left} failure(s) left")
    return value


def connection_drops(token, failures):
    """Raises ConnectionError (transient: the default policy retries it) `failures` times."""
    left = _LEFT.setdefault(token, failures)
    if left:
        _LEFT[token] = left - 1
        raise ConnectionError("the network hiccuped")
    return "through"


def on_success(job, result):
    SEEN.append(("success", job.id, result))


def on_failure(job, error):
    SEEN.append(("failure", job.id, error.exc_type, error.exc_message))


def first_stage(x):
    return Next("eager-stage2", "tests.queue.eager_tasks:second_stage", x + 1, result=f"one:{x}")


def second_stage(x):
    return x * 10


def bad_next():
    return Next("eager-stage2", second_stage, object())


def total(results, extra=0):
    SEEN.append(("total", results, extra))
    return sum(results) + extra


def sleeps(seconds):
    """Sleeps (a worker's hard timeout would end it), then returns how long it slept."""
    SEEN.append(("sleeps", seconds))
    time.sleep(seconds)
    return seconds


def sleeps_through_interrupts(seconds):
    """Sleeps `seconds` whatever interrupts it (a job that swallows every exception)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            time.sleep(max(0.0, deadline - time.monotonic()))
        except Exception:
            continue
    return "late"


async def sleeps_async(seconds):
    await asyncio.sleep(seconds)
    return seconds


def saves_at_soft_timeout(seconds):
    """Works in short steps until JobSoftTimeout, then records its cleanup and returns."""
    try:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            time.sleep(0.01)
    except JobSoftTimeout:
        SEEN.append(("saved",))
        return "saved"
    return "ran to the end"


async def saves_at_soft_timeout_async(seconds):
    try:
        await asyncio.sleep(seconds)
    except JobSoftTimeout:
        SEEN.append(("saved async",))
        return "saved"
    return "ran to the end"


def ignores_soft_timeout(seconds):
    """Catches JobSoftTimeout and sleeps on: only the hard timeout ends it."""
    try:
        time.sleep(seconds)
    except JobSoftTimeout:
        SEEN.append(("ignored",))
        time.sleep(seconds)
    return "outlived its timeout"
