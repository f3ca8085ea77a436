"""A child between its take and `mark_busy` may hold an item (issue 14, item 6): it is
TAKING, never idle, wherever the engine decides by idle/busy, on every backend. The fake
source's `take_delay` holds the take's reply back after the item was taken, as a slow
network does."""

import signal

import pytest

from tests.support.worker_process import BACKENDS, wait_for

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def test_burst_does_not_end_a_child_that_holds_a_just_taken_item(backend, spool, start_worker):
    # Taken at once, but reported 1 s later: meanwhile the queue looks empty and every
    # child looks idle to a supervisor that does not know about takes under way (the fake
    # source's supervisor ticks every 0.1 s: some ten burst probes within that second).
    item = spool.add(take_delay=1.0, sleep=0.1)
    worker = start_worker(backend, 1, spool, "--burst")
    assert worker.wait_exit(20) == 0
    assert spool.items("done") == [item]
    assert spool.waiting() == []
    assert not spool.events("given_back")


def test_warm_shutdown_lets_a_taking_child_run_what_it_took(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    item = spool.add(take_delay=1.0, sleep=0.1)
    wait_for(lambda: spool.events("taken"), message="item taken")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(10) == 0
    assert spool.items("done") == [item]
    assert not spool.events("given_back") and not spool.events("interrupted")


def test_a_cold_shutdown_gives_back_what_a_taking_child_holds(backend, spool, start_worker):
    worker = start_worker(backend, 1, spool)
    spool.wait_idle(1)
    item = spool.add(take_delay=3, sleep=0.1)
    wait_for(lambda: spool.events("taken"), message="item taken")
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown began")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(10) == 1
    assert spool.items("interrupted") == [item]
    assert spool.waiting() == [item]
    assert not spool.events("done")
