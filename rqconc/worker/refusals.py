"""Jobs this worker's allow-list refuses (issue 32): a configuration error of the worker,
not a failure of the job.

A job whose function's module matches none of the `--allow` prefixes is not started, and
nothing is imported for it: it goes back to its queue untouched (no attempt counted,
event `refused`), behind the jobs waiting there, for a worker that allows it: one stray job
(a producer's typo) cannot stand in front of the jobs that can run. This worker says so at
WARNING, once per function in each child process, with the option to add. After
`REFUSALS_BEFORE_STOP` refusals of different jobs in a row (of any, for a `--burst` worker,
which must end), with no job run in between, it stops with exit code 2 and one line naming
what to allow (engine.source.StopWorker): a misconfigured worker meets many refused jobs
and stops, never emptying a queue into the dead letters nor spinning on it silently, while
a well configured one that meets the same stray job again (alone in its queue) keeps
running and only waits longer each time.

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
# Seconds a child waits after giving a refused job back, so another worker (one that
# allows it) gets a chance at it; doubled each time the same job comes back at once (it is
# alone in the queue), up to REFUSAL_PAUSE_MAX.
REFUSAL_PAUSE = 0.2
REFUSAL_PAUSE_MAX = 5.0


class Refusals:
    """The allow-list refusals of one worker process (shared by its threads or greenlets)."""

    def __init__(
        self,
        limit: int = REFUSALS_BEFORE_STOP,
        pause: float = REFUSAL_PAUSE,
        count_repeats: bool = False,
    ) -> None:
        self.limit = limit
        self.pause = pause
        # A --burst worker must end: there, the same job refused again counts too (it can
        # never drain a queue that holds it). A long-running one counts different jobs only.
        self.count_repeats = count_repeats
        self.in_a_row = 0
        self._refused_ids: Dict[str, int] = {}  # of this run of refusals: job id -> times
        # Function name -> hint; dict.setdefault is atomic, so two threads refusing the same
        # function at once still warn once.
        self._warned: Dict[str, str] = {}
        self._hints: Dict[str, List[str]] = {}  # of this run of refusals: hint -> functions
        self._allowed = ""

    def ran(self) -> None:
        """A job was run (whatever its outcome): the refusals are no longer in a row."""
        if self.in_a_row or self._refused_ids:
            self.in_a_row = 0
            self._hints = {}
            self._refused_ids = {}

    def refused(self, refusal: NotAllowedModule, job_id: str, queue: str) -> None:
        """The job was given back: warn (once per function), then pause, or raise
        StopWorker at the limit."""
        token = f"{job_id}\n{queue}"
        if self._warned.setdefault(refusal.func, token) is token:
            log.warning(
                "job %s refused: %s; it went back to queue %s untouched (no attempt "
                "counted) for a worker that allows it",
                refusal.func,
                refusal,
                queue,
                extra={"event": "refused", "job_id": job_id, "queue": queue},
            )
        self._hints.setdefault(refusal.hint, []).append(refusal.func)
        self._allowed = refusal.allowed
        seen = self._refused_ids.get(job_id, 0)
        self._refused_ids[job_id] = seen + 1
        if self.count_repeats or not seen:  # met again: no new sign of a misconfiguration
            self.in_a_row += 1
            if self.in_a_row >= self.limit:
                raise StopWorker(self.stop_line(), 2)
        # A job met again is alone in its queue: wait longer, unless this worker must end.
        grown = 0 if self.count_repeats else seen
        time.sleep(min(self.pause * 2**grown, REFUSAL_PAUSE_MAX) if self.pause else 0)

    def stop_line(self) -> str:
        """The one line a worker stopping for its refusals ends with."""
        fixes = "; ".join(
            f"{hint} (for {', '.join(sorted(set(funcs))[:3])})"
            for hint, funcs in self._hints.items()
        )
        return (
            f"refused {self.in_a_row} jobs in a row, not allowed by this worker's "
            f"allow-list ({self._allowed}); they wait in their queues: {fixes}"
        )


__all__ = ["REFUSALS_BEFORE_STOP", "REFUSAL_PAUSE", "REFUSAL_PAUSE_MAX", "Refusals"]
