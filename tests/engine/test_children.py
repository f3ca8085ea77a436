"""SPEC section 2: dead children, orphaned children, timeouts, resizing and recycling."""

import os
import signal
import time

import pytest

from tests.support.waiting import promised
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, pid_alive, wait_for


def live_children(spool):
    return len(spool.status().get("children", []))


DEATHS = [(b, "crash") for b in BACKENDS] + [
    (b, how) for b in PROCESS_BACKENDS for how in ("exit", "sigkill")
]


@pytest.mark.parametrize("backend,how", DEATHS)
def test_a_child_dying_mid_item_is_replaced_alone_and_its_item_reported(
    backend, how, spool, start_worker
):
    # Two children: the doomed one and a busy neighbour, which must never be disturbed.
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    others = [spool.add(sleep=2.0)]
    wait_for(lambda: len(spool.events("started")) == 1, message="the neighbour's item started")
    spec = {"crash": {"crash": True}, "exit": {"exit": 7}, "sigkill": {"sleep": 30}}[how]
    doomed = spool.add(**spec)
    started = wait_for(
        lambda: [e for e in spool.events("started") if e["item"] == doomed],
        message="doomed item started",
    )[0]
    if how == "sigkill":
        worker_pids = worker.child_pids()
        assert started["pid"] in worker_pids
        signal_time = time.time()
        os.kill(started["pid"], signal.SIGKILL)
    else:
        signal_time = started["t"]
    lost = wait_for(lambda: spool.events("lost"), message="lost item reported")
    assert lost[0]["claim"] == started["claim"]
    assert lost[0]["t"] - signal_time < promised(1.0)
    # Replaced within 1 s; the other child was never disturbed.
    restarted = wait_for(
        lambda: len(spool.events("child_started")) == 3 and spool.events("child_started")[-1],
        message="replacement child",
    )
    assert restarted["t"] - signal_time < promised(1.0)
    wait_for(lambda: sorted(spool.items("done")) == sorted(others), message="others finish")
    assert worker.process.poll() is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_of_the_supervisor_leaves_no_child_alive_after_1s(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool)  # one busy child, one idle: neither may stay
    spool.wait_idle(2)
    spool.add(sleep=30)
    wait_for(lambda: spool.events("started"), message="item started")
    children = worker.child_pids()
    worker.signal(signal.SIGKILL)
    began = time.monotonic()
    worker.wait_exit(5)
    wait_for(
        lambda: not any(pid_alive(pid) for pid in children), timeout=1.0, message="every child gone"
    )
    assert time.monotonic() - began < promised(1.0)
    # Nobody took another item after the supervisor died.
    later = spool.add(sleep=0)
    time.sleep(0.5)  # a (dead) child would have taken it by now: this checks an absence
    assert later in spool.waiting()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_item_past_its_deadline_is_ended_and_the_slot_refilled(backend, spool, start_worker):
    worker = start_worker(backend, 1, spool)
    spool.wait_idle(1)
    stuck = spool.add(sleep=30, timeout=1)
    started = wait_for(lambda: spool.events("started"), message="item started")[0]
    timed_out = wait_for(lambda: spool.events("timed_out"), timeout=5, message="item timed out")[0]
    assert timed_out["claim"] == started["claim"]
    assert timed_out["t"] - started["t"] < 2.0  # deadline + 1 s
    after = spool.add(sleep=0)
    wait_for(lambda: after in spool.items("done"), message="the next item still runs")
    assert stuck not in spool.items("done")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigttin_and_sigttou_add_and_remove_a_child(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    worker.signal(signal.SIGTTIN)
    wait_for(lambda: spool.status().get("idle") == 3, message="3 children")
    worker.signal(signal.SIGTTOU)
    # Standard signals do not queue: send the second only once the first took effect.
    wait_for(lambda: live_children(spool) == 2, message="2 children")
    worker.signal(signal.SIGTTOU)
    wait_for(
        lambda: spool.status().get("idle") == 1 and live_children(spool) == 1, message="1 child"
    )
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_jobs_per_child_recycles_a_child_after_its_job(backend, spool, start_worker):
    # An in-process backend is also given --max-memory-per-child here, which it must declare
    # unsupported (one worker for both promises; a process backend's limit is tested below).
    memory = () if backend in PROCESS_BACKENDS else ("--max-memory-per-child", "150")
    worker = start_worker(backend, 1, spool, "--max-jobs-per-child", "2", *memory)
    spool.wait_idle(1)
    items = [spool.add(sleep=0.01) for _ in range(5)]
    wait_for(lambda: sorted(spool.items("done")) == items, message="all items done")
    starts = spool.events("child_started")
    assert len(starts) >= 3  # 5 items, 2 per child
    done_by = {}
    for event in spool.events("done"):
        done_by.setdefault(event["claim"].split(".")[2], []).append(event["item"])
    assert max(len(v) for v in done_by.values()) <= 2  # claims carry the child's generation
    if memory:
        wait_for(lambda: "applies to process backends only" in worker.output(), message="warning")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_sighup_replaces_every_child_gracefully(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool)
    spool.wait_idle(2)
    busy = spool.add(sleep=1.0)
    wait_for(lambda: spool.events("started"), message="item started")
    worker.signal(signal.SIGHUP)
    wait_for(lambda: len(spool.events("child_started")) == 4, message="two new children")
    assert spool.items("done") == [busy]  # the busy child finished before it was replaced
    spool.wait_idle(2)
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_failing_at_start_stops_the_worker_with_a_clear_message(
    backend, spool, start_worker
):
    worker = start_worker(backend, 1, spool, "--preload", "no_such_module_anywhere")
    assert worker.wait_exit(15) == 3
    assert "failed while starting" in worker.output()
    assert "no_such_module_anywhere" in worker.output()
    assert len(spool.events("child_started")) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_burst_exits_0_once_everything_is_done(backend, spool, start_worker):
    items = [spool.add(sleep=0.05) for _ in range(6)]
    worker = start_worker(backend, 2, spool, "--burst")
    assert worker.wait_exit(15) == 0
    assert sorted(spool.items("done")) == items


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_max_memory_per_child_recycles_a_grown_child_after_its_job(backend, spool, start_worker):
    worker = start_worker(backend, 1, spool, "--max-memory-per-child", "150")
    spool.wait_idle(1)
    first_pid = worker.child_pids()[0]
    item = spool.add(allocate_mb=200, sleep=0.5)
    wait_for(lambda: item in spool.items("done"), message="the big item finished")
    wait_for(lambda: len(spool.events("child_started")) == 2, message="child recycled")
    wait_for(lambda: first_pid not in worker.child_pids(), message="grown child gone")
    assert not spool.events("lost")
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 0
