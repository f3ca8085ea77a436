"""A module that no test worker allows: importing it at all is a test failure."""

raise AssertionError("tests.queue.forbidden_tasks must never be imported by a worker")


def run():  # pragma: no cover - never reached
    return "ran"
