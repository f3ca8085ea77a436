"""Children made with a bare `os.fork()`: cheapest to start, share the parent's imports.

A job's soft timeout reaches a plain function by SIGALRM in the child's main thread, which
interrupts a blocking call; in a child with `--slots`, as in the threading backend
(interrupts.py)."""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.sharedctypes
import os
import signal
import sys
import traceback
from typing import Optional

from rqconc.engine.child import ChildContext, prepare_process_child
from rqconc.engine.process_pool import ProcessPool
from rqconc.engine.slots.host import run_process_child
from rqconc.engine.slots.table import CellTable


class ForkingPool(ProcessPool):
    name = "forking"

    def make_table(self) -> CellTable:
        # Anonymous shared memory and POSIX semaphores (one per slot) survive os.fork().
        ctx = multiprocessing.get_context("fork")
        return CellTable(
            self.capacity * self.slots_per_child,
            ctx.Lock,
            multiprocessing.sharedctypes.RawArray,
            children_are_processes=True,
        )

    def _start(self, ctx: ChildContext) -> int:
        # Frozen objects are never scanned by the collector: the child's collections then
        # leave the GC headers of everything it inherited untouched, so those pages stay
        # shared with the supervisor instead of being copied into every child (CPython's
        # own advice for pre-forking servers). A host program that froze objects itself
        # (embedding) keeps them frozen.
        thaw = gc.get_freeze_count() == 0
        gc.freeze()
        try:
            pid = os.fork()
        except BaseException:
            if thaw:
                gc.unfreeze()
            raise
        if pid == 0:  # the child never returns from here
            code = 1
            try:
                prepare_process_child(ctx.supervisor_pid)
                code = run_process_child(ctx)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        if thaw:
            gc.unfreeze()  # the supervisor goes on collecting its own garbage
        return pid

    def _exitcode(self, handle: int) -> Optional[int]:
        try:
            pid, status = os.waitpid(handle, os.WNOHANG)
        except ChildProcessError:  # already reaped elsewhere (e.g. as PID 1)
            return -signal.SIGKILL
        if pid == 0:
            return None
        return os.waitstatus_to_exitcode(status)

    def end(self, index: int) -> None:
        pid = self._children.get(index)
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        self._forget(index)

    def pid(self, index: int) -> Optional[int]:
        return self._children.get(index)
