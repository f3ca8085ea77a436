"""The Lua steps that remove jobs (SPEC 12: `job.delete()`, `q.delete()`, `q.empty()`):
delete_jobs.lua, empty_queue.lua and drop_parked.lua. Each ends a job removed before it
ended the one way include/removal.lua has: as a job that did not finish (dependents
canceled, its group's chord canceled, its unique key ended, waiters woken with JobCanceled)."""

from __future__ import annotations

from typing import Any, Callable, List, Sequence, Tuple

from rqconc.store.keys import FlowKeys, KeySpace
from rqconc.store.scripts import Step, script
from rqconc.store.steps.bound import BoundSteps

# Jobs popped and deleted per step: bounds how long one step holds Redis.
REMOVE_BATCH = 500
# How long waiters of a job removed before it ended still find `canceled:`.
DONE_GRACE_SECONDS = 10


class RemovalSteps(BoundSteps):
    """The removing steps bound to one client and namespace."""

    def delete_jobs(self, job_ids: Sequence[str], queue: str = "") -> Tuple[int, int]:
        """As `delete_jobs_step`, run here."""
        return delete_jobs_step(self.keys, job_ids, queue).run(self.client)

    def empty_queue(self, queue: str) -> int:
        """Delete every waiting job of `queue`, a batch per step; how many."""
        k = self.keys
        keys = [k.queue(queue), k.seq, k.events]
        return self._batches("empty_queue", keys, [k.prefix, REMOVE_BATCH, DONE_GRACE_SECONDS])

    def drop_parked(self, queue: str) -> int:
        """Delete every job of `queue` parked behind its group's cap; how many."""
        k = self.keys
        keys = [FlowKeys(k, queue).parked_groups, k.seq, k.events]
        args = [k.prefix, queue, REMOVE_BATCH, DONE_GRACE_SECONDS]
        return self._batches("drop_parked", keys, args)

    def _batches(self, name: str, keys: List[str], args: List[Any]) -> int:
        step: Callable[..., Any] = script(name)
        total = 0
        while True:
            deleted, popped = step(self.client, keys, args)
            total += int(deleted)
            if not int(popped):
                return total


def delete_jobs_step(k: KeySpace, job_ids: Sequence[str], queue: str = "") -> Step:
    """Delete the jobs not running (of `queue` only, if given): (deleted, left running)."""
    keys = [k.seq, k.events, *map(k.job, job_ids)]
    args = [k.prefix, queue, DONE_GRACE_SECONDS, *job_ids]
    return Step(script("delete_jobs"), keys, args, _deleted)


def _deleted(reply: Any) -> Tuple[int, int]:
    deleted, running = reply
    return int(deleted), int(running)
