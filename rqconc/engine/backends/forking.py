"""Children made with a bare `os.fork()`: cheapest to start, share the parent's imports."""
from __future__ import annotations

import multiprocessing
import multiprocessing.sharedctypes
import os
import signal
import sys
import traceback
from typing import Optional

from rqconc.engine.child import ChildContext, prepare_process_child, run_child
from rqconc.engine.process_pool import ProcessPool
from rqconc.engine.slots import SlotTable


class ForkingPool(ProcessPool):
    name = "forking"

    def make_slots(self) -> SlotTable:
        # Anonymous shared memory and a POSIX semaphore both survive os.fork().
        ctx = multiprocessing.get_context("fork")
        return SlotTable(self.capacity, ctx.Lock(), multiprocessing.sharedctypes.RawArray)

    def _start(self, ctx: ChildContext) -> int:
        pid = os.fork()
        if pid == 0:  # the child never returns from here
            code = 1
            try:
                prepare_process_child(ctx.supervisor_pid)
                code = run_child(ctx)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
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

