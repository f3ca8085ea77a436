"""Jobs for tests/store/test_correctness_lua.py (imported by workers under --allow tests)."""

from rqconc import Next


def hand_on_to(next_id, value):
    """A flow stage whose next stage has the caller's id `next_id`."""
    return Next("default", "tests.queue.tasks:add", value, 1, job_id=next_id, result="handed on")


def boom():
    raise ValueError("boom")
