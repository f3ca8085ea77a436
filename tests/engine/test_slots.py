"""The idle/busy table (SPEC section 2: the supervisor always knows which children are idle
and which are busy; one dead child never brings the others down): one lock per slot, and
what the supervisor does with a slot it read without that lock."""

import gc
import os
import threading
import time

import pytest

from rqconc.engine.backends import pool_class
from rqconc.engine.backends.forking import ForkingPool
from rqconc.engine.child import ChildContext
from rqconc.engine.slots import memory
from rqconc.engine.source import WorkSource
from rqconc.engine.states import ChildState
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, wait_for


def busy_slot(backend, index=0, item_id="item-1", deadline=None):
    """A table whose slot `index` is held by a child running `item_id`."""
    table = pool_class(backend)(4).make_table()
    generation = table.prepare(index)
    assert table.child_ready(index, generation, os.getpid())
    claim = table.begin_take(index, generation, "uid")
    assert table.mark_busy(index, generation, item_id, deadline)
    return table, generation, claim


def finishes_within(seconds, call, *args):
    """Run `call` in a thread; its result, or a failure if it is still waiting after
    `seconds` (a wait on a lock that nobody will ever release)."""
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(call(*args)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"{call.__name__} still waiting after {seconds}s"
    return outcome[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_never_waits_for_the_slot_of_another(backend):
    table, generation, _ = busy_slot(backend, index=0)
    other = table.prepare(1)
    table._locks[0].acquire()  # the supervisor (or child 0) is deciding about slot 0
    try:
        assert finishes_within(2, table.child_ready, 1, other, os.getpid())
        assert finishes_within(2, table.begin_take, 1, other, "uid")
        assert finishes_within(2, table.mark_busy, 1, other, "item-2", None)
    finally:
        table._locks[0].release()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_chained_item_moves_the_claim_and_counts_the_job(backend):
    table, generation, claim = busy_slot(backend)
    following = table.begin_chain(0, generation, "uid")
    assert following and following != claim
    assert table.chain_busy(0, generation, "item-2", time.time() + 30)
    view = table.view(0)
    assert (view.state, view.item_id, view.claim, view.next_claim, view.jobs_done) == (
        ChildState.BUSY,
        "item-2",
        following,
        "",
        1,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_takes_that_got_nothing_back_keep_their_claim_until_an_item_comes(backend):
    """A take whose reply was lost may have leased an item under its claim (the source puts
    it back before it takes again): the next take keeps that claim, so the supervisor still
    sees it and a cold shutdown hands its item back (issue 14); an item run ends it."""
    table = pool_class(backend)(4).make_table()
    generation = table.prepare(0)
    assert table.child_ready(0, generation, os.getpid())
    first = table.begin_take(0, generation, "uid")
    assert table.begin_take(0, generation, "uid") == first  # nothing came: the same claim
    assert table.view(0).claims == [first]
    gone = table.mark_gone(0)  # a cold shutdown now: that claim is what goes back
    assert gone.claims == [first]
    generation = table.prepare(0)
    assert table.child_ready(0, generation, os.getpid())
    claim = table.begin_take(0, generation, "uid")
    assert table.mark_busy(0, generation, "item-1", None) and table.mark_idle(0, generation)
    assert table.begin_take(0, generation, "uid") not in (claim, first)  # a run ended it


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_paused_worker_chains_no_next_item(backend):
    table, generation, _ = busy_slot(backend)
    next_claim = table.begin_chain(0, generation, "uid")
    table.set_paused(True)  # suspended while the completion step was under way
    assert table.begin_chain(0, generation, "uid") is None
    assert not table.chain_busy(0, generation, "item-2", None)  # given back, not run
    assert table.view(0).next_claim == next_claim


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overdue_child_is_ended_only_if_still_on_the_overdue_item(backend):
    table, generation, _ = busy_slot(backend, deadline=time.time() - 1)
    now = time.time()
    assert table.overdue([0], now) == [0]  # read without the lock...
    table.begin_chain(0, generation, "uid")  # ...then the child moved on to a fresh item
    assert table.chain_busy(0, generation, "item-2", now + 60)
    assert table.take_over_if_overdue(0, now) is None
    assert table.view(0).state is ChildState.BUSY

    later = now + 120
    taken = table.take_over_if_overdue(0, later)
    assert taken.item_id == "item-2"
    # Taken from its child: nothing the child writes from now on counts.
    assert not table.mark_idle(0, generation)
    assert table.view(0).state is ChildState.EMPTY


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_canceled_item_ends_its_child_only_while_it_runs(backend):
    table, generation, claim = busy_slot(backend)
    assert table.take_over_if_running(0, "someone-else") is None
    taken = table.take_over_if_running(0, claim)
    assert taken.claims == [claim]
    assert table.begin_chain(0, generation, "uid") is None


def _die_holding(lock):
    pid = os.fork()
    if pid == 0:
        lock.acquire()
        os._exit(0)  # SIGKILL in a real worker: the lock stays held
    os.waitpid(pid, 0)


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_a_child_killed_inside_its_slot_lock_does_not_wedge_the_slot(backend, monkeypatch):
    monkeypatch.setattr(memory, "STUCK_LOCK_SECONDS", 0.2)
    table, generation, claim = busy_slot(backend)
    _die_holding(table._locks[0])
    # The supervisor gives up on the lock instead of waiting forever...
    assert finishes_within(2, table.end_if_idle, 0) is False
    # ...reaps the child without it, and the slot's next child finds the lock free.
    assert finishes_within(2, table.mark_dead, 0).claims == [claim]
    fresh = finishes_within(2, table.prepare, 0)
    assert finishes_within(2, table.child_ready, 0, fresh, os.getpid())


def _spawn_one(pool, source, is_os_process):
    """`pool` with its one child started on `source` (ended by the caller: pool.end_all())."""
    table = pool.make_table()
    pool.spawn(
        ChildContext(
            index=0,
            generation=table.prepare(0),
            table=table,
            source=source,
            uid="test",
            supervisor_pid=os.getpid(),
            is_os_process=is_os_process,
        )
    )
    return pool


class _FreezeProbe(WorkSource):
    """Writes, from inside the child, how many inherited objects its collector skips."""

    def __init__(self, path):
        self.path = path

    def child_started(self, child_index):
        with open(self.path, "w") as out:
            out.write(str(gc.get_freeze_count()))

    def take(self, claim, timeout):
        time.sleep(timeout)

    def perform(self, item, next_claim=None):
        return None

    def give_back(self, item):
        pass


def test_forked_children_leave_what_they_inherit_to_copy_on_write(tmp_path):
    """SPEC: a supervisor with 4 forking children under 100 MB RSS in all. A child's
    collections must not write to the objects it shares with the supervisor."""
    probe = tmp_path / "frozen"
    pool = _spawn_one(ForkingPool(1), _FreezeProbe(str(probe)), is_os_process=True)
    try:
        wait_for(lambda: probe.exists() and probe.read_text(), message="child reported")
        assert int(probe.read_text()) > 10_000  # everything imported before the fork
        assert gc.get_freeze_count() == 0  # the supervisor still collects its own garbage
    finally:
        pool.end_all()


class _AloneProbe(_FreezeProbe):
    """Writes, from inside the child, its pid when it starts (path) and when it is told it
    runs alone in its process (path + ".alone", told before it starts)."""

    def child_started(self, child_index):
        with open(self.path, "w") as out:
            out.write(str(os.getpid()))

    def child_alone(self):
        with open(self.path + ".alone", "w") as out:
            out.write(str(os.getpid()))


# The pools this harness drives without a supervisor: a multiprocessing child is spawned from
# the supervisor's own set-up and a gevent child needs the patched process main.py makes, so
# those two run the same run_process_child / thread paths through the worker tests
# (tests/worker/test_combined_completions.py runs every backend on a real worker).
@pytest.mark.parametrize("backend", ["forking", "threading", "asyncio"])
def test_only_a_process_child_with_one_slot_is_told_it_runs_alone(backend, tmp_path):
    """A forking or multiprocessing child with one slot is told so (WorkSource.child_alone):
    the Redis source then completes without the slots' combiner (worker/completions.py). A
    thread child shares its process with the others and is never told."""
    probe, alone = tmp_path / "started", tmp_path / "started.alone"
    process = backend in PROCESS_BACKENDS
    pool = _spawn_one(pool_class(backend)(1), _AloneProbe(str(probe)), is_os_process=process)
    try:
        wait_for(lambda: probe.exists() and probe.read_text(), message="child started")
        if process:
            assert alone.read_text() == probe.read_text() != str(os.getpid())  # the child's
        else:
            assert not alone.exists()
    finally:
        pool.end_all()
