"""SPEC section 2, warm shutdown, for a process child stopped before it started: a child
still importing (a spawned interpreter takes a while; a slow --preload longer) holds no item
and never will, so it is ended at once rather than left to finish its start only to end."""

import signal
import time

import pytest

from tests.support.waiting import promised
from tests.support.worker_process import PROCESS_BACKENDS, pid_alive, wait_for


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_warm_shutdown_while_children_start_is_gone_within_1s(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool, "--preload", "tests.engine.slow_start")
    children = wait_for(lambda: len(worker.child_pids()) == 2 and worker.child_pids())
    began = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(10) == 0
    assert time.monotonic() - began < promised(1.0)
    assert not any(pid_alive(pid) for pid in children)
    assert not spool.events("child_started")  # none got as far as its source
