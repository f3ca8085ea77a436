"""What the two process backends share: pids, zombie reaping, memory readings."""
from __future__ import annotations

import os
from typing import List, Optional

from rqconc.engine.pool import Ended, Pool


class ProcessPool(Pool):
    children_are_processes = True

    def reap(self) -> List[Ended]:
        ended = super().reap()
        if os.getpid() == 1:
            _reap_orphans()
        return ended

    def rss_bytes(self, index: int) -> Optional[int]:
        pid = self.pid(index)
        if pid is None:
            return None
        import psutil

        try:
            return psutil.Process(pid).memory_info().rss
        except psutil.Error:
            return None


def _reap_orphans() -> None:
    """As PID 1 every orphan of the container becomes ours: collect them so none stays a
    zombie. Our own children are waited for by pid before this runs."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
