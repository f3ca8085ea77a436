"""Job functions of the cross-namespace tests (tests/queue/test_namespace_refusals.py)."""

from rqconc import Next, Queue


def hand_over(url: str, namespace: str) -> Next:
    """A flow stage whose next stage is on a queue of `namespace`."""
    return Next(Queue("next", connection=url, namespace=namespace), "tests.queue.tasks:add", 1, 2)
