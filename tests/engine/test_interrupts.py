"""rqconc/engine/interrupts.py, the soft timeout's mechanism, on real signals, threads and
event loops (the greenlet's runs in tests/worker/test_soft_timeouts.py[gevent]): the
exception reaches the work, and never arrives once the work's disarm returned."""

import asyncio
import random
import sys
import threading
import time

import pytest

from rqconc.engine import interrupts
from tests.support.waiting import wait_for


class Boom(Exception):
    pass


def spin(seconds):
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        pass


def cycles(count, work=0.002):
    """Arm, work up to `work` seconds, disarm; the number of exceptions that arrived after a
    disarm returned (must be 0) and of those the work or its disarm saw."""
    late = seen = 0
    for _ in range(count):
        disarm = None
        try:
            try:
                # So short a delay may even come due within `arm` (which then raises it).
                disarm = interrupts.arm(random.uniform(0.0005, 0.002), Boom)
                spin(random.uniform(0, work))
            finally:
                if disarm is not None:
                    disarm()
        except Boom:
            seen += 1
        try:
            spin(0.002)
        except Boom:
            late += 1
    return late, seen


def in_a_thread(work):
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(work()))
    thread.start()
    thread.join(30)
    return outcome[0]


@pytest.mark.parametrize("where", ["main thread", "thread"])
def test_an_interrupt_never_arrives_after_its_disarm(where):
    if where == "main thread":
        late, seen = cycles(200)
    else:
        # The timer thread that interrupts a thread needs the GIL, which a spinning thread
        # gives up only every switch interval (5 ms): work longer than that, or on a quiet
        # machine no interrupt ever comes before its disarm and the race is not run.
        late, seen = in_a_thread(lambda: cycles(200, work=2.5 * sys.getswitchinterval()))
    assert late == 0
    assert seen > 0  # the race was run: some fired before their disarm


def test_a_blocked_sleep_in_the_main_thread_is_interrupted():
    began = time.monotonic()
    disarm = interrupts.arm(0.1, Boom)
    with pytest.raises(Boom):
        try:
            time.sleep(10)
        finally:
            disarm()
    assert time.monotonic() - began < 2


def test_an_alarm_pending_already_is_borrowed_and_set_again():
    fired = []
    previous = interrupts.signal.signal(interrupts.signal.SIGALRM, lambda *_: fired.append(1))
    try:
        interrupts.signal.setitimer(interrupts.signal.ITIMER_REAL, 0.4)
        disarm = interrupts.arm(0.05, Boom)
        with pytest.raises(Boom):
            try:
                time.sleep(10)
            finally:
                disarm()
        assert not fired
        # The borrowed alarm still comes, about when it was due (0.4 s after it was set).
        wait_for(lambda: fired == [1], timeout=5, message="the borrowed alarm")
    finally:
        interrupts.signal.setitimer(interrupts.signal.ITIMER_REAL, 0)
        interrupts.signal.signal(interrupts.signal.SIGALRM, previous)


def test_a_thread_sees_it_between_two_python_lines():
    def work():
        disarm = interrupts.arm(0.1, Boom)
        try:
            spin(10)
        except Boom:
            return "interrupted"
        finally:
            disarm()
        return "ran on"

    assert in_a_thread(work) == "interrupted"


def test_a_coroutine_sees_it_at_its_await_and_an_outside_cancel_passes_through():
    async def cleans_up():
        try:
            await asyncio.sleep(10)
        except Boom:
            await asyncio.sleep(0)  # it may still await while it cleans up
            return "cleaned up"
        return "ran on"

    async def main():
        assert await interrupts.soft_bounded(cleans_up(), 0.05, Boom) == "cleaned up"
        task = asyncio.ensure_future(interrupts.soft_bounded(asyncio.sleep(10), 5, Boom))
        await asyncio.sleep(0.05)
        task.cancel()  # as ending a child does: not the soft timeout's
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
