"""What the two process backends share: pids, zombie reaping, memory readings."""

from __future__ import annotations

import os
from typing import List, Optional, Set

import psutil

from rqconc.engine.pool import Ended, Pool


class ProcessPool(Pool):
    children_are_processes = True

    def reap(self) -> List[Ended]:
        ended = super().reap()
        if os.getpid() == 1:
            _reap_orphans({self.pid(index) for index in self._children})
        return ended

    def rss_bytes(self, index: int) -> Optional[int]:
        pid = self.pid(index)
        if pid is None:
            return None
        try:
            return psutil.Process(pid).memory_info().rss
        except psutil.Error:
            return None


def _reap_orphans(own: Set[Optional[int]]) -> None:
    """As PID 1 every orphan of the container becomes ours: collect them so none stays a
    zombie. A child of the pool must keep its exit status for the pool (multiprocessing
    would otherwise wait for it forever), so each candidate is looked at first (WNOWAIT) and
    only a stranger is collected; one of ours that just ended waits for the next `reap`."""
    while True:
        try:
            found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if found is None or found.si_pid in own:
            return
        try:
            os.waitpid(found.si_pid, os.WNOHANG)
        except ChildProcessError:
            return
