"""Children started by `multiprocessing` with the spawn method: a fresh interpreter each,
nothing inherited from the supervisor but what is pickled (the slot table and the source).
A job's soft timeout arrives as in a forked child (forking.py, interrupts.py)."""

from __future__ import annotations

import multiprocessing
import sys
from typing import Any, Optional

from rqconc.engine.child import ChildContext, prepare_process_child
from rqconc.engine.process_pool import ProcessPool
from rqconc.engine.slots.host import run_process_child
from rqconc.engine.slots.table import CellTable


def _child_main(ctx: ChildContext) -> None:
    prepare_process_child(ctx.supervisor_pid)
    sys.exit(run_process_child(ctx))


class MultiprocessingPool(ProcessPool):
    name = "multiprocessing"
    children_start_fresh = True

    def __init__(self, capacity: int, slots_per_child: int = 1) -> None:
        self._mp = multiprocessing.get_context("spawn")
        super().__init__(capacity, slots_per_child)

    def make_table(self) -> CellTable:
        # Shared memory and one semaphore per slot, pickled for each child as it spawns.
        return CellTable(
            self.capacity * self.slots_per_child,
            self._mp.Lock,
            self._mp.RawArray,
            children_are_processes=True,
        )

    def _start(self, ctx: ChildContext) -> Any:
        process = self._mp.Process(
            target=_child_main, args=(ctx,), name=f"rqconc-child-{ctx.index}", daemon=False
        )
        process.start()
        return process

    def _exitcode(self, handle: Any) -> Optional[int]:
        code = handle.exitcode  # polls waitpid(WNOHANG)
        if code is not None:
            handle.close()
        return code

    def end(self, index: int) -> None:
        process = self._children.get(index)
        if process is None:
            return
        process.kill()
        process.join()
        process.close()
        self._forget(index)

    def pid(self, index: int) -> Optional[int]:
        process = self._children.get(index)
        return process.pid if process is not None else None
