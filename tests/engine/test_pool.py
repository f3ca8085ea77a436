"""The pool interface: spawn blocks while the pool is full (SPEC section 2)."""

import os
import threading

import pytest

from rqconc.engine.backends import pool_class
from rqconc.engine.child import ChildContext
from rqconc.engine.fake_source import FakeSource
from tests.support.worker_process import wait_for


@pytest.mark.parametrize("backend", ["forking", "multiprocessing", "threading"])
def test_spawn_blocks_while_the_pool_is_full(backend, spool):
    pool = pool_class(backend)(1)
    table = pool_class(backend)(2).make_table()  # room in the table, not in the pool
    source = FakeSource(spool=str(spool.dir), log=str(spool.log))

    def context(index):
        return ChildContext(
            index=index,
            generation=table.prepare(index),
            table=table,
            source=source,
            uid="test",
            supervisor_pid=os.getpid(),
            is_os_process=pool.children_are_processes,
        )

    pool.spawn(context(0))
    second = threading.Thread(target=pool.spawn, args=(context(1),), daemon=True)
    second.start()
    second.join(0.5)
    assert second.is_alive(), "spawn returned although the pool was full"
    table.end_when_idle(0)  # the first child ends at its next look at its slot
    wait_for(lambda: pool.reap(), message="first child reaped")
    second.join(5)
    assert not second.is_alive()
    assert pool.live() == {1}
    pool.end_all()
