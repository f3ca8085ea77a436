"""SPEC section 2: start-up, warm and cold shutdown, Ctrl+C, on every backend."""

import signal
import time

import pytest

from tests.support.waiting import promised
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, pid_alive, wait_for

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def test_all_children_are_idle_right_after_start_and_a_warm_shutdown_then_takes_under_1s(
    backend, spool, start_worker
):
    # One worker for both promises: the shutdown is of a worker whose children are all idle,
    # which is what the start leaves (a worker costs ~1 s of CPU to start, 2 s on
    # multiprocessing: make test's minutes).
    worker = start_worker(backend, 2, spool)
    status = spool.wait_idle(2)
    assert status["busy"] == 0
    assert [c[1] for c in status["children"]] == ["idle"] * 2
    assert len(spool.events("child_started")) == 2
    children = worker.child_pids()
    if backend in PROCESS_BACKENDS:
        assert len(children) == 2
    began = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 0
    assert time.monotonic() - began < promised(1.0)
    assert not any(pid_alive(pid) for pid in children)


def test_warm_shutdown_lets_busy_children_finish(backend, spool, start_worker):
    worker = start_worker(backend, 3, spool)
    spool.wait_idle(3)
    busy = [spool.add(sleep=1.5), spool.add(sleep=1.5)]
    wait_for(lambda: len(spool.events("started")) == 2, message="2 items started")
    pids_before = set(worker.child_pids())
    worker.signal(signal.SIGTERM)
    if backend in PROCESS_BACKENDS:
        # The idle child ends at once, the busy ones stay until their item is done.
        wait_for(
            lambda: len(set(worker.child_pids()) & pids_before) == 2,
            timeout=1.0,
            message="the idle child ended within 1 s",
        )
    assert worker.wait_exit(10) == 0
    assert sorted(spool.items("done")) == sorted(busy)
    assert not spool.events("interrupted") and not spool.events("lost")


def test_second_signal_is_cold_and_gives_interrupted_items_back(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    items = [spool.add(sleep=30), spool.add(sleep=30)]
    wait_for(lambda: len(spool.events("started")) == 2, message="2 items started")
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in worker.output(), message="warm shutdown began")
    began = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 1
    assert time.monotonic() - began < promised(1.0)
    assert sorted(spool.items("interrupted")) == sorted(items)
    assert spool.waiting() == sorted(items)  # back where they can be taken again


def test_shutdown_timeout_turns_a_warm_shutdown_cold(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool, "--shutdown-timeout", "0.5")
    spool.wait_idle(2)
    item = spool.add(sleep=30)
    wait_for(lambda: spool.events("started"), message="item started")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 1
    assert spool.items("interrupted") == [item]


def test_ctrl_c_to_the_process_group_is_handled_by_the_supervisor_alone(
    backend, spool, start_worker
):
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    item = spool.add(sleep=1.0)
    wait_for(lambda: spool.events("started"), message="item started")
    worker.signal_group(signal.SIGINT)  # what a terminal does on Ctrl+C
    assert worker.wait_exit(10) == 0
    assert spool.items("done") == [item]
    assert not spool.events("lost") and not spool.events("interrupted")
