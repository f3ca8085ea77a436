"""Jobs this worker's allow-list refuses (issue 32): a configuration error of the worker,
not a failure of the job.

A job whose function's module matches none of the `--allow` prefixes is not started, and
nothing is imported for it: it goes back to the front of its queue untouched (no attempt
counted, event `refused`), for a worker that allows it. This worker says so at WARNING,
once per function in each child process, with the option to add; it pauses briefly after
each refusal (the job it gave back is the one its next take finds first), and after
`REFUSALS_BEFORE_STOP` refusals in a row with no job run in between it stops with exit
code 2 and one line naming what to allow (engine.source.StopWorker). So a misconfigured
worker never empties a queue into the dead letters, and never spins on it silently.

Only this refusal is given back: a name that is corrupt, a function imported into an
allowed module from elsewhere, a pickled payload on a worker without `--allow-pickle` and
arguments that cannot be decoded stay final failures (docs/operations.md).
"""

from __future__ import annotations

import logging
import time
from typing import Dict, List

from rqconc.engine.source import StopWorker
from rqconc.queue.execution import NotAllowedModule

log = logging.getLogger("rqconc.worker")

# Refusals in a row, with no job run in between, after which the worker stops.
REFUSALS_BEFORE_STOP = 10
# Seconds a child waits after giving a refused job back: a take finds that job first again,
# and another worker (one that allows it) gets a chance at it meanwhile.
REFUSAL_PAUSE = 0.2


class Refusals:
    """The allow-list refusals of one worker process (shared by its threads or greenlets)."""

    def __init__(self, limit: int = REFUSALS_BEFORE_STOP, pause: float = REFUSAL_PAUSE) -> None:
        self.limit = limit
        self.pause = pause
        self.in_a_row = 0
        # Function name -> hint; dict.setdefault is atomic, so two threads refusing the same
        # function at once still warn once.
        self._warned: Dict[str, str] = {}
        self._hints: Dict[str, List[str]] = {}  # of this run of refusals: hint -> functions
        self._allowed = ""

    def ran(self) -> None:
        """A job was run (whatever its outcome): the refusals are no longer in a row."""
        if self.in_a_row:
            self.in_a_row = 0
            self._hints = {}

    def refused(self, refusal: NotAllowedModule, job_id: str, queue: str) -> None:
        """The job was given back: warn (once per function), then pause, or raise
        StopWorker at the limit."""
        token = f"{job_id}\n{queue}"
        if self._warned.setdefault(refusal.func, token) is token:
            log.warning(
                "job %s refused: %s; it went back to the front of queue %s untouched (no "
                "attempt counted) for a worker that allows it",
                refusal.func,
                refusal,
                queue,
                extra={"event": "refused", "job_id": job_id, "queue": queue},
            )
        self._hints.setdefault(refusal.hint, []).append(refusal.func)
        self._allowed = refusal.allowed
        self.in_a_row += 1
        if self.in_a_row >= self.limit:
            raise StopWorker(self.stop_line(), 2)
        time.sleep(self.pause)

    def stop_line(self) -> str:
        """The one line a worker stopping for its refusals ends with."""
        fixes = "; ".join(
            f"{hint} (for {', '.join(sorted(set(funcs))[:3])})"
            for hint, funcs in self._hints.items()
        )
        return (
            f"refused {self.in_a_row} jobs in a row, not allowed by this worker's allow-list "
            f"({self._allowed}); they wait in their queues: {fixes}"
        )


__all__ = ["REFUSALS_BEFORE_STOP", "REFUSAL_PAUSE", "Refusals"]
